import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSpec, specOperations } from '../../http/spec.js';
import { randomName, startTestApp, type TestApp } from '../helpers/app.js';
import { createWhatTheExampleNeeds, exampleRequest, oidcTokenOf } from '../helpers/examples.js';

const spec = loadSpec();
const ops = specOperations(spec);

let t: TestApp;
let workplace: string;
let otherWorkplace: string;
let oidcToken: string;
let otherOidcToken: string;

beforeAll(async () => {
  t = await startTestApp();
  workplace = await t.createWorkplace();
  otherWorkplace = await t.createWorkplace();
  oidcToken = await oidcTokenOf(t, workplace);
  otherOidcToken = await oidcTokenOf(t, otherWorkplace);
});
afterAll(async () => {
  await t?.close();
});

describe('every operation of the contract', () => {
  it('is implemented: none declares 501', () => {
    const pending = ops.filter((op) => {
      const operation = (spec.paths[op.path] as Record<string, { responses: Record<string, unknown> }>)[
        op.method.toLowerCase()
      ];
      return Boolean(operation?.responses['501']);
    });
    expect(pending.map((op) => op.operationId)).toEqual([]);
  });

  it.each(ops.map((o) => [o.operationId, o] as const))(
    '%s answers 2xx to its example request',
    async (_id, op) => {
      // A workplace of its own, since some of these delete what they touch.
      const own = await t.createWorkplace();
      const ids = await createWhatTheExampleNeeds(t, op, own);
      const isOidc = op.path.startsWith('/oidc/');
      const request = exampleRequest(op, own, ids);
      const res = await t.request({
        ...request,
        ...(op.operationId === 'createWorkplace' ? { body: { name: randomName() } } : {}),
        ...(isOidc ? { token: null, headers: { authorizarion: `Bearer ${await oidcTokenOf(t, own)}` } } : {}),
      });
      expect(res.status, res.text).toBeLessThan(300);
    },
  );
});

describe('the /oidc client routes authenticate with the workplace OIDC token', () => {
  const oidcOps = ops.filter((o) => o.path.startsWith('/oidc/'));
  type Case = [string, () => Record<string, string>];
  const rejected: Case[] = [
    ['no header', () => ({})],
    ['an empty header', () => ({ authorizarion: '' })],
    ['no scheme', () => ({ authorizarion: oidcToken })],
    ['the wrong scheme', () => ({ authorizarion: `Basic ${oidcToken}` })],
    ['Bearer alone', () => ({ authorizarion: 'Bearer' })],
    ['a wrong token', () => ({ authorizarion: 'Bearer wpo_not-the-token' })],
    ['another workplace token', () => ({ authorizarion: `Bearer ${otherOidcToken}` })],
    ['the admin token as bearer', () => ({ authorizarion: `Bearer ${t.adminToken}` })],
    ['the admin token as X-Auth-Token', () => ({ 'x-auth-token': t.adminToken })],
    ['the bare token in both headers', () => ({ authorizarion: oidcToken, authorization: oidcToken })],
    [
      'a wrong token in both headers',
      () => ({ authorizarion: 'Bearer wrong', authorization: `Bearer ${otherOidcToken}` }),
    ],
  ];
  for (const op of oidcOps) {
    it.each(rejected)(`${op.operationId} with %s is 401 invalid_token`, async (_label, headers) => {
      const res = await t.request({ ...exampleRequest(op, workplace), token: null, headers: headers() });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      expect(res.body).toMatchObject({ error: 'invalid_token' });
      expect(typeof res.body.error_description).toBe('string');
    });
  }

  it.each([
    ['Authorizarion', { authorizarion: 'Bearer TOKEN' }],
    ['Authorization (alias)', { authorization: 'Bearer TOKEN' }],
    ['a lowercase scheme', { authorizarion: 'bearer TOKEN' }],
    // Either header with the token is enough (openapi.yaml, Authentication).
    [
      'Authorization beside a wrong Authorizarion',
      { authorizarion: 'Bearer wrong', authorization: 'Bearer TOKEN' },
    ],
    ['Authorization beside a bare Authorizarion', { authorizarion: 'TOKEN', authorization: 'Bearer TOKEN' }],
  ])('accepts the token in %s', async (_label, headers) => {
    const withToken = Object.fromEntries(
      Object.entries(headers).map(([k, v]) => [k, v.replace('TOKEN', oidcToken)]),
    );
    const res = await t.request({
      method: 'GET',
      url: `/oidc/${workplace}/registration`,
      token: null,
      headers: withToken,
    });
    expect(res.status, `${JSON.stringify(withToken)} ${res.text}`).not.toBe(401);
  });

  it('answers 401, not 404, for a workplace that does not exist, so existence does not leak', async () => {
    const res = await t.request({
      method: 'GET',
      url: '/oidc/nosuchworkplaceatall/registration',
      token: null,
      headers: { authorizarion: `Bearer ${oidcToken}` },
    });
    expect(res.status).toBe(401);
  });

  it('does not accept the OIDC token on /v1', async () => {
    const res = await t.request({ method: 'GET', url: `/v1/workplaces/${workplace}`, token: oidcToken });
    expect(res.status).toBe(401);
  });
});

describe('around the operations', () => {
  it('serves liveness and readiness without a token', async () => {
    for (const url of ['/healthz', '/readyz']) {
      const res = await t.request({ method: 'GET', url, token: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ result: { status: 'ok' } });
    }
  });

  it('serves the spec as JSON and YAML and the interactive docs', async () => {
    const json = await t.request({ method: 'GET', url: '/openapi.json', token: null });
    expect(json.status).toBe(200);
    expect(json.body.openapi).toBe('3.1.0');
    expect(Object.keys(json.body.paths)).toContain('/oidc/{name}/oidc/registration');
    const yaml = await t.request({ method: 'GET', url: '/openapi.yaml', token: null });
    expect(yaml.status).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/yaml/);
    expect(yaml.text).toContain('Authorizarion');
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/text\/html/);
    expect(docs.body).toContain('swagger-ui');
  });

  it('answers unknown routes with 404 in the format of their area', async () => {
    const v1 = await t.request({ method: 'GET', url: '/v1/nothing/here' });
    expect(v1.status).toBe(404);
    expect(v1.body).toMatchObject({ code: 'ROUTE_NOT_FOUND', status: 404 });
    const wrongMethod = await t.request({ method: 'PUT', url: `/v1/workplaces/${workplace}` });
    expect(wrongMethod.status).toBe(404);
    const oidc = await t.request({ method: 'GET', url: `/oidc/${workplace}/nothing`, token: null });
    expect(oidc.status).toBe(404);
    expect(oidc.body).toMatchObject({ error: 'invalid_request' });
  });

  it('gives every error response a request id that matches nothing secret', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/workplaces/nosuchplace' });
    expect(res.body.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.instance).toBe('/v1/workplaces/nosuchplace');
  });
});
