import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

function expectProblem(
  res: { status: number; headers: Record<string, unknown>; body: unknown },
  status: number,
  code: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: 'about:blank', status, code });
  expect(typeof (res.body as { detail: unknown }).detail).toBe('string');
}

describe('workplace lifecycle', () => {
  it('creates, reads and deletes a workplace', async () => {
    const name = randomName();
    const created = await t.request({ method: 'POST', url: '/v1/workplaces', body: { name } });
    expect(created.status).toBe(201);
    expect(created.body.result.name).toBe(name);
    expect(Date.parse(created.body.result.created_at)).not.toBeNaN();

    const got = await t.request({ method: 'GET', url: `/v1/workplaces/${name}` });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);

    const deleted = await t.request({ method: 'DELETE', url: `/v1/workplaces/${name}` });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');

    expectProblem(
      await t.request({ method: 'GET', url: `/v1/workplaces/${name}` }),
      404,
      'WORKPLACE_NOT_FOUND',
    );
    expectProblem(
      await t.request({ method: 'DELETE', url: `/v1/workplaces/${name}` }),
      404,
      'WORKPLACE_NOT_FOUND',
    );
  });

  it('accepts DELETE with Content-Type: application/json and an empty body, as the interface sends it', async () => {
    const name = await t.createWorkplace();
    const res = await t.request({
      method: 'DELETE',
      url: `/v1/workplaces/${name}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
  });

  it('gives every workplace its own schema and OIDC settings, and removes both with it', async () => {
    const name = await t.createWorkplace();
    const [row] = await t.sql<{ id: string; token: string; collection: string; token_timeout: number }[]>`
      select w.id, s.token, s.collection, s.token_timeout
      from workplaces w join oidc_settings s on s.workplace_id = w.id where w.name = ${name}`;
    expect(row).toBeDefined();
    expect(row?.token).toMatch(/^wpo_[A-Za-z0-9_-]{43}$/);
    expect(row?.collection).toBe('users');
    expect(row?.token_timeout).toBe(3600);
    const schema = `wp_${row?.id}`;
    await t.sql`create table ${t.sql(schema)}.things (id text primary key, doc jsonb not null)`;
    await t.sql`insert into ${t.sql(schema)}.things values ('a', ${t.sql.json({ x: 1 })})`;

    expect((await t.request({ method: 'DELETE', url: `/v1/workplaces/${name}` })).status).toBe(204);
    const left = await t.sql`
      select (select count(*)::int from information_schema.schemata where schema_name = ${schema}) as schemas,
             (select count(*)::int from oidc_settings where workplace_id = ${row?.id ?? '0'}) as settings`;
    expect(left[0]).toEqual({ schemas: 0, settings: 0 });
  });

  it('is case-sensitive for lookups but refuses names that differ only in case', async () => {
    const name = await t.createWorkplace();
    const upper = name.toUpperCase();
    expectProblem(
      await t.request({ method: 'GET', url: `/v1/workplaces/${upper}` }),
      404,
      'WORKPLACE_NOT_FOUND',
    );
    const dup = await t.request({ method: 'POST', url: '/v1/workplaces', body: { name: upper } });
    expectProblem(dup, 409, 'WORKPLACE_EXISTS');
    expect(dup.body.detail).toContain(name);
  });

  it('answers 409 for a duplicate name and keeps the first', async () => {
    const name = await t.createWorkplace();
    expectProblem(
      await t.request({ method: 'POST', url: '/v1/workplaces', body: { name } }),
      409,
      'WORKPLACE_EXISTS',
    );
    expect((await t.request({ method: 'GET', url: `/v1/workplaces/${name}` })).status).toBe(200);
  });

  it('gives exactly one 201 when 20 creates of one name race', async () => {
    const name = randomName();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => t.request({ method: 'POST', url: '/v1/workplaces', body: { name } })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
  });
});

describe('bad input on workplace routes', () => {
  const badNames: [string, unknown][] = [
    ['empty', ''],
    ['digits', 'abc1'],
    ['space', 'my place'],
    ['dash', 'my-place'],
    ['non-Latin letter', 'café'],
    ['Cyrillic', 'мир'],
    ['65 letters', 'a'.repeat(65)],
    ['SQL fragment', "x'; drop table workplaces; --"],
  ];
  it.each(badNames)('rejects a name with %s, naming the rule', async (_label, name) => {
    const res = await t.request({ method: 'POST', url: '/v1/workplaces', body: { name } });
    expectProblem(res, 400, 'VALIDATION_FAILED');
    expect(res.body.errors).toContainEqual(expect.objectContaining({ in: 'body', path: '/name' }));
    expect(res.body.detail).toMatch(
      /\/name must (match pattern "\^\[A-Za-z\]\+\$"|NOT have (more|fewer) than)/,
    );
  });

  it('accepts a name of exactly 64 letters', async () => {
    const name = randomName('x').padEnd(64, 'q');
    expect((await t.request({ method: 'POST', url: '/v1/workplaces', body: { name } })).status).toBe(201);
  });

  const badBodies: [string, RequestInitLike, number, string, string?][] = [
    ['no body', { payload: undefined }, 400, 'VALIDATION_FAILED'],
    ['an empty JSON body', { payload: '', contentType: 'application/json' }, 400, 'VALIDATION_FAILED'],
    ['a number for name', { body: { name: 1 } }, 400, 'VALIDATION_FAILED', '/name'],
    ['null for name', { body: { name: null } }, 400, 'VALIDATION_FAILED', '/name'],
    ['an array for name', { body: { name: ['abc'] } }, 400, 'VALIDATION_FAILED', '/name'],
    ['an array body', { body: [{ name: 'abc' }] }, 400, 'VALIDATION_FAILED'],
    ['a JSON null body', { payload: 'null', contentType: 'application/json' }, 400, 'VALIDATION_FAILED'],
    ['a string body', { body: 'abc' }, 400, 'VALIDATION_FAILED'],
    ['a missing name', { body: {} }, 400, 'VALIDATION_FAILED', '/name'],
    ['an unknown property', { body: { name: 'abc', color: 'red' } }, 400, 'VALIDATION_FAILED', '/color'],
    ['invalid JSON', { payload: '{"name": ', contentType: 'application/json' }, 400, 'INVALID_JSON'],
    [
      'a __proto__ key',
      { payload: '{"name":"abc","__proto__":{"x":1}}', contentType: 'application/json' },
      400,
      'INVALID_JSON',
    ],
    ['text/plain', { payload: '{"name":"abc"}', contentType: 'text/plain' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    [
      'form data',
      { payload: 'name=abc', contentType: 'application/x-www-form-urlencoded' },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
  ];
  it.each(badBodies)('rejects %s', async (_label, input, status, code, path) => {
    const res = await t.request({
      method: 'POST',
      url: '/v1/workplaces',
      ...('body' in input ? { body: input.body } : {}),
      ...(input.payload !== undefined ? { payload: input.payload } : {}),
      ...(input.contentType ? { headers: { 'content-type': input.contentType } } : {}),
    });
    expectProblem(res, status, code);
    if (path) expect(res.body.errors).toContainEqual(expect.objectContaining({ path }));
  });

  it('rejects a body over the size limit with 413', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/v1/workplaces',
      payload: JSON.stringify({ name: 'a'.repeat(17 * 1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it.each([
    ['GET', 'bad-name'],
    ['DELETE', 'bad1'],
    ['GET', 'a'.repeat(65)],
  ] as const)('rejects %s with an invalid path name %s', async (method, name) => {
    const res = await t.request({ method, url: `/v1/workplaces/${encodeURIComponent(name)}` });
    expectProblem(res, 400, 'VALIDATION_FAILED');
    expect(res.body.errors[0]).toMatchObject({ in: 'path', path: '/name' });
  });
});

describe('authentication on workplace routes', () => {
  const routes = [
    { method: 'POST', url: '/v1/workplaces', body: { name: 'abc' } },
    { method: 'GET', url: '/v1/workplaces/abc' },
    { method: 'DELETE', url: '/v1/workplaces/abc' },
  ] as const;
  const tokens: [string, string | null][] = [
    ['no token', null],
    ['an empty token', ''],
    ['a wrong token', 'wpa_wrongwrongwrongwrongwrongwrongwrongwrong1'],
    ['the admin token with a trailing space', 'SELF '],
  ];
  for (const route of routes) {
    it.each(tokens)(`${route.method} ${route.url} with %s is 401`, async (_label, token) => {
      const res = await t.request({ ...route, token: token === 'SELF ' ? `${t.adminToken} ` : token });
      expectProblem(res, 401, 'UNAUTHORIZED');
    });
  }

  it('authenticates before validating: a bad body without a token is 401, not 400', async () => {
    for (const payload of ['{"name": 1}', 'not json', '']) {
      const res = await t.request({
        method: 'POST',
        url: '/v1/workplaces',
        payload,
        token: null,
        headers: { 'content-type': payload === 'not json' ? 'text/plain' : 'application/json' },
      });
      expectProblem(res, 401, 'UNAUTHORIZED');
    }
  });

  it('does not accept the token in another header or the query string', async () => {
    const viaAuthorization = await t.request({
      method: 'GET',
      url: '/v1/workplaces/abc',
      token: null,
      headers: { authorization: `Bearer ${t.adminToken}` },
    });
    expectProblem(viaAuthorization, 401, 'UNAUTHORIZED');
    const viaQuery = await t.request({
      method: 'GET',
      url: `/v1/workplaces/abc?token=${t.adminToken}`,
      token: null,
    });
    expectProblem(viaQuery, 401, 'UNAUTHORIZED');
  });

  it('never echoes the token in an error body', async () => {
    const res = await t.request({
      method: 'GET',
      url: '/v1/workplaces/abc',
      token: 'wpa_secretsecretsecret',
    });
    expect(res.text).not.toContain('secretsecret');
  });
});

interface RequestInitLike {
  body?: unknown;
  payload?: string;
  contentType?: string;
}
