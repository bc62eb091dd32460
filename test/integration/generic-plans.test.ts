import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../db/ttl.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { genericPlan, type PerRowWork, parameterWork, perRowParameterWork } from '../helpers/generic-plan.js';

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
let recorded: Sent[] | undefined;

beforeAll(async () => {
  t = await startTestApp();
  (t.sql.options as { debug?: unknown }).debug = (_c: number, text: string, values: unknown[]) =>
    recorded?.push({ text, values: [...values] });
}, 120_000);
afterAll(async () => {
  await t?.close();
});

/** Statements EXPLAIN can plan (utility statements such as SET, LOCK or DDL have no plan). */
const PLANNABLE = /^\s*(select|insert|update|delete|with)\b/i;

/** Runs `work` and returns the plannable statements with parameters that it sent. */
async function recording(work: () => Promise<void>): Promise<Sent[]> {
  recorded = [];
  try {
    await work();
    return recorded.filter((s) => PLANNABLE.test(s.text) && s.values.length > 0);
  } finally {
    recorded = undefined;
  }
}

/** Every distinct text's per-row work on bound values in its generic plan, with the text. */
async function audit(sent: Sent[]): Promise<{ texts: number; found: (PerRowWork & { text: string })[] }> {
  const byText = new Map<string, Sent>();
  for (const s of sent) byText.set(s.text, s);
  const found: (PerRowWork & { text: string })[] = [];
  const conn = await t.sql.reserve();
  try {
    for (const s of byText.values()) {
      const plan = await genericPlan(conn, s.text, s.values);
      for (const w of perRowParameterWork(plan)) found.push({ ...w, text: s.text });
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
  it('do no per-row work on bound values, for every document statement', async () => {
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
      sent.push(...(await recording(async () => void (await post(`${base}/${op}`, body)))));
    // Pages of a cursor walk.
    sent.push(
      ...(await recording(async () => {
        let cursor: string | undefined;
        do {
          const res = await post(`${base}/read`, { sort: { k: 1 }, limit: 2, ...(cursor ? { cursor } : {}) });
          cursor = res.body.next;
        } while (cursor);
      })),
    );
    sent.push(...(await recording(async () => void (await sweepExpired(t.sql)))));

    const { texts, found } = await audit(sent);
    expect(texts).toBeGreaterThan(40);
    expect(found).toEqual([]);
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
  ])('%s', (expression, expected) => {
    expect(parameterWork(expression)).toEqual(expected);
  });
});
