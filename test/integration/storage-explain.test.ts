import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { Statistics } from '../../db/storage/statistics.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { citusShard, freshCollection, planOfQuery } from './storage-helpers.js';

const DOCS = 20_000;
let t: TestApp;
let workplace: string;
let table: string;

/** Plans of the statements the API runs, for this collection as the catalog now describes it. */
const planOf = (
  query: Record<string, unknown>,
  sort?: Record<string, 1 | -1>,
  op: 'read' | 'count' = 'read',
) => planOfQuery(t, workplace, 'big', query, sort, op);

beforeAll(async () => {
  t = await startTestApp();
  const col = await freshCollection(t, 'big');
  workplace = col.workplace;
  await col.index(['n'], { name: 'byN' });
  await col.index(['s'], { name: 'byS' });
  await col.index(['tags'], { name: 'byTags' });
  for (let start = 0; start < DOCS; start += 1000) {
    const docs = Array.from({ length: 1000 }, (_, i) => {
      const k = start + i;
      return { _id: `d${k}`, n: k, s: `name${k % 5000}`, tags: [k % 7, k % 11], odd: k % 2 === 1 };
    });
    await col.insert(docs);
  }
  const lookup = await findCollection(t.sql, workplace, 'big');
  if (!lookup.workplace || !lookup.found) throw new Error('no collection');
  table = lookup.found.table;
  // What the server does after a bulk load (its own run is in the background, so may not be done).
  await new Statistics(t.sql).noteWrites(table, DOCS);
  // On Citus the server leaves that to the autovacuum of the worker that holds the shard, which
  // wakes once a minute: a VACUUM (ANALYZE) on the coordinator, which Citus runs on the shard,
  // stands in for it.
  if (await citusShard(t.sql, workplace, 'big')) await t.sql.unsafe(`vacuum (analyze) ${table}`);
}, 300_000);
afterAll(async () => {
  await t?.close();
});

describe(`with an index and ${DOCS} documents, the planner uses it`, () => {
  it('for an equality beside $expr, which is then evaluated on the rows the index finds', async () => {
    const plan = await planOf({ n: 12345, $expr: { $gt: [{ $add: ['$n', 1] }, 0] } });
    expect(plan, plan).toMatch(/Index Cond: \(i\d+_0_a = /);
    expect(plan, plan).toMatch(/Filter: .*mdb\.expr_fold/);
  });

  it.each([
    ['equality', { n: 12345 }, undefined, /Index Cond: \(i\d+_0_a = /],
    ['$in', { n: { $in: [1, 50, 999] } }, undefined, /Index Cond: \(i\d+_0_a = ANY/],
    ['a range', { n: { $gte: 100, $lt: 120 } }, undefined, /Index Cond: \(\(i\d+_0_a >= .*i\d+_0_a < '\\x14/],
    ['string equality', { s: 'name42' }, undefined, /Index Cond: \(i\d+_0_a = /],
    ['a sort with limit', {}, { n: 1 }, /Index Scan using x\d+_a/],
    ['a descending sort with limit', {}, { n: -1 }, /Index Scan Backward using x\d+_d/],
    [
      'a range with a sort',
      { n: { $gt: 500 } },
      { n: 1 },
      /Index Scan using x\d+_a .*\n.*Index Cond: \(\(i\d+_0_a > /,
    ],
    ['an _id lookup', { _id: 'd777' }, undefined, /Index Scan using c_\d+_pkey/],
    ['_id $in', { _id: { $in: ['d1', 'd2'] } }, undefined, /c_\d+_pkey/],
  ] as const)('%s', async (_label, query, sort, pattern) => {
    const plan = await planOf(query, sort);
    expect(plan, plan).toMatch(pattern);
    expect(plan, plan).not.toMatch(/Seq Scan/);
    // On a path that never held an array, the key condition is exact: no document is rechecked.
    if (!('_id' in query)) expect(plan, plan).not.toMatch(/Filter:/);
  });

  it('$jsonSchema beside an indexed range: the index finds the documents, the schema checks them', async () => {
    const schema = { required: ['s'], properties: { s: { pattern: '^name' } } };
    const plan = await planOf({ n: { $gte: 100, $lt: 120 }, $jsonSchema: schema });
    expect(plan, plan).toMatch(/Index Cond: \(\(i\d+_0_a >= /);
    expect(plan, plan).not.toMatch(/Seq Scan/);
  });

  it('counts a condition its keys decide from the index alone, once the table is vacuumed', async () => {
    const plan = await planOf({ n: { $gte: 100, $lt: 5000 } }, undefined, 'count');
    expect(plan, plan).toMatch(/Index Only Scan using x\d+_a/);
  });

  it('counts through the index', async () => {
    const plan = await planOf({ n: { $lt: 50 } }, undefined, 'count');
    expect(plan).toMatch(/Index/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it('counts on a path holding arrays through the keys of every element (a multikey index)', async () => {
    const plan = await planOf({ tags: 3 }, undefined, 'count');
    expect(plan, plan).toMatch(/Bitmap Index Scan on x\d+_k0/);
    expect(plan, plan).not.toMatch(/Seq Scan/);
  });

  it('a comparison with a document or an array finds the documents of its type bracket through the index', async () => {
    // The keys order documents and arrays by their JSON text, not BSON's order: they only narrow;
    // the exact comparison (mdb.bson_key) runs on what they find, here nothing.
    for (const [query, bracket] of [
      [{ n: { $gt: { x: 1 } } }, '28'],
      [{ s: { $lte: ['a'] } }, '32'],
    ] as const) {
      const plan = await planOf(query);
      expect(plan, plan).toMatch(new RegExp(`Index Cond: \\(\\(i\\d+_0_a >= '\\\\x${bracket}'::bytea\\)`));
      expect(plan, plan).not.toMatch(/Seq Scan/);
    }
  });

  it('without an index on the path, it scans (the control)', async () => {
    expect(await planOf({ odd: true }, undefined, 'count')).toMatch(/Seq Scan/);
  });

  it('answers the indexed queries correctly', async () => {
    const col = `/v1/workplaces/${workplace}/storages/big`;
    const read = (body: unknown) => t.request({ method: 'POST', url: `${col}/read`, body });
    expect((await read({ query: { n: 12345 } })).body.result).toEqual([
      { _id: 'd12345', n: 12345, s: 'name2345', tags: [12345 % 7, 12345 % 11], odd: true },
    ]);
    const range = await read({
      query: { n: { $gte: 100, $lt: 120 } },
      sort: { n: -1 },
      fields: { n: 1, _id: 0 },
    });
    expect(range.body.result.map((d: { n: number }) => d.n)).toEqual(
      Array.from({ length: 20 }, (_, i) => 119 - i),
    );
    const count = await t.request({ method: 'POST', url: `${col}/count`, body: { query: { s: 'name42' } } });
    expect(count.body.result.count).toBe(4);
  });
});
