// The OpenID Provider as production runs it: TLS ends at a reverse proxy, the server speaks plain
// HTTP behind it, PUBLIC_URL names the https address. A standard relying party (openid-client,
// with no allowance for insecure requests) signs a user in through the proxy end to end.
import { get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { migrate } from '../../db/connection/migrate.js';
import type { Sql } from '../../db/connection/sql.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { openTestDatabase } from '../helpers/app.js';
import {
  AFTER_LOGOUT,
  authorizationRequest,
  Browser,
  expectEndpointsBelow,
  hiddenInputs,
  type LiveServer,
  PASSWORD,
  REDIRECT,
  tenantKit,
} from '../helpers/oidc-flow.js';
import {
  type Certificate,
  fetchTrusting,
  makeCertificate,
  startTlsProxy,
  type TlsProxy,
} from '../helpers/tls.js';

let db: { sql: Sql; close(): Promise<void> };
let certificate: Certificate;
let tlsFetch: typeof fetch;
beforeAll(async () => {
  db = await openTestDatabase();
  await migrate(db.sql);
  certificate = makeCertificate();
  tlsFetch = fetchTrusting(certificate.cert);
});
afterAll(async () => {
  await db?.close();
});

/** GET with exactly these headers (fetch would not send a Host header of the caller's choosing). */
function getJson(url: string, headers: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve(JSON.parse(text)));
    }).on('error', reject);
  });
}

interface Page {
  status: number;
  headers: Headers;
  html: string;
  url: string;
}

/**
 * Follows the provider's redirects as a browser does, recording every Location, until one leaves
 * the issuer (returned as `left`) or a page is served.
 */
async function walk(
  browser: Browser,
  start: string,
  issuer: string,
  locations: string[],
): Promise<{ page?: Page; left?: URL }> {
  let url = start;
  for (let i = 0; i < 20; i++) {
    if (!url.startsWith(`${issuer}/`)) return { left: new URL(url) };
    const res = await browser.request(url);
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) {
      return { page: { status: res.status, headers: res.headers, html: await res.text(), url } };
    }
    locations.push(location);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects');
}

function formOf(page: Page): string {
  const action = /<form[^>]*action="([^"]+)"/.exec(page.html)?.[1];
  if (!action) throw new Error(`no form on ${page.url}:\n${page.html.slice(0, 400)}`);
  return action.replace(/&amp;/g, '&');
}

/** Posts a form and returns where the server sends the browser next. */
async function submit(browser: Browser, action: string, form: Record<string, string>, locations: string[]) {
  const res = await browser.request(action, { form });
  expect(res.status, await res.clone().text()).toBe(303);
  const location = res.headers.get('location') as string;
  locations.push(location);
  return new URL(location, action).href;
}

describe.each([
  ['at the root of its host', ''],
  ['below a path the proxy strips', '/idp'],
])('the OpenID Provider behind a TLS-terminating proxy, published %s', (_label, prefix) => {
  let app: FastifyInstance;
  let appBase: string;
  let proxy: TlsProxy;
  let publicUrl: string;
  let kit: ReturnType<typeof tenantKit>;

  beforeAll(async () => {
    const adminToken = generateSecret(TOKEN_PREFIX.admin);
    app = await buildApp({
      sql: db.sql,
      adminTokenHash: hashSecret(adminToken),
      issuerBase: () => publicUrl,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    appBase = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    proxy = await startTlsProxy(certificate, appBase, prefix);
    publicUrl = `${proxy.origin}${prefix}`;
    // The API itself is called directly; only the sign-in goes through the proxy.
    kit = tenantKit({ base: appBase, sql: db.sql, adminToken } as LiveServer);
  });
  afterAll(async () => {
    await proxy?.close();
    await app?.close();
  });

  it('signs a user in with openid-client over https: discovery, code + PKCE, userinfo, refresh, logout', async () => {
    const t = await kit.newTenant();
    const issuer = `${publicUrl}/oidc/${t.workplace}`;
    const issuerPath = new URL(issuer).pathname;

    // No allowInsecureRequests: every endpoint must be https for openid-client to go on.
    const config = await oidc.discovery(new URL(issuer), t.clientId, t.clientSecret, undefined, {
      [oidc.customFetch]: tlsFetch,
    });
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(issuer);
    expectEndpointsBelow(meta, issuer);

    const { url: authUrl, verifier, state } = await authorizationRequest(config);

    const browser = new Browser(tlsFetch);
    const locations: string[] = [];
    const login = (await walk(browser, authUrl.href, issuer, locations)).page as Page;
    expect(login.html).toContain('Sign in');
    expect(login.headers.get('x-frame-options')).toBe('DENY');
    expect(formOf(login)).toMatch(new RegExp(`^${issuer}/interaction/`));
    const consent = (
      await walk(
        browser,
        await submit(browser, formOf(login), { login: 'ada@acme.example', password: PASSWORD }, locations),
        issuer,
        locations,
      )
    ).page as Page;
    expect(consent.html).toContain('Allow access?');
    expect(formOf(consent)).toMatch(new RegExp(`^${issuer}/interaction/`));
    const back = await walk(
      browser,
      await submit(browser, formOf(consent), { decision: 'allow' }, locations),
      issuer,
      locations,
    );
    const callback = back.left as URL;
    expect(callback.origin + callback.pathname).toBe(REDIRECT);

    // Every redirect the provider sent was absolute, to the public URL or to the client.
    for (const location of locations) {
      expect(location.startsWith(`${issuer}/`) || location.startsWith(REDIRECT), location).toBe(true);
    }
    // Every cookie is Secure (the browser sends it back over https only) and scoped to the issuer.
    expect(browser.jar.cookies.size).toBeGreaterThan(0);
    for (const [name, cookie] of browser.jar.cookies) {
      expect(cookie.secure, name).toBe(true);
      expect(cookie.path, name).toBe(issuerPath);
    }

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()?.iss).toBe(issuer);
    expect(tokens.claims()?.sub).toBe('u-ada');
    const info = await oidc.fetchUserInfo(config, tokens.access_token, 'u-ada');
    expect(info.email).toBe('ada@acme.example');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.access_token).toBeTruthy();

    // RP-initiated logout: the confirmation page posts to the public URL and names the application.
    const logoutUrl = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token as string,
      post_logout_redirect_uri: AFTER_LOGOUT,
    });
    const confirm = (await walk(browser, logoutUrl.href, issuer, locations)).page as Page;
    expect(confirm.headers.get('x-frame-options')).toBe('DENY');
    expect(confirm.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(confirm.html).toContain('Acme portal');
    expect(formOf(confirm)).toMatch(new RegExp(`^${issuer}/session/end/confirm`));
    const afterLogout = await submit(
      browser,
      formOf(confirm),
      { ...hiddenInputs(confirm.html), logout: 'yes' },
      locations,
    );
    expect(afterLogout).toBe(AFTER_LOGOUT);

    // The hop was real: the server got these requests from the proxy.
    expect(proxy.forwarded.some((r) => r.path.startsWith(`/oidc/${t.workplace}/token`))).toBe(true);
  });

  it("takes no URL from a request's Host or X-Forwarded-* headers", async () => {
    const t = await kit.newTenant();
    const issuer = `${publicUrl}/oidc/${t.workplace}`;
    for (const headers of <Record<string, string>[]>[
      { host: 'evil.example' },
      { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' },
      { 'x-forwarded-host': 'evil.example:8443', forwarded: 'host=evil.example;proto=http' },
    ]) {
      // Straight to the server, as a cache in front of it might forward a client's headers.
      const meta = await getJson(`${appBase}/oidc/${t.workplace}/.well-known/openid-configuration`, headers);
      const urls = Object.entries(meta).filter(([, v]) => typeof v === 'string' && /^https?:/.test(v));
      expect(urls.length, JSON.stringify(headers)).toBeGreaterThanOrEqual(7);
      for (const [name, url] of urls) {
        expect(url === issuer || String(url).startsWith(`${issuer}/`), `${name}: ${url}`).toBe(true);
      }
    }
  });
});
