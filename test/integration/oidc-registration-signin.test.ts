import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeHtml } from '../../oidc/pages.js';
import {
  AFTER_LOGOUT,
  authorizationRequest,
  Browser,
  discover,
  type LiveServer,
  REDIRECT,
  signInPages,
  signOut,
  startLiveServer,
  type Tenant,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * Whatever the registration route accepts must sign in: every accepted form of every field of
 * ClientMetadataInput, each registered and then used for a full sign-in (code + PKCE, consent)
 * and a refresh, as a relying party would.
 */

let server: LiveServer;
let tenant: Tenant;
let api: ReturnType<typeof tenantKit>['api'];
beforeAll(async () => {
  server = await startLiveServer();
  const kit = tenantKit(server);
  api = kit.api;
  tenant = await kit.newTenant();
});
afterAll(async () => {
  await server?.close();
});

const clientApi = (method: string, query: string, body?: unknown) =>
  api(method, `/oidc/${tenant.workplace}/${query}`, body, {
    'x-auth-token': '',
    authorizarion: `Bearer ${tenant.oidcToken}`,
  });
const register = (body: unknown) => clientApi('POST', 'oidc/registration', body);
const update = (clientId: string, body: unknown) =>
  clientApi('POST', `oidc/registration?client_id=${clientId}`, body);

async function registered(body: Record<string, unknown>) {
  const res = await register(body);
  expect(res.status, res.text).toBe(201);
  return res.body.result as Record<string, unknown> & { client_id: string; client_secret: string };
}

function configFor(client: { client_id: string; client_secret: string }) {
  return discover({ issuer: tenant.issuer, clientId: client.client_id, clientSecret: client.client_secret });
}

const scopesOf = (scope: string | undefined) => new Set((scope ?? '').split(' ').filter(Boolean));

interface Tokens {
  access_token: string;
  id_token?: string | undefined;
  refresh_token?: string | undefined;
  scope?: string | undefined;
}

type Credentials = { client_id: string; client_secret: string };

/**
 * The code exchange for a redirect URI with a query of its own: openid-client sends the callback
 * URL without any query as `redirect_uri`, which is not the registered URI then.
 */
async function exchangeCode(
  config: oidc.Configuration,
  client: Credentials,
  callback: URL,
  o: { redirect: string; verifier: string; state: string },
): Promise<Tokens> {
  expect(callback.searchParams.get('state')).toBe(o.state);
  const res = await fetch(config.serverMetadata().token_endpoint as string, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') ?? '',
      redirect_uri: o.redirect,
      code_verifier: o.verifier,
    }),
  });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body as Tokens;
}

/** Signs in asking for `openid offline_access` and `ask`; returns the tokens and the pages seen. */
async function signInWith(
  config: oidc.Configuration,
  client: Credentials,
  o: { redirect: string; ask?: string; browser?: Browser },
) {
  const browser = o.browser ?? new Browser();
  const scope = `openid offline_access ${o.ask ?? ''}`.trim();
  const { url, verifier, state } = await authorizationRequest(config, { redirect_uri: o.redirect, scope });
  const pages = await signInPages(browser, url);
  expect(pages.callback.searchParams.get('error'), pages.callback.href).toBeNull();
  expect(pages.callback.href.startsWith(o.redirect)).toBe(true);
  const tokens: Tokens =
    new URL(o.redirect).search === ''
      ? await oidc.authorizationCodeGrant(config, pages.callback, {
          pkceCodeVerifier: verifier,
          expectedState: state,
        })
      : await exchangeCode(config, client, pages.callback, { redirect: o.redirect, verifier, state });
  expect(decodeJwt(tokens.id_token as string).sub).toBe('u-ada');
  return { tokens, pages, browser, asked: scopesOf(scope) };
}

const STANDARD_SCOPES = ['openid', 'profile', 'email', 'phone', 'address', 'offline_access'];
const NOW = Math.floor(Date.now() / 1000);
/** Every character RFC 6749 allows in a scope token: printable ASCII but space, `"` and `\`. */
const EVERY_SCOPE_CHARACTER = "!#$%&'()*+,-./0123456789:;<=>?@AZ[]^_`az{|}~";
/** As many scopes as the route accepts. */
const MOST_SCOPES = Array.from({ length: 100 }, (_, i) => `s${i}`);
/**
 * Scopes of the longest length, 4096 characters in all joined with spaces as the route accepts,
 * of a character that takes three when percent-encoded in the authorization URL.
 */
const LONGEST_SCOPES = [
  ...Array.from({ length: 31 }, (_, i) => `${String(i).padStart(2, '0')}${'!'.repeat(126)}`),
  '!'.repeat(4096 - 31 * 129),
];
const UNUSUAL_NAME = `<script>alert("x")</script> & 'Acme' — Ünïcødé 🚀 \u202eRTL\u202c`;

interface Row {
  label: string;
  /** Registered together with `redirect_uris: [REDIRECT]` unless it names its own. */
  body: Record<string, unknown>;
  /** The redirect URI to sign in with; the first registered one by default. */
  redirect?: string;
  /** Scopes asked for beside `openid offline_access`. */
  ask?: string;
  /** What the registration answers (and the read shows) for the fields given. */
  shown?: Record<string, unknown>;
  /** A registered post-logout redirect URI to sign out to after the refresh. */
  logout?: string;
}

const ROWS: Row[] = [
  { label: 'redirect_uris alone', body: {}, shown: { scope: [] } },
  // scope
  {
    label: 'scope: standard scopes as an array',
    body: { scope: ['email', 'profile'] },
    ask: 'email profile',
  },
  {
    label: 'scope: a space-separated string with duplicates',
    body: { scope: 'openid  email openid' },
    ask: 'email',
    shown: { scope: ['openid', 'email'] },
  },
  {
    label: 'scope: an empty string, asking for a standard scope',
    body: { scope: '' },
    ask: 'phone',
    shown: { scope: [] },
  },
  { label: 'scope: null', body: { scope: null }, ask: 'address', shown: { scope: [] } },
  {
    label: 'scope: a scope of its own beside a standard one',
    body: { scope: ['email', 'orders:read'] },
    ask: 'email orders:read',
  },
  {
    label: 'scope: scopes of its own as a string',
    body: { scope: 'orders:read orders:write' },
    ask: 'orders:read orders:write',
    shown: { scope: ['orders:read', 'orders:write'] },
  },
  {
    label: 'scope: duplicates of its own',
    body: { scope: ['a', 'b', 'a'] },
    ask: 'a b',
    shown: { scope: ['a', 'b'] },
  },
  {
    label: 'scope: every character a scope token may hold, and a URI',
    body: { scope: [EVERY_SCOPE_CHARACTER, 'https://api.acme.example/orders.read'] },
    ask: `${EVERY_SCOPE_CHARACTER} https://api.acme.example/orders.read`,
  },
  {
    label: 'scope: named like a standard claim and like an object member',
    body: { scope: ['email_verified', 'sub', '__proto__', 'constructor'] },
    ask: 'email_verified sub __proto__ constructor',
  },
  { label: 'scope: 100 scopes', body: { scope: MOST_SCOPES }, ask: MOST_SCOPES.join(' ') },
  {
    label: 'scope: 4096 characters in all, of 128-character scopes that percent-encode to three each',
    body: { scope: LONGEST_SCOPES },
    ask: LONGEST_SCOPES.join(' '),
  },
  // contacts
  { label: 'contacts: an e-mail address', body: { contacts: 'it@acme.example' } },
  { label: 'contacts: free text', body: { contacts: 'Jane Doe, +1 555 0100 (weekdays)' } },
  { label: 'contacts: two e-mail addresses', body: { contacts: ['ops@acme.example', 'it@acme.example'] } },
  { label: 'contacts: an array of free text', body: { contacts: ['Jane Doe', '<b>help</b> & "desk"'] } },
  { label: 'contacts: null', body: { contacts: null }, shown: {} },
  // client_name
  { label: 'client_name: markup, quotes, emoji and right-to-left text', body: { client_name: UNUSUAL_NAME } },
  { label: 'client_name: a line break and a tab', body: { client_name: 'Acme\n\tportal' } },
  { label: 'client_name: 256 characters', body: { client_name: 'n'.repeat(256) } },
  { label: 'client_name: null', body: { client_name: null }, shown: {} },
  // logo_uri, client_uri, tos_uri, policy_uri
  {
    label: 'page URIs on https',
    body: {
      logo_uri: 'https://acme.example/logo.png',
      client_uri: 'https://acme.example/',
      tos_uri: 'https://acme.example/tos',
      policy_uri: 'https://acme.example/privacy',
    },
  },
  {
    label: 'page URIs on http, with ports and queries',
    body: {
      logo_uri: 'http://acme.example:8080/logo.png?v=2',
      client_uri: 'http://localhost:3000',
      tos_uri: 'http://acme.example/tos?lang=en&v=1',
      policy_uri: 'http://127.0.0.1/privacy',
    },
  },
  {
    label: 'page URIs null',
    body: { logo_uri: null, client_uri: null, tos_uri: null, policy_uri: null },
    shown: {},
  },
  // client_secret_expires_at
  { label: 'client_secret_expires_at: an hour ahead', body: { client_secret_expires_at: NOW + 3600 } },
  { label: 'client_secret_expires_at: its largest value', body: { client_secret_expires_at: 253402300799 } },
  { label: 'client_secret_expires_at: 0', body: { client_secret_expires_at: 0 } },
  {
    label: 'client_secret_expires_at: null',
    body: { client_secret_expires_at: null },
    shown: { client_secret_expires_at: 0 },
  },
  // response_types
  { label: 'response_types: code', body: { response_types: ['code'] } },
  { label: 'response_types: null', body: { response_types: null }, shown: { response_types: ['code'] } },
  // application_type and redirect_uris
  { label: 'application_type: web', body: { application_type: 'web' } },
  { label: 'application_type: null', body: { application_type: null }, shown: { application_type: 'web' } },
  { label: 'a web client on http://localhost', body: { redirect_uris: ['http://localhost:9/cb'] } },
  { label: 'a web client on http://[::1]', body: { redirect_uris: ['http://[::1]:9/cb'] } },
  { label: 'a web client on http://127.0.0.2', body: { redirect_uris: ['http://127.0.0.2:9/cb'] } },
  {
    label: 'a web client on https with a query',
    body: { redirect_uris: ['https://app.acme.example/cb?tenant=1'] },
  },
  {
    label: 'several redirect URIs, signing in with the second',
    body: { redirect_uris: [REDIRECT, 'https://app.acme.example/cb'] },
    redirect: 'https://app.acme.example/cb',
  },
  {
    label: 'a native client with a private-use scheme, signing out to one',
    body: {
      application_type: 'native',
      redirect_uris: ['com.acme.app:/cb'],
      post_logout_redirect_uris: ['com.acme.app:/signed-out'],
    },
    logout: 'com.acme.app:/signed-out',
  },
  {
    label: 'a native client on http://127.0.0.1 with a port',
    body: { application_type: 'native', redirect_uris: ['http://127.0.0.1:51004/cb'] },
  },
  {
    label: 'a native client on http://localhost',
    body: { application_type: 'native', redirect_uris: ['http://localhost/cb'] },
  },
  {
    label: 'a native client on http://[::1]',
    body: { application_type: 'native', redirect_uris: ['http://[::1]:8080/cb'] },
  },
  {
    label: 'a native client with a claimed https URI',
    body: { application_type: 'native', redirect_uris: ['https://app.acme.example/cb'] },
  },
  // post_logout_redirect_uris
  {
    label: 'post_logout_redirect_uris on http loopback and https, signing out to the second',
    body: { post_logout_redirect_uris: [AFTER_LOGOUT, 'https://acme.example/bye?from=portal'] },
    logout: 'https://acme.example/bye?from=portal',
  },
  { label: 'post_logout_redirect_uris: empty', body: { post_logout_redirect_uris: [] } },
  {
    label: 'post_logout_redirect_uris: null',
    body: { post_logout_redirect_uris: null },
    shown: { post_logout_redirect_uris: [] },
  },
  // Everything at once.
  {
    label: 'every field',
    body: {
      scope: ['email', 'profile', 'offline_access', 'orders:read'],
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [AFTER_LOGOUT],
      client_secret_expires_at: NOW + 86_400,
      client_name: UNUSUAL_NAME,
      contacts: ['ops@acme.example', 'Jane Doe'],
      logo_uri: 'https://acme.example/logo.png',
      client_uri: 'https://acme.example/',
      tos_uri: 'https://acme.example/tos',
      policy_uri: 'https://acme.example/privacy',
      response_types: ['code'],
      application_type: 'web',
    },
    ask: 'email profile orders:read',
    logout: AFTER_LOGOUT,
  },
];

describe('every registration the route accepts signs in and refreshes', () => {
  it.each(ROWS.map((row) => [row.label, row] as const))('%s', async (_label, row) => {
    const body = { redirect_uris: [REDIRECT], ...row.body };
    const client = await registered(body);
    // Fields are answered (and read back) as given, `null` ones as their default or absent.
    const given = Object.fromEntries(Object.entries(row.body).filter(([, v]) => v !== null));
    const shown = { ...given, ...row.shown };
    expect(client).toMatchObject(shown);
    const read = await clientApi('GET', `registration?client_id=${client.client_id}`);
    expect(read.body.result).toMatchObject(shown);
    for (const [field, value] of Object.entries(row.body)) {
      if (value === null && !(row.shown && field in row.shown)) expect(client).not.toHaveProperty(field);
    }

    const config = await configFor(client);
    const redirect = row.redirect ?? (body.redirect_uris as string[])[0];
    const { tokens, pages, browser, asked } = await signInWith(config, client, {
      redirect: redirect as string,
      ...(row.ask !== undefined ? { ask: row.ask } : {}),
    });

    // The pages show the client as registered.
    const contacts = row.body.contacts;
    for (const contact of typeof contacts === 'string'
      ? [contacts]
      : Array.isArray(contacts)
        ? contacts
        : []) {
      expect(pages.loginHtml).toContain(escapeHtml(contact));
      expect(pages.consentHtml).toContain(escapeHtml(contact));
    }
    if (typeof row.body.client_name === 'string') {
      expect(pages.loginHtml).toContain(escapeHtml(row.body.client_name));
    }
    // The consent page names a client's own scopes (the standard ones it puts in words).
    for (const scope of asked) {
      if (!STANDARD_SCOPES.includes(scope)) expect(pages.consentHtml).toContain(escapeHtml(scope));
    }

    // Every scope asked for is granted, and a refresh keeps them.
    expect(scopesOf(tokens.scope)).toEqual(asked);
    expect(tokens.refresh_token).toBeTruthy();
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(scopesOf(refreshed.scope)).toEqual(asked);
    const info = await oidc.fetchUserInfo(config, refreshed.access_token, 'u-ada');
    expect(info.sub).toBe('u-ada');

    if (row.logout) {
      const landed = await signOut(config, browser, tokens.id_token as string, row.logout, server.base);
      expect(landed?.href.startsWith(row.logout), landed?.href).toBe(true);
    }
  });
});

describe("a client's own scopes", () => {
  it('release no claims; standard scopes release theirs', async () => {
    const client = await registered({ redirect_uris: [REDIRECT], scope: ['orders:read'] });
    const config = await configFor(client);
    const { tokens } = await signInWith(config, client, { redirect: REDIRECT, ask: 'orders:read' });
    expect(await oidc.fetchUserInfo(config, tokens.access_token, 'u-ada')).toEqual({ sub: 'u-ada' });
    const withEmail = await signInWith(config, client, { redirect: REDIRECT, ask: 'orders:read email' });
    expect(await oidc.fetchUserInfo(config, withEmail.tokens.access_token, 'u-ada')).toEqual({
      sub: 'u-ada',
      email: 'ada@acme.example',
      email_verified: true,
    });
  });

  it("are not another client's: it is refused or does not get them", async () => {
    const owner = await registered({ redirect_uris: [REDIRECT], scope: ['billing:admin'] });
    const ownerConfig = await configFor(owner);
    await signInWith(ownerConfig, owner, { redirect: REDIRECT, ask: 'billing:admin' });

    const other = await registered({ redirect_uris: [REDIRECT], scope: ['email'] });
    const config = await configFor(other);
    for (const ask of ['billing:admin', 'never:registered']) {
      const { url, verifier, state } = await authorizationRequest(config, { scope: `openid ${ask}` });
      const { callback } = await signInPages(new Browser(), url);
      if (callback.searchParams.has('error')) {
        expect(callback.searchParams.get('error')).toBe('invalid_scope');
        continue;
      }
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      expect(scopesOf(tokens.scope)).toEqual(new Set(['openid']));
    }
  });

  it('are not advertised in discovery, which lists the standard scopes', async () => {
    const client = await registered({ redirect_uris: [REDIRECT], scope: ['reports:export'] });
    const config = await configFor(client);
    await signInWith(config, client, { redirect: REDIRECT, ask: 'reports:export' });
    const meta = (await configFor(client)).serverMetadata();
    expect([...(meta.scopes_supported ?? [])].sort()).toEqual([
      'address',
      'email',
      'offline_access',
      'openid',
      'phone',
      'profile',
      'roles',
    ]);
  });
});

describe('updating a client that signs in', () => {
  it('with contacts and scopes of its own keeps its refresh tokens working', async () => {
    const client = await registered({ redirect_uris: [REDIRECT], scope: ['email'], client_name: 'Before' });
    const config = await configFor(client);
    const first = await signInWith(config, client, { redirect: REDIRECT, ask: 'email' });
    const firstScope = scopesOf(first.tokens.scope);

    let refreshToken = first.tokens.refresh_token as string;
    for (const change of [
      { contacts: ['ops@acme.example', 'Jane Doe'] },
      { contacts: 'Help desk, weekdays 9-17' },
      { scope: ['email', 'orders:read', 'orders:write'] },
      { scope: 'email orders:read', contacts: null },
    ]) {
      const res = await update(client.client_id, change);
      expect(res.status, res.text).toBe(200);
      if ('contacts' in change) {
        if (change.contacts === null) expect(res.body.result).not.toHaveProperty('contacts');
        else expect(res.body.result.contacts).toEqual(change.contacts);
      }
      const refreshed = await oidc.refreshTokenGrant(config, refreshToken);
      expect(scopesOf(refreshed.scope)).toEqual(firstScope);
      refreshToken = refreshed.refresh_token ?? refreshToken;
    }

    // And a new sign-in gets the scopes added.
    const again = await signInWith(config, client, { redirect: REDIRECT, ask: 'email orders:read' });
    expect(scopesOf(again.tokens.scope)).toEqual(
      new Set(['openid', 'offline_access', 'email', 'orders:read']),
    );
    expect(again.pages.consentHtml).toContain('orders:read');
  });
});
