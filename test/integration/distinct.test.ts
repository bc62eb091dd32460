import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DISTINCT_VALUES } from '../../db/storage/documents.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection, queriedPaths } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

interface DistinctCase {
  name: string;
  /** The documents, as raw JSON text when the case needs what JSON.stringify cannot write (`1.0`). */
  docs: Record<string, unknown>[] | string;
  key: string;
  query?: Record<string, unknown>;
  /** MongoDB's answer, in BSON order. */
  values: unknown[];
}

// The inventory collection of MongoDB's manual page on db.collection.distinct().
const INVENTORY = [
  { _id: 1, dept: 'A', item: { sku: '111', color: 'red' }, sizes: ['S', 'M'] },
  { _id: 2, dept: 'A', item: { sku: '111', color: 'blue' }, sizes: ['M', 'L'] },
  { _id: 3, dept: 'B', item: { sku: '222', color: 'blue' }, sizes: 'S' },
  { _id: 4, dept: 'A', item: { sku: '333', color: 'black' }, sizes: ['S'] },
];

const d = (_id: number, rest: Record<string, unknown> = {}) => ({ _id, ...rest });

const cases: DistinctCase[] = [
  { name: 'manual: distinct("dept")', docs: INVENTORY, key: 'dept', values: ['A', 'B'] },
  {
    name: 'manual: distinct("item.sku"), a field of embedded documents',
    docs: INVENTORY,
    key: 'item.sku',
    values: ['111', '222', '333'],
  },
  {
    name: 'manual: distinct("sizes"), array elements and a scalar',
    docs: INVENTORY,
    key: 'sizes',
    values: ['L', 'M', 'S'],
  },
  {
    name: 'manual: distinct("item.sku", {dept: "A"})',
    docs: INVENTORY,
    key: 'item.sku',
    query: { dept: 'A' },
    values: ['111', '333'],
  },
  {
    name: 'manual: [1, [1], 1] gives 1 and [1]',
    docs: [d(1, { a: [1, [1], 1] })],
    key: 'a',
    values: [1, [1]],
  },
  {
    name: 'arrays inside an array stay whole',
    docs: [d(1, { a: [[1, 2], [1, 2], 3] }), d(2, { a: [[2, 1]] })],
    key: 'a',
    values: [3, [1, 2], [2, 1]],
  },
  {
    name: 'null is a value, a missing field is none',
    docs: [d(1, { a: null }), d(2), d(3, { b: 1 }), d(4, { a: [null, 2] })],
    key: 'a',
    values: [null, 2],
  },
  { name: 'only missing fields give nothing', docs: [d(1), d(2, { b: 1 })], key: 'a', values: [] },
  {
    name: 'through an array of documents, missing fields give nothing',
    docs: [d(1, { a: [{ b: 1 }, { c: 2 }, { b: null }] }), d(2, { a: { c: 1 } })],
    key: 'a.b',
    values: [null, 1],
  },
  {
    name: 'through an array of documents to arrays: their elements',
    docs: [d(1, { items: [{ sku: ['x', 'y'] }, { sku: 'z' }] }), d(2, { items: { sku: ['y', 'w'] } })],
    key: 'items.sku',
    values: ['w', 'x', 'y', 'z'],
  },
  {
    name: 'an array of arrays of documents is not walked into',
    docs: [d(1, { a: [[{ b: 1 }], { b: 2 }] })],
    key: 'a.b',
    values: [2],
  },
  {
    name: 'a scalar on the way gives nothing',
    docs: [d(1, { a: 1 }), d(2, { a: 'x' }), d(3, { a: [1, { b: 3 }] })],
    key: 'a.b',
    values: [3],
  },
  { name: 'an empty array gives nothing', docs: [d(1, { a: [] }), d(2, { a: 1 })], key: 'a', values: [1] },
  {
    name: 'mixed types in BSON order',
    docs: [
      d(1, { a: true }),
      d(2, { a: 'x' }),
      d(3, { a: 2 }),
      d(4, { a: null }),
      d(5, { a: { k: 1 } }),
      d(6, { a: [[1]] }),
      d(7, { a: false }),
      d(8, { a: -1.5 }),
      d(9, { a: '' }),
    ],
    key: 'a',
    values: [null, -1.5, 2, '', 'x', { k: 1 }, [1], false, true],
  },
  {
    name: 'numbers in numeric order, strings bytewise',
    docs: [d(1, { a: [10, 2, -1, 0.5] }), d(2, { a: ['b', 'B', 'a', 'A', 'ab'] })],
    key: 'a',
    values: [-1, 0.5, 2, 10, 'A', 'B', 'a', 'ab', 'b'],
  },
  {
    name: 'duplicates within and across documents',
    docs: [d(1, { a: 1 }), d(2, { a: [1, 2, 2] }), d(3, { a: 2 }), d(4, { a: [2, 1] })],
    key: 'a',
    values: [1, 2],
  },
  {
    name: 'embedded documents are values; key order aside, and ordered by JSON text (a deviation)',
    docs: [d(1, { a: { x: 1, y: 2 } }), d(2, { a: { y: 2, x: 1 } }), d(3, { a: [{ x: 1 }] })],
    key: 'a',
    values: [{ x: 1, y: 2 }, { x: 1 }],
  },
  {
    name: 'arrays of documents give the documents',
    docs: [d(1, { items: [{ sku: 'b' }, { sku: 'a' }] }), d(2, { items: [{ sku: 'a' }] })],
    key: 'items',
    values: [{ sku: 'a' }, { sku: 'b' }],
  },
  {
    name: '1 and 1.0 are one value (JSON has one number type)',
    docs: '[{"_id": 1, "a": 1}, {"_id": 2, "a": 1.0}, {"_id": 3, "a": [1.00, 2]}, {"_id": 4, "a": {"n": 1.0}}, {"_id": 5, "a": {"n": 1}}]',
    key: 'a',
    values: [1, 2, { n: 1 }],
  },
  {
    name: 'a numeric segment indexes arrays and names fields',
    docs: [d(1, { a: [5, 6] }), d(2, { a: { '0': 7 } }), d(3, { a: [[9, 8]] })],
    key: 'a.0',
    values: [5, 7, 8, 9],
  },
  {
    // MongoDB's distinct reads the segment only as the index (docs/storage.md, deviations).
    name: 'a numeric segment gives the element at the index and the field of that name in it',
    docs: [d(1, { a: [{ '0': 'x' }] })],
    key: 'a.0',
    values: ['x', { '0': 'x' }],
  },
  { name: '_id', docs: [d(2), d(1), d(3)], key: '_id', values: [1, 2, 3] },
  {
    name: 'a query that matches nothing',
    docs: INVENTORY,
    key: 'dept',
    query: { dept: 'Z' },
    values: [],
  },
  {
    name: 'a query with equality to an embedded document and $elemMatch',
    docs: INVENTORY,
    key: 'sizes',
    query: { $or: [{ item: { sku: '222', color: 'blue' } }, { sizes: { $elemMatch: { $eq: 'L' } } }] },
    values: ['L', 'M', 'S'],
  },
  {
    name: 'a query on the key itself keeps the other elements of matching arrays',
    docs: INVENTORY,
    key: 'sizes',
    query: { sizes: 'L' },
    values: ['L', 'M'],
  },
];

async function insertCase(col: Awaited<ReturnType<typeof freshCollection>>, docs: DistinctCase['docs']) {
  if (typeof docs !== 'string') return col.insert(docs);
  const res = await t.request({
    method: 'POST',
    url: `${col.url}/create`,
    payload: `{"docs": ${docs}}`,
    headers: { 'content-type': 'application/json' },
  });
  expect(res.status, res.text).toBe(201);
}

describe('distinct gives MongoDB values in BSON order', () => {
  for (const indexed of [false, true]) {
    it.each(cases.map((c) => [c.name, c] as const))(`%s${indexed ? ' (indexed)' : ''}`, async (_name, c) => {
      const col = await freshCollection(t);
      if (indexed) {
        // Indexes before the documents, so that multikey is learnt from the writes.
        const paths = new Set([c.key, ...queriedPaths(c.query ?? {})].filter((p) => p !== '_id'));
        for (const path of paths) await col.index([path]);
      }
      await insertCase(col, c.docs);
      const res = await col.call('distinct', { key: c.key, ...(c.query ? { query: c.query } : {}) });
      expect(res.status, res.text).toBe(200);
      expect(res.body.result).toEqual(c.values);
    });
  }
});

describe('distinct refuses what it cannot answer', () => {
  it.each([
    ['an empty key', '', /empty distinct key/],
    ['a $-prefixed key', '$where', /distinct key '\$where' has a segment starting with '\$'/],
    ['a positional segment', 'a.$', /segment starting with '\$' \('\$'\)/],
    ['an empty segment', 'a..b', /distinct key 'a\.\.b' has an empty segment/],
    ['a trailing dot', 'a.', /has an empty segment/],
    ['a key of 2,000 characters', 'a'.repeat(2000), /longer than 1024 characters/],
    ['33 segments', Array(33).fill('a').join('.'), /more than 32 segments/],
    ['5 numeric segments', 'a.0.1.2.3.4', /more than 4 numeric segments/],
  ])('%s', async (_what, key, detail) => {
    const col = await freshCollection(t);
    await col.insert([{ a: 1 }]);
    const res = await col.call('distinct', { key });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(detail);
  });

  it('refuses a bad query as queries are refused', async () => {
    const col = await freshCollection(t);
    const res = await col.call('distinct', { key: 'a', query: { a: { $regx: 'x' } } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(/\$regx/);
  });

  it.each([
    ['no key', { query: {} }],
    ['a key that is not a string', { key: 1 }],
    ['an unknown field', { key: 'a', sort: { a: 1 } }],
  ])('refuses a body with %s', async (_what, body) => {
    const col = await freshCollection(t);
    const res = await col.call('distinct', body);
    expect(res.status, res.text).toBe(400);
  });

  it('answers 404 for a collection that does not exist', async () => {
    const col = await freshCollection(t);
    const res = await t.request({ method: 'POST', url: `${col.url}x/distinct`, body: { key: 'a' } });
    expect(res.status, res.text).toBe(404);
    expect(res.body.code).toBe('COLLECTION_NOT_FOUND');
  });

  it(`returns ${MAX_DISTINCT_VALUES} values, and refuses one more; a narrower query gets them`, async () => {
    const col = await freshCollection(t);
    const many = Array.from({ length: MAX_DISTINCT_VALUES }, (_, i) => i);
    await col.insert([{ _id: 1, a: many }]);
    const full = await col.call('distinct', { key: 'a' });
    expect(full.status, full.text).toBe(200);
    expect(full.body.result).toEqual(many);

    await col.insert([{ _id: 2, a: -1 }]);
    const over = await col.call('distinct', { key: 'a' });
    expect(over.status, over.text).toBe(400);
    expect(over.body.code).toBe('INVALID_QUERY');
    expect(over.body.detail).toMatch(/'a' has more than 10000 distinct values/);

    const narrowed = await col.call('distinct', { key: 'a', query: { _id: 2 } });
    expect(narrowed.status, narrowed.text).toBe(200);
    expect(narrowed.body.result).toEqual([-1]);
  });
});
