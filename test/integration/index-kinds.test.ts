import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { Statistics } from '../../db/storage/statistics.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection, planOfQuery } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const createIndex = (url: string, body: Record<string, unknown>) =>
  t.request({ method: 'POST', url: `${url}/indexes`, body });

describe('index options', () => {
  it('are reported as given, by create and by the listing', async () => {
    const col = await freshCollection(t);
    const given = [
      { name: 'active', key: [{ username: 1 }], unique: true, partialFilterExpression: { active: true } },
      { name: 'nick', key: [{ nickname: 1 }], unique: false, sparse: true },
      { name: 'notSparse', key: [{ other: -1 }], unique: false, sparse: false },
      { name: 'ttl', key: [{ lastSeen: 1 }], unique: false, expireAfterSeconds: 3600 },
      {
        name: 'ranged',
        key: [{ a: 1 }, { b: -1 }],
        unique: false,
        partialFilterExpression: {
          $or: [{ a: { $gt: 5 } }, { b: { $in: ['x', 'y'] } }],
          c: { $exists: true },
        },
      },
    ];
    for (const body of given) {
      const res = await createIndex(col.url, body);
      expect(res.status, res.text).toBe(201);
      expect(res.body.result).toEqual(body);
    }
    const list = await t.request({ method: 'GET', url: `${col.url}/indexes` });
    expect(list.body.result).toEqual([
      { name: '_id_', key: [{ _id: 1 }], unique: true },
      ...given.sort((a, b) => (a.name < b.name ? -1 : 1)),
    ]);
  });

  it.each([
    ['$ne', { a: { $ne: 1 } }, "'$ne' on 'a'"],
    ['$nin', { a: { $nin: [1] } }, "'$nin' on 'a'"],
    ['$not', { a: { $not: { $gt: 1 } } }, "'$not' on 'a'"],
    ['$exists: false', { a: { $exists: false } }, "'$exists: false' on 'a'"],
    ['$regex', { a: { $regex: 'x' } }, "'$regex' on 'a'"],
    ['$elemMatch', { a: { $elemMatch: { b: 1 } } }, "'$elemMatch' on 'a'"],
    ['$nor', { $nor: [{ a: 1 }] }, "'$nor'"],
    ['$expr', { $expr: { $eq: ['$a', 1] } }, "'$expr'"],
    ['an object operand', { a: { b: 1 } }, 'object or array'],
    ['an array in $in', { a: { $in: [[1]] } }, 'object or array'],
    ['an empty expression', {}, 'at least one condition'],
    ['an unknown $type', { a: { $type: 'nope' } }, 'nope'],
  ])('a partialFilterExpression with %s is a 400 naming it', async (_label, expr, words) => {
    const col = await freshCollection(t);
    const res = await createIndex(col.url, { name: 'p', key: ['a'], partialFilterExpression: expr });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toContain(words);
    const list = await t.request({ method: 'GET', url: `${col.url}/indexes` });
    expect(list.body.result).toHaveLength(1);
  });

  it.each([
    [
      'sparse with partialFilterExpression',
      { sparse: true, partialFilterExpression: { a: 1 } },
      'INVALID_QUERY',
      'cannot mix',
    ],
    ['TTL on a compound key', { key: ['a', 'b'], expireAfterSeconds: 5 }, 'INVALID_QUERY', 'single-field'],
    ['TTL below 0', { expireAfterSeconds: -1 }, 'VALIDATION_FAILED', ''],
    ['TTL above 2^31-1', { expireAfterSeconds: 2 ** 31 }, 'VALIDATION_FAILED', ''],
    ['TTL not an integer', { expireAfterSeconds: 1.5 }, 'VALIDATION_FAILED', ''],
    ['TTL on _id', { key: ['_id'], expireAfterSeconds: 5 }, 'INVALID_QUERY', '_id'],
    ['sparse not a boolean', { sparse: 'yes' }, 'VALIDATION_FAILED', ''],
    ['a partialFilterExpression not an object', { partialFilterExpression: [1] }, 'VALIDATION_FAILED', ''],
  ])('refuses %s', async (_label, options, code, words) => {
    const col = await freshCollection(t);
    const res = await createIndex(col.url, { name: 'p', key: ['a'], ...options });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe(code);
    expect(res.body.detail ?? '').toContain(words);
  });
});

describe('partial indexes', () => {
  it('unique only among the documents matching the filter', async () => {
    const col = await freshCollection(t);
    await createIndex(col.url, {
      name: 'activeName',
      key: ['username'],
      unique: true,
      partialFilterExpression: { active: true },
    });
    await col.insert([
      { _id: 1, username: 'ann', active: true },
      { _id: 2, username: 'ann', active: false },
      { _id: 3, username: 'ann' },
    ]);
    const dup = await col.call('create', { docs: [{ _id: 4, username: 'ann', active: true }] });
    expect(dup.status).toBe(409);
    expect(dup.body.detail).toContain('activeName');
    // An update that brings a document into the filter is checked too.
    const upd = await col.call('update', { query: { _id: 2 }, doc: { $set: { active: true } } });
    expect(upd.status).toBe(409);
    // Leaving the filter frees the name.
    await col.call('update', { query: { _id: 1 }, doc: { $set: { active: false } } });
    expect((await col.call('update', { query: { _id: 2 }, doc: { $set: { active: true } } })).status).toBe(
      200,
    );
  });

  it('concurrent inserts of one value: one document in the filter, any number outside it', async () => {
    const col = await freshCollection(t);
    await createIndex(col.url, {
      name: 'u',
      key: ['username'],
      unique: true,
      partialFilterExpression: { active: true },
    });
    const insert = (active: boolean) => col.call('create', { docs: [{ username: 'zed', active }] });
    const statuses = await Promise.all(Array.from({ length: 16 }, (_, i) => insert(i % 2 === 0)));
    const inside = statuses.filter((_, i) => i % 2 === 0).map((r) => r.status);
    expect(inside.filter((s) => s === 201)).toHaveLength(1);
    expect(inside.filter((s) => s === 409)).toHaveLength(7);
    expect(statuses.filter((_, i) => i % 2 === 1).every((r) => r.status === 201)).toBe(true);
    expect((await col.call('count', { query: { username: 'zed' } })).body.result.count).toBe(9);
  });

  it('creating a unique partial index checks only the matching documents', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { username: 'ann', active: false },
      { username: 'ann', active: false },
      { username: 'bob', active: true },
    ]);
    const ok = await createIndex(col.url, {
      name: 'u',
      key: ['username'],
      unique: true,
      partialFilterExpression: { active: true },
    });
    expect(ok.status, ok.text).toBe(201);
    const clash = await createIndex(col.url, {
      name: 'u2',
      key: ['username'],
      unique: true,
      partialFilterExpression: { active: false },
    });
    expect(clash.status).toBe(409);
  });

  // Each query's answer, with the partial index {qty: {$gt: 10}} on `item`, is what a collection
  // without it gives: the index may serve only the queries that imply its filter.
  const docs = [
    { _id: 1, item: 'a', qty: 5 },
    { _id: 2, item: 'a', qty: 15 },
    { _id: 3, item: 'b', qty: 20 },
    { _id: 4, item: 'a' },
    { _id: 5, item: 'a', qty: [1, 30] },
    { _id: 6, item: 'b', qty: '50' },
    { _id: 7, item: 'a', qty: 11 },
  ];
  it.each([
    [{ item: 'a' }, [1, 2, 4, 5, 7]],
    [{ item: 'a', qty: { $gt: 10 } }, [2, 5, 7]],
    [{ item: 'a', qty: { $gt: 11 } }, [2, 5]],
    [{ item: 'a', qty: { $gte: 11 } }, [2, 5, 7]],
    [{ item: 'a', qty: { $gte: 10 } }, [2, 5, 7]],
    [{ item: 'a', qty: { $lt: 10 } }, [1, 5]],
    [{ item: 'a', qty: 15 }, [2]],
    [{ item: 'a', qty: 5 }, [1]],
    [{ item: 'a', qty: { $in: [15, 30] } }, [2, 5]],
    [{ item: { $in: ['a', 'b'] }, qty: { $gt: 12 } }, [2, 3, 5]],
    [{ $or: [{ qty: 15 }, { qty: 20 }] }, [2, 3]],
    [{ qty: null }, [4]],
    [{ qty: { $exists: false } }, [4]],
    [{ item: 'b', qty: { $gt: '10' } }, [6]],
  ])('%j', async (query, expected) => {
    const col = await freshCollection(t);
    await createIndex(col.url, { name: 'p', key: ['item'], partialFilterExpression: { qty: { $gt: 10 } } });
    await col.insert(docs);
    expect(await col.ids({ query, sort: { _id: 1 } })).toEqual(expected);
    expect((await col.call('count', { query })).body.result.count).toBe(expected.length);
    expect(await col.ids({ query, sort: { item: 1, _id: 1 } })).toEqual(
      docs
        .filter((d) => expected.includes(d._id))
        .sort((x, y) => (x.item < y.item ? -1 : x.item > y.item ? 1 : x._id - y._id))
        .map((d) => d._id),
    );
  });
});

describe('sparse indexes', () => {
  it('a sparse unique index lets many documents lack the field, and still refuses duplicates', async () => {
    const col = await freshCollection(t);
    await createIndex(col.url, { name: 'nick', key: ['nick'], unique: true, sparse: true });
    await col.insert([{ _id: 1 }, { _id: 2 }, { _id: 3, nick: 'x' }, { _id: 4, nick: null }]);
    expect((await col.call('create', { docs: [{ _id: 5, nick: 'x' }] })).status).toBe(409);
    // null is a value: a sparse index holds it, as MongoDB's does.
    expect((await col.call('create', { docs: [{ _id: 6, nick: null }] })).status).toBe(409);
    expect((await col.call('create', { docs: [{ _id: 7 }] })).status).toBe(201);
  });

  it('a compound sparse index holds documents with any of its fields', async () => {
    const col = await freshCollection(t);
    await createIndex(col.url, { name: 'ab', key: ['a', 'b'], unique: true, sparse: true });
    await col.insert([{ _id: 1 }, { _id: 2 }, { _id: 3, a: 1 }]);
    expect((await col.call('create', { docs: [{ _id: 4, a: 1 }] })).status).toBe(409);
    expect((await col.call('create', { docs: [{ _id: 5, b: 1 }] })).status).toBe(201);
  });

  it.each([
    [{}, [1, 2, 3, 4, 5]],
    [{ a: null }, [1, 2, 3]],
    [{ a: { $exists: false } }, [1, 2]],
    [{ a: { $exists: true } }, [3, 4, 5]],
    [{ a: { $gte: 1 } }, [4, 5]],
    [{ a: { $ne: 1 } }, [1, 2, 3, 5]],
    [{ a: { $in: [null, 2] } }, [1, 2, 3, 5]],
  ])('never makes a query miss documents: %j', async (query, expected) => {
    const col = await freshCollection(t);
    await createIndex(col.url, { name: 'a', key: ['a'], sparse: true });
    await col.insert([{ _id: 1 }, { _id: 2, b: 1 }, { _id: 3, a: null }, { _id: 4, a: 1 }, { _id: 5, a: 2 }]);
    expect(await col.ids({ query, sort: { _id: 1 } })).toEqual(expected);
    // A sort over all the matches, by the sparse field.
    const sorted = await col.ids({ query, sort: { a: 1, _id: 1 } });
    expect([...sorted].sort()).toEqual(expected);
    expect((await col.call('count', { query })).body.result.count).toBe(expected.length);
  });
});

describe('compound indexes with mixed directions', () => {
  // The same documents with and without the index: the index may change the plan, never the order.
  const docs = [
    { _id: 1, a: 1, b: 1 },
    { _id: 2, a: 1, b: 2 },
    { _id: 3, a: 2, b: 1 },
    { _id: 4, b: 5 },
    { _id: 5, a: null, b: 3 },
    { _id: 6, a: 'x', b: 0 },
    { _id: 7, a: 1, b: 2 },
  ];
  const arrays = [
    { _id: 8, a: [0, 3], b: 1 },
    { _id: 9, a: 2, b: [0, 9] },
  ];
  it.each([
    ['without arrays', docs],
    ['with arrays (multikey)', [...docs, ...arrays]],
  ])('sort as MongoDB does, %s', async (_label, set) => {
    const plain = await freshCollection(t);
    const indexed = await freshCollection(t);
    await createIndex(indexed.url, { name: 'ab', key: [{ a: 1 }, { b: -1 }] });
    await plain.insert(set);
    await indexed.insert(set);
    for (const sort of [
      { a: 1, b: -1 },
      { a: -1, b: 1 },
      { a: 1, b: 1 },
      { a: -1, b: -1 },
    ] as const) {
      const want = await plain.ids({ query: {}, sort });
      expect(await indexed.ids({ query: {}, sort }), JSON.stringify(sort)).toEqual(want);
      // Page by page with a cursor too.
      const first = await indexed.call('read', { query: {}, sort, limit: 4 });
      const rest = await indexed.call('read', { query: {}, sort, limit: 100, cursor: first.body.next });
      expect([...first.body.result, ...rest.body.result].map((d: { _id: number }) => d._id)).toEqual(want);
    }
  });
});

describe('with 5,000 documents, the planner', () => {
  const DOCS = 5000;
  let workplace: string;

  const planOf = (
    query: Record<string, unknown>,
    sort?: Record<string, 1 | -1>,
    op: 'read' | 'count' = 'read',
  ) => planOfQuery(t, workplace, 'kinds', query, sort, op);

  beforeAll(async () => {
    const col = await freshCollection(t, 'kinds');
    workplace = col.workplace;
    await createIndex(col.url, {
      name: 'bigOrders',
      key: ['customer'],
      partialFilterExpression: { total: { $gte: 1000 } },
    });
    await createIndex(col.url, { name: 'nick', key: ['nick'], sparse: true });
    await createIndex(col.url, { name: 'mixed', key: [{ m: 1 }, { n: -1 }] });
    for (let start = 0; start < DOCS; start += 1000) {
      await col.insert(
        Array.from({ length: 1000 }, (_, i) => {
          const k = start + i;
          return {
            _id: k,
            customer: `c${k % 500}`,
            total: k % 10 === 0 ? 1000 + k : k % 1000,
            ...(k % 50 === 0 ? { nick: `n${k}` } : {}),
            m: k % 100,
            n: k,
          };
        }),
      );
    }
    const lookup = await findCollection(t.sql, workplace, 'kinds');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    await new Statistics(t.sql).noteWrites(lookup.found.table, DOCS);
  }, 120_000);

  it.each([
    ['the same condition', { customer: 'c10', total: { $gte: 1000 } }],
    ['a narrower range', { customer: 'c10', total: { $gt: 2000 } }],
    ['an equality inside the range', { customer: 'c10', total: 1010 }],
    ['an $in inside the range', { customer: { $in: ['c10', 'c20'] }, total: { $in: [1010, 3000] } }],
  ])('uses a partial index for a query that implies its filter: %s', async (_label, query) => {
    const plan = await planOf(query);
    expect(plan, plan).toMatch(/Index Scan using x\d+_a|Bitmap Index Scan on x\d+_a/);
    expect(plan, plan).not.toMatch(/Seq Scan/);
    const count = await planOf(query, undefined, 'count');
    expect(count, count).toMatch(/Index Scan using x\d+_a|Bitmap Index Scan on x\d+_a/);
    expect(count, count).not.toMatch(/Seq Scan/);
  });

  it.each([
    ['no condition on the filter field', { customer: 'c10' }],
    ['a wider range', { customer: 'c10', total: { $gte: 999 } }],
    ['an equality outside the range', { customer: 'c10', total: 999 }],
    ['the condition in an $or with another', { customer: 'c10', $or: [{ total: { $gte: 1000 } }, { n: 3 }] }],
  ])('does not use it for a query that does not: %s', async (_label, query) => {
    const plan = await planOf(query);
    expect(plan, plan).not.toMatch(/x\d+_a| p\d+/);
    expect(plan, plan).toMatch(/Seq Scan|c_\d+_pkey/);
  });

  it('the answers are right either way', async () => {
    const url = `/v1/workplaces/${workplace}/storages/kinds`;
    const ids = async (query: unknown) =>
      (
        await t.request({
          method: 'POST',
          url: `${url}/read`,
          body: { query, sort: { _id: 1 }, limit: 1000 },
        })
      ).body.result.map((d: { _id: number }) => d._id);
    expect(await ids({ customer: 'c10', total: { $gte: 1000 } })).toEqual([
      10, 510, 1010, 1510, 2010, 2510, 3010, 3510, 4010, 4510,
    ]);
    expect(await ids({ customer: 'c10', total: { $gte: 999 } })).toEqual([
      10, 510, 1010, 1510, 2010, 2510, 3010, 3510, 4010, 4510,
    ]);
    expect(await ids({ customer: 'c11' })).toEqual([11, 511, 1011, 1511, 2011, 2511, 3011, 3511, 4011, 4511]);
  });

  it('uses a sparse index for a query that needs the field, not for null or $exists: false', async () => {
    expect(await planOf({ nick: 'n100' })).toMatch(/x\d+_a/);
    expect(await planOf({ nick: { $gt: 'n' } }, { nick: 1 })).toMatch(/x\d+_a/);
    for (const query of [{ nick: null }, { nick: { $exists: false } }, { nick: { $ne: 'n100' } }]) {
      const plan = await planOf(query, undefined, 'count');
      expect(plan, plan).toMatch(/Seq Scan/);
    }
    // A sort over every document cannot use it.
    const plan = await planOf({}, { nick: 1 });
    expect(plan, plan).not.toMatch(/x\d+_a/);
  });

  it.each([
    ['as declared', { m: 1, n: -1 }, /Index Scan using x\d+ on/],
    ['all reversed', { m: -1, n: 1 }, /Index Scan Backward using x\d+ on/],
  ] as const)('a compound index with mixed directions serves the sort %s', async (_label, sort, pattern) => {
    const plan = await planOf({}, sort);
    expect(plan, plan).toMatch(pattern);
    expect(plan, plan).not.toMatch(/Sort Key|Seq Scan/);
  });

  it('and the order is right, with _id ties, page after page', async () => {
    const url = `/v1/workplaces/${workplace}/storages/kinds`;
    for (const sort of [
      { m: 1, n: -1 },
      { m: -1, n: 1 },
    ]) {
      const first = await t.request({
        method: 'POST',
        url: `${url}/read`,
        body: { query: { m: { $lte: 1 } }, sort, limit: 60 },
      });
      const second = await t.request({
        method: 'POST',
        url: `${url}/read`,
        body: { query: { m: { $lte: 1 } }, sort, limit: 60, cursor: first.body.next },
      });
      const got = [...first.body.result, ...second.body.result].map((d: { _id: number }) => d._id);
      const want = Array.from({ length: DOCS }, (_, k) => k)
        .filter((k) => k % 100 <= 1)
        .sort((a, b) => (sort.m === 1 ? (a % 100) - (b % 100) || b - a : (b % 100) - (a % 100) || a - b));
      expect(got).toEqual(want);
    }
  });

  it('a mixed-direction sort the index does not match sorts itself (the control)', async () => {
    const plan = await planOf({}, { m: 1, n: 1 });
    expect(plan, plan).toMatch(/Sort Key/);
  });
});
