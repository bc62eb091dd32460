import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import Provider, {
  type Account,
  type Adapter,
  type AdapterPayload,
  type KoaContextWithOIDC,
  errors as providerErrors,
} from 'oidc-provider';
import type { Sql } from '../db/connection/sql.js';
import { findClientForProvider } from '../db/platform/oidc-clients.js';
import {
  consumePayload,
  destroyPayload,
  ensureCookieSecret,
  findPayload,
  findProviderState,
  type ProviderState,
  publishedKeys,
  purgeExpiredPayloads,
  revokeGrant,
  upsertPayload,
} from '../db/platform/oidc-provider.js';
import { RETRY_AFTER_SECONDS, toAppError } from '../errors.js';
import { registerProviderCache } from '../metrics.js';
import type { JsonObject } from '../mongo/value/json.js';
import { secretMatchesHash } from '../secrets.js';
import { GRANT_CLAIM, LIST_CLAIMS, userClaims } from './claims.js';
import { grantTypesOf } from './client-metadata.js';
import { CONTACTS, extraClientMetadata, REGISTERED_SCOPE } from './extra-client-metadata.js';
import { generateSigningKey } from './keys.js';
import { logoutPage, messagePage, PAGE_HEADERS, scriptHashesOnly } from './pages.js';
import { rotateRefreshToken } from './refresh-tokens.js';
import { introspectionAllowed, resourceIndicators } from './resources.js';
import { answerStructuredTokens } from './structured-tokens.js';
import { findUserBySubject, subjectOf } from './users.js';

/**
 * Makes the provider take the scheme and host of every URL it emits (discovery, redirects, form
 * actions, cookies' Secure flag) from the public URL, whatever the request's Host or
 * X-Forwarded-* headers say: a request cannot change another's endpoints (a shared cache of the
 * discovery document could otherwise be poisoned), and TLS ending at a proxy still gives https
 * URLs and Secure cookies. Koa reads both through these two getters of the app's request.
 */
function pinOrigin(provider: Provider, publicUrl: URL): void {
  const protocol = publicUrl.protocol.slice(0, -1);
  const { host } = publicUrl;
  Object.defineProperty(provider.request, 'protocol', { get: () => protocol, configurable: true });
  Object.defineProperty(provider.request, 'host', { get: () => host, configurable: true });
}

/**
 * The provider's answers when the client authentication sent in an Authorization header cannot
 * even be read. RFC 6749 section 5.2 wants every failed authentication through that header
 * answered `401 invalid_client` with WWW-Authenticate; oidc-provider answers these `400
 * invalid_request`. (Several mechanisms at once stays a 400: that request is malformed.)
 */
const UNREADABLE_BASIC_AUTH = new Set([
  'invalid authorization header value format',
  'client_id and client_secret in the authorization header are not properly encoded',
  'client_secret must be provided in the Authorization header',
]);

/** A context as provider.use() middleware gets it. */
type ProviderContext = Parameters<Parameters<Provider['use']>[0]>[0];

function answerFailedBasicAuthWith401(ctx: ProviderContext, issuer: string): void {
  const body = ctx.body as { error?: unknown; error_description?: unknown } | undefined;
  if (
    ctx.status !== 400 ||
    ctx.headers.authorization === undefined ||
    body?.error !== 'invalid_request' ||
    !UNREADABLE_BASIC_AUTH.has(String(body.error_description))
  ) {
    return;
  }
  const description = `client authentication failed: ${body.error_description}`;
  ctx.status = 401;
  ctx.body = { error: 'invalid_client', error_description: description };
  ctx.set('www-authenticate', `Basic realm="${issuer}", error="invalid_client"`);
}

/**
 * A grant the client did not register is `unauthorized_client` in RFC 6749 section 5.2; the
 * provider answers `invalid_request`, which tells a client to fix its request rather than its
 * registration.
 */
function answerUnregisteredGrantAsUnauthorizedClient(ctx: ProviderContext): void {
  const body = ctx.body as { error?: unknown; error_description?: unknown } | undefined;
  if (
    ctx.status === 400 &&
    body?.error === 'invalid_request' &&
    body.error_description === 'requested grant type is not allowed for this client'
  )
    body.error = 'unauthorized_client';
}

/** Scopes the provider knows, and the claims each releases from the user document. */
export const SCOPE_CLAIMS: Record<string, string[]> = {
  openid: ['sub'],
  profile: [
    'name',
    'given_name',
    'family_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
  ],
  email: ['email', 'email_verified'],
  phone: ['phone_number', 'phone_number_verified'],
  address: ['address'],
  // RFC 9068 section 2.2.3.1; also in JWT access tokens (extraTokenClaims in build()).
  roles: [...LIST_CLAIMS],
};
const SCOPES = [...Object.keys(SCOPE_CLAIMS), 'offline_access'];

/** ID tokens live at most a day, so a retired key is published for a day after its retirement. */
export const RETIRED_KEY_SECONDS = 86_400;

/** The request's workplace state, attached to the raw request before the provider sees it. */
interface ProviderRequest extends IncomingMessage {
  originalUrl?: string;
  oidcState?: ProviderState & { workplace: string };
}

type WorkplaceState = ProviderState & { workplace: string };

/**
 * The settings a provider works with: those read for the request at hand, or (for calls outside a
 * request, such as saving a grant from the consent page) the latest read for its workplace.
 */
function stateOf(ctx: KoaContextWithOIDC | undefined, latest: { state: WorkplaceState }): WorkplaceState {
  return (ctx?.req as ProviderRequest | undefined)?.oidcState ?? latest.state;
}

/** The user's claims: only members that are present, of the types OpenID Connect gives them. */
function claimsOf(user: JsonObject, sub: string): Record<string, unknown> {
  return userClaims(user, sub, Object.values(SCOPE_CLAIMS).flat());
}

/**
 * Runs database work for the provider. The provider answers any error it did not create with
 * `500 server_error`; a database that is unavailable (the same failures errors.ts answers with 503
 * everywhere else) becomes its own exposed error instead: `503 temporarily_unavailable`, which
 * the provider renders in its format (JSON, the sign-in error page, or the redirect of the
 * authorization endpoint) and the middleware in build() gives Retry-After.
 */
async function fromDatabase<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const e = toAppError(err, 0);
    if (e.status !== 503) throw err;
    const unavailable = new providerErrors.OIDCProviderError(503, 'temporarily_unavailable', { cause: err });
    unavailable.expose = true;
    unavailable.error_description = e.message;
    throw unavailable;
  }
}

function adapterFor(sql: Sql, workplaceId: string, grantEnded: () => void) {
  return class PostgresAdapter implements Adapter {
    constructor(readonly model: string) {}

    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      return fromDatabase(async () => {
        await upsertPayload(sql, workplaceId, this.model, id, payload as Record<string, unknown>, expiresIn);
        // Now and then, drop what has expired everywhere.
        if (Math.random() < 0.01) await purgeExpiredPayloads(sql);
      });
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') return fromDatabase(() => clientPayload(sql, workplaceId, id));
      return this.#findBy('id', id);
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.#findBy('uid', uid);
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return this.#findBy('user_code', userCode);
    }

    #findBy(column: 'id' | 'uid' | 'user_code', value: string): Promise<AdapterPayload | undefined> {
      return fromDatabase(
        async () =>
          (await findPayload(sql, workplaceId, this.model, { column, value })) as AdapterPayload | undefined,
      );
    }

    consume(id: string): Promise<void> {
      return fromDatabase(() => consumePayload(sql, workplaceId, this.model, id));
    }

    async destroy(id: string): Promise<void> {
      await fromDatabase(() => destroyPayload(sql, workplaceId, this.model, id));
      if (this.model === 'Grant') grantEnded();
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await fromDatabase(() => revokeGrant(sql, workplaceId, grantId));
      grantEnded();
    }
  };
}

/**
 * A registered client as oidc-provider metadata, read on every use so that a change or a deletion
 * takes effect at once. `client_secret` carries the SHA-256 (hex) of the secret: the provider's
 * comparison is replaced to hash the presented secret first (see build()). Every client may ask
 * for the standard scopes; its own scopes and its contacts go through extra-client-metadata.ts.
 */
async function clientPayload(
  sql: Sql,
  workplaceId: string,
  clientId: string,
): Promise<AdapterPayload | undefined> {
  const c = await findClientForProvider(sql, workplaceId, clientId);
  if (!c) return undefined;
  const m = c.metadata;
  return {
    client_id: c.client_id,
    // A public client has no secret (oidc-provider refuses one with token_endpoint_auth_method none).
    ...(c.secretHash !== null
      ? { client_secret: c.secretHash.toString('hex'), client_secret_expires_at: m.client_secret_expires_at }
      : {}),
    client_id_issued_at: c.issued_at,
    redirect_uris: m.redirect_uris,
    post_logout_redirect_uris: m.post_logout_redirect_uris,
    response_types: m.response_types,
    // As registered (client_credentials only by a confidential client that asked for it).
    grant_types: grantTypesOf(m),
    application_type: m.application_type,
    token_endpoint_auth_method: m.token_endpoint_auth_method,
    scope: [...new Set([...SCOPES, ...m.scope])].join(' '),
    [REGISTERED_SCOPE]: m.scope.join(' '),
    ...(m.client_name !== undefined ? { client_name: m.client_name } : {}),
    ...(m.logo_uri !== undefined ? { logo_uri: m.logo_uri } : {}),
    ...(m.client_uri !== undefined ? { client_uri: m.client_uri } : {}),
    ...(m.tos_uri !== undefined ? { tos_uri: m.tos_uri } : {}),
    ...(m.policy_uri !== undefined ? { policy_uri: m.policy_uri } : {}),
    ...(m.contacts !== undefined ? { [CONTACTS]: m.contacts } : {}),
  } as AdapterPayload;
}

export interface ProviderEntry {
  provider: Provider;
  state: ProviderState & { workplace: string };
  /** The issuer: PUBLIC_URL + /oidc/{workplace}. Every URL the provider emits starts with it. */
  issuer: string;
  /** Serves a request whose URL is below the issuer path. */
  serve(req: IncomingMessage, res: ServerResponse, pathBelowIssuer: string): void;
}

interface Cached {
  provider: Provider;
  latest: { state: WorkplaceState };
  callback: (req: IncomingMessage, res: ServerResponse) => void;
  key: string;
  /** The issuer's path, which the key includes: parsed once per build, not per request. */
  issuerPath: string;
}

/**
 * How many workplaces' providers one process keeps built. Each holds its keys, its middleware
 * stack and its compiled client schema; a process serving more workplaces than this rebuilds the
 * least recently used one on its next request (a database read and a key import, no state lost:
 * sessions, grants and tokens live in the database).
 */
export const MAX_CACHED_PROVIDERS = 1000;

/**
 * One oidc-provider instance per workplace, built on first use and rebuilt when what it is built
 * from changes (its signing keys, its issuer, or the workplace itself). Settings that vary per
 * request (lifetimes, the users collection) are read on every request, so a change applies to
 * tokens issued after it without a rebuild; clients are read through the adapter on every use.
 * At most `maxProviders` are kept, least recently used first out; a workplace found deleted (by
 * this process or any other) is dropped on its next request.
 */
export class ProviderRegistry {
  readonly #cache = new Map<string, Cached>();
  /**
   * Told when this process ends a grant of a workplace (a revocation, a sign-out), at once: every
   * process also hears of it through migration 0025's announcement, but this one answers its next
   * request before that arrives.
   */
  grantEnded: (workplace: string) => void = () => {};

  constructor(
    private readonly sql: Sql,
    private readonly issuerBase: () => string,
    private readonly log: FastifyBaseLogger | undefined,
    private readonly maxProviders = MAX_CACHED_PROVIDERS,
  ) {
    registerProviderCache(this);
  }

  /** How many providers are built and kept. */
  get size(): number {
    return this.#cache.size;
  }

  /** Drops a workplace's provider, as when the workplace is deleted. */
  forget(workplace: string): void {
    this.#cache.delete(workplace);
  }

  issuerOf(workplace: string): string {
    return `${this.issuerBase().replace(/\/$/, '')}/oidc/${workplace}`;
  }

  async get(workplace: string): Promise<ProviderEntry | undefined> {
    let state = await findProviderState(this.sql, workplace);
    if (!state) {
      this.#cache.delete(workplace);
      return undefined;
    }
    if (state.keysVersion === null || state.cookieSecret === null) {
      if (state.keysVersion === null) await generateSigningKey(this.sql, state.workplaceId, false);
      if (state.cookieSecret === null)
        await ensureCookieSecret(this.sql, state.workplaceId, randomBytes(32).toString('base64url'));
      state = (await findProviderState(this.sql, workplace)) as ProviderState;
    }
    const full = { ...state, workplace };
    const issuer = this.issuerOf(workplace);
    const key = `${state.workplaceId}|${state.keysVersion}|${issuer}|${state.cookieSecret}`;
    let cached = this.#cache.get(workplace);
    // Map order is insertion order: taking the entry out and putting it back marks it most recent.
    this.#cache.delete(workplace);
    if (!cached || cached.key !== key) {
      const latest = { state: full };
      const provider = await this.build(full, issuer, latest);
      cached = {
        provider,
        callback: provider.callback(),
        key,
        latest,
        issuerPath: new URL(issuer).pathname,
      };
    }
    this.#cache.set(workplace, cached);
    while (this.#cache.size > this.maxProviders) {
      this.#cache.delete(this.#cache.keys().next().value as string);
    }
    cached.latest.state = full;
    const { callback, provider, issuerPath } = cached;
    return {
      provider,
      state: full,
      issuer,
      serve(req, res, pathBelowIssuer) {
        const r = req as ProviderRequest;
        // oidc-provider finds the path it is mounted at by comparing originalUrl with url: the
        // issuer's path, PUBLIC_URL's own path included (a proxy may strip that prefix).
        r.originalUrl = issuerPath + pathBelowIssuer;
        r.url = pathBelowIssuer;
        r.oidcState = full;
        callback(r, res);
      },
    };
  }

  /** Attaches the workplace state to a raw request, for interaction routes that call the provider directly. */
  static attach(req: IncomingMessage, entry: ProviderEntry): void {
    (req as ProviderRequest).oidcState = entry.state;
  }

  private async build(
    state: WorkplaceState,
    issuer: string,
    latest: { state: WorkplaceState },
  ): Promise<Provider> {
    const { workplace } = state;
    const publicUrl = new URL(issuer);
    // Cookies are sent back only below the issuer's path as the browser sees it (PUBLIC_URL's
    // path included), and only over TLS when the public URL is https.
    const cookie = {
      httpOnly: true,
      sameSite: 'lax',
      path: publicUrl.pathname,
      secure: publicUrl.protocol === 'https:',
    } as const;
    const keys = await publishedKeys(this.sql, state.workplaceId, RETIRED_KEY_SECONDS);
    const sql = this.sql;
    const provider = new Provider(issuer, {
      adapter: adapterFor(sql, state.workplaceId, () => this.grantEnded(workplace)),
      clients: [],
      jwks: { keys: keys.map((k) => k.private_jwk) as never },
      async findAccount(ctx, sub): Promise<Account | undefined> {
        const s = stateOf(ctx, latest);
        const user = await fromDatabase(() => findUserBySubject(sql, s.workplace, s.collection, sub));
        if (!user || subjectOf(user) !== sub) return undefined;
        return { accountId: sub, claims: async () => claimsOf(user, sub) as never };
      },
      claims: SCOPE_CLAIMS,
      scopes: SCOPES,
      extraClientMetadata: extraClientMetadata((): Provider => provider),
      responseTypes: ['code'],
      pkce: { required: () => true },
      cookies: {
        keys: [state.cookieSecret as string],
        // Names and paths of their own, so that two workplaces on one host never share a session.
        names: {
          session: `_session_${workplace}`,
          interaction: `_interaction_${workplace}`,
          resume: `_interaction_resume_${workplace}`,
        },
        long: cookie,
        short: cookie,
      },
      interactions: { url: (_ctx, interaction) => `${issuer}/interaction/${interaction.uid}` },
      // The methods the registered clients can use (a confidential client holds a secret, stored
      // hashed; a public one has none): the provider's default also lists methods that no client
      // here could ever authenticate with.
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
      rotateRefreshToken,
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: false },
        revocation: { enabled: true },
        userinfo: { enabled: true },
        // Access tokens an API can check: oidc/resources.ts has the rules.
        introspection: { enabled: true, allowedPolicy: introspectionAllowed },
        clientCredentials: { enabled: true },
        resourceIndicators: resourceIndicators(issuer, (ctx) => stateOf(ctx, latest).tokenTimeout),
        rpInitiatedLogout: {
          enabled: true,
          async logoutSource(ctx, form) {
            ctx.type = 'html';
            ctx.body = logoutPage(form, ctx.oidc.client?.metadata().client_name as string | undefined);
          },
          async postLogoutSuccessSource(ctx) {
            ctx.type = 'html';
            ctx.body = messagePage('Signed out', 'You have been signed out.');
          },
        },
      },
      // The grant a user's token was issued under, so that our own API stops the token when the
      // grant ends (oidc/access-tokens.ts); and RFC 9068 section 2.2.3.1: the user's roles and
      // groups, when the token has the `roles` scope.
      async extraTokenClaims(ctx, token) {
        const sub = 'accountId' in token ? token.accountId : undefined;
        if (!sub) return undefined;
        const grantId = 'grantId' in token && typeof token.grantId === 'string' ? token.grantId : undefined;
        const grant = grantId ? { [GRANT_CLAIM]: grantId } : {};
        if (
          !String(token.scope ?? '')
            .split(' ')
            .includes('roles')
        )
          return grant;
        const s = stateOf(ctx, latest);
        const user = await fromDatabase(() => findUserBySubject(sql, s.workplace, s.collection, sub));
        if (!user || subjectOf(user) !== sub) return grant;
        const { sub: _, ...lists } = userClaims(user, sub, LIST_CLAIMS);
        return { ...lists, ...grant };
      },
      ttl: {
        AccessToken: (ctx) => stateOf(ctx, latest).tokenTimeout,
        ClientCredentials: (ctx) => stateOf(ctx, latest).tokenTimeout,
        IdToken: (ctx) => stateOf(ctx, latest).idTokenTimeout,
        RefreshToken: (ctx) => stateOf(ctx, latest).refreshTimeout,
        Session: (ctx) => stateOf(ctx, latest).sessionTimeout,
        Grant: (ctx) => Math.max(stateOf(ctx, latest).refreshTimeout, stateOf(ctx, latest).sessionTimeout),
        Interaction: 3600,
        AuthorizationCode: 60,
      },
      async renderError(ctx, out) {
        ctx.type = 'html';
        ctx.body = messagePage('Sign-in failed', `${out.error}: ${out.error_description ?? ''}`);
      },
    });
    // Secrets are stored as SHA-256 hashes: hash what the client presents, then compare.
    provider.Client.prototype.compareClientSecret = function compareClientSecret(
      this: { clientSecret?: string },
      actual: string,
    ) {
      return Promise.resolve(secretMatchesHash(actual, Buffer.from(this.clientSecret ?? '', 'hex')));
    };
    // A secret stops at its client_secret_expires_at. The provider's own check lets it work for its
    // clock tolerance past that (15 s): a tolerance meant for other parties' clocks (token and
    // request object times), not for a date this server stores and compares with its own clock.
    // Client authentication (token, introspection, revocation, PAR) then fails as a wrong secret
    // does, 401 invalid_client (RFC 6749 section 5.2), where the provider's check answered 400; a
    // secret used to sign or encrypt a request object keeps the provider's own error.
    provider.Client.prototype.checkClientSecretExpiration = function checkClientSecretExpiration(
      this: { clientId: string; clientSecretExpiresAt?: number },
      message: string,
      errorOverride?: string,
    ) {
      if (!this.clientSecretExpiresAt || Date.now() / 1000 < this.clientSecretExpiresAt) return;
      const detail = `${message}: client_id ${this.clientId}, client_secret expired at ${this.clientSecretExpiresAt}`;
      if (!errorOverride) throw new providerErrors.InvalidClientAuth(detail);
      const err = new providerErrors.InvalidClient(message, detail);
      Object.assign(err, { error: errorOverride, message: errorOverride });
      throw err;
    };
    provider.on('server_error', (_ctx, err) => this.log?.error({ err, workplace }, 'OpenID Provider error'));
    pinOrigin(provider, publicUrl);
    // Outermost (provider.use runs around every route).
    provider.use(async (ctx, next) => {
      // Before the route runs: the form_post response adds its script's hash to this policy.
      ctx.set(PAGE_HEADERS);
      await next();
      await answerStructuredTokens(ctx, {
        sql,
        workplaceId: state.workplaceId,
        issuer,
        keys: keys.map((k) => k.private_jwk as Record<string, unknown>),
        grantEnded: () => this.grantEnded(workplace),
      });
      const policy = ctx.response.get('content-security-policy');
      if (typeof policy === 'string') ctx.set('content-security-policy', scriptHashesOnly(policy));
      if (ctx.status === 503) ctx.set('retry-after', String(RETRY_AFTER_SECONDS));
      answerFailedBasicAuthWith401(ctx, issuer);
      answerUnregisteredGrantAsUnauthorizedClient(ctx);
      // The standard scopes, which every client has: the provider's own list also holds the
      // scopes of whichever clients this process has met (see extra-client-metadata.ts).
      if ((ctx as { oidc?: { route?: string } }).oidc?.route === 'discovery' && ctx.status === 200) {
        const body = ctx.body as Record<string, unknown>;
        body.scopes_supported = [...SCOPES];
        // Revocation authenticates clients as the token endpoint does (a public client revokes its
        // own tokens); introspection only confidential ones (see introspectionAllowed).
        const methods = body.token_endpoint_auth_methods_supported as string[];
        body.revocation_endpoint_auth_methods_supported = methods;
        body.introspection_endpoint_auth_methods_supported = methods.filter((m) => m !== 'none');
      }
    });
    return provider;
  }
}
