import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Browser,
  discover,
  type LiveServer,
  REDIRECT,
  signIn,
  startLiveServer,
  type Tenant,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * Discovery advertises exactly what works. The whole document is pinned here, member by member,
 * so that an oidc-provider upgrade or a configuration change cannot advertise something new
 * unnoticed; what the other OIDC test files do not exercise end to end is exercised here:
 * pushed authorization requests (RFC 9126) and DPoP-bound tokens (RFC 9449).
 */

let server: LiveServer;
let tenant: Tenant;
beforeAll(async () => {
  server = await startLiveServer();
  tenant = await tenantKit(server).newTenant();
});
afterAll(async () => {
  await server?.close();
});

/** Each member, and where it is proved to work. */
const ADVERTISED: Record<string, string> = {
  issuer: 'every test',
  authorization_endpoint: 'every sign-in',
  token_endpoint: 'every sign-in',
  userinfo_endpoint: 'oidc-provider.test.ts',
  jwks_uri: 'oidc-tokens.test.ts (a resource server verifies with it)',
  end_session_endpoint: 'oidc-provider.test.ts, oidc-tls-proxy.test.ts',
  revocation_endpoint: 'oidc-hardening.test.ts, oidc-public-clients.test.ts',
  revocation_endpoint_auth_methods_supported: 'oidc-hardening.test.ts, oidc-public-clients.test.ts',
  introspection_endpoint: 'oidc-tokens.test.ts',
  introspection_endpoint_auth_methods_supported: 'oidc-tokens.test.ts',
  pushed_authorization_request_endpoint: 'below',
  dpop_signing_alg_values_supported: 'below',
  token_endpoint_auth_methods_supported: 'oidc-hardening.test.ts, oidc-public-clients.test.ts',
  grant_types_supported: 'oidc-tokens.test.ts (client_credentials), every sign-in',
  response_types_supported: 'every sign-in',
  response_modes_supported: 'oidc-browser.test.ts (form_post), every sign-in (query)',
  code_challenge_methods_supported: 'oidc-public-clients.test.ts',
  scopes_supported: 'oidc-registration-signin.test.ts, oidc-tokens.test.ts (roles)',
  claims_supported: 'oidc-provider.test.ts, oidc-tokens.test.ts',
  claim_types_supported: 'normal claims only',
  claims_parameter_supported: 'false: not supported',
  request_uri_parameter_supported: 'false: not supported',
  subject_types_supported: 'public subjects only',
  id_token_signing_alg_values_supported: 'every sign-in (openid-client checks RS256)',
  authorization_response_iss_parameter_supported: 'every sign-in (openid-client checks iss)',
};

describe('discovery', () => {
  it('advertises these members and no other', async () => {
    const res = await fetch(`${tenant.issuer}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(meta).sort()).toEqual(Object.keys(ADVERTISED).sort());
    expect(meta).toMatchObject({
      response_types_supported: ['code'],
      response_modes_supported: ['form_post', 'fragment', 'query'],
      code_challenge_methods_supported: ['S256'],
      claims_parameter_supported: false,
      request_uri_parameter_supported: false,
      subject_types_supported: ['public'],
      claim_types_supported: ['normal'],
      id_token_signing_alg_values_supported: ['RS256'],
      authorization_response_iss_parameter_supported: true,
    });
    expect([...(meta.dpop_signing_alg_values_supported as string[])].sort()).toEqual([
      'ES256',
      'Ed25519',
      'EdDSA',
    ]);
  });
});

describe('what discovery advertises works', () => {
  it('a pushed authorization request (RFC 9126) signs in', async () => {
    const config = await discover(tenant);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      prompt: 'consent',
    });
    // The browser is sent with the request_uri alone: the parameters stayed at the provider.
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    const callback = await signIn(new Browser(), url);
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()?.sub).toBe('u-ada');
    const me = await oidc.fetchUserInfo(config, tokens.access_token, 'u-ada');
    expect(me.email).toBe('ada@acme.example');
  });

  /** Signs in with DPoP; `offline_access` so that a refresh token comes too. */
  async function signInWithDPoP(config: oidc.Configuration, dpop: oidc.DPoPHandle) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      prompt: 'consent',
    });
    const callback = await signIn(new Browser(), url);
    return oidc.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: verifier, expectedState: state },
      undefined,
      { DPoP: dpop },
    );
  }

  /** Whether userinfo answers an access token, as a bearer token or with a proof of `dpop`'s key. */
  async function userinfoAnswers(config: oidc.Configuration, token: string, dpop?: oidc.DPoPHandle) {
    if (!dpop) {
      const res = await fetch(`${tenant.issuer}/me`, { headers: { authorization: `Bearer ${token}` } });
      return res.status === 200;
    }
    try {
      await oidc.fetchUserInfo(config, token, 'u-ada', { DPoP: dpop });
      return true;
    } catch {
      return false;
    }
  }

  it.each(['ES256', 'EdDSA'] as const)(
    'DPoP (RFC 9449) with %s binds the access token to the key that proves it',
    async (alg) => {
      const config = await discover(tenant);
      const dpop = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair(alg));
      const tokens = await signInWithDPoP(config, dpop);
      expect(tokens.token_type.toLowerCase()).toBe('dpop');
      expect(await userinfoAnswers(config, tokens.access_token, dpop)).toBe(true);
      // Without a proof, or with another key's, the token is refused.
      expect(await userinfoAnswers(config, tokens.access_token)).toBe(false);
      const other = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair(alg));
      expect(await userinfoAnswers(config, tokens.access_token, other)).toBe(false);
      // A confidential client's refresh token is held by its secret, not by the key (RFC 9449
      // section 5): a refresh with a new key gives an access token bound to that key.
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, undefined, {
        DPoP: other,
      });
      expect(await userinfoAnswers(config, refreshed.access_token, other)).toBe(true);
      expect(await userinfoAnswers(config, refreshed.access_token, dpop)).toBe(false);
    },
  );

  it("binds a public client's refresh token to its key as well", async () => {
    const api = tenantKit(server).api;
    const reg = await api(
      'POST',
      `/oidc/${tenant.workplace}/oidc/registration`,
      {
        redirect_uris: [REDIRECT],
        scope: ['email', 'offline_access'],
        token_endpoint_auth_method: 'none',
      },
      { 'x-auth-token': '', authorizarion: `Bearer ${tenant.oidcToken}` },
    );
    expect(reg.status, reg.text).toBe(201);
    const config = await oidc.discovery(
      new URL(tenant.issuer),
      reg.body.result.client_id,
      undefined,
      oidc.None(),
      {
        execute: [oidc.allowInsecureRequests],
      },
    );
    const dpop = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
    const tokens = await signInWithDPoP(config, dpop);
    const other = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
    await expect(
      oidc.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP: other }),
    ).rejects.toThrow();
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, undefined, {
      DPoP: dpop,
    });
    expect(await userinfoAnswers(config, refreshed.access_token, dpop)).toBe(true);
  });
});
