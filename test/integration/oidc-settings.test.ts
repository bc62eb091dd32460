import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const TOKEN_FORMAT = /^wpo_[A-Za-z0-9_-]{43}$/; // 32 bytes = 256 bits of base64url

const settingsUrl = (name: string) => `/v1/workplaces/${name}/oidc`;

async function settingsOf(name: string) {
  const res = await t.request({ method: 'GET', url: settingsUrl(name) });
  expect(res.status, res.text).toBe(200);
  return res.body.result;
}

/** Lists the workplace's clients with an OIDC token: 200 when the token is the workplace's. */
function listClientsWith(name: string, token: string) {
  return t.request({
    method: 'GET',
    url: `/oidc/${name}/registration`,
    token: null,
    headers: { authorizarion: `Bearer ${token}` },
  });
}

describe('GET /v1/workplaces/{name}/oidc', () => {
  it('gives every new workplace the documented defaults and its own token', async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    const settings = await settingsOf(a);
    expect(settings).toEqual({
      collection: 'users',
      token: expect.stringMatching(TOKEN_FORMAT),
      token_timeout: 3600,
      id_token_timeout: 3600,
      refresh_timeout: 1209600,
      session_timeout: 1209600,
      allowed_origins: [],
    });
    expect((await settingsOf(b)).token).not.toBe(settings.token);
  });

  it('returns the token that the /oidc routes accept', async () => {
    const name = await t.createWorkplace();
    const { token } = await settingsOf(name);
    expect((await listClientsWith(name, token)).status).toBe(200);
  });

  it('answers 404 for a workplace that does not exist', async () => {
    const res = await t.request({ method: 'GET', url: settingsUrl('nosuchworkplacehere') });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('WORKPLACE_NOT_FOUND');
  });

  it('does not accept the OIDC token as X-Auth-Token', async () => {
    const name = await t.createWorkplace();
    const { token } = await settingsOf(name);
    for (const request of [
      { method: 'GET' as const, url: settingsUrl(name), token },
      { method: 'POST' as const, url: settingsUrl(name), token, body: { token_timeout: 5 } },
      { method: 'POST' as const, url: `${settingsUrl(name)}/token`, token },
    ]) {
      const res = await t.request(request);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('UNAUTHORIZED');
    }
    expect((await settingsOf(name)).token_timeout).toBe(3600);
  });
});

describe('POST /v1/workplaces/{name}/oidc', () => {
  it.each([
    [{ token_timeout: 900 }],
    [{ id_token_timeout: 1 }],
    [{ refresh_timeout: 31536000 }],
    [{ session_timeout: 60 }],
    [{ collection: 'People' }],
    [
      {
        token_timeout: 86400,
        id_token_timeout: 300,
        refresh_timeout: 7200,
        session_timeout: 3600,
        collection: 'staff',
      },
    ],
  ])('updates exactly the fields it is given: %j', async (patch) => {
    const name = await t.createWorkplace();
    const before = await settingsOf(name);
    const res = await t.request({ method: 'POST', url: settingsUrl(name), body: patch });
    expect(res.status, res.text).toBe(200);
    const expected = { ...before, ...patch };
    expect(res.body).toEqual({ result: expected });
    expect(await settingsOf(name)).toEqual(expected);
  });

  it('accepts a collection that does not exist yet, as documented', async () => {
    const name = await t.createWorkplace();
    const res = await t.request({ method: 'POST', url: settingsUrl(name), body: { collection: 'members' } });
    expect(res.status).toBe(200);
    expect(res.body.result.collection).toBe('members');
    const storages = await t.request({ method: 'GET', url: `/v1/workplaces/${name}/storages` });
    expect(storages.body.result).toEqual([]);
  });

  it.each([
    ['no field at all', {}, ''],
    ['zero', { token_timeout: 0 }, '/token_timeout'],
    ['a negative lifetime', { id_token_timeout: -1 }, '/id_token_timeout'],
    ['an access token lifetime over a day', { token_timeout: 86401 }, '/token_timeout'],
    ['an ID token lifetime over a day', { id_token_timeout: 86401 }, '/id_token_timeout'],
    ['a refresh lifetime over a year', { refresh_timeout: 31536001 }, '/refresh_timeout'],
    ['an absurd session lifetime', { session_timeout: 1e15 }, '/session_timeout'],
    ['a fraction', { session_timeout: 1.5 }, '/session_timeout'],
    ['a numeric string', { token_timeout: '60' }, '/token_timeout'],
    ['null', { refresh_timeout: null }, '/refresh_timeout'],
    ['a collection name with a space', { collection: 'my users' }, '/collection'],
    ['a collection name with digits', { collection: 'users2' }, '/collection'],
    ['an empty collection name', { collection: '' }, '/collection'],
    ['a collection that is not a string', { collection: 7 }, '/collection'],
    ['the token, which is not writable', { token: 'wpo_mine' }, '/token'],
    ['an unknown field', { token_lifetime: 60 }, '/token_lifetime'],
  ])('rejects %s with 400 naming the field, and changes nothing', async (_label, body, path) => {
    const name = await t.createWorkplace();
    const before = await settingsOf(name);
    const res = await t.request({ method: 'POST', url: settingsUrl(name), body });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toContainEqual(expect.objectContaining({ in: 'body', path }));
    expect(await settingsOf(name)).toEqual(before);
  });

  it('keeps the other lifetimes when one of several is out of range (no partial write)', async () => {
    const name = await t.createWorkplace();
    const before = await settingsOf(name);
    const res = await t.request({
      method: 'POST',
      url: settingsUrl(name),
      body: { token_timeout: 60, refresh_timeout: 0 },
    });
    expect(res.status).toBe(400);
    expect(await settingsOf(name)).toEqual(before);
  });

  it('answers 404 for a workplace that does not exist', async () => {
    const res = await t.request({
      method: 'POST',
      url: settingsUrl('nosuchworkplacehere'),
      body: { token_timeout: 60 },
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('WORKPLACE_NOT_FOUND');
  });

  it('does not touch the settings of another workplace', async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    const before = await settingsOf(b);
    await t.request({
      method: 'POST',
      url: settingsUrl(a),
      body: { token_timeout: 42, collection: 'other' },
    });
    expect(await settingsOf(b)).toEqual(before);
  });
});

describe('POST /v1/workplaces/{name}/oidc/token', () => {
  it.each([
    ['no body', {}],
    ['an empty object', { body: {} }],
    ['an empty JSON body', { headers: { 'content-type': 'application/json' } }],
  ])('with %s replaces the token; the old one stops working at once', async (_label, extra) => {
    const name = await t.createWorkplace();
    const before = await settingsOf(name);
    expect((await listClientsWith(name, before.token)).status).toBe(200);

    const res = await t.request({ method: 'POST', url: `${settingsUrl(name)}/token`, ...extra });
    expect(res.status, res.text).toBe(200);
    const token = res.body.result.token;
    expect(res.body).toEqual({ result: { token: expect.stringMatching(TOKEN_FORMAT) } });
    expect(token).not.toBe(before.token);

    expect(await settingsOf(name)).toEqual({ ...before, token });
    const old = await listClientsWith(name, before.token);
    expect(old.status).toBe(401);
    expect(old.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect((await listClientsWith(name, token)).status).toBe(200);
  });

  it('never repeats a token', async () => {
    const name = await t.createWorkplace();
    const seen = new Set([(await settingsOf(name)).token]);
    for (let i = 0; i < 20; i++) {
      const res = await t.request({ method: 'POST', url: `${settingsUrl(name)}/token` });
      seen.add(res.body.result.token);
    }
    expect(seen.size).toBe(21);
  });

  it('keeps the other settings and leaves other workplaces alone', async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    await t.request({ method: 'POST', url: settingsUrl(a), body: { token_timeout: 77 } });
    const beforeA = await settingsOf(a);
    const beforeB = await settingsOf(b);
    await t.request({ method: 'POST', url: `${settingsUrl(a)}/token` });
    const afterA = await settingsOf(a);
    expect({ ...afterA, token: beforeA.token }).toEqual(beforeA);
    expect(await settingsOf(b)).toEqual(beforeB);
    expect((await listClientsWith(b, beforeB.token)).status).toBe(200);
  });

  it('rejects body fields and answers 404 for an unknown workplace', async () => {
    const name = await t.createWorkplace();
    const before = await settingsOf(name);
    const withField = await t.request({
      method: 'POST',
      url: `${settingsUrl(name)}/token`,
      body: { token: 'x' },
    });
    expect(withField.status).toBe(400);
    expect(withField.body.errors).toContainEqual(expect.objectContaining({ path: '/token' }));
    const nullBody = await t.request({
      method: 'POST',
      url: `${settingsUrl(name)}/token`,
      payload: 'null',
      headers: { 'content-type': 'application/json' },
    });
    expect(nullBody.status).toBe(400);
    expect(await settingsOf(name)).toEqual(before);

    const missing = await t.request({ method: 'POST', url: `${settingsUrl('nosuchworkplacehere')}/token` });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('WORKPLACE_NOT_FOUND');
  });
});
