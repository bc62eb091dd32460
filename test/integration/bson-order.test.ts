import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../mongo/value/json.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

/**
 * BSON's order is implemented twice, and the two differ for embedded documents. The SQL keys of
 * migration 0002 (mdb.key) order sorts, index keys and _id; they compare an embedded document by
 * its JSON text. bsonCompare (mongo/value/compare.ts) orders the update operators; it compares
 * field by field as MongoDB does: the field's type, then its name, then its value, and a prefix
 * first. Filters comparing with a document or an array ($gt, $lt, …) use MongoDB's order too: in
 * SQL mdb.bson_key (migration 0010), which is computed when a filter runs and stored nowhere, and
 * bsonCompare where a projection evaluates the filter (filter/match.ts). The SQL keys are stored (generated index columns, and the id column every collection is
 * keyed by), so making them MongoDB's would take a migration rewriting every collection; until
 * then docs/storage.md (Deviations) says which operation uses which order, and this table pins it.
 *
 * Each pair is in MongoDB's order (`lo` first); `sql` says whether the SQL keys agree. Every
 * operation runs on every pair, so a change to either order fails here.
 */
interface Pair {
  name: string;
  lo: JsonObject;
  hi: JsonObject;
  sql: 'agrees' | 'reversed';
}

const pairs: Pair[] = [
  { name: 'field names, values of one type', lo: { a: 1 }, hi: { b: 1 }, sql: 'agrees' },
  { name: 'strings in a field, bytewise', lo: { a: 'B' }, hi: { a: 'a' }, sql: 'agrees' },
  { name: 'a string before an object', lo: { a: 'z' }, hi: { a: {} }, sql: 'agrees' },
  { name: 'an array before a boolean', lo: { a: [] }, hi: { a: false }, sql: 'agrees' },
  { name: 'numbers in a field, by value', lo: { a: 9 }, hi: { a: 10 }, sql: 'reversed' },
  { name: 'negative numbers, by value', lo: { a: -2 }, hi: { a: -1 }, sql: 'reversed' },
  { name: 'null before a number', lo: { a: null }, hi: { a: 0 }, sql: 'reversed' },
  { name: 'a number before a string', lo: { a: 1 }, hi: { a: '0' }, sql: 'reversed' },
  { name: 'an object before an array', lo: { a: {} }, hi: { a: [] }, sql: 'reversed' },
  { name: "the field's type before its name", lo: { b: 1 }, hi: { a: 'x' }, sql: 'reversed' },
  { name: 'a prefix first', lo: { a: 1 }, hi: { a: 1, b: 1 }, sql: 'reversed' },
  { name: 'the empty document first', lo: {}, hi: { a: 1 }, sql: 'reversed' },
  { name: 'a string with a character JSON escapes', lo: { a: 'a"' }, hi: { a: 'a#' }, sql: 'reversed' },
  { name: 'nested documents, recursively', lo: { a: { b: 9 } }, hi: { a: { b: 10 } }, sql: 'reversed' },
];

const rows = pairs.map((p) => [p.name, p] as const);

/** The pair as the SQL keys order it. */
const sqlOrder = (p: Pair) => (p.sql === 'agrees' ? [p.lo, p.hi] : [p.hi, p.lo]);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

it('the table holds pairs on which the two orders agree and pairs on which they differ', () => {
  expect(new Set(pairs.map((p) => p.sql))).toEqual(new Set(['agrees', 'reversed']));
});

describe('the SQL keys (mdb.key) order sorts, _id and the document a replacement takes', () => {
  for (const indexed of [false, true]) {
    it.each(rows)(`find's sort on an embedded document: %s${indexed ? ' (indexed)' : ''}`, async (_, p) => {
      const col = await freshCollection(t);
      if (indexed) await col.index(['v']);
      await col.insert([
        { _id: 1, v: p.hi },
        { _id: 2, v: p.lo },
      ]);
      const ascending = sqlOrder(p);
      expect((await col.read({ sort: { v: 1 } })).map((d) => d.v)).toEqual(ascending);
      expect((await col.read({ sort: { v: -1 } })).map((d) => d.v)).toEqual([...ascending].reverse());
    });
  }

  it.each(rows)('a read without a sort, in _id order: %s', async (_, p) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: p.hi }, { _id: p.lo }]);
    expect(await col.ids({})).toEqual(sqlOrder(p));
  });

  it.each(rows)('a replacement takes the first match in _id order: %s', async (_, p) => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: p.hi, n: 0 },
      { _id: p.lo, n: 0 },
    ]);
    const res = await col.call('update', { query: {}, doc: { n: 1 } });
    expect(res.status, res.text).toBe(200);
    expect(await col.read({ query: { n: 1 } })).toEqual([{ _id: sqlOrder(p)[0], n: 1 }]);
  });
});

describe("MongoDB's order (bsonCompare) decides $min, $max, $push's $sort and $pull's comparisons", () => {
  it.each(rows)('$min and $max: %s', async (_, p) => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, v: p.hi },
      { _id: 2, v: p.lo },
    ]);
    for (const [_id, update] of [
      [1, { $min: { v: p.lo } }],
      [2, { $max: { v: p.hi } }],
    ] as const) {
      const res = await col.call('update', { query: { _id }, doc: update });
      expect(res.status, res.text).toBe(200);
    }
    expect(await col.read({ sort: { _id: 1 } })).toEqual([
      { _id: 1, v: p.lo },
      { _id: 2, v: p.hi },
    ]);
  });

  it.each(rows)("$push's $sort, of the elements and by a field: %s", async (_, p) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, a: [p.hi, p.lo], b: [{ v: p.hi }, { v: p.lo }] }]);
    const res = await col.call('update', {
      query: {},
      doc: { $push: { a: { $each: [], $sort: 1 }, b: { $each: [], $sort: { v: 1 } } } },
    });
    expect(res.status, res.text).toBe(200);
    expect(await col.read({})).toEqual([{ _id: 1, a: [p.lo, p.hi], b: [{ v: p.lo }, { v: p.hi }] }]);
  });

  it.each(rows)("$pull's $lt and $gt: %s", async (_, p) => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, a: [p.lo, p.hi] },
      { _id: 2, a: [p.lo, p.hi] },
    ]);
    for (const [_id, update] of [
      [1, { $pull: { a: { $lt: p.hi } } }],
      [2, { $pull: { a: { $gt: p.lo } } }],
    ] as const) {
      const res = await col.call('update', { query: { _id }, doc: update });
      expect(res.status, res.text).toBe(200);
    }
    expect(await col.read({ sort: { _id: 1 } })).toEqual([
      { _id: 1, a: [p.hi] },
      { _id: 2, a: [p.lo] },
    ]);
  });
});

describe("MongoDB's order decides the filters' $gt/$gte/$lt/$lte with a document (mdb.bson_key and filter/match.ts)", () => {
  for (const indexed of [false, true]) {
    it.each(rows)(`$lt and $gt in a query: %s${indexed ? ' (indexed)' : ''}`, async (_, p) => {
      const col = await freshCollection(t);
      if (indexed) await col.index(['v']);
      await col.insert([
        { _id: 1, v: p.lo },
        { _id: 2, v: p.hi },
      ]);
      expect(await col.ids({ query: { v: { $lt: p.hi } } })).toEqual([1]);
      expect(await col.ids({ query: { v: { $gt: p.lo } } })).toEqual([2]);
      expect(await col.ids({ query: { v: { $lte: p.lo } } })).toEqual([1]);
      expect(await col.ids({ query: { v: { $gte: p.hi } } })).toEqual([2]);
    });
  }

  it.each(rows)('$lt and $gt in an $elemMatch projection: %s', async (_, p) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, a: [p.hi, p.lo] }]);
    expect(await col.read({ fields: { a: { $elemMatch: { $lt: p.hi } } } })).toEqual([{ _id: 1, a: [p.lo] }]);
    expect(await col.read({ fields: { a: { $elemMatch: { $gt: p.lo } } } })).toEqual([{ _id: 1, a: [p.hi] }]);
  });
});
