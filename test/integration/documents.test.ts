import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { updateDocuments } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import type { JsonObject } from '../../mongo/value/json.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('create', () => {
  // A body whose numbers are all spelled as JSON.stringify spells them is stored from its own text
  // (http/json-depth.ts); any other is parsed and written out again. Both must store the same.
  it('stores a body as its parsed value, whether it is stored from its text or written out again', async () => {
    const docs = (last: string) => `{ "docs": [{"_id": "ignored"}],
      "docs" : [ {"_id":"a", "n":1, "x":-2.5, "s":"caf\\u00e9 \\/ \\"q\\" \\ud83c\\udf89", "dup":1, "dup":2,
                  "o":{"k":[1, {"z":null, "_id": 3}], "t":true, "f":false}, "e":{}, "l":[], "big":123456789012345},
                 {"name":"no id", "v":0.000001, "w":-0.5},
                 {"_id":{"b":1, "a":[2]}, "y":[0.1, 0.2]},
                 {"_id":"last", "r":${last}} ] }`;
    const stored: string[] = [];
    for (const last of ['1.5', '1.50']) {
      const col = await freshCollection(t);
      const res = await t.request({
        method: 'POST',
        url: `${col.url}/create`,
        payload: docs(last),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, res.text).toBe(201);
      const ids = res.body.result.insertedIds;
      expect([ids[0], ids[2], ids[3]]).toEqual(['a', { b: 1, a: [2] }, 'last']);
      expect(ids[1]).toMatch(/^[0-9a-f]{24}$/);
      const read = await col.call('read', { query: {}, sort: { name: -1, _id: 1 } });
      expect(read.status).toBe(200);
      expect(read.body.result[0]).toEqual({ _id: ids[1], name: 'no id', v: 0.000001, w: -0.5 });
      stored.push(read.text.replace(ids[1], 'generated'));
    }
    expect(stored[1]).toContain('"r": 1.5}');
    expect(stored[0]).toBe(stored[1]);
    expect(JSON.parse(stored[0] as string).result).toEqual([
      { _id: 'generated', name: 'no id', v: 0.000001, w: -0.5 },
      {
        _id: 'a',
        n: 1,
        x: -2.5,
        s: 'café / "q" 🎉',
        dup: 2,
        o: { k: [1, { z: null, _id: 3 }], t: true, f: false },
        e: {},
        l: [],
        big: 123456789012345,
      },
      { _id: 'last', r: 1.5 },
      { _id: { b: 1, a: [2] }, y: [0.1, 0.2] },
    ]);
  });

  it('inserts every document, gives ObjectId-style ids, and returns the ids in order', async () => {
    const col = await freshCollection(t);
    const res = await col.call('create', {
      docs: [{ name: 'Ada' }, { _id: 'u2', name: 'Linus' }, { _id: 7 }],
    });
    expect(res.status).toBe(201);
    const { insertedCount, insertedIds } = res.body.result;
    expect(insertedCount).toBe(3);
    expect(insertedIds[0]).toMatch(/^[0-9a-f]{24}$/);
    expect(insertedIds.slice(1)).toEqual(['u2', 7]);
    const docs = await col.read({ sort: { name: 1 } });
    expect(docs).toEqual([{ _id: 7 }, { _id: insertedIds[0], name: 'Ada' }, { _id: 'u2', name: 'Linus' }]);
  });

  it('returns _id first in every document, although JSONB sorts keys', async () => {
    const col = await freshCollection(t);
    // JSONB puts shorter keys before `_id` in the first document and after it in the second.
    await col.insert([
      { b: 1, a: 2, _id: 'x', id: 3, z: { y: 1 } },
      { email: 'e', _id: 'y', name: 'n' },
    ]);
    for (const fields of [undefined, {}, { a: 1, name: 1 }, { z: 0 }]) {
      const docs = await col.read({ sort: { _id: 1 }, ...(fields ? { fields } : {}) });
      expect(docs.map((d: object) => Object.keys(d)[0])).toEqual(['_id', '_id']);
    }
  });

  it('sends stored documents as UTF-8 JSON, _id first, whatever their keys and values hold', async () => {
    const col = await freshCollection(t);
    const doc = {
      é: 'ü',
      'a b': 'quote " backslash \\ tab \t newline \n',
      n: 1e21,
      tiny: 5e-324,
      neg: -0.25,
      text: 'snow ☃ and 🎉, 中文',
      _id: 'ζ',
      nested: { _id: 1, list: [1.5, null, true, { é: [] }] },
    };
    await col.insert([doc]);
    for (const fields of [undefined, { nested: 0 }]) {
      const res = await col.call('read', { query: {}, ...(fields ? { fields } : {}) });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const [got] = JSON.parse(res.text).result;
      expect(Object.keys(got)[0]).toBe('_id');
      const { nested, ...rest } = doc;
      expect(got).toEqual(fields ? rest : doc);
    }
  });

  it.each([
    ['a duplicate _id within the request', [{ _id: 1 }, { _id: 1.0 }], '_id 1'],
    ['an _id that exists', [{ _id: 'fresh' }, { _id: 'taken' }], '_id "taken"'],
    ['an object _id that exists, in another key order', [{ _id: { b: 2, a: 1 } }], '_id {"a":1,"b":2}'],
  ])('answers 409 for %s, naming it, and writes nothing', async (_label, docs, named) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 'taken' }, { _id: { a: 1, b: 2 } }]);
    const res = await col.call('create', { docs });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('DUPLICATE_KEY');
    expect(res.body.detail).toContain(named);
    expect((await col.call('count', { query: {} })).body.result.count).toBe(2);
  });

  it('takes an _id of up to 1,024 bytes as JSON', async () => {
    const col = await freshCollection(t);
    const ids = ['x'.repeat(1022), '\u0001'.repeat(170), 'é'.repeat(511)];
    expect(await col.insert(ids.map((_id) => ({ _id })))).toEqual(ids);
  });

  it.each([
    ['an array _id', [{ _id: [1] }], 'INVALID_QUERY', /_id may not be an array/],
    [
      'an _id of 1,025 bytes',
      [{}, { _id: 'x'.repeat(1023) }],
      'INVALID_QUERY',
      /Document 1: _id is longer than 1024 bytes/,
    ],
    [
      'a short _id that escapes long',
      [{ _id: '\u0001'.repeat(171) }],
      'INVALID_QUERY',
      /Document 0: _id is longer/,
    ],
    [
      'an _id of 600 two-byte characters',
      [{ _id: 'é'.repeat(600) }],
      'INVALID_QUERY',
      /Document 0: _id is longer/,
    ],
    ['a $ field name', [{ ok: 1 }, { $set: 1 }], 'INVALID_QUERY', /may not start with '\$'/],
    ['a dotted field name', [{ 'a.b': 1 }], 'INVALID_QUERY', /may not contain '\.'/],
    ['a nested dotted field name', [{ a: [{ 'b.c': 1 }] }], 'INVALID_QUERY', /'a\.0\.b\.c'/],
    ['a NUL character', [{ s: 'a\u0000b' }], 'INVALID_QUERY', /./],
    [
      '101 levels of nesting',
      [JSON.parse(`${'{"a":'.repeat(101)}1${'}'.repeat(101)}`)],
      'INVALID_QUERY',
      /deeper than 100/,
    ],
    ['a non-object document', [{ a: 1 }, 5], 'VALIDATION_FAILED', /docs\/1/],
    ['no documents', [], 'VALIDATION_FAILED', /docs/],
    ['1,001 documents', Array.from({ length: 1001 }, () => ({})), 'VALIDATION_FAILED', /docs/],
  ])('answers 400 for %s and writes nothing', async (_label, docs, code, message) => {
    const col = await freshCollection(t);
    const res = await col.call('create', { docs });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe(code);
    expect(res.body.detail).toMatch(message);
    expect((await col.call('count', { query: {} })).body.result.count).toBe(0);
  });
});

describe('read', () => {
  it('defaults to 100 documents in _id order and allows up to 1,000', async () => {
    const col = await freshCollection(t);
    await col.insert(Array.from({ length: 150 }, (_, i) => ({ _id: i })));
    const page = await col.read({});
    expect(page).toHaveLength(100);
    expect(page[0]).toEqual({ _id: 0 });
    expect((await col.read({ limit: 1000 })).length).toBe(150);
    const tooMany = await col.call('read', { limit: 1001 });
    expect(tooMany.status).toBe(400);
    expect((await col.call('read', { limit: 0 })).status).toBe(400);
    expect((await col.call('read', { skip: -1 })).status).toBe(400);
  });

  it('pages with skip and limit over a sort', async () => {
    const col = await freshCollection(t);
    await col.insert(Array.from({ length: 30 }, (_, i) => ({ _id: i, g: i % 3 })));
    const pages = [];
    for (let skip = 0; skip < 30; skip += 7)
      pages.push(...(await col.ids({ sort: { g: 1 }, skip, limit: 7 })));
    expect(pages).toHaveLength(30);
    expect(new Set(pages).size).toBe(30);
    expect(pages.slice(0, 3)).toEqual([0, 3, 6]);
  });

  it('projects with fields', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, name: 'Ada', age: 36, profile: { city: 'London', zip: 'N1' }, tags: [{ k: 1, v: 2 }] },
    ]);
    expect(await col.read({ fields: { name: 1 } })).toEqual([{ _id: 1, name: 'Ada' }]);
    expect(await col.read({ fields: { name: 1, _id: 0 } })).toEqual([{ name: 'Ada' }]);
    expect(await col.read({ fields: { 'profile.city': 1, 'tags.k': 1 } })).toEqual([
      { _id: 1, profile: { city: 'London' }, tags: [{ k: 1 }] },
    ]);
    expect(await col.read({ fields: { profile: 0, tags: 0, age: 0 } })).toEqual([{ _id: 1, name: 'Ada' }]);
    const mixed = await col.call('read', { fields: { name: 1, age: 0 } });
    expect(mixed.status).toBe(400);
    expect(mixed.body.detail).toMatch(/Cannot do exclusion on field age in inclusion projection/);
  });

  it.each([
    [{ query: { a: { $foo: 1 } } }, /Unknown query operator '\$foo' on 'a'/],
    [{ query: { $where: '1' } }, /\$where/],
    [{ query: { a: { $regex: '(' } } }, /regular expression|parenthes/i],
    [{ sort: { 'a..b': 1 } }, /empty segment/],
    [{ fields: { a: { $elemMatch: 1 } } }, /\$elemMatch \(projection\) needs an object/],
  ])('answers 400 INVALID_QUERY for %j, naming the problem', async (body, message) => {
    const col = await freshCollection(t);
    await col.insert([{ a: 'x' }]);
    const res = await col.call('read', body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(message);
  });

  it('answers 400 VALIDATION_FAILED for a sort direction other than 1 or -1', async () => {
    const col = await freshCollection(t);
    const res = await col.call('read', { sort: { a: 'asc' } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('/sort/a');
  });
});

describe('count and delete', () => {
  it('count is exact and requires a query', async () => {
    const col = await freshCollection(t);
    await col.insert([{ a: 1 }, { a: 2 }, { a: 2 }]);
    expect((await col.call('count', { query: { a: 2 } })).body).toEqual({ result: { count: 2 } });
    expect((await col.call('count', { query: {} })).body.result.count).toBe(3);
    const missing = await col.call('count', {});
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0]).toMatchObject({ path: '/query' });
  });

  it('delete removes what matches, {} removes everything, and a missing query is a 400', async () => {
    const col = await freshCollection(t);
    await col.insert([{ a: 1 }, { a: 2 }, { a: 2 }, { b: 1 }]);
    const missing = await col.call('delete', {});
    expect(missing.status).toBe(400);
    expect((await col.call('count', { query: {} })).body.result.count).toBe(4);
    expect((await col.call('delete', { query: { a: 2 } })).body).toEqual({ result: { deletedCount: 2 } });
    expect((await col.call('delete', { query: { a: 9 } })).body.result.deletedCount).toBe(0);
    expect((await col.call('delete', { query: {} })).body.result.deletedCount).toBe(2);
    expect((await col.call('count', { query: {} })).body.result.count).toBe(0);
  });
});

describe('update', () => {
  it('applies operators to every matching document and counts matched and modified', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, n: 1, tags: ['a'] },
      { _id: 2, n: 2, tags: ['a', 'b'] },
      { _id: 3, n: 3 },
    ]);
    const res = await col.call('update', {
      query: { tags: 'a' },
      doc: { $inc: { n: 10 }, $addToSet: { tags: 'b' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: { matchedCount: 2, modifiedCount: 2 } });
    expect(await col.read({})).toEqual([
      { _id: 1, n: 11, tags: ['a', 'b'] },
      { _id: 2, n: 12, tags: ['a', 'b'] },
      { _id: 3, n: 3 },
    ]);
    const noop = await col.call('update', { query: { _id: 1 }, doc: { $set: { n: 11 } } });
    expect(noop.body.result).toEqual({ matchedCount: 1, modifiedCount: 0 });
  });

  it('replaces a document, keeping its _id', async () => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 'k', a: 1, b: 2 }]);
    const res = await col.call('update', { query: { a: 1 }, doc: { c: 3 } });
    expect(res.body.result).toEqual({ matchedCount: 1, modifiedCount: 1 });
    expect(await col.read({})).toEqual([{ _id: 'k', c: 3 }]);
  });

  it('upserts from the query equality fields, doc and $setOnInsert', async () => {
    const col = await freshCollection(t);
    const res = await col.call('update', {
      query: { email: 'a@x', age: { $gt: 5 } },
      doc: { $set: { name: 'Ada' }, $setOnInsert: { created: 'now' }, $inc: { logins: 1 } },
      upsert: true,
    });
    expect(res.status).toBe(200);
    expect(res.body.result.matchedCount).toBe(0);
    expect(res.body.result.modifiedCount).toBe(0);
    expect(res.body.result.upsertedId).toMatch(/^[0-9a-f]{24}$/);
    const [doc] = await col.read({ fields: { _id: 0 } });
    expect(doc).toEqual({ email: 'a@x', name: 'Ada', created: 'now', logins: 1 });

    const again = await col.call('update', {
      query: { email: 'a@x' },
      doc: { $setOnInsert: { created: 'later' }, $inc: { logins: 1 } },
      upsert: true,
    });
    expect(again.body.result).toEqual({ matchedCount: 1, modifiedCount: 1 });
    expect(await col.read({ fields: { _id: 0 } })).toEqual([
      { email: 'a@x', name: 'Ada', created: 'now', logins: 2 },
    ]);
  });

  it('writes nothing when one matching document cannot take the update', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, n: 1 },
      { _id: 2, n: 'two' },
      { _id: 3, n: 3 },
    ]);
    const res = await col.call('update', { query: {}, doc: { $inc: { n: 1 } } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(/\$inc/);
    expect(res.body.detail).toMatch(/'n'/);
    expect(await col.read({})).toEqual([
      { _id: 1, n: 1 },
      { _id: 2, n: 'two' },
      { _id: 3, n: 3 },
    ]);
  });

  it.each([
    [{ query: {}, doc: { $set: { a: 1 }, $inc: { 'a.b': 1 } } }, /conflict at 'a'/],
    [{ query: {}, doc: { $set: { _id: 5 } } }, /immutable field '_id'/],
    [{ query: {}, doc: { $sett: { a: 1 } } }, /\$sett/],
    [{ query: {}, doc: { $set: { a: 1 }, b: 2 } }, /./],
    [{ query: { a: { $bad: 1 } }, doc: { $set: { a: 1 } } }, /\$bad/],
    [{ query: {}, doc: { $push: { a: { $each: 1 } } } }, /\$each/],
    [{ query: {}, doc: { $set: { 'a.$': 1 } } }, /positional|\$/],
  ])('answers 400 for %j and writes nothing', async (body, message) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, a: 0 }]);
    const res = await col.call('update', body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(message);
    expect(await col.read({})).toEqual([{ _id: 1, a: 0 }]);
  });

  it.each([
    ['a missing query', { doc: { $set: { a: 1 } } }, '/query'],
    ['a missing doc', { query: {} }, '/doc'],
    ['a non-boolean upsert', { query: {}, doc: {}, upsert: 'yes' }, '/upsert'],
  ])('answers 400 for %s', async (_label, body, path) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, a: 0 }]);
    const res = await col.call('update', body);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe(path);
    expect(await col.read({})).toEqual([{ _id: 1, a: 0 }]);
  });
});

/** Each update operator through the API, with MongoDB's result. */
const updateCases: [string, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>][] = [
  ['$set nested, creating parents', { a: 1 }, { $set: { 'b.c.d': 2 } }, { a: 1, b: { c: { d: 2 } } }],
  ['$set an array index, padding with null', { a: [1] }, { $set: { 'a.2': 3 } }, { a: [1, null, 3] }],
  ['$unset', { a: 1, b: 2 }, { $unset: { a: '' } }, { b: 2 }],
  ['$unset an array element leaves null', { a: [1, 2] }, { $unset: { 'a.0': '' } }, { a: [null, 2] }],
  ['$inc', { n: 1.5 }, { $inc: { n: 2, m: 1 } }, { n: 3.5, m: 1 }],
  ['$mul', { n: 3 }, { $mul: { n: 2, m: 5 } }, { n: 6, m: 0 }],
  ['$min', { n: 5, s: 'b' }, { $min: { n: 3, s: 'c' } }, { n: 3, s: 'b' }],
  ['$max', { n: 5 }, { $max: { n: 7, m: 1 } }, { n: 7, m: 1 }],
  ['$rename', { a: 1, b: { c: 2 } }, { $rename: { a: 'x', 'b.c': 'y' } }, { b: {}, x: 1, y: 2 }],
  ['$push', { a: [1] }, { $push: { a: 2 } }, { a: [1, 2] }],
  [
    '$push with $each, $position, $sort and $slice',
    { a: [5, 1] },
    { $push: { a: { $each: [3, 9], $position: 0, $sort: -1, $slice: 3 } } },
    { a: [9, 5, 3] },
  ],
  [
    '$push $sort on documents',
    { a: [{ k: 2 }, { k: 1 }] },
    { $push: { a: { $each: [{ k: 0 }], $sort: { k: 1 } } } },
    { a: [{ k: 0 }, { k: 1 }, { k: 2 }] },
  ],
  ['$addToSet', { a: [1, 2] }, { $addToSet: { a: 2 } }, { a: [1, 2] }],
  ['$addToSet $each', { a: [1] }, { $addToSet: { a: { $each: [1, 3, 3] } } }, { a: [1, 3] }],
  ['$pull by value', { a: [1, 2, 1] }, { $pull: { a: 1 } }, { a: [2] }],
  ['$pull by condition', { a: [1, 5, 9] }, { $pull: { a: { $gte: 5 } } }, { a: [1] }],
  [
    '$pull documents by fields',
    { a: [{ k: 1, v: 1 }, { k: 2 }] },
    { $pull: { a: { k: 1 } } },
    { a: [{ k: 2 }] },
  ],
  ['$pullAll', { a: [1, 2, 3, 2] }, { $pullAll: { a: [2, 3] } }, { a: [1] }],
  ['$pop last', { a: [1, 2, 3] }, { $pop: { a: 1 } }, { a: [1, 2] }],
  ['$pop first', { a: [1, 2, 3] }, { $pop: { a: -1 } }, { a: [2, 3] }],
];

describe('update operators through the API', () => {
  it.each(updateCases)('%s', async (_label, doc, update, expected) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, ...doc }]);
    const res = await col.call('update', { query: { _id: 1 }, doc: update });
    expect(res.status, res.text).toBe(200);
    expect(await col.read({})).toEqual([{ _id: 1, ...expected }]);
  });

  it('$currentDate sets an ISO date string, or epoch milliseconds for a timestamp', async () => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1 }]);
    const before = Date.now();
    await col.call('update', { query: {}, doc: { $currentDate: { d: true, ts: { $type: 'timestamp' } } } });
    const [doc] = (await col.read({})) as [{ d: string; ts: number }];
    expect(doc.d).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(doc.d)).toBeGreaterThanOrEqual(before - 1000);
    expect(doc.ts).toBeGreaterThanOrEqual(before - 1000);
  });
});

describe('hostile input', () => {
  it('treats SQL, jsonpath and regex syntax in names and values as data', async () => {
    const col = await freshCollection(t);
    const evil = [
      "'; drop table collections; --",
      '") || true || ("',
      'x$ ? (@ == 1) || exists($)',
      'a\\',
      '\\"',
      '%s %n',
    ];
    await col.insert(evil.map((s, i) => ({ _id: i, [s]: s, v: s })));
    for (const [i, s] of evil.entries()) {
      expect(await col.ids({ query: { [s]: s } })).toEqual([i]);
      expect(await col.ids({ query: { v: { $in: [s] } } })).toEqual([i]);
      expect(
        await col.ids({ query: { v: { $regex: `^${s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}$` } } }),
      ).toEqual([i]);
      expect((await col.call('count', { query: { [s]: { $exists: true } } })).body.result.count).toBe(1);
    }
    const still = await t.sql<{ n: number }[]>`select count(*)::int as n from collections`;
    expect(still[0]?.n).toBeGreaterThan(0);
  });

  it('answers 400, never 500, for regexes PostgreSQL cannot compile', async () => {
    const col = await freshCollection(t);
    await col.insert([{ s: 'x' }]);
    for (const re of ['(', '[a-', 'a{2,1}', '*', '\\']) {
      const res = await col.call('read', { query: { s: { $regex: re } } });
      expect(res.status, `${re}: ${res.text}`).toBe(400);
    }
  });
});

describe('update limits', () => {
  it('refuses an update matching more documents than the limit, writing nothing', async () => {
    const col = await freshCollection(t);
    await col.insert(Array.from({ length: 6 }, (_, i) => ({ _id: i, n: 0 })));
    const lookup = await findCollection(t.sql, col.workplace, 'items');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    const plan = {
      filter: parseFilter({}),
      apply: (doc: JsonObject) => ({ ...doc, n: 1 }),
      modified: () => true,
    };
    await expect(updateDocuments(t.sql, lookup.found, { ...plan, maxMatches: 5 })).rejects.toThrow(
      /matches more than 5 documents/,
    );
    expect((await col.call('count', { query: { n: 1 } })).body.result.count).toBe(0);
    await expect(updateDocuments(t.sql, lookup.found, { ...plan, maxMatches: 6 })).resolves.toEqual({
      matchedCount: 6,
      modifiedCount: 6,
    });
  });
});
