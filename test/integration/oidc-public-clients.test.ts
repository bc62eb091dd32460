import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../secrets.js';
import {
  authorizationRequest,
  Browser,
  type LiveServer,
  signIn,
  startLiveServer,
  type Tenant,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * Public clients (token_endpoint_auth_method `none`): single-page and native applications that
 * cannot keep a secret (RFC 8252, the OAuth browser-based-apps BCP). Registered through the API,
 * then used as a relying party uses them, with openid-client: PKCE S256 only, loopback redirects
 * on any port, private-use schemes, refresh-token rotation with reuse detection (RFC 9700 section
 * 4.14), and each client authenticating only with the method it registered.
 */

let server: LiveServer;
let tenant: Tenant;
let api: ReturnType<typeof tenantKit>['api'];
let meta: oidc.ServerMetadata;
beforeAll(async () => {
  server = await startLiveServer();
  const kit = tenantKit(server);
  api = kit.api;
  tenant = await kit.newTenant();
  meta = (await configFor('any', oidc.None())).serverMetadata();
});
afterAll(async () => {
  await server?.close();
});

const SECRET_FORMAT = /^wpcs_[A-Za-z0-9_-]{43}$/;

const registration = (query: string, body: unknown) =>
  api('POST', `/oidc/${tenant.workplace}/oidc/registration${query}`, body, {
    'x-auth-token': '',
    authorizarion: `Bearer ${tenant.oidcToken}`,
  });
const register = (body: unknown) => registration('', body);
const update = (clientId: string, body: unknown) => registration(`?client_id=${clientId}`, body);

type Registered = Record<string, unknown> & { client_id: string; client_secret?: string };

async function registered(body: Record<string, unknown>): Promise<Registered> {
  const res = await register(body);
  expect(res.status, res.text).toBe(201);
  return res.body.result;
}

async function storedHash(clientId: string): Promise<Buffer | null | undefined> {
  const [row] = await server.sql<{ secret_hash: Buffer | null }[]>`
    select secret_hash from oidc_clients where client_id = ${clientId}`;
  return row?.secret_hash;
}

/** The relying party's configuration with the given client authentication. */
function configFor(clientId: string, auth: oidc.ClientAuth): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(tenant.issuer), clientId, undefined, auth, {
    execute: [oidc.allowInsecureRequests],
  });
}

/** Signs in (consenting to `openid offline_access`) and exchanges the code as openid-client does. */
async function signInAs(config: oidc.Configuration, redirect: string) {
  const { url, verifier, state } = await authorizationRequest(config, {
    redirect_uri: redirect,
    scope: 'openid offline_access',
  });
  const callback = await signIn(new Browser(), url);
  expect(callback.searchParams.get('error'), callback.href).toBeNull();
  expect(callback.href.split('?')[0]).toBe(redirect);
  return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
}

async function userinfoStatus(accessToken: string): Promise<number> {
  const res = await fetch(meta.userinfo_endpoint as string, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  await res.arrayBuffer();
  return res.status;
}

/** The OAuth error of a grant openid-client sent, or `undefined` when it succeeded. */
async function grantError(grant: Promise<unknown>): Promise<string | undefined> {
  try {
    await grant;
    return undefined;
  } catch (err) {
    if (err instanceof oidc.ResponseBodyError) return err.error;
    throw err;
  }
}

/** A raw token request, for client authentications openid-client would not send. */
async function tokenRequest(form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(meta.token_endpoint as string, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  return { status: res.status, body: (await res.json()) as { error?: string; error_description?: string } };
}

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
});

describe('discovery', () => {
  it('lists none beside the secret methods, and S256 as the only PKCE method', async () => {
    expect(meta.token_endpoint_auth_methods_supported).toEqual([
      'client_secret_basic',
      'client_secret_post',
      'none',
    ]);
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);
  });
});

describe('registering a public client', () => {
  it('issues, stores and shows no secret and no secret expiry', async () => {
    const res = await register({
      redirect_uris: ['https://app.acme.example/cb'],
      token_endpoint_auth_method: 'none',
    });
    expect(res.status, res.text).toBe(201);
    const client = res.body.result;
    expect(client).not.toHaveProperty('client_secret');
    expect(client).not.toHaveProperty('client_secret_expires_at');
    expect(client.token_endpoint_auth_method).toBe('none');
    expect(await storedHash(client.client_id)).toBeNull();
    const read = await api(
      'GET',
      `/oidc/${tenant.workplace}/registration?client_id=${client.client_id}`,
      undefined,
      {
        'x-auth-token': '',
        authorizarion: `Bearer ${tenant.oidcToken}`,
      },
    );
    expect(read.status, read.text).toBe(200);
    expect(read.body.result).toEqual(client);
  });

  it('keeps confidential clients the default, with either secret method', async () => {
    const basicClient = await registered({ redirect_uris: ['https://app.acme.example/cb'] });
    expect(basicClient.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(basicClient.client_secret).toMatch(SECRET_FORMAT);
    expect(basicClient.client_secret_expires_at).toBe(0);
    const post = await registered({
      redirect_uris: ['https://app.acme.example/cb'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(post.token_endpoint_auth_method).toBe('client_secret_post');
    expect((await storedHash(post.client_id))?.equals(hashSecret(post.client_secret as string))).toBe(true);
  });

  it.each([
    [
      'a secret expiry for a public client',
      { token_endpoint_auth_method: 'none', client_secret_expires_at: 0 },
      'client_secret_expires_at',
      'no secret',
    ],
    [
      'a method no client here can use',
      { token_endpoint_auth_method: 'private_key_jwt' },
      'token_endpoint_auth_method',
      '',
    ],
    ['a method that is not a string', { token_endpoint_auth_method: 1 }, 'token_endpoint_auth_method', ''],
    [
      'generate_token on create',
      { token_endpoint_auth_method: 'none', generate_token: false },
      'generate_token',
      'only for updates',
    ],
  ])('refuses %s with 400 naming the field', async (_label, body, field, words) => {
    const res = await register({ redirect_uris: ['https://app.acme.example/cb'], ...body });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toBe('invalid_client_metadata');
    expect(res.body.error_description).toContain(field);
    expect(res.body.error_description).toContain(words);
  });
});

describe('updating the authentication method', () => {
  const cb = ['https://app.acme.example/cb'];

  it('drops the secret of a client that becomes public', async () => {
    const client = await registered({ redirect_uris: cb, client_secret_expires_at: 4000000000 });
    const res = await update(client.client_id, { token_endpoint_auth_method: 'none' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).not.toHaveProperty('client_secret');
    expect(res.body.result).not.toHaveProperty('client_secret_expires_at');
    expect(await storedHash(client.client_id)).toBeNull();
    // The old secret no longer authenticates anything.
    const token = await tokenRequest(
      { grant_type: 'refresh_token', refresh_token: 'x' },
      basic(client.client_id, client.client_secret as string),
    );
    expect(token.status).toBe(401);
    expect(token.body.error).toBe('invalid_client');
  });

  it.each([
    ['client_secret_basic', { token_endpoint_auth_method: 'client_secret_basic' }, 0],
    ['null, the default', { token_endpoint_auth_method: null }, 0],
    [
      'client_secret_post with an expiry',
      { token_endpoint_auth_method: 'client_secret_post', client_secret_expires_at: 4000000000 },
      4000000000,
    ],
  ])('issues a secret, shown once, to a public client changed to %s', async (_label, body, expires) => {
    const client = await registered({ redirect_uris: cb, token_endpoint_auth_method: 'none' });
    const res = await update(client.client_id, body);
    expect(res.status, res.text).toBe(200);
    const secret = res.body.result.client_secret;
    expect(secret).toMatch(SECRET_FORMAT);
    expect(res.body.result.client_secret_expires_at).toBe(expires);
    expect((await storedHash(client.client_id))?.equals(hashSecret(secret))).toBe(true);
  });

  it('keeps the secret when a confidential client changes between the secret methods', async () => {
    const client = await registered({ redirect_uris: cb });
    const res = await update(client.client_id, { token_endpoint_auth_method: 'client_secret_post' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).not.toHaveProperty('client_secret');
    expect(res.body.result.client_secret_expires_at).toBe(0);
    expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret as string))).toBe(
      true,
    );
  });

  it.each([
    ['generate_token: true', { generate_token: true }, 'generate_token', 'no secret to replace'],
    ['a secret expiry', { client_secret_expires_at: 4000000000 }, 'client_secret_expires_at', 'no secret'],
    [
      'becoming public while rotating',
      { generate_token: true, token_endpoint_auth_method: 'none' },
      'generate_token',
      'no secret to replace',
    ],
  ])('refuses %s for a public client, changing nothing', async (_label, body, field, words) => {
    const publicClient = await registered({ redirect_uris: cb, token_endpoint_auth_method: 'none' });
    const confidential = await registered({ redirect_uris: cb });
    const target = 'token_endpoint_auth_method' in body ? confidential : publicClient;
    const res = await update(target.client_id, body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toBe('invalid_client_metadata');
    expect(res.body.error_description).toContain(field);
    expect(res.body.error_description).toContain(words);
    const stored = await storedHash(target.client_id);
    if (target === confidential)
      expect(stored?.equals(hashSecret(confidential.client_secret as string))).toBe(true);
    else expect(stored).toBeNull();
  });
});

describe('a public native client', () => {
  it.each([
    ['http://127.0.0.1/cb', 'http://127.0.0.1:51923/cb'],
    ['http://127.0.0.1:8080/cb', 'http://127.0.0.1:51924/cb'],
    ['http://[::1]/cb', 'http://[::1]:51925/cb'],
    ['http://localhost/cb', 'http://localhost:51926/cb'],
  ])('registered with %s signs in with PKCE on %s', async (registeredUri, redirect) => {
    const client = await registered({
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      redirect_uris: [registeredUri],
    });
    const config = await configFor(client.client_id, oidc.None());
    const tokens = await signInAs(config, redirect);
    expect(decodeJwt(tokens.id_token as string).sub).toBe('u-ada');
    expect(decodeJwt(tokens.id_token as string).aud).toBe(client.client_id);
    expect(await userinfoStatus(tokens.access_token)).toBe(200);
  });

  it('signs in with a private-use scheme', async () => {
    const client = await registered({
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['com.acme.desktop:/callback'],
    });
    const config = await configFor(client.client_id, oidc.None());
    const tokens = await signInAs(config, 'com.acme.desktop:/callback');
    expect(decodeJwt(tokens.id_token as string).sub).toBe('u-ada');
  });

  it.each([
    ['another path', 'http://127.0.0.1:51927/other'],
    ['https on the loopback host', 'https://127.0.0.1:51927/cb'],
    ['another loopback host', 'http://127.0.0.2:51927/cb'],
  ])('gets no code for %s', async (_label, redirect) => {
    const client = await registered({
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['http://127.0.0.1/cb'],
    });
    const config = await configFor(client.client_id, oidc.None());
    const { url } = await authorizationRequest(config, { redirect_uri: redirect, scope: 'openid' });
    const res = await new Browser().follow(url.href, server.base);
    expect(res.left).toBeUndefined();
    expect(res.page?.status).toBe(400);
    expect(await res.page?.text()).toContain('redirect_uri');
  });

  it('does not match a web client registered on the loopback host on another port', async () => {
    const client = await registered({
      token_endpoint_auth_method: 'none',
      redirect_uris: ['http://127.0.0.1/cb'],
    });
    const config = await configFor(client.client_id, oidc.None());
    const { url } = await authorizationRequest(config, {
      redirect_uri: 'http://127.0.0.1:51928/cb',
      scope: 'openid',
    });
    const res = await new Browser().follow(url.href, server.base);
    expect(res.left).toBeUndefined();
    expect(res.page?.status).toBe(400);
  });
});

describe('PKCE', () => {
  const redirect = 'http://127.0.0.1:51930/cb';

  it.each([
    ['plain', { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }],
    ['no code_challenge at all', { code_challenge: '', code_challenge_method: '' }],
  ])('refuses %s', async (_label, pkce) => {
    const client = await registered({
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['http://127.0.0.1/cb'],
    });
    const config = await configFor(client.client_id, oidc.None());
    const { url } = await authorizationRequest(config, { redirect_uri: redirect, scope: 'openid' });
    for (const [k, v] of Object.entries(pkce)) {
      if (v === '') url.searchParams.delete(k);
      else url.searchParams.set(k, v);
    }
    const res = await new Browser().follow(url.href, server.base);
    expect(res.left?.href.startsWith(redirect)).toBe(true);
    expect(res.left?.searchParams.get('error')).toBe('invalid_request');
    expect(res.left?.searchParams.get('code')).toBeNull();
  });
});

describe('a public single-page client refreshing', () => {
  const redirect = 'https://app.acme.example/cb';

  async function signedIn() {
    const client = await registered({ token_endpoint_auth_method: 'none', redirect_uris: [redirect] });
    const config = await configFor(client.client_id, oidc.None());
    return { config, tokens: await signInAs(config, redirect) };
  }

  it('gets a new refresh token on every refresh, and the one used stops working', async () => {
    const { config, tokens } = await signedIn();
    const first = tokens.refresh_token as string;
    expect(first).toBeTruthy();
    const second = await oidc.refreshTokenGrant(config, first);
    expect(second.refresh_token).toBeTruthy();
    expect(second.refresh_token).not.toBe(first);
    const third = await oidc.refreshTokenGrant(config, second.refresh_token as string);
    expect(third.refresh_token).not.toBe(second.refresh_token);
    expect(await userinfoStatus(third.access_token)).toBe(200);
  });

  it('refuses a replayed refresh token and revokes the whole family', async () => {
    const { config, tokens } = await signedIn();
    const first = tokens.refresh_token as string;
    const second = await oidc.refreshTokenGrant(config, first);
    const third = await oidc.refreshTokenGrant(config, second.refresh_token as string);
    expect(await userinfoStatus(third.access_token)).toBe(200);

    expect(await grantError(oidc.refreshTokenGrant(config, first))).toBe('invalid_grant');

    // The newest refresh token and every access token of the grant stop working with it.
    expect(await grantError(oidc.refreshTokenGrant(config, third.refresh_token as string))).toBe(
      'invalid_grant',
    );
    for (const t of [tokens, second, third]) expect(await userinfoStatus(t.access_token)).toBe(401);
  });

  it('leaves other sign-ins of the same client alone', async () => {
    const { config, tokens } = await signedIn();
    const other = await signInAs(config, redirect);
    await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(await grantError(oidc.refreshTokenGrant(config, tokens.refresh_token as string))).toBe(
      'invalid_grant',
    );
    expect(await userinfoStatus(other.access_token)).toBe(200);
    const next = await oidc.refreshTokenGrant(config, other.refresh_token as string);
    expect(await userinfoStatus(next.access_token)).toBe(200);
  });

  it('keeps its sign-ins when it becomes confidential, refreshing with the new secret', async () => {
    const client = await registered({ token_endpoint_auth_method: 'none', redirect_uris: [redirect] });
    const tokens = await signInAs(await configFor(client.client_id, oidc.None()), redirect);
    const res = await update(client.client_id, { token_endpoint_auth_method: 'client_secret_basic' });
    expect(res.status, res.text).toBe(200);
    const config = await configFor(client.client_id, oidc.ClientSecretBasic(res.body.result.client_secret));
    const next = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(await userinfoStatus(next.access_token)).toBe(200);
    const none = await configFor(client.client_id, oidc.None());
    expect(await grantError(oidc.refreshTokenGrant(none, next.refresh_token as string))).toBe(
      'invalid_client',
    );
  });

  it('gets a refresh token only with offline_access, as every client', async () => {
    const client = await registered({ token_endpoint_auth_method: 'none', redirect_uris: [redirect] });
    const config = await configFor(client.client_id, oidc.None());
    const { url, verifier, state } = await authorizationRequest(config, {
      redirect_uri: redirect,
      scope: 'openid',
    });
    const callback = await signIn(new Browser(), url);
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.refresh_token).toBeUndefined();
  });
});

describe('a confidential client refreshing', () => {
  it('keeps its refresh token while young: rotation is for public clients', async () => {
    const redirect = 'https://portal.acme.example/cb';
    const client = await registered({ redirect_uris: [redirect] });
    const config = await configFor(client.client_id, oidc.ClientSecretBasic(client.client_secret as string));
    const tokens = await signInAs(config, redirect);
    const next = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(next.refresh_token).toBe(tokens.refresh_token);
    await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
  });
});

describe('client authentication', () => {
  const redirect = 'https://app.acme.example/cb';

  /** A code for the client, and the verifier that goes with it. */
  async function codeFor(clientId: string) {
    const config = await configFor(clientId, oidc.None());
    const { url, verifier } = await authorizationRequest(config, { redirect_uri: redirect, scope: 'openid' });
    const callback = await signIn(new Browser(), url);
    const code = callback.searchParams.get('code');
    expect(code, callback.href).toBeTruthy();
    return {
      grant_type: 'authorization_code',
      code: code as string,
      redirect_uri: redirect,
      code_verifier: verifier,
    };
  }

  /** Each request in turn (one could spend the code the next one needs refused). */
  async function expectInvalidClient(attempts: (() => ReturnType<typeof tokenRequest>)[]) {
    for (const attempt of attempts) {
      const res = await attempt();
      expect(res.status, JSON.stringify(res.body)).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    }
  }

  it('refuses a public client sending a secret, in the header or the body', async () => {
    const client = await registered({ token_endpoint_auth_method: 'none', redirect_uris: [redirect] });
    const form = await codeFor(client.client_id);
    await expectInvalidClient([
      () => tokenRequest(form, basic(client.client_id, 'wpcs_anything')),
      () => tokenRequest({ ...form, client_id: client.client_id, client_secret: 'wpcs_anything' }),
    ]);
    // The code was never spent: the public client redeems it with its client_id alone.
    const ok = await tokenRequest({ ...form, client_id: client.client_id });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it.each([
    ['client_secret_basic', 'in the header'],
    ['client_secret_post', 'in the body'],
  ])('refuses a %s client without its secret, and takes the secret %s or the other way', async (method) => {
    const client = await registered({ redirect_uris: [redirect], token_endpoint_auth_method: method });
    const secret = client.client_secret as string;
    const form = await codeFor(client.client_id);
    await expectInvalidClient([
      () => tokenRequest({ ...form, client_id: client.client_id }),
      () => tokenRequest({ ...form, client_id: client.client_id, client_secret: 'wpcs_wrong' }),
      () => tokenRequest(form, basic(client.client_id, 'wpcs_wrong')),
    ]);
    const ok = await tokenRequest(
      method === 'client_secret_basic'
        ? form
        : { ...form, client_id: client.client_id, client_secret: secret },
      method === 'client_secret_basic' ? basic(client.client_id, secret) : {},
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    // oidc-provider takes a secret in either place for either registered secret method.
    const other = await tokenRequest(
      {
        grant_type: 'refresh_token',
        refresh_token: 'not-a-token',
        ...(method === 'client_secret_basic' ? { client_id: client.client_id, client_secret: secret } : {}),
      },
      method === 'client_secret_basic' ? {} : basic(client.client_id, secret),
    );
    expect(other.status, JSON.stringify(other.body)).toBe(400);
    expect(other.body.error).toBe('invalid_grant');
  });

  it('signs in a client_secret_post client with openid-client', async () => {
    const client = await registered({
      redirect_uris: [redirect],
      token_endpoint_auth_method: 'client_secret_post',
    });
    const config = await configFor(client.client_id, oidc.ClientSecretPost(client.client_secret as string));
    const tokens = await signInAs(config, redirect);
    expect(await userinfoStatus(tokens.access_token)).toBe(200);
    expect(await grantError(oidc.refreshTokenGrant(config, tokens.refresh_token as string))).toBeUndefined();
  });

  it('lets a public client revoke its own refresh token with its client_id alone', async () => {
    const client = await registered({ token_endpoint_auth_method: 'none', redirect_uris: [redirect] });
    const config = await configFor(client.client_id, oidc.None());
    const tokens = await signInAs(config, redirect);
    await oidc.tokenRevocation(config, tokens.refresh_token as string);
    expect(await grantError(oidc.refreshTokenGrant(config, tokens.refresh_token as string))).toBe(
      'invalid_grant',
    );
  });
});
