import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  Browser,
  discover,
  type LiveServer,
  REDIRECT,
  signIn,
  signInPages,
  startLiveServer,
  type Tenant,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * Access tokens an API can check (RFC 9068 JWTs for the resource named by RFC 8707 `resource`,
 * or the workplace's default audience, its issuer), token introspection (RFC 7662), the
 * client_credentials grant, and the `roles` scope's claims: end to end, as a relying party
 * (openid-client) and a resource server (jose alone, against the published JWKS) see them.
 */

const API = 'https://api.acme.example';
const OTHER_API = 'https://billing.acme.example';

const ALL_GRANTS = ['authorization_code', 'refresh_token', 'client_credentials'];

let server: LiveServer;
let kit: ReturnType<typeof tenantKit>;
let tenant: Tenant;
let other: Tenant;
beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
  // Clients that may act as themselves too (client_credentials), which a client registers.
  tenant = await kit.newTenant({}, { grant_types: ALL_GRANTS });
  other = await kit.newTenant({}, { grant_types: ALL_GRANTS });
  for (const t of [tenant, other]) {
    const res = await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/users/update`, {
      query: { _id: 'u-ada' },
      doc: { $set: { roles: ['admin', 'editor'], groups: ['engineering'] } },
    });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  await server?.close();
});

const scopesOf = (scope: string | undefined) => new Set((scope ?? '').split(' ').filter(Boolean));
const isJwt = (token: string) => token.split('.').length === 3;

/** A resource server of `t`'s workplace that accepts tokens for `audience`: jose alone. */
async function resourceServer(t: Tenant, audience: string) {
  const meta = (await discover(t)).serverMetadata();
  const jwks = createRemoteJWKSet(new URL(meta.jwks_uri as string));
  return (token: string) =>
    jwtVerify(token, jwks, { issuer: t.issuer, audience, typ: 'at+jwt', clockTolerance: 0 });
}

/** Signs in as ada with `scope`, naming `resource` (when given) at authorization and at the token endpoint. */
async function signInFor(t: Tenant, o: { scope: string; resource?: string; tokenResource?: string }) {
  const config = await discover(t);
  const { url, verifier, state } = await authorizationRequest(config, {
    scope: o.scope,
    ...(o.resource ? { resource: o.resource } : {}),
  });
  const pages = await signInPages(new Browser(), url);
  const { callback } = pages;
  expect(callback.searchParams.get('error'), callback.href).toBeNull();
  const tokenResource = o.tokenResource ?? o.resource;
  const tokens = await oidc.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: state },
    tokenResource ? { resource: tokenResource } : undefined,
  );
  return { config, tokens, pages };
}

async function clientCredentials(t: Tenant, params: Record<string, string>) {
  const res = await fetch(`${t.issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${t.clientId}:${t.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', ...params }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function introspect(t: Tenant, token: string, as = t) {
  const res = await fetch(`${t.issuer}/token/introspection`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${as.clientId}:${as.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A second client of the same workplace, with its own registered scopes. */
async function anotherClient(
  t: Tenant,
  scope: string[],
  more: Record<string, unknown> = {},
): Promise<Tenant> {
  const reg = await kit.api(
    'POST',
    `/oidc/${t.workplace}/oidc/registration`,
    { client_name: 'Orders service', redirect_uris: [REDIRECT], scope, ...more },
    { 'x-auth-token': '', authorizarion: `Bearer ${t.oidcToken}` },
  );
  expect(reg.status, reg.text).toBe(201);
  return { ...t, clientId: reg.body.result.client_id, clientSecret: reg.body.result.client_secret };
}

describe('discovery', () => {
  it('advertises introspection, the grant types and the roles scope, and each listed endpoint answers', async () => {
    const meta = (await discover(tenant)).serverMetadata();
    expect(meta.introspection_endpoint).toBe(`${tenant.issuer}/token/introspection`);
    expect(meta.revocation_endpoint_auth_methods_supported).toEqual(
      meta.token_endpoint_auth_methods_supported,
    );
    expect(meta.introspection_endpoint_auth_methods_supported).toEqual([
      'client_secret_basic',
      'client_secret_post',
    ]);
    expect([...(meta.grant_types_supported ?? [])].sort()).toEqual([
      'authorization_code',
      'client_credentials',
      'refresh_token',
    ]);
    expect(meta.scopes_supported).toContain('roles');
    expect(meta.claims_supported).toEqual(expect.arrayContaining(['roles', 'groups']));
    // Introspection without client authentication: the endpoint is there and asks for it.
    const unauthenticated = await fetch(meta.introspection_endpoint as string, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=x',
    });
    expect([400, 401]).toContain(unauthenticated.status);
    expect(((await unauthenticated.json()) as { error: string }).error).toMatch(/invalid_(client|request)/);
    // Every grant listed works for a registered client.
    expect((await clientCredentials(tenant, {})).status).toBe(200);
  });
});

describe('JWT access tokens for a resource server', () => {
  it('carry the RFC 9068 claims, verify with jose, and are refused for another audience', async () => {
    const { tokens, pages } = await signInFor(tenant, { scope: 'openid email', resource: API });
    // The user sees which API the client will use the access at.
    expect(pages.consentHtml).toContain(`To be used at: <code>${API}</code>`);
    expect(isJwt(tokens.access_token)).toBe(true);
    expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
    const { payload } = await (await resourceServer(tenant, API))(tokens.access_token);
    expect(Object.keys(payload).sort()).toEqual(
      // grant_id: the grant it was issued under, which the data routes check is still live.
      ['aud', 'client_id', 'exp', 'grant_id', 'iat', 'iss', 'jti', 'scope', 'sub'].sort(),
    );
    expect(payload).toMatchObject({ iss: tenant.issuer, aud: API, sub: 'u-ada', client_id: tenant.clientId });
    expect(payload.scope).toBe('email');
    // The ID token is still there, for the client.
    expect(decodeJwt(tokens.id_token as string).aud).toBe(tenant.clientId);

    await expect((await resourceServer(tenant, OTHER_API))(tokens.access_token)).rejects.toThrow(
      joseErrors.JWTClaimValidationFailed,
    );
  });

  it('of another workplace are refused: other keys, other issuer', async () => {
    const { tokens } = await signInFor(other, { scope: 'openid', resource: API });
    const verify = await resourceServer(tenant, API);
    await expect(verify(tokens.access_token)).rejects.toThrow(joseErrors.JWKSNoMatchingKey);
    // Even a resource server that looked only at the issuer would refuse it.
    await expect((await resourceServer(other, API))(tokens.access_token)).resolves.toBeTruthy();
    expect(decodeJwt(tokens.access_token).iss).toBe(other.issuer);
  });

  it('name the default audience, the issuer, when the token request names no resource and no openid', async () => {
    const cc = await clientCredentials(tenant, {});
    expect(cc.status).toBe(200);
    const { payload } = await (await resourceServer(tenant, tenant.issuer))(cc.body.access_token as string);
    expect(payload.aud).toBe(tenant.issuer);
    // A sign-in without openid (plain OAuth) gets it with no resource named anywhere.
    const oauth = await signInFor(tenant, { scope: 'roles' });
    const { payload: user } = await (await resourceServer(tenant, tenant.issuer))(oauth.tokens.access_token);
    expect(user).toMatchObject({ sub: 'u-ada', scope: 'roles', roles: ['admin', 'editor'] });
    expect(oauth.tokens.id_token).toBeUndefined();
    // A sign-in that named none at authorization can name the default at the token endpoint.
    const { tokens } = await signInFor(tenant, { scope: 'openid profile', tokenResource: tenant.issuer });
    expect((await (await resourceServer(tenant, tenant.issuer))(tokens.access_token)).payload.scope).toBe(
      'profile',
    );
  });

  it('are opaque for userinfo when a sign-in with openid names no resource; userinfo refuses a JWT', async () => {
    const plain = await signInFor(tenant, { scope: 'openid email' });
    expect(plain.pages.consentHtml).not.toContain('To be used at');
    expect(isJwt(plain.tokens.access_token)).toBe(false);
    expect((await oidc.fetchUserInfo(plain.config, plain.tokens.access_token, 'u-ada')).email).toBe(
      'ada@acme.example',
    );
    const jwt = await signInFor(tenant, { scope: 'openid email', resource: API });
    await expect(oidc.fetchUserInfo(jwt.config, jwt.tokens.access_token, 'u-ada')).rejects.toThrow();
  });

  it('come from a refresh for any resource the authorization named, one at a time', async () => {
    const config = await discover(tenant);
    const { url, verifier, state } = await authorizationRequest(config, {
      scope: 'openid offline_access email',
      resource: API,
    });
    url.searchParams.append('resource', OTHER_API);
    const callback = await signIn(new Browser(), url);
    // Two resources granted: each token request picks one.
    const checks = { pkceCodeVerifier: verifier, expectedState: state };
    const tokens = await oidc.authorizationCodeGrant(config, callback, checks, { resource: OTHER_API });
    expect(decodeJwt(tokens.access_token).aud).toBe(OTHER_API);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, { resource: API });
    expect((await (await resourceServer(tenant, API))(refreshed.access_token)).payload.sub).toBe('u-ada');
    // A refresh naming none gets the opaque userinfo token again.
    const plain = await oidc.refreshTokenGrant(
      config,
      refreshed.refresh_token ?? (tokens.refresh_token as string),
    );
    expect(isJwt(plain.access_token)).toBe(false);
    expect((await oidc.fetchUserInfo(config, plain.access_token, 'u-ada')).sub).toBe('u-ada');
  });

  it('refuse a resource that is not an https URL, or has a query or a fragment', async () => {
    for (const resource of [
      'http://api.acme.example',
      'https://api.acme.example/?x=1',
      'https://api.acme.example/#f',
      'urn:acme:api',
      'not a uri',
      'https://user@api.acme.example',
    ]) {
      const res = await clientCredentials(tenant, { resource });
      expect(res.status, resource).toBe(400);
      expect(res.body.error, resource).toBe('invalid_target');
    }
    expect((await clientCredentials(tenant, { resource: 'http://127.0.0.1:8080/api' })).status).toBe(200);
    // At the authorization endpoint, the refusal comes back to the client.
    const { url: refused } = await authorizationRequest(await discover(tenant), {
      scope: 'openid',
      resource: 'http://api.acme.example',
    });
    const back = await new Browser().follow(refused.href, refused.origin);
    expect(back.left?.searchParams.get('error'), back.left?.href).toBe('invalid_target');
    // A token request may not name a resource the authorization did not.
    const config = await discover(tenant);
    const { url, verifier, state } = await authorizationRequest(config, { scope: 'openid', resource: API });
    const callback = await signIn(new Browser(), url);
    await expect(
      oidc.authorizationCodeGrant(
        config,
        callback,
        { pkceCodeVerifier: verifier, expectedState: state },
        { resource: OTHER_API },
      ),
    ).rejects.toMatchObject({ error: 'invalid_target' });
  });

  it('expire after token_timeout, as do opaque ones: introspection then answers inactive', async () => {
    // Long enough that a sign-in on a loaded machine still finds both tokens alive; the wait
    // below goes by the tokens' own exp, not by a guess.
    const lifetime = 5;
    const t = await kit.newTenant({ token_timeout: lifetime }, { grant_types: ALL_GRANTS });
    const cc = await clientCredentials(t, { resource: API });
    expect(cc.body.expires_in).toBe(lifetime);
    const token = cc.body.access_token as string;
    const verify = await resourceServer(t, API);
    const { payload } = await verify(token);
    expect((payload.exp as number) - (payload.iat as number)).toBe(lifetime);
    const opaque = (await signInFor(t, { scope: 'openid' })).tokens.access_token;
    const alive = (await introspect(t, opaque)).body;
    expect(alive.active).toBe(true);
    expect((alive.exp as number) - (alive.iat as number)).toBe(lifetime);
    const lastExp = Math.max(payload.exp as number, alive.exp as number);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastExp * 1000 - Date.now()) + 1100));
    await expect(verify(token)).rejects.toThrow(joseErrors.JWTExpired);
    expect((await introspect(t, opaque)).body).toEqual({ active: false });
  });
});

describe('introspection', () => {
  it('answers active with the token claims, then inactive after revocation', async () => {
    const { config, tokens } = await signInFor(tenant, { scope: 'openid email' });
    const active = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(active).toMatchObject({
      active: true,
      sub: 'u-ada',
      client_id: tenant.clientId,
      scope: 'openid email',
      iss: tenant.issuer,
      token_type: 'Bearer',
    });
    expect(active).not.toHaveProperty('aud');
    // Another confidential client of the workplace (a resource server's own) may introspect it.
    const service = await anotherClient(tenant, ['orders:read']);
    expect((await introspect(tenant, tokens.access_token, service)).body.active).toBe(true);
    // A client of another workplace is not a client here.
    expect((await introspect(tenant, tokens.access_token, other)).status).toBe(401);

    await oidc.tokenRevocation(config, tokens.access_token);
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });

    // Refresh tokens too.
    const plain = await signInFor(tenant, { scope: 'openid offline_access' });
    expect((await oidc.tokenIntrospection(config, plain.tokens.access_token)).active).toBe(true);
    const refresh = plain.tokens.refresh_token as string;
    expect((await oidc.tokenIntrospection(config, refresh)).active).toBe(true);
    await oidc.tokenRevocation(config, refresh);
    expect((await oidc.tokenIntrospection(config, refresh)).active).toBe(false);
    expect((await introspect(tenant, 'not-a-token')).body).toEqual({ active: false });
  });

  it('and revocation take a user’s JWT access tokens: active while its grant lives, revoked with it (oidc/structured-tokens.ts)', async () => {
    const { tokens } = await signInFor(tenant, { scope: 'openid', resource: API });
    const res = await introspect(tenant, tokens.access_token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ active: true, aud: API, sub: 'u-ada', client_id: tenant.clientId });
    const config = await discover(tenant);
    await oidc.tokenRevocation(config, tokens.access_token);
    expect((await introspect(tenant, tokens.access_token)).body).toEqual({ active: false });
  });
});

describe('client_credentials', () => {
  it('gives a JWT whose sub is the client, no refresh token, only registered scopes, token_timeout', async () => {
    const service = await anotherClient(tenant, ['orders:read', 'orders:write', 'offline_access'], {
      grant_types: ALL_GRANTS,
    });
    const res = await clientCredentials(service, { scope: 'orders:read', resource: API });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).not.toHaveProperty('refresh_token');
    expect(res.body).not.toHaveProperty('id_token');
    expect(res.body.scope).toBe('orders:read');
    expect(res.body.expires_in).toBe(3600);
    const { payload } = await (await resourceServer(tenant, API))(res.body.access_token as string);
    expect(payload.sub).toBe(service.clientId);
    expect(payload.client_id).toBe(service.clientId);
    expect(payload).not.toHaveProperty('roles');
    expect((payload.exp as number) - (payload.iat as number)).toBe(3600);

    for (const scope of ['email', 'openid', 'offline_access', 'orders:read never:registered']) {
      const refused = await clientCredentials(service, { scope });
      expect(refused.status, scope).toBe(400);
      expect(refused.body.error, scope).toBe('invalid_scope');
    }
    // With no scope asked, none is given.
    const bare = await clientCredentials(service, {});
    expect(bare.body).not.toHaveProperty('scope');
    expect(decodeJwt(bare.body.access_token as string)).not.toHaveProperty('scope');
    // openid-client agrees.
    const config = await discover(service);
    const viaClient = await oidc.clientCredentialsGrant(config, { scope: 'orders:write' });
    expect(viaClient.scope).toBe('orders:write');
    expect(viaClient.refresh_token).toBeUndefined();
  });
});

describe('grant_types', () => {
  it('gives client_credentials only to a client that registered it', async () => {
    const portal = await anotherClient(tenant, ['orders:read']);
    const refused = await clientCredentials(portal, { scope: 'orders:read' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error).toBe('unauthorized_client');
    // Registering it later lets it.
    const changed = await kit.api(
      'POST',
      `/oidc/${tenant.workplace}/oidc/registration?client_id=${portal.clientId}`,
      { grant_types: ALL_GRANTS },
      { 'x-auth-token': '', authorizarion: `Bearer ${tenant.oidcToken}` },
    );
    expect(changed.status, changed.text).toBe(200);
    expect((await clientCredentials(portal, { scope: 'orders:read' })).status).toBe(200);
  });
});

describe('a client secret past its client_secret_expires_at', () => {
  it('authenticates the client no more, at the token, introspection and revocation endpoints', async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 3;
    const service = await anotherClient(tenant, ['orders:read'], {
      client_secret_expires_at: expiresAt,
      grant_types: ALL_GRANTS,
    });
    const before = await clientCredentials(service, { scope: 'orders:read' });
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    const token = before.body.access_token as string;
    // Past the expiry by less than the provider's clock tolerance (15 s), which is for other
    // parties' clocks, not for a date this server stores.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt * 1000 - Date.now()) + 200));
    const after = await clientCredentials(service, { scope: 'orders:read' });
    expect(after.status, JSON.stringify(after.body)).toBe(401);
    expect(after.body.error).toBe('invalid_client');
    expect((await introspect(tenant, token, service)).status).toBe(401);
    const revoked = await fetch(`${tenant.issuer}/token/revocation`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${service.clientId}:${service.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token }),
    });
    expect(revoked.status).toBe(401);
  });
});

describe('the roles scope', () => {
  it('releases roles and groups in userinfo, the JWT access token, and the ID token only beside a JWT', async () => {
    const opaque = await signInFor(tenant, { scope: 'openid email roles' });
    expect(scopesOf(opaque.tokens.scope)).toEqual(new Set(['openid', 'email', 'roles']));
    const idToken = decodeJwt(opaque.tokens.id_token as string);
    expect(idToken).not.toHaveProperty('roles');
    expect(idToken).not.toHaveProperty('groups');
    expect(idToken).not.toHaveProperty('email');
    expect(await oidc.fetchUserInfo(opaque.config, opaque.tokens.access_token, 'u-ada')).toEqual({
      sub: 'u-ada',
      email: 'ada@acme.example',
      email_verified: true,
      roles: ['admin', 'editor'],
      groups: ['engineering'],
    });

    // Introspection shows what the token carries.
    expect(await oidc.tokenIntrospection(opaque.config, opaque.tokens.access_token)).toMatchObject({
      roles: ['admin', 'editor'],
      groups: ['engineering'],
    });

    // With a JWT access token, which userinfo refuses, the ID token carries the scopes' claims
    // (oidc-provider's conformIdTokenClaims).
    const jwt = await signInFor(tenant, { scope: 'openid email roles', resource: API });
    expect(decodeJwt(jwt.tokens.id_token as string)).toMatchObject({
      email: 'ada@acme.example',
      roles: ['admin', 'editor'],
      groups: ['engineering'],
    });
    const { payload } = await (await resourceServer(tenant, API))(jwt.tokens.access_token);
    expect(payload.roles).toEqual(['admin', 'editor']);
    expect(payload.groups).toEqual(['engineering']);
    expect(payload).not.toHaveProperty('email');
    expect(scopesOf(payload.scope as string)).toEqual(new Set(['email', 'roles']));
  });

  it('without it, neither userinfo, the ID token nor the access token has roles or groups', async () => {
    const opaque = await signInFor(tenant, { scope: 'openid email profile' });
    const info = await oidc.fetchUserInfo(opaque.config, opaque.tokens.access_token, 'u-ada');
    expect(info).not.toHaveProperty('roles');
    expect(info).not.toHaveProperty('groups');
    expect(info.name).toBe('Ada Lovelace');
    const jwt = await signInFor(tenant, { scope: 'openid email profile', resource: API });
    for (const token of [jwt.tokens.access_token, jwt.tokens.id_token as string]) {
      expect(decodeJwt(token)).not.toHaveProperty('roles');
      expect(decodeJwt(token)).not.toHaveProperty('groups');
    }
    expect((await oidc.tokenIntrospection(opaque.config, opaque.tokens.access_token)).roles).toBeUndefined();
  });

  it('releases only lists of strings', async () => {
    const t = await kit.newTenant();
    const res = await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/users/update`, {
      query: { _id: 'u-ada' },
      doc: { $set: { roles: 'admin', groups: ['eng', 7], email_verified: 'yes' } },
    });
    expect(res.status, res.text).toBe(200);
    const opaque = await signInFor(t, { scope: 'openid email roles' });
    expect(await oidc.fetchUserInfo(opaque.config, opaque.tokens.access_token, 'u-ada')).toEqual({
      sub: 'u-ada',
      email: 'ada@acme.example',
    });
    const jwt = await signInFor(t, { scope: 'openid roles', resource: API });
    expect(decodeJwt(jwt.tokens.access_token)).not.toHaveProperty('roles');
    expect(decodeJwt(jwt.tokens.access_token)).not.toHaveProperty('groups');
  });
});
