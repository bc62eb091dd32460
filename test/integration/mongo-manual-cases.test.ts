/**
 * Updates and upserts with the answers MongoDB's manual and jstests give, through the API. Where a
 * row departs from MongoDB by the house rules (JSON instead of BSON), it says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const GENERATED = /^[0-9a-f]{24}$/;

describe('a replacement document replaces one document', () => {
  it('of several matches, the first in _id order (our choice; MongoDB takes the first it finds)', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 3, a: 1 },
      { _id: 1, a: 1 },
      { _id: 2, a: 1 },
      { _id: 0, a: 2 },
    ]);
    const res = await col.call('update', { query: { a: 1 }, doc: { b: 2 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual({ matchedCount: 1, modifiedCount: 1 });
    expect(await col.read({ sort: { _id: 1 } })).toEqual([
      { _id: 0, a: 2 },
      { _id: 1, b: 2 },
      { _id: 2, a: 1 },
      { _id: 3, a: 1 },
    ]);
  });
});

/**
 * jstests/core/upsert_fields.js: which query conditions give the inserted document its _id and
 * its fields. `id` is the inserted _id (GENERATED for a new ObjectId-style one), `x` the inserted
 * `x` (undefined: none), or `error` a 400.
 */
interface UpsertRow {
  query: Record<string, unknown>;
  id?: unknown;
  x?: unknown;
  error?: RegExp;
}

const ID_EXTRACTED: UpsertRow[] = [
  { query: { _id: 1 }, id: 1 },
  { query: { _id: { $eq: 1 } }, id: 1 },
  { query: { _id: { $all: [1] } }, id: 1 },
  { query: { _id: { $in: [1] } }, id: 1 },
  { query: { $and: [{ _id: 1 }] }, id: 1 },
  { query: { $and: [{ _id: { $eq: 1 } }] }, id: 1 },
  { query: { $or: [{ _id: 1 }] }, id: 1 },
  { query: { $or: [{ _id: { $eq: 1 } }] }, id: 1 },
];

const ID_GENERATED: UpsertRow[] = [
  { query: { _id: { $gt: 1 } } },
  { query: { _id: { $ne: 1 } } },
  { query: { _id: { $in: [1, 2] } } },
  { query: { _id: { $elemMatch: { $eq: 1 } } } },
  { query: { _id: { $exists: true } } },
  { query: { _id: { $not: { $eq: 1 } } } },
  { query: { $or: [{ _id: 1 }, { _id: 1 }] } },
  { query: { $or: [{ _id: { $eq: 1 } }, { _id: 2 }] } },
  { query: { $nor: [{ _id: 1 }] } },
  { query: { $nor: [{ _id: { $eq: 1 } }, { _id: 1 }] } },
].map((r) => ({ ...r, id: GENERATED }));

const ID_ERRORS: UpsertRow[] = [
  { query: { _id: [1, 2] }, error: /'_id' value cannot be of type array/ },
  { query: { _id: { $eq: [1, 2] } }, error: /'_id' value cannot be of type array/ },
  { query: { _id: { $all: [1, 2] } }, error: /\$all on '_id' holds several values/ },
  { query: { $and: [{ _id: 1 }, { _id: 1 }] }, error: /path '_id' is matched twice/ },
  { query: { $and: [{ _id: { $eq: 1 } }, { _id: 2 }] }, error: /path '_id' is matched twice/ },
  { query: { _id: 1, '_id.x': 1 }, error: /both paths '_id\.x' and '_id' are matched/ },
  { query: { _id: { x: 1 }, '_id.x': 1 }, error: /both paths '_id\.x' and '_id' are matched/ },
];

/** Fields other than _id: taken by update operators only. */
const FIELD_EXTRACTED: UpsertRow[] = [
  { query: { x: 1 }, x: 1 },
  { query: { x: { $eq: 1 } }, x: 1 },
  { query: { x: { $in: [1] } }, x: 1 },
  { query: { x: { $all: [1] } }, x: 1 },
  { query: { $and: [{ x: 1 }] }, x: 1 },
  { query: { $and: [{ x: { $eq: 1 } }] }, x: 1 },
  { query: { $or: [{ x: 1 }] }, x: 1 },
  { query: { $or: [{ x: { $eq: 1 } }] }, x: 1 },
  { query: { x: [1, 2] }, x: [1, 2] },
  { query: { 'x.x': 1 }, x: { x: 1 } },
  { query: { 'x.x': { $eq: 1 } }, x: { x: 1 } },
  { query: { 'x.x': { $all: [1] } }, x: { x: 1 } },
  { query: { $and: [{ 'x.x': 1 }] }, x: { x: 1 } },
  { query: { $and: [{ 'x.x': { $eq: 1 } }] }, x: { x: 1 } },
  { query: { $or: [{ 'x.x': 1 }] }, x: { x: 1 } },
  { query: { $or: [{ 'x.x': { $eq: 1 } }] }, x: { x: 1 } },
];

const FIELD_IGNORED: UpsertRow[] = [
  { query: { x: { $gt: 1 } } },
  { query: { x: { $ne: 1 } } },
  { query: { x: { $in: [1, 2] } } },
  { query: { x: { $elemMatch: { $eq: 1 } } } },
  { query: { x: { $exists: true } } },
  { query: { x: { $not: { $eq: 1 } } } },
  { query: { $or: [{ x: 1 }, { x: 1 }] } },
  { query: { $or: [{ x: { $eq: 1 } }, { x: 2 }] } },
  { query: { $nor: [{ x: 1 }] } },
  { query: { $nor: [{ x: { $eq: 1 } }, { x: 1 }] } },
  // MongoDB has no way to fix a field by a regex but $eq; JSON has no regex literal
  { query: { x: { $regex: 'abc' } } },
];

/** Errors for update operators; a replacement document ignores these fields. */
const FIELD_CONFLICTS: UpsertRow[] = [
  { query: { x: { $all: [1, 2] } }, error: /\$all on 'x' holds several values/ },
  { query: { $and: [{ x: 1 }, { x: 1 }] }, error: /path 'x' is matched twice/ },
  { query: { $and: [{ x: { $eq: 1 } }, { x: 2 }] }, error: /path 'x' is matched twice/ },
  { query: { x: 1, 'x.x': 1 }, error: /both paths 'x\.x' and 'x' are matched/ },
  { query: { x: {}, 'x.x': 1 }, error: /both paths 'x\.x' and 'x' are matched/ },
  { query: { x: { x: 1 }, 'x.x': 1 }, error: /both paths 'x\.x' and 'x' are matched/ },
  { query: { x: { x: 1 }, 'x.y': 1 }, error: /both paths 'x\.y' and 'x' are matched/ },
  { query: { x: [1, { x: 1 }], 'x.x': 1 }, error: /both paths 'x\.x' and 'x' are matched/ },
];

const OPERATOR_STYLES = [{ $set: { a: 1 } }, { $setOnInsert: { a: 1 } }];

const operatorRows: UpsertRow[] = [
  ...ID_EXTRACTED,
  ...ID_GENERATED,
  ...ID_ERRORS,
  ...FIELD_EXTRACTED,
  ...FIELD_IGNORED.map((r) => ({ ...r, x: undefined })),
  ...FIELD_CONFLICTS,
  { query: { '_id.x': 1, '_id.y': 2 }, id: { x: 1, y: 2 } },
];

/** A replacement takes only _id from the query; these rows hold on the handler as it is. */
const replacementRows: UpsertRow[] = [
  ...ID_EXTRACTED,
  ...ID_GENERATED,
  ...ID_ERRORS,
  ...FIELD_EXTRACTED.map((r) => ({ query: r.query, x: undefined })),
  ...FIELD_IGNORED.map((r) => ({ ...r, x: undefined })),
];

/** A replacement takes only `_id` from the query: conflicts elsewhere do not matter, dotted `_id` does. */
const replacementOnlyRows: UpsertRow[] = [
  ...FIELD_CONFLICTS.map((r) => ({ query: r.query, x: undefined })),
  { query: { _id: 1, x: [1, { x: 1 }], 'x.x': 1 }, id: 1 },
  { query: { '_id.x': 1, '_id.y': 2 }, error: /takes _id from a condition on '_id' itself, not on '_id\.x'/ },
];

async function checkUpsert(doc: Record<string, unknown>, row: UpsertRow) {
  const col = await freshCollection(t);
  const res = await col.call('update', { query: row.query, doc, upsert: true });
  if (row.error) {
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(row.error);
    expect(await col.read({})).toEqual([]);
    return;
  }
  expect(res.status, res.text).toBe(200);
  const [inserted, ...more] = await col.read({});
  expect(more).toEqual([]);
  expect(res.body.result.upsertedId).toEqual(inserted?._id);
  if (row.id instanceof RegExp) expect(inserted?._id).toMatch(row.id);
  else expect(inserted?._id).toEqual(row.id ?? expect.stringMatching(GENERATED));
  expect(inserted?.x).toEqual(row.x);
  expect(inserted?.a).toBe(1);
}

describe('upsert: the inserted document from the query (jstests/core/upsert_fields.js)', () => {
  for (const doc of OPERATOR_STYLES) {
    it.each(operatorRows.map((r) => [JSON.stringify(r.query), r] as const))(
      `${Object.keys(doc)[0]} with %s`,
      async (_q, row) => {
        await checkUpsert(doc, row);
      },
    );
  }
  it.each(replacementRows.map((r) => [JSON.stringify(r.query), r] as const))(
    'a replacement with %s',
    async (_q, row) => {
      await checkUpsert({ a: 1 }, row);
    },
  );
  it.each(replacementOnlyRows.map((r) => [JSON.stringify(r.query), r] as const))(
    'a replacement with %s',
    async (_q, row) => {
      await checkUpsert({ a: 1 }, row);
    },
  );

  it('an update that sets _id gives the upsert that _id (as MongoDB does)', async () => {
    await checkUpsert({ $set: { _id: 7, a: 1 } }, { query: { x: { $gt: 1 } }, id: 7 });
  });
});

describe('the removing operators and a path blocked by a scalar (MongoDB: PathNotViable)', () => {
  it.each([
    [
      { a: { b: 1 } },
      { $pop: { 'a.b.c': 1 } },
      /Cannot use the part \(c\) of \(a\.b\.c\) to traverse the element \{b: 1\}/,
    ],
    [
      { a: 1 },
      { $pull: { 'a.b': 1 } },
      /Cannot use the part \(b\) of \(a\.b\) to traverse the element \{a: 1\}/,
    ],
    [
      { a: null },
      { $pullAll: { 'a.b': [1] } },
      /Cannot use the part \(b\) of \(a\.b\) to traverse the element \{a: null\}/,
    ],
    [{ a: [1] }, { $pop: { 'a.0.b': -1 } }, /Cannot use the part \(b\) of \(a\.0\.b\)/],
    [{ a: [{ b: [1] }] }, { $pull: { 'a.b': 1 } }, /Cannot use the part \(b\) of \(a\.b\)/],
    [
      { a: { b: 'x' } },
      { $push: { 'a.b.c': 1 } },
      /Cannot create field 'c' in element \{b: "x"\} \(\$push on 'a\.b\.c'/,
    ],
    [
      { a: 5 },
      { $addToSet: { 'a.b': 1 } },
      /Cannot create field 'b' in element \{a: 5\} \(\$addToSet on 'a\.b'/,
    ],
  ])('%j with %j is a 400 naming the path, and nothing is written', async (doc, update, message) => {
    const col = await freshCollection(t);
    // The first document takes the update (or has nothing to remove): an error in any document
    // writes nothing.
    await col.insert([{ _id: 1 }, { _id: 2, ...doc }]);
    const res = await col.call('update', { query: {}, doc: update });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(message);
    expect(await col.read({ sort: { _id: 1 } })).toEqual([{ _id: 1 }, { _id: 2, ...doc }]);
  });

  it.each([
    [{ a: { x: 1 } }, { $pop: { 'a.b.c': 1 } }],
    [{}, { $pull: { 'a.b': 1 } }],
    [{ a: [1] }, { $pullAll: { 'a.3.b': [1] } }],
    [{ a: 1 }, { $unset: { 'a.b': 1 } }],
    [{ a: [1] }, { $unset: { 'a.b': 1 } }],
  ])('%j with %j is a no-op: a missing path, or unset through a scalar', async (doc, update) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, ...doc }]);
    const res = await col.call('update', { query: {}, doc: update });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual({ matchedCount: 1, modifiedCount: 0 });
    expect(await col.read({})).toEqual([{ _id: 1, ...doc }]);
  });
});

describe('$set of _id: its own value is accepted, another is a 400', () => {
  it.each([
    ['1 as 1.0', '{"_id":1,"a":1}', '{"query":{},"doc":{"$set":{"_id":1.0,"a":2}}}', { _id: 1, a: 2 }],
    ['a string', '{"_id":"k","a":1}', '{"query":{},"doc":{"$set":{"_id":"k","a":2}}}', { _id: 'k', a: 2 }],
    [
      'a document in another key order',
      '{"_id":{"x":1,"y":2},"a":1}',
      '{"query":{},"doc":{"$set":{"_id":{"y":2,"x":1},"a":2}}}',
      { _id: { x: 1, y: 2 }, a: 2 },
    ],
    [
      'a field of _id',
      '{"_id":{"x":1},"a":1}',
      '{"query":{},"doc":{"$set":{"_id.x":1,"a":2}}}',
      { _id: { x: 1 }, a: 2 },
    ],
  ])('%s', async (_label, doc, body, expected) => {
    const col = await freshCollection(t);
    await col.insert([JSON.parse(doc)]);
    const res = await t.request({
      method: 'POST',
      url: `${col.url}/update`,
      payload: body,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual({ matchedCount: 1, modifiedCount: 1 });
    expect(await col.read({})).toEqual([expected]);
  });

  it.each([
    [{ $set: { _id: 2 } }, /on the path '_id' would modify the immutable field '_id'/],
    [{ $set: { _id: '1' } }, /on the path '_id' would modify the immutable field '_id'/],
    [{ $set: { '_id.x': 2 } }, /Cannot create field 'x' in element \{_id: 1\}/],
  ])('%j is a 400 and writes nothing', async (update, message) => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 0, a: 1 },
      { _id: 1, a: 1 },
    ]);
    const res = await col.call('update', { query: { _id: 1 }, doc: update });
    expect(res.status, res.text).toBe(400);
    expect(res.body.detail).toMatch(message);
    expect(await col.read({ sort: { _id: 1 } })).toEqual([
      { _id: 0, a: 1 },
      { _id: 1, a: 1 },
    ]);
  });

  it('on an upsert, $set may repeat the _id the query fixed, but not change it', async () => {
    await checkUpsert({ $set: { _id: 5, a: 1 } }, { query: { _id: 5 }, id: 5 });
    await checkUpsert(
      { $set: { _id: 6, a: 1 } },
      { query: { _id: 5 }, error: /would modify the immutable field '_id'/ },
    );
  });
});

describe('integers a double cannot hold exactly are a 400 naming where they are', () => {
  const big = '9007199254740993';
  it.each([
    ['create', `{"docs":[{"n":1},{"m":{"n":${big}}}]}`, '/docs/1/m/n'],
    ['create', `{"docs":[{"n":-${big}}]}`, '/docs/0/n'],
    ['read', `{"query":{"n":${big}}}`, '/query/n'],
    ['read', `{"query":{"n":{"$in":[1,${big}]}}}`, '/query/n/$in/1'],
    ['count', `{"query":{"n":{"$gt":${big}}}}`, '/query/n/$gt'],
    ['delete', `{"query":{"n":${big}}}`, '/query/n'],
    ['update', `{"query":{},"doc":{"$set":{"n":${big}}}}`, '/doc/$set/n'],
    ['update', `{"query":{"_id":1},"doc":{"n":${big}},"upsert":true}`, '/doc/n'],
  ])('%s %s', async (op, payload, pointer) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, n: 1 }]);
    const res = await t.request({
      method: 'POST',
      url: `${col.url}/${op}`,
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors[0].path).toBe(pointer);
    expect(res.body.errors[0].message).toMatch(
      /integer that a double cannot hold: it would be stored as -?9007199254740992; send it as a string/,
    );
    expect(await col.read({})).toEqual([{ _id: 1, n: 1 }]);
  });

  it('keeps integers a double holds, and literals that ask for a double', async () => {
    const col = await freshCollection(t);
    const res = await t.request({
      method: 'POST',
      url: `${col.url}/create`,
      // 2^53 + 2, 2^60 and 1e20 as JSON.stringify writes them, and literals with an exponent
      payload: JSON.stringify({
        docs: [
          { _id: 1, n: 9007199254740991, m: -9007199254740994, p: 2 ** 60, q: 1e20, s: '9007199254740993' },
        ],
      }).replace('}]}', ',"d":1e300,"e":1.5e20}]}'),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status, res.text).toBe(201);
    expect(await col.read({ fields: { _id: 0 } })).toEqual([
      {
        n: 9007199254740991,
        m: -9007199254740994,
        p: 2 ** 60,
        q: 1e20,
        d: 1e300,
        e: 1.5e20,
        s: '9007199254740993',
      },
    ]);
    expect(await col.ids({ query: { n: 9007199254740991, p: 2 ** 60 } })).toEqual([1]);
  });
});

describe('$bit (the manual: and, or, xor on the switches collection)', () => {
  it('updates each document as the manual shows, creating a missing field from 0', async () => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, expdata: 13 }, { _id: 2, expdata: 3 }, { _id: 3, expdata: 1 }, { _id: 4 }]);
    for (const [id, op] of [
      [1, { and: 10 }],
      [2, { or: 5 }],
      [3, { xor: 5 }],
      [4, { or: 6, and: 3 }],
    ] as const) {
      const res = await col.call('update', { query: { _id: id }, doc: { $bit: { expdata: op } } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.result).toEqual({ matchedCount: 1, modifiedCount: 1 });
    }
    expect(await col.read({ sort: { _id: 1 } })).toEqual([
      { _id: 1, expdata: 8 },
      { _id: 2, expdata: 7 },
      { _id: 3, expdata: 4 },
      { _id: 4, expdata: 2 },
    ]);
  });

  it.each([
    [
      { expdata: '13' },
      /Cannot apply \$bit to a value of non-integral type: field 'expdata' of document with _id 2 is a string/,
    ],
    [
      { expdata: 1.5 },
      /Cannot apply \$bit to a value of non-integral type: field 'expdata' of document with _id 2 is the number 1\.5/,
    ],
    [
      { expdata: 2 ** 60 },
      /would give 1152921504606846977, an integer a JSON number \(a double\) cannot hold exactly/,
    ],
  ])('on %j is a 400, and nothing is written', async (doc, message) => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, expdata: 2 },
      { _id: 2, ...doc },
    ]);
    const res = await col.call('update', { query: {}, doc: { $bit: { expdata: { or: 1 } } } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(message);
    expect(await col.read({ sort: { _id: 1 } })).toEqual([
      { _id: 1, expdata: 2 },
      { _id: 2, ...doc },
    ]);
  });
});
