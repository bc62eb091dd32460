/**
 * The single-document operations (update-one, replace-one, delete-one, find-one-and-update,
 * find-one-and-replace, find-one-and-delete) through the API, with the documents and answers of
 * MongoDB's manual pages for updateOne, replaceOne, deleteOne, findOneAndUpdate,
 * findOneAndReplace and findOneAndDelete, and of jstests/core/write/find_and_modify/*.js. Each
 * case runs once on a plain collection and once with indexes on the queried and sorted paths (the
 * SQL then orders and filters by key columns; which document is "the first" must not change).
 *
 * Where the manual relies on natural (insertion) order, which has no equivalent here, the default
 * order is `_id` ascending (documented), and the expected document follows from it.
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

type Doc = Record<string, unknown>;

// findOneAndUpdate and findOneAndDelete's manual pages.
const GRADES: Doc[] = [
  { _id: 6305, name: 'A. MacDyver', assignment: 5, points: 24 },
  { _id: 6308, name: 'B. Batlock', assignment: 3, points: 22 },
  { _id: 6312, name: 'M. Tagnum', assignment: 5, points: 30 },
  { _id: 6319, name: 'R. Stiles', assignment: 2, points: 12 },
  { _id: 6322, name: 'A. MacDyver', assignment: 2, points: 14 },
  { _id: 6234, name: 'R. Stiles', assignment: 1, points: 10 },
];

// findOneAndReplace's manual page.
const SCORES: Doc[] = [
  { _id: 1521, team: 'Fearful Mallards', score: 25000 },
  { _id: 2231, team: 'Tactful Mooses', score: 23500 },
  { _id: 4511, team: 'Aquatic Ponies', score: 19250 },
  { _id: 5331, team: 'Cuddly Zebras', score: 15235 },
  { _id: 3412, team: 'Garrulous Bears', score: 22300 },
];

// updateOne's and replaceOne's manual pages.
const RESTAURANTS: Doc[] = [
  { _id: 1, name: 'Central Perk Cafe', Borough: 'Manhattan' },
  { _id: 2, name: 'Rock A Feller Bar and Grill', Borough: 'Queens', violations: 2 },
  { _id: 3, name: 'Empire State Pub', Borough: 'Brooklyn', violations: 0 },
];

// jstests/core/write/find_and_modify/find_and_modify.js: a priority queue.
const QUEUE: Doc[] = Array.from({ length: 10 }, (_, i) => ({
  _id: i + 1,
  priority: i + 1,
  inprogress: false,
  value: 0,
}));

// Arrays for the positional projection.
const ARRAYS: Doc[] = [
  { _id: 1, grades: [80, 85, 90] },
  { _id: 2, grades: [88, 90, 92] },
];

const DATASETS = { GRADES, SCORES, RESTAURANTS, QUEUE, ARRAYS };
type Dataset = keyof typeof DATASETS;
const INDEXED_PATHS = ['grades', 'name', 'points', 'team', 'score', 'priority', 'inprogress', 'violations'];

const newId = expect.stringMatching(/^[0-9a-f]{24}$/);

/** [what, dataset, operation, body, the response's result, the collection afterwards (by _id), or undefined: unchanged]. */
type Case = [string, Dataset, string, Doc, unknown, Doc[]?];

const with6234 = (d: Doc) => GRADES.map((g) => (g._id === d._id ? d : g));
const sortById = (docs: Doc[]) => [...docs].sort((a, b) => (a._id as number) - (b._id as number));

const CASES: Case[] = [
  // ---- findOneAndUpdate (manual) ----
  [
    'findOneAndUpdate returns the document before the update by default',
    'GRADES',
    'find-one-and-update',
    { query: { name: 'R. Stiles' }, doc: { $inc: { points: 5 } } },
    { value: { _id: 6234, name: 'R. Stiles', assignment: 1, points: 10 } },
    with6234({ _id: 6234, name: 'R. Stiles', assignment: 1, points: 15 }),
  ],
  [
    'findOneAndUpdate updates the first document in sort order',
    'GRADES',
    'find-one-and-update',
    { query: { name: 'A. MacDyver' }, doc: { $inc: { points: 5 } }, sort: { points: 1 } },
    { value: { _id: 6322, name: 'A. MacDyver', assignment: 2, points: 14 } },
    GRADES.map((g) => (g._id === 6322 ? { ...g, points: 19 } : g)),
  ],
  [
    'findOneAndUpdate projects the returned document',
    'GRADES',
    'find-one-and-update',
    {
      query: { name: 'A. MacDyver' },
      doc: { $inc: { points: 5 } },
      sort: { points: 1 },
      fields: { _id: 0, assignment: 1 },
    },
    { value: { assignment: 2 } },
    GRADES.map((g) => (g._id === 6322 ? { ...g, points: 19 } : g)),
  ],
  [
    'findOneAndUpdate with returnDocument "after"',
    'GRADES',
    'find-one-and-update',
    {
      query: { name: 'A. MacDyver' },
      doc: { $inc: { points: 5 } },
      sort: { points: -1 },
      returnDocument: 'after',
    },
    { value: { _id: 6305, name: 'A. MacDyver', assignment: 5, points: 29 } },
    GRADES.map((g) => (g._id === 6305 ? { ...g, points: 29 } : g)),
  ],
  [
    'findOneAndUpdate with upsert and returnDocument "after" returns the inserted document',
    'GRADES',
    'find-one-and-update',
    {
      query: { name: 'A.B. Abracadabra' },
      doc: { $set: { name: 'A.B. Abracadabra', assignment: 5 }, $inc: { points: 5 } },
      sort: { points: 1 },
      upsert: true,
      returnDocument: 'after',
    },
    { value: { _id: newId, name: 'A.B. Abracadabra', assignment: 5, points: 5 } },
  ],
  [
    'findOneAndUpdate with upsert and returnDocument "before" inserts and returns null',
    'GRADES',
    'find-one-and-update',
    { query: { _id: 'miss' }, doc: { $inc: { y: 1 } }, upsert: true },
    { value: null },
    [...GRADES, { _id: 'miss', y: 1 }],
  ],
  [
    'findOneAndUpdate applies $setOnInsert when it inserts',
    'GRADES',
    'find-one-and-update',
    {
      query: { _id: 7000 },
      doc: { $set: { name: 'New' }, $setOnInsert: { points: 0 } },
      upsert: true,
      returnDocument: 'after',
    },
    { value: { _id: 7000, name: 'New', points: 0 } },
  ],
  [
    'findOneAndUpdate ignores $setOnInsert when it updates',
    'GRADES',
    'find-one-and-update',
    {
      query: { _id: 6305 },
      doc: { $set: { assignment: 6 }, $setOnInsert: { points: 0 } },
      upsert: true,
      returnDocument: 'after',
    },
    { value: { _id: 6305, name: 'A. MacDyver', assignment: 6, points: 24 } },
    GRADES.map((g) => (g._id === 6305 ? { ...g, assignment: 6 } : g)),
  ],
  [
    'findOneAndUpdate answers null when nothing matches, and writes nothing',
    'GRADES',
    'find-one-and-update',
    { query: { name: 'Nobody' }, doc: { $inc: { points: 5 } }, returnDocument: 'after' },
    { value: null },
    GRADES,
  ],
  [
    'findOneAndUpdate with a positional projection returns the element the query matched',
    'ARRAYS',
    'find-one-and-update',
    { query: { grades: { $gte: 85 } }, doc: { $inc: { n: 1 } }, fields: { 'grades.$': 1 } },
    { value: { _id: 1, grades: [85] } },
    [{ ...ARRAYS[0], n: 1 }, ARRAYS[1]] as Doc[],
  ],
  // ---- find_and_modify.js: the queue ----
  [
    'findAndModify: the highest priority first',
    'QUEUE',
    'find-one-and-update',
    { query: { inprogress: false }, sort: { priority: -1 }, doc: { $set: { inprogress: true } } },
    { value: { _id: 10, priority: 10, inprogress: false, value: 0 } },
    QUEUE.map((q) => (q._id === 10 ? { ...q, inprogress: true } : q)),
  ],
  [
    'findAndModify: the projection applies to the document after the update with "after"',
    'QUEUE',
    'find-one-and-update',
    {
      query: { inprogress: false },
      sort: { priority: 1 },
      doc: { $set: { inprogress: true }, $inc: { value: 1 } },
      returnDocument: 'after',
      fields: { priority: 1, inprogress: 1, value: 1 },
    },
    { value: { _id: 1, priority: 1, inprogress: true, value: 1 } },
  ],
  [
    'findAndModify: remove the lowest priority',
    'QUEUE',
    'find-one-and-delete',
    { query: {}, sort: { priority: 1 } },
    { value: { _id: 1, priority: 1, inprogress: false, value: 0 } },
    QUEUE.slice(1),
  ],
  [
    'findAndModify: remove answers null when nothing matches',
    'QUEUE',
    'find-one-and-delete',
    { query: { no_such_field: 1 } },
    { value: null },
    QUEUE,
  ],
  // ---- find_and_modify_empty_update.js: {} is a replacement ----
  [
    'findOneAndReplace with {} keeps only _id, and returns the document before',
    'RESTAURANTS',
    'find-one-and-replace',
    { query: { Borough: 'Queens' }, doc: {} },
    { value: RESTAURANTS[1] },
    [RESTAURANTS[0], { _id: 2 }, RESTAURANTS[2]] as Doc[],
  ],
  [
    'findOneAndReplace with {} and "after"',
    'RESTAURANTS',
    'find-one-and-replace',
    { query: { Borough: 'Queens' }, doc: {}, returnDocument: 'after' },
    { value: { _id: 2 } },
  ],
  [
    'findOneAndReplace with {}, upsert and a sort: null, and the query _id inserted',
    'RESTAURANTS',
    'find-one-and-replace',
    { query: { _id: 0, a: 1 }, doc: {}, upsert: true, sort: { a: 1 } },
    { value: null },
    [{ _id: 0 }, ...RESTAURANTS],
  ],
  [
    'findOneAndReplace with {}, upsert, a sort and "after"',
    'RESTAURANTS',
    'find-one-and-replace',
    { query: { _id: 0, a: 1 }, doc: {}, upsert: true, sort: { a: 1 }, returnDocument: 'after' },
    { value: { _id: 0 } },
  ],
  // ---- findOneAndReplace (manual) ----
  [
    'findOneAndReplace replaces the first match (by _id without a sort)',
    'SCORES',
    'find-one-and-replace',
    { query: { score: { $lt: 20000 } }, doc: { team: 'Observant Badgers', score: 20000 } },
    { value: { _id: 4511, team: 'Aquatic Ponies', score: 19250 } },
    sortById(
      SCORES.map((s) => (s._id === 4511 ? { _id: 4511, team: 'Observant Badgers', score: 20000 } : s)),
    ),
  ],
  [
    'findOneAndReplace with a sort',
    'SCORES',
    'find-one-and-replace',
    {
      query: { score: { $lt: 20000 } },
      doc: { team: 'Observant Badgers', score: 20000 },
      sort: { score: 1 },
    },
    { value: { _id: 5331, team: 'Cuddly Zebras', score: 15235 } },
  ],
  [
    'findOneAndReplace with a projection',
    'SCORES',
    'find-one-and-replace',
    {
      query: { score: { $lt: 22250 } },
      doc: { team: 'Therapeutic Hamsters', score: 22250 },
      sort: { score: 1 },
      fields: { _id: 0, team: 1 },
    },
    { value: { team: 'Cuddly Zebras' } },
  ],
  [
    'findOneAndReplace with upsert and "after"',
    'SCORES',
    'find-one-and-replace',
    {
      query: { team: 'Fortified Lobsters' },
      doc: { _id: 6019, team: 'Fortified Lobsters', score: 32000 },
      upsert: true,
      returnDocument: 'after',
    },
    { value: { _id: 6019, team: 'Fortified Lobsters', score: 32000 } },
    sortById([...SCORES, { _id: 6019, team: 'Fortified Lobsters', score: 32000 }]),
  ],
  // ---- findOneAndDelete (manual) ----
  [
    'findOneAndDelete deletes and returns the document',
    'GRADES',
    'find-one-and-delete',
    { query: { name: 'M. Tagnum' } },
    { value: { _id: 6312, name: 'M. Tagnum', assignment: 5, points: 30 } },
    GRADES.filter((g) => g._id !== 6312),
  ],
  [
    'findOneAndDelete with a sort',
    'GRADES',
    'find-one-and-delete',
    { query: { name: 'A. MacDyver' }, sort: { points: 1 } },
    { value: { _id: 6322, name: 'A. MacDyver', assignment: 2, points: 14 } },
    GRADES.filter((g) => g._id !== 6322),
  ],
  [
    'findOneAndDelete with a projection',
    'GRADES',
    'find-one-and-delete',
    { query: { name: 'A. MacDyver' }, sort: { points: 1 }, fields: { _id: 0, assignment: 1 } },
    { value: { assignment: 2 } },
    GRADES.filter((g) => g._id !== 6322),
  ],
  // ---- updateOne (manual) ----
  [
    'updateOne updates one document',
    'RESTAURANTS',
    'update-one',
    { query: { name: 'Central Perk Cafe' }, doc: { $set: { violations: 3 } } },
    { matchedCount: 1, modifiedCount: 1 },
    [{ ...RESTAURANTS[0], violations: 3 }, RESTAURANTS[1], RESTAURANTS[2]] as Doc[],
  ],
  [
    'updateOne updates only the first of several matches',
    'RESTAURANTS',
    'update-one',
    { query: { violations: { $gte: 0 } }, doc: { $inc: { violations: 1 } } },
    { matchedCount: 1, modifiedCount: 1 },
    [RESTAURANTS[0], { ...RESTAURANTS[1], violations: 3 }, RESTAURANTS[2]] as Doc[],
  ],
  [
    'updateOne with a sort (MongoDB 8.0)',
    'RESTAURANTS',
    'update-one',
    { query: { violations: { $gte: 0 } }, doc: { $inc: { violations: 1 } }, sort: { violations: 1 } },
    { matchedCount: 1, modifiedCount: 1 },
    [RESTAURANTS[0], RESTAURANTS[1], { ...RESTAURANTS[2], violations: 1 }] as Doc[],
  ],
  [
    'updateOne that changes nothing counts a match and no modification',
    'RESTAURANTS',
    'update-one',
    { query: { _id: 3 }, doc: { $set: { violations: 0 } } },
    { matchedCount: 1, modifiedCount: 0 },
    RESTAURANTS,
  ],
  [
    'updateOne with upsert inserts, taking _id from $set',
    'RESTAURANTS',
    'update-one',
    {
      query: { name: "Pizza Rat's Pizzaria" },
      doc: { $set: { _id: 4, violations: 7, borough: 'Manhattan' } },
      upsert: true,
    },
    { matchedCount: 0, modifiedCount: 0, upsertedId: 4 },
    [...RESTAURANTS, { _id: 4, name: "Pizza Rat's Pizzaria", violations: 7, borough: 'Manhattan' }],
  ],
  [
    'updateOne with upsert and a match updates',
    'RESTAURANTS',
    'update-one',
    { query: { violations: { $gt: 1 } }, doc: { $set: { Review: true } }, upsert: true },
    { matchedCount: 1, modifiedCount: 1 },
    [RESTAURANTS[0], { ...RESTAURANTS[1], Review: true }, RESTAURANTS[2]] as Doc[],
  ],
  [
    'updateOne with upsert and no match takes the query equalities and $setOnInsert',
    'RESTAURANTS',
    'update-one',
    { query: { name: 'New', Borough: 'Bronx' }, doc: { $setOnInsert: { violations: 0 } }, upsert: true },
    { matchedCount: 0, modifiedCount: 0, upsertedId: newId },
  ],
  // ---- replaceOne (manual) ----
  [
    'replaceOne replaces one document, keeping its _id',
    'RESTAURANTS',
    'replace-one',
    { query: { name: 'Central Perk Cafe' }, doc: { name: 'Central Pork Cafe', Borough: 'Manhattan' } },
    { matchedCount: 1, modifiedCount: 1 },
    [{ _id: 1, name: 'Central Pork Cafe', Borough: 'Manhattan' }, RESTAURANTS[1], RESTAURANTS[2]] as Doc[],
  ],
  [
    'replaceOne with upsert inserts the replacement',
    'RESTAURANTS',
    'replace-one',
    {
      query: { name: "Pizza Rat's Pizzaria" },
      doc: { _id: 4, name: "Pizza Rat's Pizzaria", Borough: 'Manhattan', violations: 8 },
      upsert: true,
    },
    { matchedCount: 0, modifiedCount: 0, upsertedId: 4 },
    [...RESTAURANTS, { _id: 4, name: "Pizza Rat's Pizzaria", Borough: 'Manhattan', violations: 8 }],
  ],
  [
    'replaceOne with a sort replaces the first in that order',
    'RESTAURANTS',
    'replace-one',
    { query: {}, doc: { name: 'Last' }, sort: { name: -1 } },
    { matchedCount: 1, modifiedCount: 1 },
    [RESTAURANTS[0], { _id: 2, name: 'Last' }, RESTAURANTS[2]] as Doc[],
  ],
  // ---- deleteOne (manual) ----
  [
    'deleteOne deletes the first match only',
    'RESTAURANTS',
    'delete-one',
    { query: { violations: { $gte: 0 } } },
    { deletedCount: 1 },
    [RESTAURANTS[0], RESTAURANTS[2]] as Doc[],
  ],
  [
    'deleteOne with a sort',
    'RESTAURANTS',
    'delete-one',
    { query: { violations: { $gte: 0 } }, sort: { violations: 1 } },
    { deletedCount: 1 },
    [RESTAURANTS[0], RESTAURANTS[1]] as Doc[],
  ],
  [
    'deleteOne with no match deletes nothing',
    'RESTAURANTS',
    'delete-one',
    { query: { name: 'Nobody' } },
    { deletedCount: 0 },
    RESTAURANTS,
  ],
];

/** [what, dataset, operation, body, status, code, detail]: nothing may be written. */
type ErrorCase = [string, Dataset, string, Doc, number, string, RegExp];

const ERRORS: ErrorCase[] = [
  [
    'updateOne with a replacement document',
    'RESTAURANTS',
    'update-one',
    { query: { _id: 1 }, doc: { name: 'x' } },
    400,
    'INVALID_QUERY',
    /Update document requires atomic operators/,
  ],
  [
    'updateOne with an empty update',
    'RESTAURANTS',
    'update-one',
    { query: { _id: 1 }, doc: {} },
    400,
    'INVALID_QUERY',
    /Update document requires atomic operators/,
  ],
  [
    'findOneAndUpdate with a replacement document',
    'RESTAURANTS',
    'find-one-and-update',
    { query: { _id: 1 }, doc: { name: 'x' } },
    400,
    'INVALID_QUERY',
    /Update document requires atomic operators/,
  ],
  [
    'replaceOne with update operators',
    'RESTAURANTS',
    'replace-one',
    { query: { _id: 1 }, doc: { $set: { name: 'x' } } },
    400,
    'INVALID_QUERY',
    /Replacement document must not contain atomic operators/,
  ],
  [
    'findOneAndReplace with update operators',
    'RESTAURANTS',
    'find-one-and-replace',
    { query: { _id: 1 }, doc: { $set: { name: 'x' } } },
    400,
    'INVALID_QUERY',
    /Replacement document must not contain atomic operators/,
  ],
  [
    'replaceOne changing _id',
    'RESTAURANTS',
    'replace-one',
    { query: { _id: 1 }, doc: { _id: 9, name: 'x' } },
    400,
    'INVALID_QUERY',
    /immutable field '_id'/,
  ],
  [
    'updateOne mixing operators and fields',
    'RESTAURANTS',
    'update-one',
    { query: { _id: 1 }, doc: { $set: { a: 1 }, b: 2 } },
    400,
    'INVALID_QUERY',
    /mixes update operators and plain fields/,
  ],
  [
    'findOneAndUpdate with $inc of a string',
    'RESTAURANTS',
    'find-one-and-update',
    { query: { _id: 1 }, doc: { $inc: { name: 1 } } },
    400,
    'INVALID_QUERY',
    /\$inc/,
  ],
  [
    'findOneAndUpdate with a projection mixing inclusion and exclusion',
    'RESTAURANTS',
    'find-one-and-update',
    { query: { _id: 1 }, doc: { $set: { a: 1 } }, fields: { name: 1, Borough: 0 } },
    400,
    'INVALID_QUERY',
    /Cannot do exclusion on field Borough in inclusion projection/,
  ],
  [
    'findOneAndDelete with a bad projection deletes nothing',
    'RESTAURANTS',
    'find-one-and-delete',
    { query: { _id: 1 }, fields: { name: 1, Borough: 0 } },
    400,
    'INVALID_QUERY',
    /Cannot do exclusion on field Borough in inclusion projection/,
  ],
  [
    'a positional projection the document after the update no longer matches writes nothing',
    'ARRAYS',
    'find-one-and-update',
    {
      query: { grades: { $gte: 85 } },
      doc: { $set: { grades: [1] } },
      fields: { 'grades.$': 1 },
      returnDocument: 'after',
    },
    400,
    'INVALID_QUERY',
    /found no array element the query matched/,
  ],
  [
    'a sort on a $ path',
    'RESTAURANTS',
    'delete-one',
    { query: {}, sort: { $natural: 1 } },
    400,
    'INVALID_QUERY',
    /sort path/,
  ],
  [
    'a sort direction of 2',
    'RESTAURANTS',
    'find-one-and-delete',
    { query: {}, sort: { name: 2 } },
    400,
    'VALIDATION_FAILED',
    /sort/,
  ],
  [
    'returnDocument "new"',
    'RESTAURANTS',
    'find-one-and-update',
    { query: {}, doc: { $set: { a: 1 } }, returnDocument: 'new' },
    400,
    'VALIDATION_FAILED',
    /returnDocument/,
  ],
  [
    'upsert on find-one-and-delete',
    'RESTAURANTS',
    'find-one-and-delete',
    { query: {}, upsert: true },
    400,
    'VALIDATION_FAILED',
    /upsert/,
  ],
  [
    'an unknown query operator',
    'RESTAURANTS',
    'update-one',
    { query: { a: { $where: 'x' } }, doc: { $set: { a: 1 } } },
    400,
    'INVALID_QUERY',
    /\$where/,
  ],
  [
    'an upsert whose query fixes a path twice',
    'RESTAURANTS',
    'find-one-and-update',
    { query: { $and: [{ a: 1 }, { a: 2 }] }, doc: { $set: { b: 1 } }, upsert: true },
    400,
    'INVALID_QUERY',
    /Cannot infer the upsert's fields from the query/,
  ],
];

for (const indexed of [false, true]) {
  describe(`single-document operations${indexed ? ' with indexes on the queried and sorted paths' : ''}`, () => {
    const collections = new Map<Dataset, Awaited<ReturnType<typeof freshCollection>>>();
    /** The dataset's collection, holding exactly the dataset's documents. */
    async function collectionOf(dataset: Dataset) {
      let col = collections.get(dataset);
      if (!col) {
        col = await freshCollection(t);
        if (indexed) for (const key of INDEXED_PATHS) await col.index([key]);
        collections.set(dataset, col);
      } else {
        const res = await col.call('delete', { query: {} });
        expect(res.status, res.text).toBe(200);
      }
      await col.insert(DATASETS[dataset]);
      return col;
    }

    it.each(CASES)('%s', async (_name, dataset, op, body, result, after) => {
      const col = await collectionOf(dataset);
      const res = await col.call(op, body);
      expect(res.status, res.text).toBe(200);
      expect(res.body.result).toStrictEqual(result);
      if (after) expect(await col.read({ limit: 1000 })).toStrictEqual(sortById(after));
    });

    it.each(ERRORS)('%s', async (_name, dataset, op, body, status, code, detail) => {
      const col = await collectionOf(dataset);
      const res = await col.call(op, body);
      expect(res.status, res.text).toBe(status);
      expect(res.body.code).toBe(code);
      expect(res.body.detail).toMatch(detail);
      expect(await col.read({ limit: 1000 })).toStrictEqual(sortById(DATASETS[dataset]));
    });

    it.each([
      ['update-one', { query: { _id: 1 }, doc: { $set: { name: 'Empire State Pub' } } }],
      ['replace-one', { query: { _id: 1 }, doc: { name: 'Empire State Pub' } }],
      ['find-one-and-update', { query: { _id: 1 }, doc: { $set: { name: 'Empire State Pub' } } }],
      ['find-one-and-replace', { query: { _id: 1 }, doc: { name: 'Empire State Pub' } }],
      [
        'find-one-and-update',
        { query: { name: 'Empire State Pub' }, doc: { $set: { x: 1 } }, upsert: true, sort: { _id: -1 } },
      ],
    ])('%s answers 409 on a unique index violation and writes nothing', async (op, body) => {
      const col = await collectionOf('RESTAURANTS');
      if (!(await col.read({ limit: 1 })).length) throw new Error('empty');
      await col.index(['name'], { name: `u${Math.random().toString(36).slice(2, 8)}`, unique: true });
      // An upsert that matches updates (no conflict); one made to conflict inserts a duplicate.
      const conflicting =
        'upsert' in body
          ? { ...body, query: { name: 'Nobody' }, doc: { $set: { name: 'Empire State Pub' } } }
          : body;
      const res = await col.call(op, conflicting);
      expect(res.status, res.text).toBe(409);
      expect(res.body.code).toBe('DUPLICATE_KEY');
      expect(await col.read({ limit: 1000 })).toStrictEqual(RESTAURANTS);
      collections.delete('RESTAURANTS'); // its unique index would break later cases
    });
  });
}
