import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import * as oidc from 'openid-client';
import { expect } from 'vitest';
import { buildApp } from '../../app.js';
import { migrate } from '../../db/connection/migrate.js';
import type { Sql } from '../../db/connection/sql.js';
import { type Browser, formAction, hiddenInputs } from '../../scripts/browser.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { openTestDatabase, randomName } from './app.js';

/** The server listening on a real port, as relying parties need it, on the suite's database. */
export interface LiveServer {
  base: string;
  sql: Sql;
  adminToken: string;
  /** Another app instance on the same database, as after a restart or in a second process. */
  startAnother(): Promise<{ base: string; close(): Promise<void> }>;
  close(): Promise<void>;
}

/** `issuer` names the public URL when it is another server's (several processes behind one URL). */
async function listen(
  sql: Sql,
  adminTokenHash: Buffer,
  issuer?: string,
): Promise<{ app: FastifyInstance; base: string }> {
  let base = '';
  const app = await buildApp({ sql, adminTokenHash, issuerBase: () => issuer ?? base });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, base };
}

export async function startLiveServer(): Promise<LiveServer> {
  const db = await openTestDatabase();
  await migrate(db.sql);
  const adminToken = generateSecret(TOKEN_PREFIX.admin);
  const { app, base } = await listen(db.sql, hashSecret(adminToken));
  return {
    base,
    sql: db.sql,
    adminToken,
    async startAnother() {
      const other = await listen(db.sql, hashSecret(adminToken), base);
      return { base: other.base, close: () => other.app.close() };
    },
    async close() {
      await app.close();
      await db.close();
    },
  };
}

export { Browser, formAction, hiddenInputs } from '../../scripts/browser.js';

export const PASSWORD = 'correct horse battery staple';
export const REDIRECT = 'http://127.0.0.1:9/callback';
export const AFTER_LOGOUT = 'http://127.0.0.1:9/signed-out';

export interface Tenant {
  workplace: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  oidcToken: string;
}

export type TenantKit = ReturnType<typeof tenantKit>;

/** Calls the API of a live server as its admin, and sets up workplaces ready to sign in to. */
export function tenantKit(server: LiveServer) {
  async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${server.base}${path}`, {
      method,
      headers: {
        'x-auth-token': server.adminToken,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
  }

  /**
   * A workplace with a user (ada@acme.example) and a registered client, all through the API;
   * `client` adds to (or overrides) the client's registered metadata.
   */
  async function newTenant(
    settings: Record<string, unknown> = {},
    client: Record<string, unknown> = {},
  ): Promise<Tenant> {
    const workplace = randomName('op');
    expect((await api('POST', '/v1/workplaces', { name: workplace })).status).toBe(201);
    if (Object.keys(settings).length) {
      expect((await api('POST', `/v1/workplaces/${workplace}/oidc`, settings)).status).toBe(200);
    }
    const collection = (settings.collection as string | undefined) ?? 'users';
    expect((await api('POST', `/v1/workplaces/${workplace}/storages`, { name: collection })).status).toBe(
      201,
    );
    const user = {
      _id: 'u-ada',
      email: 'ada@acme.example',
      email_verified: true,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      username: 'ada',
    };
    expect(
      (await api('POST', `/v1/workplaces/${workplace}/storages/${collection}/create`, { docs: [user] }))
        .status,
    ).toBe(201);
    const pw = await api('POST', `/v1/workplaces/${workplace}/oidc/password`, {
      login: 'ada@acme.example',
      password: PASSWORD,
    });
    expect(pw.status, pw.text).toBe(204);
    const oidcToken = (await api('GET', `/v1/workplaces/${workplace}/oidc`)).body.result.token;
    const reg = await api(
      'POST',
      `/oidc/${workplace}/oidc/registration`,
      {
        client_name: 'Acme portal',
        redirect_uris: [REDIRECT],
        post_logout_redirect_uris: [AFTER_LOGOUT],
        scope: ['email', 'profile', 'offline_access'],
        tos_uri: 'https://acme.example/tos',
        policy_uri: 'https://acme.example/privacy',
        contacts: 'it@acme.example',
        ...client,
      },
      { 'x-auth-token': '', authorizarion: `Bearer ${oidcToken}` },
    );
    expect(reg.status, reg.text).toBe(201);
    return {
      workplace,
      issuer: `${server.base}/oidc/${workplace}`,
      clientId: reg.body.result.client_id,
      clientSecret: reg.body.result.client_secret,
      oidcToken,
    };
  }

  return { api, newTenant };
}

/** Every endpoint discovery names lies below the issuer. */
export function expectEndpointsBelow(meta: oidc.ServerMetadata, issuer: string): void {
  for (const endpoint of [
    'authorization_endpoint',
    'token_endpoint',
    'userinfo_endpoint',
    'jwks_uri',
    'end_session_endpoint',
    'revocation_endpoint',
  ] as const) {
    expect(meta[endpoint], endpoint).toMatch(new RegExp(`^${issuer}/`));
  }
}

/** The relying party's view of a tenant's provider, over plain http. */
export async function discover(
  t: Pick<Tenant, 'issuer' | 'clientId' | 'clientSecret'>,
  secret = t.clientSecret,
): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(t.issuer), t.clientId, secret, undefined, {
    execute: [oidc.allowInsecureRequests],
  });
}

/** Starts an authorization request as the relying party does. */
export async function authorizationRequest(config: oidc.Configuration, extra: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid email profile offline_access',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    prompt: 'consent',
    ...extra,
  });
  return { url, verifier, state };
}

/** The pages a sign-in showed, and where the browser landed. */
export interface SignInPages {
  callback: URL;
  loginHtml?: string;
  consentHtml?: string;
  /** The headers the login and consent pages were served with. */
  loginHeaders?: Headers;
  consentHeaders?: Headers;
}

/**
 * Signs in on the login page (as ada@acme.example) and allows on the consent page; either page
 * may be skipped by the provider.
 */
export async function signInPages(
  browser: Browser,
  authUrl: URL,
  password = PASSWORD,
  user = 'ada@acme.example',
): Promise<SignInPages> {
  const base = authUrl.origin;
  const login = await browser.follow(authUrl.href, base);
  if (login.left) return { callback: login.left };
  const loginHtml = await (login.page as Response).text();
  const loginHeaders = (login.page as Response).headers;
  expect(loginHtml).toContain('Sign in');
  const afterLogin = await browser.request(formAction(loginHtml, login.url), {
    form: { login: user, password },
  });
  if (afterLogin.status !== 303) throw new Error(`sign-in answered ${afterLogin.status}`);
  const consent = await browser.follow(
    new URL(afterLogin.headers.get('location') as string, login.url).href,
    base,
  );
  if (consent.left) return { callback: consent.left, loginHtml, loginHeaders };
  const consentHtml = await (consent.page as Response).text();
  const consentHeaders = (consent.page as Response).headers;
  expect(consentHtml).toContain('Allow access?');
  const afterConsent = await browser.request(formAction(consentHtml, consent.url), {
    form: { decision: 'allow' },
  });
  if (afterConsent.status !== 303) {
    throw new Error(`consent answered ${afterConsent.status}: ${await afterConsent.text()}`);
  }
  const end = await browser.follow(
    new URL(afterConsent.headers.get('location') as string, consent.url).href,
    base,
  );
  if (!end.left)
    throw new Error(
      `no redirect back to the client: ${end.page?.status} ${end.url} ${await end.page?.text()}`,
    );
  return { callback: end.left, loginHtml, consentHtml, loginHeaders, consentHeaders };
}

/** Signs in on the login page and allows on the consent page; returns where the browser lands. */
export async function signIn(
  browser: Browser,
  authUrl: URL,
  password = PASSWORD,
  login = 'ada@acme.example',
): Promise<URL> {
  return (await signInPages(browser, authUrl, password, login)).callback;
}

/**
 * Signs out through the end-session endpoint of the provider at `base`, confirming on its page;
 * returns where the browser lands.
 */
export async function signOut(
  config: oidc.Configuration,
  browser: Browser,
  idToken: string,
  to: string,
  base: string,
): Promise<URL | undefined> {
  const url = oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: to });
  const confirm = await browser.follow(url.href, base);
  const html = await (confirm.page as Response).text();
  const done = await browser.request(formAction(html, confirm.url), {
    form: { ...hiddenInputs(html), logout: 'yes' },
  });
  const landed = await browser.follow(
    new URL(done.headers.get('location') as string, confirm.url).href,
    base,
  );
  return landed.left;
}
