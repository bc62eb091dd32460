import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { errors } from 'oidc-provider';
import { isLoopbackHost } from './client-metadata.js';
import { registeredScopesOf } from './extra-client-metadata.js';

/**
 * Access tokens for resource servers (RFC 8707 resource indicators, RFC 9068 JWT access tokens).
 *
 * A resource server is named by its own URL, and a token names it in `aud`: a resource server
 * accepts only tokens naming it, so a token given to one API cannot be replayed at another. Any
 * `https` URL may be named (`http` only on a loopback host, as for redirect URIs), without query,
 * fragment or user information: the workplace has no list of its APIs to check against, and the
 * user consents to the client, which picks the API. A client that names none gets the workplace's
 * default audience, its issuer, meaning "the workplace's own APIs".
 *
 * What a token may carry for a resource: the scopes the client may ask for, except `openid` and
 * `offline_access`, which are about the sign-in and the refresh token, not an API. For
 * client_credentials there is no user, so only the client's own registered scopes, and asking for
 * another is `invalid_scope` rather than a scope silently dropped.
 */

type ResourceIndicators = NonNullable<NonNullable<Configuration['features']>['resourceIndicators']>;

/** Scopes that never go into an access token for a resource server. */
const SIGN_IN_SCOPES = new Set(['openid', 'offline_access']);

function invalidTarget(indicator: string, why: string): Error {
  return new errors.InvalidTarget(`resource ${indicator.slice(0, 200)} ${why}`);
}

/** Throws invalid_target unless `indicator` may name a resource server (see the header). */
export function checkResourceIndicator(indicator: string, defaultAudience: string): void {
  if (indicator === defaultAudience) return;
  const url = URL.parse(indicator);
  if (!url) throw invalidTarget(indicator, 'is not an absolute URI');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw invalidTarget(indicator, 'must be an https URL (http only on a loopback host)');
  }
  if (url.hostname === '') throw invalidTarget(indicator, 'must name a host');
  if (indicator.includes('?') || indicator.includes('#'))
    throw invalidTarget(indicator, 'must have no query or fragment (RFC 8707 section 2)');
  if (url.username !== '' || url.password !== '')
    throw invalidTarget(indicator, 'must not contain user information');
}

/** The scopes a client_credentials request asks for, refused unless all are the client's own. */
function clientCredentialsScopes(ctx: KoaContextWithOIDC, registered: Set<string>): string[] {
  const asked = String(ctx.oidc.params?.scope ?? '')
    .split(' ')
    .filter((s) => s !== '');
  for (const scope of asked) {
    if (!registered.has(scope)) {
      throw new errors.InvalidScope(
        'client_credentials may ask only for the client’s registered scopes',
        scope,
      );
    }
  }
  return [...registered];
}

/** oidc-provider's resource indicator configuration for a workplace whose issuer is `issuer`. */
export function resourceIndicators(
  issuer: string,
  accessTokenTTL: (ctx: KoaContextWithOIDC) => number,
): ResourceIndicators {
  return {
    enabled: true,
    async defaultResource(_ctx, _client, oneOf) {
      return oneOf ?? issuer;
    },
    async getResourceServerInfo(ctx, indicator, client) {
      checkResourceIndicator(indicator, issuer);
      const clientCredentials = ctx.oidc.params?.grant_type === 'client_credentials';
      // oidc-provider would let a client without a secret (token_endpoint_auth_method none)
      // use client_credentials, which is then anyone acting as it.
      if (clientCredentials && client.clientAuthMethod === 'none') {
        throw new errors.UnauthorizedClient('client_credentials is for clients that hold a secret');
      }
      const registered = new Set(registeredScopesOf(client.metadata()).filter((s) => !SIGN_IN_SCOPES.has(s)));
      const scopes = clientCredentials
        ? clientCredentialsScopes(ctx, registered)
        : String(client.scope ?? '')
            .split(' ')
            .filter((s) => s !== '' && !SIGN_IN_SCOPES.has(s));
      return {
        audience: indicator,
        scope: scopes.join(' '),
        accessTokenFormat: 'jwt',
        accessTokenTTL: accessTokenTTL(ctx),
        jwt: { sign: { alg: 'RS256' } },
      };
    },
    // A sign-in that asks for `openid` and names no resource at the token endpoint gets an opaque
    // token for userinfo (which refuses tokens with an audience): oidc-provider's default.
    async useGrantedResource() {
      return false;
    },
  };
}

/**
 * Who may introspect (RFC 7662): a confidential client, any token of the workplace, so that an
 * API registered as a client can check the opaque tokens other clients present to it. A public
 * client holds no secret, so anyone could introspect as it: it is always answered inactive.
 */
export const introspectionAllowed = async (_ctx: unknown, client: { clientAuthMethod?: string }) =>
  client.clientAuthMethod !== 'none';
