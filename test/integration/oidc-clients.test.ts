import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../secrets.js';
import { type RequestOptions, startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const SECRET_FORMAT = /^wpcs_[A-Za-z0-9_-]{43}$/;
const CLIENT_ID_FORMAT = /^[A-Za-z0-9_-]{22}$/;
const REDIRECT = 'https://portal.acme.example/callback';

interface Workplace {
  name: string;
  token: string;
}

async function oidcTokenOf(name: string): Promise<string> {
  const res = await t.request({ method: 'GET', url: `/v1/workplaces/${name}/oidc` });
  return res.body.result.token;
}

async function newWorkplace(): Promise<Workplace> {
  const name = await t.createWorkplace();
  return { name, token: await oidcTokenOf(name) };
}

/** A request to the /oidc routes with the workplace's bearer token in the interface's header. */
function oidc(
  wp: Workplace,
  o: Omit<RequestOptions, 'url'> & { path: string; headers?: Record<string, string> },
): Promise<TestResponse> {
  const { path, headers, ...rest } = o;
  return t.request({
    ...rest,
    url: `/oidc/${wp.name}${path}`,
    token: null,
    headers: headers ?? { authorizarion: `Bearer ${wp.token}` },
  });
}

const register = (wp: Workplace, body: unknown) =>
  oidc(wp, { method: 'POST', path: '/oidc/registration', body });
const update = (wp: Workplace, clientId: string, body: unknown) =>
  oidc(wp, { method: 'POST', path: `/oidc/registration?client_id=${encodeURIComponent(clientId)}`, body });
const getOne = (wp: Workplace, clientId: string) =>
  oidc(wp, { method: 'GET', path: `/registration?client_id=${encodeURIComponent(clientId)}` });
const list = (wp: Workplace, headers?: Record<string, string>) =>
  oidc(wp, { method: 'GET', path: '/registration', ...(headers ? { headers } : {}) });
const remove = (wp: Workplace, clientId: string) =>
  oidc(wp, { method: 'DELETE', path: `/registration?client_id=${encodeURIComponent(clientId)}` });

async function registered(wp: Workplace, body: Record<string, unknown> = { redirect_uris: [REDIRECT] }) {
  const res = await register(wp, body);
  expect(res.status, res.text).toBe(201);
  return res.body.result as Record<string, unknown> & { client_id: string; client_secret: string };
}

async function clientCount(wp: Workplace): Promise<number> {
  const [row] = await t.sql<{ n: number }[]>`
    select count(*)::int as n from oidc_clients c join workplaces w on w.id = c.workplace_id
    where w.name = ${wp.name}`;
  return row?.n ?? 0;
}

async function storedHash(clientId: string): Promise<Buffer | undefined> {
  const [row] = await t.sql<{ secret_hash: Buffer }[]>`
    select secret_hash from oidc_clients where client_id = ${clientId}`;
  return row?.secret_hash;
}

function withoutSecret(client: Record<string, unknown>) {
  const { client_secret: _secret, ...rest } = client;
  return rest;
}

const FULL = {
  scope: ['email', 'profile'],
  redirect_uris: [REDIRECT, 'https://portal.acme.example/callback2'],
  post_logout_redirect_uris: ['https://portal.acme.example/'],
  client_secret_expires_at: 2000000000,
  client_name: 'Acme portal',
  contacts: 'it@acme.example',
  logo_uri: 'https://acme.example/logo.png',
  client_uri: 'https://acme.example/',
  tos_uri: 'https://acme.example/tos',
  policy_uri: 'https://acme.example/privacy',
  response_types: ['code'],
  grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
  application_type: 'web',
  token_endpoint_auth_method: 'client_secret_post',
};

describe('registering a client', () => {
  it('answers 201 with the generated credentials and every default filled in', async () => {
    const wp = await newWorkplace();
    const before = Math.floor(Date.now() / 1000);
    const res = await register(wp, { redirect_uris: [REDIRECT] });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      result: {
        client_id: expect.stringMatching(CLIENT_ID_FORMAT),
        client_secret: expect.stringMatching(SECRET_FORMAT),
        client_id_issued_at: expect.any(Number),
        client_secret_expires_at: 0,
        scope: [],
        redirect_uris: [REDIRECT],
        post_logout_redirect_uris: [],
        response_types: ['code'],
        grant_types: ['authorization_code', 'refresh_token'],
        application_type: 'web',
        token_endpoint_auth_method: 'client_secret_basic',
      },
    });
    const issued = res.body.result.client_id_issued_at;
    expect(issued).toBeGreaterThanOrEqual(before - 1);
    expect(issued).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
  });

  it('keeps every field of the interface as given', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    expect(withoutSecret(client)).toEqual({
      ...FULL,
      client_id: client.client_id,
      client_id_issued_at: client.client_id_issued_at,
    });
    expect((await getOne(wp, client.client_id)).body.result).toEqual(withoutSecret(client));
  });

  it.each([
    ['scope as a space-separated string', { scope: 'openid  email openid' }, { scope: ['openid', 'email'] }],
    ['scope as an empty string', { scope: '' }, { scope: [] }],
    ['scope with duplicates', { scope: ['a', 'b', 'a'] }, { scope: ['a', 'b'] }],
    ['scope as null', { scope: null }, { scope: [] }],
    [
      'contacts as an array',
      { contacts: ['ops@acme.example', 'Jane Doe'] },
      { contacts: ['ops@acme.example', 'Jane Doe'] },
    ],
    ['contacts as a string', { contacts: 'ops@acme.example' }, { contacts: 'ops@acme.example' }],
    ['contacts as free text', { contacts: 'Jane Doe, weekdays' }, { contacts: 'Jane Doe, weekdays' }],
    ['a scope of its own', { scope: ['orders:read'] }, { scope: ['orders:read'] }],
    [
      'client_secret_expires_at in the future',
      { client_secret_expires_at: 253402300799 },
      { client_secret_expires_at: 253402300799 },
    ],
    [
      'a native client with a private-use scheme',
      { application_type: 'native', redirect_uris: ['com.acme.app:/cb'] },
      {},
    ],
    [
      'a native client on loopback http',
      { application_type: 'native', redirect_uris: ['http://127.0.0.1:51004/cb'] },
      {},
    ],
    [
      'a native client with a claimed https URI',
      { application_type: 'native', redirect_uris: ['https://app.acme.example/cb'] },
      {},
    ],
    [
      'a native client on http://localhost and http://[::1]',
      { application_type: 'native', redirect_uris: ['http://localhost/cb', 'http://[::1]:8080/cb'] },
      {},
    ],
    ['a web client on http://localhost', { redirect_uris: ['http://localhost:8080/cb'] }, {}],
    ['a web client on http://127.0.0.1', { redirect_uris: ['http://127.0.0.1/cb'] }, {}],
    ['a web client on http://[::1]', { redirect_uris: ['http://[::1]:3000/cb'] }, {}],
    ['a redirect URI with a query', { redirect_uris: ['https://a.example/cb?tenant=1'] }, {}],
    ['null for optional fields', { client_name: null, logo_uri: null, application_type: null }, {}],
  ])('accepts %s', async (_label, extra, expected) => {
    const wp = await newWorkplace();
    const body = { redirect_uris: [REDIRECT], ...extra };
    const client = await registered(wp, body);
    const stored = (await getOne(wp, client.client_id)).body.result;
    expect(stored).toMatchObject(expected);
    expect(stored.redirect_uris).toEqual(body.redirect_uris);
    expect(stored).not.toHaveProperty('client_name');
  });

  it('stores the secret only as a SHA-256 hash', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret))).toBe(true);
    const rows = await t.sql<{ row: string }[]>`select row_to_json(c)::text as row from oidc_clients c`;
    expect(rows.some((r) => r.row.includes(client.client_secret))).toBe(false);
    const secretPart = client.client_secret.slice('wpcs_'.length);
    expect(rows.some((r) => r.row.includes(secretPart))).toBe(false);
  });

  it('gives each client its own id and secret', async () => {
    const wp = await newWorkplace();
    const a = await registered(wp);
    const b = await registered(wp);
    expect(a.client_id).not.toBe(b.client_id);
    expect(a.client_secret).not.toBe(b.client_secret);
  });
});

type Invalid = [label: string, body: unknown, error: string, field: string];

/** Metadata that breaks a rule; each is refused on create, and on update of a valid client. */
const INVALID_METADATA: Invalid[] = [
  ['an empty redirect_uris', { redirect_uris: [] }, 'invalid_redirect_uri', 'redirect_uris'],
  ['null redirect_uris', { redirect_uris: null }, 'invalid_redirect_uri', 'redirect_uris'],
  ['a relative redirect URI', { redirect_uris: ['/callback'] }, 'invalid_redirect_uri', 'redirect_uris/0'],
  [
    'a redirect URI that is not a URI',
    { redirect_uris: ['not a uri'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a redirect URI with a fragment',
    { redirect_uris: [REDIRECT, 'https://a.example/cb#x'] },
    'invalid_redirect_uri',
    'redirect_uris/1',
  ],
  [
    'a redirect URI with user information',
    { redirect_uris: ['https://me:pw@a.example/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a web client on plain http',
    { redirect_uris: ['http://a.example/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a web client on http to a private address',
    { redirect_uris: ['http://10.0.0.1/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a web client with a private-use scheme',
    { redirect_uris: ['com.acme.app:/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a web client with javascript:',
    { redirect_uris: ['javascript:alert(1)'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a native client on http to a remote host',
    { application_type: 'native', redirect_uris: ['http://a.example/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a native client with a scheme that is not a reverse domain',
    { application_type: 'native', redirect_uris: ['myapp://cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a native client on http to a loopback address other than 127.0.0.1',
    { application_type: 'native', redirect_uris: ['http://127.0.0.2/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a native client with a claimed https URI on localhost',
    { application_type: 'native', redirect_uris: ['https://localhost/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a native client with a claimed https URI on 127.0.0.1',
    { application_type: 'native', redirect_uris: ['com.acme.app:/cb', 'https://127.0.0.1:8443/cb'] },
    'invalid_redirect_uri',
    'redirect_uris/1',
  ],
  [
    'a native post-logout URI on http to 127.0.0.2',
    {
      application_type: 'native',
      redirect_uris: ['com.acme.app:/cb'],
      post_logout_redirect_uris: ['http://127.0.0.2/bye'],
    },
    'invalid_client_metadata',
    'post_logout_redirect_uris/0',
  ],
  [
    'a native client with javascript:',
    { application_type: 'native', redirect_uris: ['javascript:alert(1)'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  [
    'a native client with data:',
    { application_type: 'native', redirect_uris: ['data:text/html,hi'] },
    'invalid_redirect_uri',
    'redirect_uris/0',
  ],
  ['a redirect URI that is not a string', { redirect_uris: [7] }, 'invalid_redirect_uri', 'redirect_uris/0'],
  [
    'an unknown application_type',
    { application_type: 'desktop' },
    'invalid_client_metadata',
    'application_type',
  ],
  ['response_types token', { response_types: ['token'] }, 'invalid_client_metadata', 'response_types'],
  [
    'response_types code id_token',
    { response_types: ['code', 'id_token'] },
    'invalid_client_metadata',
    'response_types',
  ],
  ['empty response_types', { response_types: [] }, 'invalid_client_metadata', 'response_types'],
  ['an unknown grant type', { grant_types: ['password'] }, 'invalid_client_metadata', 'grant_types/0'],
  ['empty grant_types', { grant_types: [] }, 'invalid_client_metadata', 'grant_types'],
  [
    'grant_types without authorization_code',
    { grant_types: ['client_credentials'] },
    'invalid_client_metadata',
    'grant_types',
  ],
  [
    'client_credentials for a public client',
    { token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'client_credentials'] },
    'invalid_client_metadata',
    'grant_types',
  ],
  ['a logo_uri that is not a URL', { logo_uri: 'logo.png' }, 'invalid_client_metadata', 'logo_uri'],
  ['a javascript: logo_uri', { logo_uri: 'javascript:alert(1)' }, 'invalid_client_metadata', 'logo_uri'],
  ['an ftp client_uri', { client_uri: 'ftp://acme.example/' }, 'invalid_client_metadata', 'client_uri'],
  ['a tos_uri that is not a URL', { tos_uri: 'terms' }, 'invalid_client_metadata', 'tos_uri'],
  ['a data: policy_uri', { policy_uri: 'data:text/html,x' }, 'invalid_client_metadata', 'policy_uri'],
  [
    'a post-logout URI on plain http',
    { post_logout_redirect_uris: ['http://a.example/'] },
    'invalid_client_metadata',
    'post_logout_redirect_uris/0',
  ],
  [
    'a post-logout URI with a fragment',
    { post_logout_redirect_uris: ['https://a.example/#x'] },
    'invalid_client_metadata',
    'post_logout_redirect_uris/0',
  ],
  ['a scope token with a quote', { scope: ['open"id'] }, 'invalid_client_metadata', 'scope'],
  ['a scope string with a backslash', { scope: 'openid a\\b' }, 'invalid_client_metadata', 'scope'],
  ['an empty scope token', { scope: [''] }, 'invalid_client_metadata', 'scope'],
  ['a scope that is a number', { scope: 5 }, 'invalid_client_metadata', 'scope'],
  [
    'scopes of more than 4096 characters in all',
    { scope: Array.from({ length: 32 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(126)}`) },
    'invalid_client_metadata',
    'scope',
  ],
  ['contacts that are a number', { contacts: 5 }, 'invalid_client_metadata', 'contacts'],
  ['contacts with a number', { contacts: ['a', 5] }, 'invalid_client_metadata', 'contacts'],
  ['an empty client_name', { client_name: '' }, 'invalid_client_metadata', 'client_name'],
  ['a client_name with U+0000', { client_name: 'a\u0000b' }, 'invalid_client_metadata', 'client_name'],
  [
    'a client_name with a lone surrogate',
    { client_name: '\ud800' },
    'invalid_client_metadata',
    'client_name',
  ],
  ['contacts with U+0000', { contacts: 'a\u0000b' }, 'invalid_client_metadata', 'contacts'],
  ['contacts with a lone surrogate', { contacts: ['x', 'a\udfff'] }, 'invalid_client_metadata', 'contacts/1'],
  ['a client_name too long', { client_name: 'x'.repeat(257) }, 'invalid_client_metadata', 'client_name'],
  [
    'a negative client_secret_expires_at',
    { client_secret_expires_at: -1 },
    'invalid_client_metadata',
    'client_secret_expires_at',
  ],
  [
    'a fractional client_secret_expires_at',
    { client_secret_expires_at: 1.5 },
    'invalid_client_metadata',
    'client_secret_expires_at',
  ],
  [
    'a client_secret_expires_at in the past',
    { client_secret_expires_at: 1 },
    'invalid_client_metadata',
    'client_secret_expires_at',
  ],
  [
    'a client_secret_expires_at of now',
    { client_secret_expires_at: Math.floor(Date.now() / 1000) },
    'invalid_client_metadata',
    'client_secret_expires_at',
  ],
  [
    'a string client_secret_expires_at',
    { client_secret_expires_at: '0' },
    'invalid_client_metadata',
    'client_secret_expires_at',
  ],
  [
    'a field the interface does not define',
    { grant_types: ['implicit'] },
    'invalid_client_metadata',
    'grant_types',
  ],
  [
    'generate_token that is not a boolean',
    { generate_token: 'yes' },
    'invalid_client_metadata',
    'generate_token',
  ],
];

function expectOAuthError(res: TestResponse, status: number, error: string, field?: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error, error_description: expect.any(String) });
  if (field) expect(res.body.error_description).toContain(field);
}

describe('client metadata validation (RFC 7591, OpenID Connect Registration, RFC 8252)', () => {
  it.each(INVALID_METADATA)('refuses %s on create, naming the field', async (_label, extra, error, field) => {
    const wp = await newWorkplace();
    const body = { redirect_uris: [REDIRECT], ...(extra as object) };
    expectOAuthError(await register(wp, body), 400, error, field);
    expect(await clientCount(wp)).toBe(0);
  });

  it.each(INVALID_METADATA)(
    'refuses %s on update and keeps the client as it was',
    async (_label, extra, error, field) => {
      const wp = await newWorkplace();
      const client = await registered(wp, FULL);
      expectOAuthError(await update(wp, client.client_id, extra), 400, error, field);
      expect((await getOne(wp, client.client_id)).body.result).toEqual(withoutSecret(client));
    },
  );

  it.each([
    ['no redirect_uris', {}, 'invalid_redirect_uri', 'redirect_uris'],
    [
      'generate_token, which is for updates only',
      { redirect_uris: [REDIRECT], generate_token: true },
      'invalid_client_metadata',
      'generate_token',
    ],
  ])('refuses a create with %s', async (_label, body, error, field) => {
    const wp = await newWorkplace();
    expectOAuthError(await register(wp, body), 400, error, field);
    expect(await clientCount(wp)).toBe(0);
  });

  it.each([
    ['a JSON array', '[]'],
    ['JSON null', 'null'],
    ['a JSON string', '"x"'],
    ['broken JSON', '{"redirect_uris": ['],
  ])('refuses %s as the body with invalid_request', async (_label, payload) => {
    const wp = await newWorkplace();
    const res = await oidc(wp, {
      method: 'POST',
      path: '/oidc/registration',
      payload,
      headers: { authorizarion: `Bearer ${wp.token}`, 'content-type': 'application/json' },
    });
    expectOAuthError(res, 400, 'invalid_request');
    expect(await clientCount(wp)).toBe(0);
  });

  it('refuses a create with no body at all', async () => {
    const wp = await newWorkplace();
    expectOAuthError(await oidc(wp, { method: 'POST', path: '/oidc/registration' }), 400, 'invalid_request');
  });

  it('refuses a body that is not JSON with 415', async () => {
    const wp = await newWorkplace();
    const res = await oidc(wp, {
      method: 'POST',
      path: '/oidc/registration',
      payload: 'redirect_uris=https://a.example/cb',
      headers: { authorizarion: `Bearer ${wp.token}`, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectOAuthError(res, 415, 'invalid_request');
  });

  it('re-checks stored redirect URIs when an update changes application_type', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, { application_type: 'native', redirect_uris: ['com.acme.app:/cb'] });
    expectOAuthError(
      await update(wp, client.client_id, { application_type: 'web' }),
      400,
      'invalid_redirect_uri',
      'redirect_uris/0',
    );
    const both = await update(wp, client.client_id, {
      application_type: 'web',
      redirect_uris: [REDIRECT],
    });
    expect(both.status, both.text).toBe(200);
    expect(both.body.result).toMatchObject({ application_type: 'web', redirect_uris: [REDIRECT] });
  });
});

describe('updating a client', () => {
  it('keeps omitted fields, and the response carries no secret', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await update(wp, client.client_id, { client_name: 'Acme portal v2' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual({ ...withoutSecret(client), client_name: 'Acme portal v2' });
    expect(await getOne(wp, client.client_id)).toMatchObject({ body: res.body });
    expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret))).toBe(true);
  });

  it('removes optional fields and resets defaults with null', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await update(wp, client.client_id, {
      client_name: null,
      contacts: null,
      logo_uri: null,
      client_uri: null,
      tos_uri: null,
      policy_uri: null,
      scope: null,
      post_logout_redirect_uris: null,
      client_secret_expires_at: null,
      response_types: null,
      grant_types: null,
      application_type: null,
      token_endpoint_auth_method: null,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual({
      client_id: client.client_id,
      client_id_issued_at: client.client_id_issued_at,
      client_secret_expires_at: 0,
      scope: [],
      redirect_uris: FULL.redirect_uris,
      post_logout_redirect_uris: [],
      response_types: ['code'],
      grant_types: ['authorization_code', 'refresh_token'],
      application_type: 'web',
      token_endpoint_auth_method: 'client_secret_basic',
    });
  });

  it('replaces arrays as a whole', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await update(wp, client.client_id, {
      redirect_uris: ['https://new.acme.example/cb'],
      scope: 'phone',
      contacts: ['a@acme.example'],
    });
    expect(res.body.result).toMatchObject({
      redirect_uris: ['https://new.acme.example/cb'],
      scope: ['phone'],
      contacts: ['a@acme.example'],
    });
  });

  it('rotates the secret with generate_token: true and shows the new one once', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await update(wp, client.client_id, { generate_token: true });
    expect(res.status, res.text).toBe(200);
    const secret = res.body.result.client_secret;
    expect(secret).toMatch(SECRET_FORMAT);
    expect(secret).not.toBe(client.client_secret);
    expect(withoutSecret(res.body.result)).toEqual(withoutSecret(client));
    const hash = await storedHash(client.client_id);
    expect(hash?.equals(hashSecret(secret))).toBe(true);
    expect(hash?.equals(hashSecret(client.client_secret))).toBe(false);
    expect((await getOne(wp, client.client_id)).body.result).not.toHaveProperty('client_secret');
  });

  it('keeps the secret with generate_token: false, alone or with changes', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    for (const body of [{ generate_token: false }, { generate_token: false, client_name: 'x' }, {}]) {
      const res = await update(wp, client.client_id, body);
      expect(res.status, res.text).toBe(200);
      expect(res.body.result).not.toHaveProperty('client_secret');
      expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret))).toBe(true);
    }
  });

  it('rotates the secret and changes metadata in one request', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await update(wp, client.client_id, { generate_token: true, client_name: 'Renamed' });
    expect(res.body.result).toMatchObject({
      client_name: 'Renamed',
      client_secret: expect.stringMatching(SECRET_FORMAT),
    });
  });

  it('refuses a new secret while the stored one has expired, unless the update sets a new expiry', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    await t.sql`
      update oidc_clients set metadata = jsonb_set(metadata, '{client_secret_expires_at}', '1')
      where client_id = ${client.client_id}`;
    expectOAuthError(
      await update(wp, client.client_id, { generate_token: true }),
      400,
      'invalid_client_metadata',
      'client_secret_expires_at',
    );
    expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret))).toBe(true);
    // Other changes to the expired client go through; so does a new secret with a new expiry.
    expect((await update(wp, client.client_id, { client_name: 'Expired' })).status).toBe(200);
    const renewed = await update(wp, client.client_id, { generate_token: true, client_secret_expires_at: 0 });
    expect(renewed.status, renewed.text).toBe(200);
    expect(renewed.body.result).toMatchObject({
      client_secret_expires_at: 0,
      client_secret: expect.stringMatching(SECRET_FORMAT),
    });
  });

  it('does not rotate the secret when the update is refused', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await update(wp, client.client_id, { generate_token: true, application_type: 'desktop' });
    expect(res.status).toBe(400);
    expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret))).toBe(true);
  });

  it('answers 404 invalid_client_id for an unknown client', async () => {
    const wp = await newWorkplace();
    expectOAuthError(
      await update(wp, 'nosuchclientatallxyz', { client_name: 'x' }),
      404,
      'invalid_client_id',
    );
    expect(await clientCount(wp)).toBe(0);
  });
});

describe('reading and deleting clients', () => {
  it('lists the workplace clients in registration order, without secrets', async () => {
    const wp = await newWorkplace();
    expect((await list(wp)).body).toEqual({ result: [] });
    const created = [];
    for (const name of ['first', 'second', 'third']) {
      created.push(await registered(wp, { redirect_uris: [REDIRECT], client_name: name }));
    }
    const res = await list(wp);
    expect(res.status).toBe(200);
    expect(res.body.result).toEqual(created.map(withoutSecret));
    expect(res.text).not.toContain('wpcs_');
  });

  it('gets one client with client_id, and 404 for an unknown one', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp, FULL);
    const res = await getOne(wp, client.client_id);
    expect(res.body).toEqual({ result: withoutSecret(client) });
    expectOAuthError(await getOne(wp, 'nosuchclientatallxyz'), 404, 'invalid_client_id');
  });

  it('deletes a client: 204, then it is gone', async () => {
    const wp = await newWorkplace();
    const keep = await registered(wp);
    const client = await registered(wp);
    const res = await remove(wp, client.client_id);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expectOAuthError(await getOne(wp, client.client_id), 404, 'invalid_client_id');
    expectOAuthError(await remove(wp, client.client_id), 404, 'invalid_client_id');
    expectOAuthError(await update(wp, client.client_id, {}), 404, 'invalid_client_id');
    expect((await list(wp)).body.result).toEqual([withoutSecret(keep)]);
  });

  it('requires client_id to delete', async () => {
    const wp = await newWorkplace();
    await registered(wp);
    expectOAuthError(
      await oidc(wp, { method: 'DELETE', path: '/registration' }),
      400,
      'invalid_request',
      'client_id',
    );
    expect(await clientCount(wp)).toBe(1);
  });

  it("never shows or touches another workplace's clients, even by client_id", async () => {
    const a = await newWorkplace();
    const b = await newWorkplace();
    const clientOfA = await registered(a, FULL);
    expect((await list(b)).body.result).toEqual([]);
    expectOAuthError(await getOne(b, clientOfA.client_id), 404, 'invalid_client_id');
    expectOAuthError(
      await update(b, clientOfA.client_id, { client_name: 'hijacked' }),
      404,
      'invalid_client_id',
    );
    expectOAuthError(await remove(b, clientOfA.client_id), 404, 'invalid_client_id');
    expect((await getOne(a, clientOfA.client_id)).body.result).toEqual(withoutSecret(clientOfA));
  });

  it('goes away with its workplace', async () => {
    const wp = await newWorkplace();
    const client = await registered(wp);
    await t.request({ method: 'DELETE', url: `/v1/workplaces/${wp.name}` });
    expect(await storedHash(client.client_id)).toBeUndefined();
  });
});

describe('isolation: who may call the five client operations', () => {
  let home: Workplace;
  let other: Workplace;
  /** A token that was home's until it was regenerated. */
  let rotatedOut: string;

  beforeAll(async () => {
    home = await newWorkplace();
    other = await newWorkplace();
    rotatedOut = home.token;
    const res = await t.request({ method: 'POST', url: `/v1/workplaces/${home.name}/oidc/token` });
    home.token = res.body.result.token;
  });

  type Operation = {
    name: string;
    success: number;
    run: (headers: Record<string, string>, clientId: string) => Promise<TestResponse>;
  };
  const operations: Operation[] = [
    {
      name: 'list',
      success: 200,
      run: (headers) => oidc(home, { method: 'GET', path: '/registration', headers }),
    },
    {
      name: 'get',
      success: 200,
      run: (headers, id) => oidc(home, { method: 'GET', path: `/registration?client_id=${id}`, headers }),
    },
    {
      name: 'create',
      success: 201,
      run: (headers) =>
        oidc(home, {
          method: 'POST',
          path: '/oidc/registration',
          headers,
          body: { redirect_uris: [REDIRECT] },
        }),
    },
    {
      name: 'update',
      success: 200,
      run: (headers, id) =>
        oidc(home, {
          method: 'POST',
          path: `/oidc/registration?client_id=${id}`,
          headers,
          body: { client_name: 'changed', generate_token: true },
        }),
    },
    {
      name: 'delete',
      success: 204,
      run: (headers, id) => oidc(home, { method: 'DELETE', path: `/registration?client_id=${id}`, headers }),
    },
  ];
  const callers: [string, () => Record<string, string>, boolean][] = [
    ['no token', () => ({}), false],
    ['a malformed header', () => ({ authorizarion: `Bearer${home.token}` }), false],
    ['a header with two tokens', () => ({ authorizarion: `Bearer ${home.token} ${home.token}` }), false],
    ['the wrong scheme', () => ({ authorizarion: `Basic ${home.token}` }), false],
    ['the token of another workplace', () => ({ authorizarion: `Bearer ${other.token}` }), false],
    ['a rotated-out token', () => ({ authorizarion: `Bearer ${rotatedOut}` }), false],
    ['the admin X-Auth-Token', () => ({ 'x-auth-token': t.adminToken }), false],
    ['the correct token', () => ({ authorizarion: `Bearer ${home.token}` }), true],
    ['the correct token in Authorization', () => ({ authorization: `Bearer ${home.token}` }), true],
    // The rule for the two headers (openapi.yaml, Authentication): either one holding
    // `Bearer <the workplace's token>` admits the request, whatever the other holds; a value
    // without the Bearer scheme is no credential.
    ...headerPairs(),
  ];
  function headerPairs(): [string, () => Record<string, string>, boolean][] {
    const pair = (authorizarion: string, authorization: string) => ({ authorizarion, authorization });
    const bearer = () => `Bearer ${home.token}`;
    return [
      ['Bearer in both headers', () => pair(bearer(), bearer()), true],
      // What a generated client sends when given the token for both schemes.
      ['the bare token in Authorizarion, Bearer in Authorization', () => pair(home.token, bearer()), true],
      ['Bearer in Authorizarion, the bare token in Authorization', () => pair(bearer(), home.token), true],
      [
        'a wrong Bearer in Authorizarion, the correct one in Authorization',
        () => pair('Bearer wpo_wrong', bearer()),
        true,
      ],
      [
        'the correct Bearer in Authorizarion, a wrong one in Authorization',
        () => pair(bearer(), 'Bearer wpo_wrong'),
        true,
      ],
      [
        'another workplace token in Authorizarion, ours in Authorization',
        () => pair(`Bearer ${other.token}`, bearer()),
        true,
      ],
      [
        'the correct Bearer in Authorizarion, Basic in Authorization',
        () => pair(bearer(), 'Basic dXNlcjpwYXNz'),
        true,
      ],
      ['a lowercase scheme in Authorization', () => ({ authorization: `bearer ${home.token}` }), true],
      ['an empty Authorizarion, the correct Authorization', () => pair('', bearer()), true],
      ['the bare token alone in Authorizarion', () => ({ authorizarion: home.token }), false],
      ['the bare token alone in Authorization', () => ({ authorization: home.token }), false],
      ['the bare token in both headers', () => pair(home.token, home.token), false],
      ['a wrong Bearer in both headers', () => pair('Bearer wpo_wrong', 'Bearer wpo_wrong_too'), false],
      [
        'another workplace token in both headers',
        () => pair(`Bearer ${other.token}`, `Bearer ${other.token}`),
        false,
      ],
      [
        'the bare token in Authorizarion, a wrong Bearer in Authorization',
        () => pair(home.token, 'Bearer wpo_wrong'),
        false,
      ],
      ['both headers empty', () => pair('', ''), false],
      ['Bearer alone in both headers', () => pair('Bearer', 'Bearer'), false],
    ];
  }
  const cells = operations.flatMap((op) =>
    callers.map(([label, headers, ok]) => [op.name, label, op, headers, ok] as const),
  );

  it.each(cells)('%s with %s', async (_op, _label, op, headers, ok) => {
    const client = await registered(home, { redirect_uris: [REDIRECT], client_name: 'before' });
    const countBefore = await clientCount(home);
    const res = await op.run(headers(), client.client_id);
    if (ok) {
      expect(res.status, res.text).toBe(op.success);
      return;
    }
    expectOAuthError(res, 401, 'invalid_token');
    expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect(res.text).not.toContain(client.client_id);
    // Nothing changed: same clients, same metadata, same secret.
    expect(await clientCount(home)).toBe(countBefore);
    expect((await getOne(home, client.client_id)).body.result).toEqual(withoutSecret(client));
    expect((await storedHash(client.client_id))?.equals(hashSecret(client.client_secret))).toBe(true);
  });

  it.each([
    ['no header', () => ({}), 'The Authorizarion header is missing'],
    [
      'the bare token in Authorizarion',
      () => ({ authorizarion: home.token }),
      'The Authorizarion header must',
    ],
    [
      'the bare token in Authorization',
      () => ({ authorization: home.token }),
      'The Authorization header must',
    ],
    [
      'the bare token in both',
      () => ({ authorizarion: home.token, authorization: home.token }),
      'The Authorizarion and the Authorization header must',
    ],
    [
      'a bare token beside a wrong Bearer',
      () => ({ authorizarion: home.token, authorization: 'Bearer wpo_wrong' }),
      'not valid for this workplace',
    ],
  ])('tells a caller with %s what is wrong', async (_label, headers, description) => {
    const res = await list(home, headers());
    expectOAuthError(res, 401, 'invalid_token');
    expect(res.body.error_description).toContain(description);
  });

  it("does not let another workplace's valid token reach this workplace, even though both exist", async () => {
    const asOther = { ...home, token: other.token };
    expectOAuthError(await list(asOther), 401, 'invalid_token');
    expect((await list(other)).status).toBe(200);
  });
});
