import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../db/connection/sql.js';
import { purgeExpiredLoginAttempts } from '../../db/platform/login-attempts.js';
import { citusInstalled } from '../../db/storage/citus-shapes.js';
import { sweepExpired } from '../../db/storage/ttl.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import {
  genericPlan,
  type PerRowWork,
  type PlanNode,
  parameterWork,
  perRowParameterWork,
  uniqueIndexes,
} from '../helpers/generic-plan.js';
import {
  AFTER_LOGOUT,
  authorizationRequest,
  Browser,
  discover,
  formAction,
  REDIRECT,
  signIn,
  signOut,
  startLiveServer,
  tenantKit,
} from '../helpers/oidc-flow.js';
import { PLANS_NOT_ON_CITUS } from './storage-helpers.js';

/**
 * Issue 41: no statement may get slower under its generic plan, which PostgreSQL runs for a
 * prepared statement (postgres.js prepares them) from its sixth execution on a connection. Every
 * statement the server sends for a broad set of requests is recorded (postgres.js's `debug`), and
 * its generic plan is searched for per-row work on bound values (test/helpers/generic-plan.ts): the
 * class of defect of a bulk insert that parsed its whole array of generated ids once per row.
 */
let t: TestApp;
interface Sent {
  text: string;
  values: unknown[];
}

beforeAll(async () => {
  t = await startTestApp();
}, 120_000);
afterAll(async () => {
  await t?.close();
});

/** Statements EXPLAIN can plan (utility statements such as SET, LOCK or DDL have no plan). */
const PLANNABLE = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * Runs `work` and returns the plannable statements with parameters that it sent through `sql`
 * (the test app's, or a live server's database handle: the OpenID Provider needs a real port).
 */
async function recording(sql: Sql, work: () => Promise<void>): Promise<Sent[]> {
  const options = sql.options as { debug?: unknown };
  const before = options.debug;
  const sent: Sent[] = [];
  options.debug = (_c: number, text: string, values: unknown[]) => sent.push({ text, values: [...values] });
  try {
    await work();
    return sent.filter((s) => PLANNABLE.test(s.text) && s.values.length > 0);
  } finally {
    options.debug = before;
  }
}

/** Every distinct text's per-row work on bound values in its generic plan, planned on `sql`, with the text. */
async function audit(
  sql: Sql,
  sent: Sent[],
): Promise<{ texts: number; found: (PerRowWork & { text: string })[] }> {
  const byText = new Map<string, Sent>();
  for (const s of sent) byText.set(s.text, s);
  const found: (PerRowWork & { text: string })[] = [];
  const conn = await sql.reserve();
  try {
    const unique = await uniqueIndexes(conn);
    for (const s of byText.values()) {
      const plan = await genericPlan(conn, s.text, s.values);
      for (const w of perRowParameterWork(plan, unique)) found.push({ ...w, text: s.text });
    }
  } finally {
    conn.release();
  }
  return { texts: byText.size, found };
}

/** Request bodies for every document route: ids given or not, operators and replacements, upserts. */
const CASES: [op: string, body: Record<string, unknown>][] = [
  [
    'create',
    { docs: [{ _id: 1, k: 1, u: 'a', a: 1, b: 2, x: 5, t: 'hello world', seen: '2000-01-01T00:00:00Z' }] },
  ],
  [
    'create',
    {
      docs: [
        { k: 2, u: 'b', tags: ['a', 'b'] },
        { k: [3, 4], u: 'c', a: 2, b: 1 },
      ],
    },
  ],
  [
    'create',
    {
      docs: [
        { _id: 'm1', k: 5, u: 'd', o: { p: 1 } },
        { k: 6, u: 'e', arr: [1, 2] },
        { _id: 'm2', u: 'f', nick: 'n', active: true, p: 3 },
      ],
    },
  ],
  ['create', { docs: [{ k: 7, u: 'g', name: 'abc', obj: { a: 1 } }] }],
  ['read', { query: { k: 1 } }],
  ['read', { query: { u: 'a' } }],
  ['read', { query: { k: { $in: [1, 2, 3] } }, limit: 5 }],
  ['read', { query: { k: { $gte: 1, $lt: 5 } }, sort: { k: 1 }, limit: 2 }],
  ['read', { query: { a: { $gt: 0 } }, sort: { a: 1, b: 1 } }],
  ['read', { query: { a: { $gt: 0 } }, sort: { a: -1, b: -1 }, skip: 1 }],
  ['read', { query: { x: 5 }, fields: { x: 1 } }],
  ['read', { query: { x: { $ne: 5 }, k: { $exists: true } } }],
  ['read', { query: { 'o.p': { $exists: true } } }],
  ['read', { query: { tags: { $all: ['a', 'b'] } } }],
  ['read', { query: { tags: { $size: 2 } } }],
  ['read', { query: { arr: { $elemMatch: { $gt: 1 } } } }],
  ['read', { query: { x: { $type: 'number' } } }],
  ['read', { query: { name: { $regex: '^ab', $options: 'i' } } }],
  ['read', { query: { obj: { a: 1 } } }],
  ['read', { query: { arr: [1, 2] } }],
  ['read', { query: { obj: { $gt: { a: 0 } } } }],
  ['read', { query: { $or: [{ k: 1 }, { x: 2 }] } }],
  ['read', { query: { $nor: [{ k: 1 }, { x: { $lt: 2 } }] } }],
  ['read', { query: { $expr: { $gt: ['$k', 1] } } }],
  ['read', { query: { $jsonSchema: { required: ['k'], properties: { k: { bsonType: 'int' } } } } }],
  ['read', { query: { $text: { $search: 'hello' } }, fields: { score: { $meta: 'textScore' } } }],
  ['read', { query: { _id: 1 } }],
  ['read', { query: { _id: { $in: [1, 'm1'] } } }],
  ['read', { query: { k: null } }],
  ['read', { query: { x: { $mod: [2, 1] } } }],
  ['read', { query: { p: 3, active: true } }],
  ['read', { query: { nick: 'n' } }],
  ['count', { query: { k: { $gte: 1 } } }],
  ['count', { query: { x: 5, name: { $exists: false } } }],
  ['distinct', { key: 'k', query: { x: { $gt: 0 } } }],
  [
    'aggregate',
    {
      pipeline: [
        { $match: { x: { $gte: 1 } } },
        { $addFields: { k2: { $multiply: ['$x', 2] } } },
        { $sort: { k2: -1 } },
        { $limit: 10 },
        { $project: { k: 1, k2: 1 } },
      ],
    },
  ],
  ['aggregate', { pipeline: [{ $unwind: '$tags' }, { $group: { _id: '$tags', n: { $sum: 1 } } }] }],
  [
    'aggregate',
    {
      pipeline: [
        { $match: { k: 1 } },
        { $lookup: { from: 'other', localField: 'k', foreignField: 'k', as: 'o' } },
        { $count: 'n' },
      ],
    },
  ],
  ['update', { query: { k: { $gte: 1 } }, doc: { $inc: { n: 1 } } }],
  ['update', { query: { _id: 'up1' }, doc: { $set: { k: 9, u: 'u9' } }, upsert: true }],
  ['update', { query: { tags: 'a' }, doc: { $set: { 'tags.$': 'z' } } }],
  [
    'update',
    {
      query: { arr: { $exists: true } },
      doc: { $set: { 'arr.$[e]': 0 } },
      arrayFilters: [{ e: { $gt: 1 } }],
    },
  ],
  ['update-one', { query: { _id: 1 }, doc: { $set: { p: [2, 3] } } }],
  ['update-one', { query: { u: 'u10' }, doc: { $set: { k: 10 } }, upsert: true }],
  ['replace-one', { query: { _id: 'up1' }, doc: { k: 11, u: 'u11' } }],
  ['replace-one', { query: { _id: 'up2' }, doc: { k: 12, u: 'u12' }, upsert: true }],
  [
    'find-one-and-update',
    {
      query: { k: { $gte: 1 } },
      sort: { k: -1 },
      doc: { $inc: { n: 1 } },
      fields: { n: 1 },
      returnDocument: 'after',
    },
  ],
  ['find-one-and-update', { query: { _id: 'up3' }, doc: { $set: { k: 13, u: 'u13' } }, upsert: true }],
  ['find-one-and-replace', { query: { _id: 'up3' }, doc: { k: 14, u: 'u14' } }],
  ['find-one-and-delete', { query: { _id: 'up3' } }],
  ['delete-one', { query: { u: 'u12' } }],
  ['delete', { query: { k: { $gte: 9 } } }],
  ['delete', { query: { _id: { $in: ['m1', 'm2'] } } }],
];

describe('generic plans', () => {
  it('do no per-row work on bound values, for every document statement', async (ctx) => {
    if (await citusInstalled(t.sql)) ctx.skip(PLANS_NOT_ON_CITUS);
    const wp = await t.createWorkplace();
    const storages = `/v1/workplaces/${wp}/storages`;
    const post = async (url: string, body: unknown, ok = [200, 201]) => {
      const res = await t.request({ method: 'POST', url, body });
      expect(ok, `${url} ${JSON.stringify(body)}: ${res.text}`).toContain(res.status);
      return res;
    };
    for (const name of ['items', 'other']) await post(storages, { name });
    const base = `${storages}/items`;
    for (const body of [
      { name: 'byK', key: ['k'] },
      { name: 'byU', key: ['u'], unique: true },
      { name: 'byAB', key: [{ a: 1 }, { b: 1 }] },
      { name: 'active', key: [{ p: 1 }], partialFilterExpression: { active: true } },
      { name: 'nick', key: [{ nick: 1 }], sparse: true },
      { name: 'ttl', key: [{ seen: 1 }], expireAfterSeconds: 60 },
      { name: 'byText', key: [{ t: 'text' }] },
    ])
      await post(`${base}/indexes`, body);
    await post(`${storages}/other/indexes`, { name: 'byK', key: ['k'] });
    await post(`${storages}/other/create`, { docs: [{ k: 1 }, { k: 2 }] });

    const sent: Sent[] = [];
    for (const [op, body] of CASES)
      sent.push(...(await recording(t.sql, async () => void (await post(`${base}/${op}`, body)))));
    // Pages of a cursor walk.
    sent.push(
      ...(await recording(t.sql, async () => {
        let cursor: string | undefined;
        do {
          const res = await post(`${base}/read`, { sort: { k: 1 }, limit: 2, ...(cursor ? { cursor } : {}) });
          cursor = res.body.next;
        } while (cursor);
      })),
    );
    sent.push(...(await recording(t.sql, async () => void (await sweepExpired(t.sql)))));

    const { texts, found } = await audit(t.sql, sent);
    expect(texts).toBeGreaterThan(40);
    expect(found).toEqual([]);
  }, 120_000);

  it("do no per-row work on bound values, for the OpenID Provider's statements", async (ctx) => {
    if (await citusInstalled(t.sql)) ctx.skip(PLANS_NOT_ON_CITUS);
    // The provider answers relying parties and browsers over HTTP: a live server, with a
    // database handle of its own, whose statements are recorded and audited there.
    const server = await startLiveServer();
    try {
      const kit = tenantKit(server);
      const ok = async (method: string, path: string, body?: unknown, status = [200, 201, 204]) => {
        const res = await kit.api(method, path, body);
        expect(status, `${method} ${path}: ${res.text}`).toContain(res.status);
        return res;
      };
      const sent = await recording(server.sql, async () => {
        // OIDC settings written and read, a user's password set, a client registered.
        const tenant = await kit.newTenant(
          { token_timeout: 900, refresh_timeout: 7200 },
          { grant_types: ['authorization_code', 'refresh_token', 'client_credentials'] },
        );
        const v1 = `/v1/workplaces/${tenant.workplace}/oidc`;
        await ok('GET', v1);
        await ok('POST', v1, { id_token_timeout: 600, session_timeout: 86400 });
        await ok('POST', `${v1}/keys`, {});
        // Clients listed, read, updated; another registered and deleted.
        const clients = async (method: string, path: string, body?: unknown) => {
          const res = await kit.api(method, `/oidc/${tenant.workplace}${path}`, body, {
            'x-auth-token': '',
            authorizarion: `Bearer ${tenant.oidcToken}`,
          });
          expect([200, 201, 204], `${method} ${path}: ${res.text}`).toContain(res.status);
          return res;
        };
        const id = encodeURIComponent(tenant.clientId);
        await clients('GET', '/registration');
        await clients('GET', `/registration?client_id=${id}`);
        await clients('POST', `/oidc/registration?client_id=${id}`, {
          client_name: 'Acme portal',
          redirect_uris: [REDIRECT],
          post_logout_redirect_uris: [AFTER_LOGOUT],
          scope: ['email', 'profile', 'offline_access'],
        });
        const spare = await clients('POST', '/oidc/registration', { redirect_uris: [REDIRECT] });
        await clients('DELETE', `/registration?client_id=${encodeURIComponent(spare.body.result.client_id)}`);

        const config = await discover(tenant);
        // A failed sign-in (a wrong password counts in login_attempts), then a good one, which
        // clears them: login, consent, and the code exchanged for tokens.
        const browser = new Browser();
        const login = await browser.follow((await authorizationRequest(config)).url.href, server.base);
        const wrong = await browser.request(formAction(await (login.page as Response).text(), login.url), {
          form: { login: 'ada@acme.example', password: 'not the password' },
        });
        expect(wrong.status).toBe(401);
        // What a sign-in attempt also runs, 1 time in 100 (oidc/throttle.ts): always, so that
        // what the audit finds does not depend on chance.
        await purgeExpiredLoginAttempts(server.sql, 15 * 60);
        const signedIn = async (b: Browser) => {
          const { url, verifier, state } = await authorizationRequest(config);
          return oidc.authorizationCodeGrant(config, await signIn(b, url), {
            pkceCodeVerifier: verifier,
            expectedState: state,
          });
        };
        const tokens = await signedIn(browser);
        expect((await oidc.fetchUserInfo(config, tokens.access_token, 'u-ada')).sub).toBe('u-ada');
        const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
        expect((await oidc.fetchUserInfo(config, refreshed.access_token, 'u-ada')).sub).toBe('u-ada');
        expect((await oidc.tokenIntrospection(config, refreshed.access_token)).active).toBe(true);
        await oidc.tokenRevocation(config, refreshed.refresh_token as string);
        await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token as string)).rejects.toMatchObject(
          {
            error: 'invalid_grant',
          },
        );
        await oidc.tokenRevocation(config, refreshed.access_token);
        expect((await oidc.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
        expect((await oidc.clientCredentialsGrant(config)).access_token).toBeTruthy();

        // RP-initiated logout, confirmed on the provider's page.
        const landed = await signOut(config, browser, tokens.id_token as string, AFTER_LOGOUT, server.base);
        expect(landed?.href).toBe(AFTER_LOGOUT);

        // An operator lists the user's sessions and grants (a page at a time), revokes a grant,
        // ends a session, then all of them.
        for (let i = 0; i < 3; i++) await signedIn(new Browser());
        const sessions = `${v1}/users/u-ada/sessions`;
        const items: { kind: string; id: string }[] = [];
        let cursor: string | undefined;
        do {
          const res = await ok(
            'GET',
            `${sessions}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          );
          items.push(...res.body.result);
          cursor = res.body.next;
        } while (cursor);
        const grant = items.find((i) => i.kind === 'grant');
        const session = items.find((i) => i.kind === 'session');
        expect(grant && session, JSON.stringify(items)).toBeTruthy();
        await ok('DELETE', `${v1}/users/u-ada/grants/${grant?.id}`, undefined, [204]);
        await ok('DELETE', `${sessions}/${session?.id}`, undefined, [204]);
        await ok('DELETE', sessions, undefined, [204]);
        expect((await ok('GET', sessions)).body.result).toEqual([]);
      });

      const { texts, found } = await audit(server.sql, sent);
      expect(texts).toBeGreaterThan(10);
      expect(found).toEqual([]);
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe('the per-row work the audit finds', () => {
  it.each([
    // [expression as EXPLAIN VERBOSE shows it, what is found]
    [
      "CASE WHEN (a.e ? '_id'::text) THEN a.e ELSE (jsonb_build_object('_id', ((($3)::text)::jsonb -> ((a.n)::integer - 1))) || a.e) END",
      ['($3)::text'],
    ],
    ['(i2_0_a = substr(mdb.key((($1)::text)::jsonb), 1, 1024))', ['($1)::text']],
    ['(i2_0_a = substr(mdb.key($1), 1, 1024))', ['mdb.key($1)']],
    ['jsonb_path_match(doc, $1, $2)', []],
    ['(i2_0_a = $1)', []],
    ['(doc @> \'{"a": 1}\'::jsonb)', []],
    ['(i2_0_a = ANY (ARRAY[$1, $2]))', []],
    ['((InitPlan 1).col1)::jsonb', ['((InitPlan 1).col1)::jsonb']],
    ['mdb.key((InitPlan 1).col1)', ['mdb.key((InitPlan 1).col1)']],
    ['jsonb_path_match(doc, $1, (InitPlan 2).col1)', []],
    ['(id = $1::bytea)', ['$1::bytea']],
    // Found in any expression: an index scan by a unique key is exempted by its node (below).
    ['($2)::jsonb', ['($2)::jsonb']],
  ])('%s', (expression, expected) => {
    expect(parameterWork(expression)).toEqual(expected);
  });
});

describe('the scans whose per-row work the audit counts once', () => {
  // The generic plan of an update by primary key (db/platform/oidc-clients.ts): the index scan finds at
  // most one row, so the JSON it sets is parsed once per execution, as a custom plan parses it.
  const scan = (cond: string, index = 'oidc_clients_pkey'): PlanNode => ({
    'Node Type': 'Index Scan',
    'Parent Relationship': 'Outer',
    Schema: 'public',
    'Index Name': index,
    Output: ['CASE WHEN $4 THEN $3 ELSE secret_hash END', '($2)::jsonb', 'now()', 'ctid'],
    'Index Cond': cond,
  });
  const update = (child: PlanNode): PlanNode => ({ 'Node Type': 'ModifyTable', Plans: [child] });
  const unique = new Map([
    ['public.oidc_clients_pkey', ['client_id']],
    ['public.two_columns', ['workplace_id', 'client_id']],
  ]);
  it.each([
    // [what, plan, what is found]
    ['by its unique key', update(scan('(c.client_id = $1)')), []],
    [
      'by a unique key of two columns',
      update(scan('((c.workplace_id = $2) AND (c.client_id = $1))', 'two_columns')),
      [],
    ],
    ['by part of a unique key', update(scan('(c.client_id = $1)', 'two_columns')), ['($2)::jsonb']],
    [
      'by an index that is not unique',
      update(scan('(c.client_id = $1)', 'oidc_clients_by_workplace')),
      ['($2)::jsonb'],
    ],
    ['by a list of keys', update(scan('(c.client_id = ANY ($1))')), ['($2)::jsonb']],
    [
      'by its unique key, once per outer row',
      {
        'Node Type': 'Nested Loop',
        Plans: [
          { 'Node Type': 'Seq Scan', 'Parent Relationship': 'Outer' },
          { ...scan('(c.client_id = $1)'), 'Parent Relationship': 'Inner' },
        ],
      },
      ['($2)::jsonb'],
    ],
  ] as [string, PlanNode, string[]][])('%s', (_what, plan, expected) => {
    expect(perRowParameterWork(plan, unique).map((w) => w.expression)).toEqual(expected);
  });
});
