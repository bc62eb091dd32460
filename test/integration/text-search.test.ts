import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { findCollection } from '../../db/storage/catalog.js';
import { countStatement, explain, readStatement } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { parseSort } from '../../mongo/sort.js';
import { hashSecret } from '../../secrets.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

type Collection = Awaited<ReturnType<typeof freshCollection>>;

async function textIndex(col: Collection, body: Record<string, unknown>) {
  return t.request({ method: 'POST', url: `${col.url}/indexes`, body: { name: 'byText', ...body } });
}

// The articles collection of MongoDB's manual page on $text, with its text index on `subject`.
const ARTICLES = [
  { _id: 1, subject: 'coffee', author: 'xyz', views: 50 },
  { _id: 2, subject: 'Coffee Shopping', author: 'efg', views: 5 },
  { _id: 3, subject: 'Baking a cake', author: 'abc', views: 90 },
  { _id: 4, subject: 'baking', author: 'xyz', views: 100 },
  { _id: 5, subject: 'Café Con Leche', author: 'abc', views: 200 },
  { _id: 6, subject: 'Сырники', author: 'efg', views: 80 },
  { _id: 7, subject: 'coffee and cream', author: 'efg', views: 10 },
  { _id: 8, subject: 'Cafe con Leche', author: 'xyz', views: 10 },
];

interface TextCase {
  name: string;
  query: Record<string, unknown>;
  /** MongoDB's answer (as a set: without a sort the order is not the point). */
  ids: number[];
}

const manualCases: TextCase[] = [
  { name: 'a single word', query: { $text: { $search: 'coffee' } }, ids: [1, 2, 7] },
  { name: 'any of several words', query: { $text: { $search: 'bake coffee cake' } }, ids: [1, 2, 3, 4, 7] },
  { name: 'a phrase', query: { $text: { $search: '"coffee shop"' } }, ids: [2] },
  {
    name: 'a phrase with a term: the phrase decides',
    query: { $text: { $search: 'cake "coffee shop"' } },
    ids: [2],
  },
  { name: 'a negated term (stemmed: shopping)', query: { $text: { $search: 'coffee -shop' } }, ids: [1, 7] },
  { name: 'a negated phrase', query: { $text: { $search: 'coffee -"coffee shop"' } }, ids: [1, 7] },
  { name: 'only negations match nothing', query: { $text: { $search: '-coffee' } }, ids: [] },
  { name: 'a - after a letter joins, not negates', query: { $text: { $search: 'cream-shop' } }, ids: [2, 7] },
  { name: 'another language', query: { $text: { $search: 'leche', $language: 'es' } }, ids: [5, 8] },
  {
    name: 'case and diacritics aside',
    query: { $text: { $search: 'сы́рники CAFÉS' } },
    ids: [5, 6, 8],
  },
  { name: 'stemming: baking is bake', query: { $text: { $search: 'bake' } }, ids: [3, 4] },
  { name: 'stop words are no terms', query: { $text: { $search: 'a and the' } }, ids: [] },
  { name: 'stop words beside a term', query: { $text: { $search: 'the cream' } }, ids: [7] },
  // $language stems the search only: the documents were indexed in English, as English stems.
  {
    name: '$language none leaves bake whole',
    query: { $text: { $search: 'bake', $language: 'none' } },
    ids: [3, 4],
  },
  {
    name: '$language none: baking is no key',
    query: { $text: { $search: 'baking', $language: 'none' } },
    ids: [],
  },
  {
    name: '$language none: and is no key either',
    query: { $text: { $search: 'and', $language: 'none' } },
    ids: [],
  },
  {
    name: 'with another condition',
    query: { $text: { $search: 'coffee' }, author: 'xyz' },
    ids: [1],
  },
  {
    name: 'in a top-level $and',
    query: { $and: [{ views: { $gte: 10 } }, { $text: { $search: 'coffee cafe' } }] },
    ids: [1, 5, 7, 8],
  },
  {
    name: 'beside an $or of other fields',
    query: { $text: { $search: 'coffee' }, $or: [{ author: 'efg' }, { views: 50 }] },
    ids: [1, 2, 7],
  },
  { name: 'an empty search matches nothing', query: { $text: { $search: '' } }, ids: [] },
  { name: 'a phrase needs a term too', query: { $text: { $search: '"offee sh"' } }, ids: [] },
  { name: 'a phrase is a substring of the text', query: { $text: { $search: 'coffee "ee sho"' } }, ids: [2] },
];

describe('$text (MongoDB manual, articles)', () => {
  let col: Collection;
  beforeAll(async () => {
    col = await freshCollection(t, 'articles');
    const res = await textIndex(col, { key: [{ subject: 'text' }] });
    expect(res.status, res.text).toBe(201);
    await col.insert(ARTICLES);
  });

  it.each(manualCases)('$name', async ({ query, ids }) => {
    const got = await col.ids({ query });
    expect(got.sort()).toEqual([...ids].sort());
    const count = await col.call('count', { query });
    expect(count.body.result.count).toBe(ids.length);
  });

  it('$meta textScore in fields and sort: more matching words score higher', async () => {
    const docs = await col.read({
      query: { $text: { $search: 'coffee cream' } },
      fields: { subject: 1, score: { $meta: 'textScore' } },
      sort: { score: { $meta: 'textScore' } },
    });
    expect(docs.map((d) => d._id)[0]).toBe(7);
    expect(docs.map((d) => d._id).sort()).toEqual([1, 2, 7]);
    const scores = docs.map((d) => d.score as number);
    expect(scores.every((s) => typeof s === 'number' && s > 0)).toBe(true);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(Object.keys(docs[0] as object)).toEqual(['_id', 'subject', 'score']);
  });

  it('$meta alone keeps every field (it decides no inclusion), and a sort key may follow it', async () => {
    const docs = await col.read({
      query: { $text: { $search: 'coffee' } },
      fields: { s: { $meta: 'textScore' } },
      sort: { s: { $meta: 'textScore' }, views: -1 },
    });
    expect(docs[0]).toMatchObject({ subject: 'coffee', author: 'xyz', views: 50 });
    expect(typeof docs[0]?.s).toBe('number');
    // Equal scores (one word in a short subject) fall to views, descending.
    const oneWord = docs.filter((d) => d.s === docs[0]?.s).map((d) => d.views as number);
    expect([...oneWord].sort((a, b) => b - a)).toEqual(oneWord);
  });

  it('a cursor walks a sort by the score', async () => {
    const body = {
      query: { $text: { $search: 'coffee cafe leche bake' } },
      sort: { s: { $meta: 'textScore' } },
    };
    const all = await col.ids(body);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    do {
      const res = await col.call('read', { ...body, limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.result.map((d: { _id: unknown }) => d._id));
      cursor = res.body.next;
    } while (cursor);
    expect(seen).toEqual(all);
    expect(all).toHaveLength(7);
    // The score's key may be named _id: it is still the score, and _id breaks its ties.
    const byId = { ...body, sort: { _id: { $meta: 'textScore' } } };
    const first = await col.call('read', { ...byId, limit: 3 });
    expect(first.status, first.text).toBe(200);
    const second = await col.call('read', { ...byId, limit: 10, cursor: first.body.next });
    expect(second.status, second.text).toBe(200);
    expect([...first.body.result, ...second.body.result].map((d: { _id: unknown }) => d._id)).toEqual(all);
  });

  it.each([
    ['no $text: sort', { sort: { s: { $meta: 'textScore' } } }, /text score metadata/],
    ['no $text: fields', { fields: { s: { $meta: 'textScore' } } }, /text score metadata/],
    [
      'another $meta',
      { query: { $text: { $search: 'a' } }, fields: { s: { $meta: 'indexKey' } } },
      /textScore/,
    ],
    [
      'two $text',
      { query: { $and: [{ $text: { $search: 'a' } }, { $text: { $search: 'b' } }] } },
      /Too many text/,
    ],
    ['$text under $or', { query: { $or: [{ $text: { $search: 'a' } }, { views: 1 }] } }, /\$or/],
    ['$text under $nor', { query: { $nor: [{ $text: { $search: 'a' } }] } }, /not allowed in nor/],
    ['$text in $elemMatch', { query: { a: { $elemMatch: { $text: { $search: 'a' } } } } }, /\$elemMatch/],
    [
      '$text on a field',
      { query: { subject: { $text: { $search: 'a' } } } },
      /Unknown query operator '\$text'/,
    ],
    ['$search not a string', { query: { $text: { $search: 1 } } }, /\$search needs a String/],
    ['no $search', { query: { $text: {} } }, /\$search needs a String/],
    ['extra fields', { query: { $text: { $search: 'a', $foo: 1 } } }, /extra fields in \$text/],
    [
      'unknown $language',
      { query: { $text: { $search: 'a', $language: 'klingon' } } },
      /unsupported language/,
    ],
    ['$caseSensitive: true', { query: { $text: { $search: 'a', $caseSensitive: true } } }, /\$caseSensitive/],
    [
      '$diacriticSensitive: true',
      { query: { $text: { $search: 'a', $diacriticSensitive: true } } },
      /\$diacriticSensitive/,
    ],
    ['$caseSensitive not a boolean', { query: { $text: { $search: 'a', $caseSensitive: 1 } } }, /Boolean/],
  ])('%s is a 400', async (_label, body, detail) => {
    const res = await col.call('read', body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(detail);
  });

  it('$caseSensitive and $diacriticSensitive false are the default', async () => {
    const ids = await col.ids({
      query: { $text: { $search: 'COFFEE', $caseSensitive: false, $diacriticSensitive: false } },
    });
    expect(ids.sort()).toEqual([1, 2, 7]);
  });

  it('$text in arrayFilters or $pull is refused', async () => {
    for (const doc of [{ $set: { 'a.$[x]': 1 } }, { $pull: { a: { $text: { $search: 'coffee' } } } }]) {
      const res = await col.call('update', {
        query: { _id: 1 },
        doc,
        ...('$set' in doc ? { arrayFilters: [{ $text: { $search: 'coffee' } }] } : {}),
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.detail).toMatch(/\$text/);
    }
  });
});

describe('$text on the other routes', () => {
  it('count, distinct, update, delete and the single-document routes take $text', async () => {
    const col = await freshCollection(t, 'articles');
    expect((await textIndex(col, { key: [{ subject: 'text' }] })).status).toBe(201);
    await col.insert(ARTICLES);
    const coffee = { $text: { $search: 'coffee' } };

    const distinct = await col.call('distinct', { key: 'author', query: coffee });
    expect(distinct.body.result).toEqual(['efg', 'xyz']);

    const updated = await col.call('update', { query: coffee, doc: { $set: { hot: true } } });
    expect(updated.body.result).toMatchObject({ matchedCount: 3, modifiedCount: 3 });

    // The best match first: one word of two in "coffee and cream" weighs less than all of "coffee".
    const best = await col.call('find-one-and-update', {
      query: { $text: { $search: 'coffee cream' } },
      doc: { $inc: { views: 1 } },
      sort: { s: { $meta: 'textScore' } },
      returnDocument: 'after',
    });
    expect(best.status, best.text).toBe(200);
    expect(best.body.result.value).toMatchObject({ _id: 7, views: 11 });

    const one = await col.call('update-one', { query: coffee, doc: { $set: { first: true } } });
    expect(one.body.result).toMatchObject({ matchedCount: 1, modifiedCount: 1 });

    const scoreInFields = await col.call('find-one-and-delete', {
      query: coffee,
      fields: { s: { $meta: 'textScore' } },
    });
    expect(scoreInFields.status).toBe(400);
    expect(scoreInFields.body.detail).toMatch(/read route only/);

    const deletedOne = await col.call('find-one-and-delete', { query: coffee, sort: { views: 1 } });
    expect(deletedOne.body.result.value).toMatchObject({ _id: 2 });
    const deleted = await col.call('delete', { query: { $text: { $search: 'coffee -cream' } } });
    expect(deleted.body.result.deletedCount).toBe(1);
    expect(await col.ids({ query: coffee })).toEqual([7]);
    const deleteOne = await col.call('delete-one', { query: coffee });
    expect(deleteOne.body.result.deletedCount).toBe(1);
  });

  it('a positional projection with $text takes the element the rest of the query matched', async () => {
    const col = await freshCollection(t, 'posts');
    expect((await textIndex(col, { key: [{ title: 'text' }] })).status).toBe(201);
    await col.insert([{ _id: 1, title: 'coffee', tags: [{ k: 'a' }, { k: 'b' }] }]);
    const docs = await col.read({
      query: { $text: { $search: 'coffee' }, 'tags.k': 'b' },
      fields: { 'tags.$': 1 },
    });
    expect(docs).toEqual([{ _id: 1, tags: [{ k: 'b' }] }]);
    const updated = await col.call('update', {
      query: { $text: { $search: 'coffee' }, 'tags.k': 'b' },
      doc: { $set: { 'tags.$.hit': true } },
    });
    expect(updated.body.result.modifiedCount).toBe(1);
    expect((await col.read({}))[0]?.tags).toEqual([{ k: 'a' }, { k: 'b', hit: true }]);
  });

  it('a text index another server process created serves $text at once', async () => {
    // Deaf to catalog changes, as a process whose notification of the new index was lost.
    const other = await buildApp({
      sql: t.sql,
      adminTokenHash: hashSecret(t.adminToken),
      catalogChanges: false,
    });
    try {
      await other.ready();
      const col = await freshCollection(t);
      await col.insert([{ _id: 1, subject: 'coffee' }]);
      const read = (query: unknown) =>
        other.inject({
          method: 'POST',
          url: `${col.url}/read`,
          headers: { 'x-auth-token': t.adminToken, 'content-type': 'application/json' },
          payload: JSON.stringify({ query }),
        });
      // The other process caches the collection without a text index.
      expect((await read({ _id: 1 })).statusCode).toBe(200);
      await col.index([{ subject: 'text' }], { name: 'byText' });
      const found = await read({ $text: { $search: 'coffee' } });
      expect(found.statusCode, found.body).toBe(200);
      expect(JSON.parse(found.body).result.map((d: { _id: unknown }) => d._id)).toEqual([1]);
    } finally {
      await other.close();
    }
  });

  it("without a text index, $text is MongoDB's error", async () => {
    const col = await freshCollection(t);
    await col.insert([{ subject: 'coffee' }]);
    for (const op of ['read', 'count', 'delete']) {
      const res = await col.call(op, { query: { $text: { $search: 'coffee' } } });
      expect(res.status, res.text).toBe(400);
      expect(res.body.detail).toMatch(/text index required for \$text query/);
    }
  });
});

describe('text indexes', () => {
  it('indexes strings and arrays of strings on nested paths, several fields, with weights', async () => {
    const col = await freshCollection(t, 'posts');
    const res = await textIndex(col, {
      key: [{ title: 'text' }, { 'body.text': 'text' }, { tags: 'text' }],
      weights: { title: 10, tags: 5 },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.result).toEqual({
      name: 'byText',
      key: [{ title: 'text' }, { 'body.text': 'text' }, { tags: 'text' }],
      unique: false,
      weights: { title: 10, tags: 5 },
    });
    await col.insert([
      { _id: 'inTitle', title: 'Running shoes', body: { text: 'for the road' } },
      { _id: 'inBody', title: 'Shoes', body: [{ text: 'made for running' }, { text: 5 }] },
      { _id: 'inTags', title: 'Boots', tags: ['hiking', 'running'] },
      { _id: 'nowhere', title: 'Sandals', other: 'running' },
      { _id: 'notAString', title: 1, tags: [{ x: 'running' }] },
    ]);
    const docs = await col.read({
      query: { $text: { $search: 'run' } },
      fields: { score: { $meta: 'textScore' } },
      sort: { score: { $meta: 'textScore' } },
    });
    expect(docs.map((d) => d._id)).toEqual(['inTitle', 'inTags', 'inBody']);
    const scores = docs.map((d) => d.score as number);
    expect(scores[0]).toBeGreaterThan(scores[1] as number);
    expect(scores[1]).toBeGreaterThan(scores[2] as number);
  });

  it('default_language, and a language per document (language_override)', async () => {
    const col = await freshCollection(t, 'quotes');
    const res = await textIndex(col, {
      key: [{ quote: 'text' }],
      default_language: 'spanish',
      language_override: 'idioma',
    });
    expect(res.status, res.text).toBe(201);
    await col.insert([
      { _id: 1, quote: 'corriendo' },
      { _id: 2, quote: 'corriendo', idioma: 'english' },
      { _id: 3, quote: 'running', idioma: 'EN' },
      { _id: 4, quote: 'running', idioma: 'klingon' },
    ]);
    // Spanish stems corriendo and correr alike; English leaves corriendo whole.
    expect(await col.ids({ query: { $text: { $search: 'correr' } } })).toEqual([1]);
    expect(await col.ids({ query: { $text: { $search: 'run', $language: 'english' } } })).toEqual([3]);
    const list = await t.request({ method: 'GET', url: `${col.url}/indexes` });
    expect(list.body.result[1]).toEqual({
      name: 'byText',
      key: [{ quote: 'text' }],
      unique: false,
      default_language: 'spanish',
      language_override: 'idioma',
    });
  });

  it.each([
    [
      'a second text index',
      { key: [{ other: 'text' }], name: 'second' },
      /only one text index per collection allowed, found existing text index "byText"/,
    ],
    ['text beside an ascending field', { key: [{ a: 'text' }, 'b'], name: 'mixed' }, /only "text" fields/],
    ['a unique text index', { key: [{ a: 'text' }], unique: true, name: 'u' }, /cannot be unique/],
    [
      'an unknown default_language',
      { key: [{ a: 'text' }], default_language: 'klingon', name: 'k' },
      /unsupported language "klingon"/,
    ],
    [
      'a weight of 0',
      { key: [{ a: 'text' }], weights: { a: 0 }, name: 'w' },
      /exclusive interval \(0,100000\)/,
    ],
    ['a weight of 100000', { key: [{ a: 'text' }], weights: { a: 100000 }, name: 'w' }, /exclusive interval/],
    [
      'a weight for another field',
      { key: [{ a: 'text' }], weights: { b: 2 }, name: 'w' },
      /not a field of the text index/,
    ],
    [
      'text options on a plain index',
      { key: ['a'], default_language: 'french', name: 'p' },
      /text indexes only/,
    ],
    [
      'a dotted language_override',
      { key: [{ a: 'text' }], language_override: 'a.b', name: 'o' },
      /top-level field/,
    ],
    ['a $ text field', { key: [{ $a: 'text' }], name: 'd' }, /\$/],
  ])('%s is a 400', async (_label, body, detail) => {
    const col = await freshCollection(t);
    expect((await textIndex(col, { key: [{ subject: 'text' }] })).status).toBe(201);
    const res = await textIndex(col, body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.detail).toMatch(detail);
  });

  it('a document whose text passes the 1 MB a tsvector holds is stored, with the words that fit', async () => {
    const col = await freshCollection(t);
    expect((await textIndex(col, { key: [{ title: 'text' }, { body: 'text' }] })).status).toBe(201);
    const body = Array.from({ length: 200_000 }, (_, i) => `w${i.toString(36)}`).join(' ');
    await col.insert([
      { _id: 1, title: 'giant', body },
      { _id: 2, title: 'small', body: 'w0 w1' },
    ]);
    expect(await col.ids({ query: { $text: { $search: 'giant' } } })).toEqual([1]);
    expect(await col.ids({ query: { $text: { $search: 'w1' } } })).toEqual([1, 2]);
    const updated = await col.call('update', { query: { _id: 2 }, doc: { $set: { body: `${body} extra` } } });
    expect(updated.status, updated.text).toBe(200);
  });

  it('the same name again is a 409; deleting the text index removes it, and $text with it', async () => {
    const col = await freshCollection(t);
    await col.insert([{ subject: 'coffee' }]);
    expect((await textIndex(col, { key: [{ subject: 'text' }] })).status).toBe(201);
    expect((await textIndex(col, { key: [{ subject: 'text' }] })).status).toBe(409);
    expect(await col.ids({ query: { $text: { $search: 'coffee' } } })).toHaveLength(1);
    const del = await t.request({ method: 'DELETE', url: `${col.url}/indexes/byText` });
    expect(del.status).toBe(204);
    const res = await col.call('read', { query: { $text: { $search: 'coffee' } } });
    expect(res.status).toBe(400);
    expect((await textIndex(col, { key: [{ other: 'text' }], name: 'again' })).status).toBe(201);
  });

  it('two text indexes created at once: one is created, the other refused', async () => {
    const col = await freshCollection(t);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => textIndex(col, { key: [{ [`f${i}`]: 'text' }], name: `t${i}` })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 400, 400, 400, 400, 400]);
    const list = await t.request({ method: 'GET', url: `${col.url}/indexes` });
    expect(list.body.result).toHaveLength(2);
  });
});

describe('the GIN index serves $text', () => {
  it('EXPLAIN: a bitmap scan of the text index', async () => {
    const col = await freshCollection(t, 'many');
    expect((await textIndex(col, { key: [{ body: 'text' }] })).status).toBe(201);
    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
    for (let start = 0; start < 4000; start += 1000) {
      await col.insert(
        Array.from({ length: 1000 }, (_, i) => ({
          body: `${words[(start + i) % 8]} ${words[(start + i) % 7]} item${start + i}`,
        })),
      );
    }
    const lookup = await findCollection(t.sql, col.workplace, 'many');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    await t.sql.unsafe(`analyze ${lookup.found.table}`);
    const filter = parseFilter({ $text: { $search: 'item1234' } });
    for (const statement of [
      readStatement(lookup.found, { filter, sort: parseSort(undefined), skip: 0, limit: 20 }),
      countStatement(lookup.found, filter),
    ]) {
      const plan = await explain(t.sql, statement);
      expect(plan, plan).toMatch(/Bitmap Index Scan on xt\d+/);
      expect(plan, plan).not.toMatch(/Seq Scan/);
    }
    expect(await col.ids({ query: { $text: { $search: 'item1234 -alpha' } } })).toHaveLength(1);
  });
});
