import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PIPELINE_STAGES } from '../../mongo/pipeline/parse.js';
import { MAX_GROUPS, MAX_PIPELINE_RESULTS } from '../../mongo/pipeline/sql.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection, queriedPaths } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

type Doc = Record<string, unknown>;

interface Case {
  name: string;
  docs: Doc[];
  pipeline: Doc[];
  /** MongoDB's answer, in MongoDB's order (or as a set: `unordered`). */
  result: Doc[];
  unordered?: boolean;
  /** Other collections of the workplace, for $lookup. */
  others?: Record<string, Doc[]>;
}

// The collections of MongoDB's manual pages, each named after its page.
const SALES = [
  { _id: 1, item: 'abc', price: 10, quantity: 2, date: '2014-03-01' },
  { _id: 2, item: 'jkl', price: 20, quantity: 1, date: '2014-03-01' },
  { _id: 3, item: 'xyz', price: 5, quantity: 10, date: '2014-03-15' },
  { _id: 4, item: 'xyz', price: 5, quantity: 20, date: '2014-04-04' },
  { _id: 5, item: 'abc', price: 10, quantity: 10, date: '2014-04-04' },
  { _id: 6, item: 'def', price: 7.5, quantity: 5, date: '2015-06-04' },
  { _id: 7, item: 'def', price: 7.5, quantity: 10, date: '2015-09-10' },
  { _id: 8, item: 'abc', price: 10, quantity: 5, date: '2016-02-06' },
];

const INVENTORY = [
  { _id: 1, item: 'ABC', sizes: ['S', 'M', 'L'] },
  { _id: 2, item: 'EFG', sizes: [] },
  { _id: 3, item: 'IJK', sizes: 'M' },
  { _id: 4, item: 'LMN' },
  { _id: 5, item: 'XYZ', sizes: null },
];

const BOOKS = [
  { _id: 1, title: 'abc123', isbn: '0001122223334', author: { last: 'zzz', first: 'aaa' }, copies: 5 },
  {
    _id: 2,
    title: 'Baked Goods',
    isbn: '9999999999999',
    author: { last: 'xyz', first: 'abc', middle: '' },
    copies: 2,
  },
];

const ORDERS = [
  { _id: 1, item: 'almonds', price: 12, quantity: 2 },
  { _id: 2, item: 'pecans', price: 20, quantity: 1 },
  { _id: 3 },
];
const WAREHOUSE = [
  { _id: 1, sku: 'almonds', description: 'product 1', instock: 120 },
  { _id: 2, sku: 'bread', description: 'product 2', instock: 80 },
  { _id: 3, sku: 'cashews', description: 'product 3', instock: 60 },
  { _id: 4, sku: 'pecans', description: 'product 4', instock: 70 },
  { _id: 5, sku: null, description: 'Incomplete' },
  { _id: 6 },
];

const ARTWORK = [
  {
    _id: 1,
    title: 'The Pillars of Society',
    artist: 'Grosz',
    year: 1926,
    tags: ['painting', 'satire', 'Expressionism', 'caricature'],
  },
  { _id: 2, title: 'Melancholy III', artist: 'Munch', year: 1902, tags: ['woodcut', 'Expressionism'] },
  { _id: 3, title: 'Dancer', artist: 'Miro', year: 1925, tags: ['oil', 'Surrealism', 'painting'] },
  { _id: 4, title: 'The Great Wave off Kanagawa', artist: 'Hokusai', tags: ['woodblock', 'ukiyo-e'] },
  {
    _id: 5,
    title: 'The Persistence of Memory',
    artist: 'Dali',
    year: 1931,
    tags: ['Surrealism', 'painting', 'oil'],
  },
  {
    _id: 6,
    title: 'Composition VII',
    artist: 'Kandinsky',
    year: 1913,
    tags: ['oil', 'painting', 'abstract'],
  },
  { _id: 7, title: 'The Scream', artist: 'Munch', year: 1893, tags: ['Expressionism', 'painting', 'oil'] },
  { _id: 8, title: 'Blue Flower', artist: "O'Keefe", year: 1918, tags: ['abstract', 'painting'] },
];

const d = (_id: number, rest: Doc = {}) => ({ _id, ...rest });

const cases: Case[] = [
  // ---- $match ----------------------------------------------------------------------------------
  {
    name: '$match manual: equality',
    docs: SALES,
    pipeline: [{ $match: { item: 'xyz' } }],
    result: [SALES[2] as Doc, SALES[3] as Doc],
  },
  {
    name: '$match after $group filters the groups',
    docs: SALES,
    pipeline: [{ $group: { _id: '$item', n: { $sum: 1 } } }, { $match: { n: { $gte: 2 } } }],
    result: [
      { _id: 'abc', n: 3 },
      { _id: 'def', n: 2 },
      { _id: 'xyz', n: 2 },
    ],
  },
  {
    name: '$match with $or, $in and an array field',
    docs: ARTWORK,
    pipeline: [
      { $match: { $or: [{ tags: 'woodcut' }, { year: { $in: [1893, 1913] } }] } },
      { $project: { _id: 1 } },
    ],
    result: [{ _id: 2 }, { _id: 6 }, { _id: 7 }],
  },
  // ---- $project --------------------------------------------------------------------------------
  {
    name: '$project manual: include specific fields (and _id)',
    docs: BOOKS,
    pipeline: [{ $project: { title: 1, author: 1 } }],
    result: [
      { _id: 1, title: 'abc123', author: { last: 'zzz', first: 'aaa' } },
      { _id: 2, title: 'Baked Goods', author: { last: 'xyz', first: 'abc', middle: '' } },
    ],
  },
  {
    name: '$project manual: suppress _id',
    docs: BOOKS,
    pipeline: [{ $project: { _id: 0, title: 1, author: 1 } }],
    result: [
      { title: 'abc123', author: { last: 'zzz', first: 'aaa' } },
      { title: 'Baked Goods', author: { last: 'xyz', first: 'abc', middle: '' } },
    ],
  },
  {
    name: '$project manual: exclude fields',
    docs: BOOKS,
    pipeline: [{ $project: { isbn: 0, copies: 0 } }],
    result: [
      { _id: 1, title: 'abc123', author: { last: 'zzz', first: 'aaa' } },
      { _id: 2, title: 'Baked Goods', author: { last: 'xyz', first: 'abc', middle: '' } },
    ],
  },
  {
    name: '$project manual: exclude fields from embedded documents',
    docs: BOOKS,
    pipeline: [{ $project: { 'author.first': 0, copies: 0, isbn: 0 } }],
    result: [
      { _id: 1, title: 'abc123', author: { last: 'zzz' } },
      { _id: 2, title: 'Baked Goods', author: { last: 'xyz', middle: '' } },
    ],
  },
  {
    name: '$project manual: include embedded fields, dotted and nested',
    docs: BOOKS,
    pipeline: [{ $project: { 'author.last': 1, title: { $literal: 'x' } } }],
    result: [
      { _id: 1, author: { last: 'zzz' }, title: 'x' },
      { _id: 2, author: { last: 'xyz' }, title: 'x' },
    ],
  },
  {
    name: '$project manual: computed fields from paths, and a new array',
    docs: BOOKS,
    pipeline: [
      {
        $project: {
          title: 1,
          isbn: { prefix: '$isbn', copies: '$copies' },
          names: ['$author.first', '$author.last', '$none'],
        },
      },
    ],
    result: [
      { _id: 1, title: 'abc123', isbn: { prefix: '0001122223334', copies: 5 }, names: ['aaa', 'zzz', null] },
      {
        _id: 2,
        title: 'Baked Goods',
        isbn: { prefix: '9999999999999', copies: 2 },
        names: ['abc', 'xyz', null],
      },
    ],
  },
  {
    name: '$project: a computed field that is missing is left out; literals that are not flags',
    docs: [d(1, { a: 1 })],
    pipeline: [{ $project: { b: '$nothing', s: 'text', z: null, one: true } }],
    result: [{ _id: 1, s: 'text', z: null }],
  },
  {
    name: "$project: inclusion through arrays keeps the documents' fields and drops scalars",
    docs: [d(1, { a: [{ b: 1, c: 2 }, 5, [{ b: 3, c: 4 }], { c: 6 }] })],
    pipeline: [{ $project: { 'a.b': 1 } }],
    result: [{ _id: 1, a: [{ b: 1 }, [{ b: 3 }], {}] }],
  },
  {
    name: '$project: exclusion through arrays keeps scalars',
    docs: [d(1, { a: [{ b: 1, c: 2 }, 5] })],
    pipeline: [{ $project: { 'a.b': 0 } }],
    result: [{ _id: 1, a: [{ c: 2 }, 5] }],
  },
  {
    name: '$project: a computed dotted field sets every array element and replaces scalars',
    docs: [d(1, { a: [{ b: 1 }, 5] }), d(2, { a: 7 }), d(3)],
    pipeline: [{ $project: { 'a.c': { $literal: 9 } } }],
    result: [
      { _id: 1, a: [{ c: 9 }, { c: 9 }] },
      { _id: 2, a: { c: 9 } },
      { _id: 3, a: { c: 9 } },
    ],
  },
  {
    name: '$project: {_id: 0} alone is an exclusion',
    docs: [d(1, { a: 1 })],
    pipeline: [{ $project: { _id: 0 } }],
    result: [{ a: 1 }],
  },
  {
    name: '$project: {_id: 1} alone keeps only _id',
    docs: [d(1, { a: 1 })],
    pipeline: [{ $project: { _id: 1 } }],
    result: [{ _id: 1 }],
  },
  {
    name: '$project: $$ROOT and $$CURRENT',
    docs: [d(1, { a: 1 })],
    pipeline: [{ $project: { _id: 0, r: '$$ROOT', c: '$$CURRENT.a' } }],
    result: [{ r: { _id: 1, a: 1 }, c: 1 }],
  },
  {
    name: '$project: a path through an array of documents gives an array',
    docs: [d(1, { a: [{ b: 1 }, { c: 1 }, { b: [2] }, 3] })],
    pipeline: [{ $project: { x: '$a.b' } }],
    result: [{ _id: 1, x: [1, [2]] }],
  },
  // ---- $addFields / $set / $unset ---------------------------------------------------------------
  {
    name: '$addFields manual: adding fields to an embedded document',
    docs: [
      d(1, { type: 'car', specs: { doors: 4, wheels: 4 } }),
      d(2, { type: 'motorcycle', specs: { doors: 0, wheels: 2 } }),
      d(3, { type: 'jet ski' }),
    ],
    pipeline: [{ $addFields: { 'specs.fuel_type': 'unleaded' } }],
    result: [
      d(1, { type: 'car', specs: { doors: 4, wheels: 4, fuel_type: 'unleaded' } }),
      d(2, { type: 'motorcycle', specs: { doors: 0, wheels: 2, fuel_type: 'unleaded' } }),
      d(3, { type: 'jet ski', specs: { fuel_type: 'unleaded' } }),
    ],
  },
  {
    name: '$addFields manual: overwriting an existing field, and a nested spec merges',
    docs: [d(1, { dogs: 10, cats: 5, specs: { a: 1 } })],
    pipeline: [{ $addFields: { cats: 20, specs: { b: 2 } } }],
    result: [d(1, { dogs: 10, cats: 20, specs: { a: 1, b: 2 } })],
  },
  {
    name: '$set manual: replace _id with another field',
    docs: [d(1, { item: 'tangerine', type: 'citrus' }), d(2, { item: 'lemon', type: 'citrus' })],
    pipeline: [{ $set: { _id: '$item' } }],
    result: [
      { _id: 'tangerine', item: 'tangerine', type: 'citrus' },
      { _id: 'lemon', item: 'lemon', type: 'citrus' },
    ],
  },
  {
    name: '$set: a missing value removes the field; $literal {} sets an empty document; numbers are values',
    docs: [d(1, { a: 1, b: 2 })],
    pipeline: [{ $set: { a: '$nothing', c: { $literal: {} }, n: 0, t: true } }],
    result: [d(1, { b: 2, c: {}, n: 0, t: true })],
  },
  {
    name: '$unset manual: a field, embedded fields, and a list',
    docs: BOOKS,
    pipeline: [{ $unset: ['isbn', 'author.first', 'copies'] }],
    result: [
      { _id: 1, title: 'abc123', author: { last: 'zzz' } },
      { _id: 2, title: 'Baked Goods', author: { last: 'xyz', middle: '' } },
    ],
  },
  {
    name: '$unset: one field as a string',
    docs: BOOKS,
    pipeline: [{ $unset: 'author' }, { $project: { copies: 0, isbn: 0 } }],
    result: [
      { _id: 1, title: 'abc123' },
      { _id: 2, title: 'Baked Goods' },
    ],
  },
  // ---- $group ----------------------------------------------------------------------------------
  {
    name: '$group manual: count documents with _id null',
    docs: SALES,
    pipeline: [{ $group: { _id: null, count: { $count: {} } } }],
    result: [{ _id: null, count: 8 }],
  },
  {
    name: '$group manual: distinct values of item',
    docs: SALES,
    pipeline: [{ $group: { _id: '$item' } }],
    result: [{ _id: 'abc' }, { _id: 'def' }, { _id: 'jkl' }, { _id: 'xyz' }],
  },
  {
    name: '$group manual: group by item, sum of quantity, $match the groups',
    docs: SALES,
    pipeline: [
      { $group: { _id: '$item', totalQuantity: { $sum: '$quantity' } } },
      { $match: { totalQuantity: { $gte: 15 } } },
    ],
    result: [
      { _id: 'abc', totalQuantity: 17 },
      { _id: 'def', totalQuantity: 15 },
      { _id: 'xyz', totalQuantity: 30 },
    ],
  },
  {
    name: '$group: $avg, $min, $max, $first, $last, $push, $addToSet by item (after $sort)',
    docs: SALES,
    pipeline: [
      { $sort: { date: 1 } },
      {
        $group: {
          _id: '$item',
          avgQuantity: { $avg: '$quantity' },
          minPrice: { $min: '$price' },
          maxQuantity: { $max: '$quantity' },
          firstDate: { $first: '$date' },
          lastDate: { $last: '$date' },
          quantities: { $push: '$quantity' },
          prices: { $addToSet: '$price' },
        },
      },
    ],
    result: [
      {
        _id: 'abc',
        avgQuantity: 17 / 3,
        minPrice: 10,
        maxQuantity: 10,
        firstDate: '2014-03-01',
        lastDate: '2016-02-06',
        quantities: [2, 10, 5],
        prices: [10],
      },
      {
        _id: 'def',
        avgQuantity: 7.5,
        minPrice: 7.5,
        maxQuantity: 10,
        firstDate: '2015-06-04',
        lastDate: '2015-09-10',
        quantities: [5, 10],
        prices: [7.5],
      },
      {
        _id: 'jkl',
        avgQuantity: 1,
        minPrice: 20,
        maxQuantity: 1,
        firstDate: '2014-03-01',
        lastDate: '2014-03-01',
        quantities: [1],
        prices: [20],
      },
      {
        _id: 'xyz',
        avgQuantity: 15,
        minPrice: 5,
        maxQuantity: 20,
        firstDate: '2014-03-15',
        lastDate: '2014-04-04',
        quantities: [10, 20],
        prices: [5],
      },
    ],
  },
  {
    name: '$group: _id an expression object; missing group fields are null',
    docs: [d(1, { a: 1, b: 1 }), d(2, { a: 1, b: 1 }), d(3, { a: 1 }), d(4, { a: 1, b: null })],
    pipeline: [{ $group: { _id: { a: '$a', b: '$b' }, n: { $sum: 1 } } }],
    result: [
      { _id: { a: 1 }, n: 1 },
      { _id: { a: 1, b: null }, n: 1 },
      { _id: { a: 1, b: 1 }, n: 2 },
    ],
    unordered: true,
  },
  {
    name: '$group: a missing _id groups with null; 1 and 1.0 are one group',
    docs: [d(1, { k: null }), d(2), d(3, { k: 1 }), d(4, { k: 1.5 })],
    pipeline: [{ $group: { _id: '$k', ids: { $push: '$_id' } } }],
    result: [
      { _id: null, ids: [1, 2] },
      { _id: 1, ids: [3] },
      { _id: 1.5, ids: [4] },
    ],
  },
  {
    name: '$group: $sum and $avg ignore non-numbers; $sum of none is 0, $avg of none null',
    docs: [d(1, { v: 'x' }), d(2, { v: [1, 2] }), d(3, { v: null }), d(4)],
    pipeline: [{ $group: { _id: null, s: { $sum: '$v' }, a: { $avg: '$v' } } }],
    result: [{ _id: null, s: 0, a: null }],
  },
  {
    name: '$group: $min/$max compare in BSON order and skip null and missing',
    docs: [
      d(1, { v: 'a' }),
      d(2, { v: 5 }),
      d(3, { v: null }),
      d(4),
      d(5, { v: { x: 1 } }),
      d(6, { v: true }),
    ],
    pipeline: [{ $group: { _id: null, lo: { $min: '$v' }, hi: { $max: '$v' } } }],
    result: [{ _id: null, lo: 5, hi: true }],
  },
  {
    name: '$group: $min/$max of only null and missing are null',
    docs: [d(1, { v: null }), d(2)],
    pipeline: [{ $group: { _id: null, lo: { $min: '$v' }, hi: { $max: '$v' } } }],
    result: [{ _id: null, lo: null, hi: null }],
  },
  {
    name: '$group: $push and $addToSet skip missing values and keep null',
    docs: [d(1, { v: 1 }), d(2), d(3, { v: null }), d(4, { v: 1 })],
    pipeline: [{ $group: { _id: null, p: { $push: '$v' }, s: { $addToSet: '$v' } } }],
    result: [{ _id: null, p: [1, null, 1], s: [null, 1] }],
  },
  {
    name: '$group: $first/$last of a missing value are null',
    docs: [d(1), d(2, { v: 2 }), d(3)],
    pipeline: [{ $group: { _id: null, f: { $first: '$v' }, l: { $last: '$v' } } }],
    result: [{ _id: null, f: null, l: null }],
  },
  {
    name: '$group: _id null over no documents gives no group',
    docs: [d(1)],
    pipeline: [{ $match: { x: 1 } }, { $group: { _id: null, n: { $count: {} } } }],
    result: [],
  },
  {
    name: '$group: $push of $$ROOT',
    docs: [d(1, { k: 'a' }), d(2, { k: 'a' })],
    pipeline: [{ $group: { _id: '$k', docs: { $push: '$$ROOT' } } }],
    result: [{ _id: 'a', docs: [d(1, { k: 'a' }), d(2, { k: 'a' })] }],
  },
  // ---- $sort, $skip, $limit -------------------------------------------------------------------
  {
    name: '$sort manual: ascending/descending with a tie broken by _id',
    docs: [
      d(1, { name: 'Central Park Cafe', borough: 'Manhattan' }),
      d(2, { name: 'Rock A Feller Bar and Grill', borough: 'Queens' }),
      d(3, { name: 'Empire State Pub', borough: 'Brooklyn' }),
      d(4, { name: "Stan's Pizzaria", borough: 'Manhattan' }),
      d(5, { name: "Jane's Deli", borough: 'Brooklyn' }),
    ],
    pipeline: [{ $sort: { borough: 1, _id: 1 } }, { $project: { _id: 1 } }],
    result: [{ _id: 3 }, { _id: 5 }, { _id: 1 }, { _id: 4 }, { _id: 2 }],
  },
  {
    name: '$sort: BSON order of types, missing as null, arrays by min ascending',
    docs: [
      d(1, { v: 'b' }),
      d(2, { v: 3 }),
      d(3),
      d(4, { v: [5, 1] }),
      d(5, { v: true }),
      d(6, { v: { a: 1 } }),
    ],
    pipeline: [{ $sort: { v: 1 } }, { $project: { _id: 1 } }],
    result: [{ _id: 3 }, { _id: 4 }, { _id: 2 }, { _id: 1 }, { _id: 6 }, { _id: 5 }],
  },
  {
    name: '$sort after $group on a computed field, descending; ties keep group order',
    docs: SALES,
    pipeline: [{ $group: { _id: '$item', n: { $sum: 1 } } }, { $sort: { n: -1 } }],
    result: [
      { _id: 'abc', n: 3 },
      { _id: 'def', n: 2 },
      { _id: 'xyz', n: 2 },
      { _id: 'jkl', n: 1 },
    ],
  },
  {
    name: '$skip and $limit, in both orders',
    docs: SALES,
    pipeline: [{ $sort: { _id: -1 } }, { $skip: 1 }, { $limit: 3 }, { $skip: 1 }, { $project: { _id: 1 } }],
    result: [{ _id: 6 }, { _id: 5 }],
  },
  {
    name: '$limit then $skip after another stage',
    docs: SALES,
    pipeline: [{ $project: { item: 1 } }, { $limit: 3 }, { $skip: 2 }],
    result: [{ _id: 3, item: 'xyz' }],
  },
  // ---- $unwind ---------------------------------------------------------------------------------
  {
    name: '$unwind manual: an array field',
    docs: [INVENTORY[0] as Doc],
    pipeline: [{ $unwind: '$sizes' }],
    result: [
      { _id: 1, item: 'ABC', sizes: 'S' },
      { _id: 1, item: 'ABC', sizes: 'M' },
      { _id: 1, item: 'ABC', sizes: 'L' },
    ],
  },
  {
    name: '$unwind manual: missing, null, empty arrays are dropped; a scalar is one element',
    docs: INVENTORY,
    pipeline: [{ $unwind: '$sizes' }],
    result: [
      { _id: 1, item: 'ABC', sizes: 'S' },
      { _id: 1, item: 'ABC', sizes: 'M' },
      { _id: 1, item: 'ABC', sizes: 'L' },
      { _id: 3, item: 'IJK', sizes: 'M' },
    ],
  },
  {
    name: '$unwind manual: preserveNullAndEmptyArrays',
    docs: INVENTORY,
    pipeline: [{ $unwind: { path: '$sizes', preserveNullAndEmptyArrays: true } }],
    result: [
      { _id: 1, item: 'ABC', sizes: 'S' },
      { _id: 1, item: 'ABC', sizes: 'M' },
      { _id: 1, item: 'ABC', sizes: 'L' },
      { _id: 2, item: 'EFG' },
      { _id: 3, item: 'IJK', sizes: 'M' },
      { _id: 4, item: 'LMN' },
      { _id: 5, item: 'XYZ', sizes: null },
    ],
  },
  {
    name: '$unwind manual: includeArrayIndex',
    docs: INVENTORY,
    pipeline: [{ $unwind: { path: '$sizes', includeArrayIndex: 'arrayIndex' } }],
    result: [
      { _id: 1, item: 'ABC', sizes: 'S', arrayIndex: 0 },
      { _id: 1, item: 'ABC', sizes: 'M', arrayIndex: 1 },
      { _id: 1, item: 'ABC', sizes: 'L', arrayIndex: 2 },
      { _id: 3, item: 'IJK', sizes: 'M', arrayIndex: null },
    ],
  },
  {
    name: '$unwind: an embedded path, preserved, with an index',
    docs: [d(1, { a: { b: [1, 2] } }), d(2, { a: { b: [] } })],
    pipeline: [{ $unwind: { path: '$a.b', includeArrayIndex: 'i', preserveNullAndEmptyArrays: true } }],
    result: [d(1, { a: { b: 1 }, i: 0 }), d(1, { a: { b: 2 }, i: 1 }), d(2, { a: {}, i: null })],
  },
  {
    name: "$unwind then $group: the manual's count of sizes",
    docs: INVENTORY,
    pipeline: [{ $unwind: '$sizes' }, { $group: { _id: '$sizes', n: { $sum: 1 } } }],
    result: [
      { _id: 'L', n: 1 },
      { _id: 'M', n: 2 },
      { _id: 'S', n: 1 },
    ],
  },
  // ---- $count, $sortByCount --------------------------------------------------------------------
  {
    name: '$count manual',
    docs: [d(1, { score: 85 }), d(2, { score: 60 }), d(3, { score: 95 }), d(4, { score: 88 })],
    pipeline: [{ $match: { score: { $gt: 80 } } }, { $count: 'passing_scores' }],
    result: [{ passing_scores: 3 }],
  },
  {
    name: '$count of nothing gives no document',
    docs: [d(1)],
    pipeline: [{ $match: { x: 1 } }, { $count: 'n' }],
    result: [],
  },
  {
    name: '$sortByCount manual: tags',
    docs: ARTWORK,
    pipeline: [{ $unwind: '$tags' }, { $sortByCount: '$tags' }, { $limit: 3 }],
    result: [
      { _id: 'painting', count: 6 },
      { _id: 'oil', count: 4 },
      { _id: 'Expressionism', count: 3 },
    ],
  },
  // ---- $replaceRoot / $replaceWith -------------------------------------------------------------
  {
    name: '$replaceRoot manual: an embedded document',
    docs: [
      d(1, { name: 'Arlene', pets: { dogs: 2, cats: 1 } }),
      d(2, { name: 'Sam', pets: { cats: 1, fish: 3 } }),
    ],
    pipeline: [{ $replaceRoot: { newRoot: '$pets' } }],
    result: [
      { dogs: 2, cats: 1 },
      { cats: 1, fish: 3 },
    ],
  },
  {
    name: '$replaceWith manual: a new document of fields',
    docs: [d(1, { first: 'Gary', last: 'Smith' })],
    pipeline: [{ $replaceWith: { name: '$first', full: { first: '$first', last: '$last' } } }],
    result: [{ name: 'Gary', full: { first: 'Gary', last: 'Smith' } }],
  },
  {
    name: '$replaceRoot after $unwind: array elements as documents',
    docs: [
      d(1, {
        grades: [
          { test: 1, grade: 80 },
          { test: 2, grade: 85 },
        ],
      }),
    ],
    pipeline: [{ $unwind: '$grades' }, { $replaceRoot: { newRoot: '$grades' } }],
    result: [
      { test: 1, grade: 80 },
      { test: 2, grade: 85 },
    ],
  },
  // ---- $lookup ---------------------------------------------------------------------------------
  {
    name: '$lookup manual: equality match, missing local field matches null and missing',
    docs: ORDERS,
    others: { inventory: WAREHOUSE },
    pipeline: [
      { $lookup: { from: 'inventory', localField: 'item', foreignField: 'sku', as: 'inventory_docs' } },
    ],
    result: [
      { _id: 1, item: 'almonds', price: 12, quantity: 2, inventory_docs: [WAREHOUSE[0] as Doc] },
      { _id: 2, item: 'pecans', price: 20, quantity: 1, inventory_docs: [WAREHOUSE[3] as Doc] },
      { _id: 3, inventory_docs: [WAREHOUSE[4] as Doc, WAREHOUSE[5] as Doc] },
    ],
  },
  {
    name: '$lookup manual: an array localField matches any element',
    docs: [
      d(1, { title: 'Reading is...', enrollmentlist: ['giraffe2', 'pandabear', 'artie'] }),
      d(2, { title: 'x', enrollmentlist: [] }),
    ],
    others: {
      members: [
        d(1, { name: 'artie', status: 'A' }),
        d(2, { name: 'giraffe', status: 'D' }),
        d(3, { name: 'giraffe2', status: 'A' }),
        d(4, { name: 'pandabear', status: 'A' }),
      ],
    },
    pipeline: [
      {
        $lookup: { from: 'members', localField: 'enrollmentlist', foreignField: 'name', as: 'enrollee_info' },
      },
      { $project: { ids: '$enrollee_info._id' } },
    ],
    result: [
      { _id: 1, ids: [1, 3, 4] },
      { _id: 2, ids: [] },
    ],
  },
  {
    name: '$lookup: a foreign array field matches an element; a dotted as',
    docs: [d(1, { k: 'x' })],
    others: { other: [d(1, { ks: ['x', 'y'] }), d(2, { ks: ['z'] })] },
    pipeline: [{ $lookup: { from: 'other', localField: 'k', foreignField: 'ks', as: 'joined.docs' } }],
    result: [d(1, { k: 'x', joined: { docs: [d(1, { ks: ['x', 'y'] })] } })],
  },
  {
    name: '$lookup: a collection that does not exist joins nothing',
    docs: [d(1, { k: 'x' })],
    pipeline: [{ $lookup: { from: 'nowhere', localField: 'k', foreignField: 'k', as: 'j' } }],
    result: [d(1, { k: 'x', j: [] })],
  },
  {
    name: '$lookup of the collection itself',
    docs: [d(1, { boss: 2 }), d(2)],
    pipeline: [
      { $lookup: { from: 'items', localField: 'boss', foreignField: '_id', as: 'b' } },
      { $project: { b: '$b._id' } },
    ],
    result: [
      { _id: 1, b: [2] },
      { _id: 2, b: [] },
    ],
  },
  // ---- $facet ----------------------------------------------------------------------------------
  {
    name: '$facet manual: several sub-pipelines over the same input',
    docs: ARTWORK,
    pipeline: [
      {
        $facet: {
          categorizedByTags: [{ $unwind: '$tags' }, { $sortByCount: '$tags' }, { $limit: 2 }],
          byArtist: [{ $match: { artist: 'Munch' } }, { $project: { _id: 1 } }],
          total: [{ $count: 'n' }],
          none: [{ $match: { artist: 'nobody' } }],
        },
      },
    ],
    result: [
      {
        categorizedByTags: [
          { _id: 'painting', count: 6 },
          { _id: 'oil', count: 4 },
        ],
        byArtist: [{ _id: 2 }, { _id: 7 }],
        total: [{ n: 8 }],
        none: [],
      },
    ],
  },
  {
    name: '$facet over no documents gives one document of empty arrays',
    docs: [d(1)],
    pipeline: [{ $match: { x: 1 } }, { $facet: { a: [{ $project: { _id: 1 } }], b: [{ $skip: 0 }] } }],
    result: [{ a: [], b: [] }],
  },
  {
    name: 'an empty pipeline gives every document in _id order',
    docs: [d(2), d(1)],
    pipeline: [],
    result: [d(1), d(2)],
  },
  // ---- stages with expression operators (the manual's pages of the operators and stages) ---------
  {
    name: '$group manual: total sale amount per item, $sum of $multiply, then $match',
    docs: SALES,
    pipeline: [
      { $group: { _id: '$item', totalSaleAmount: { $sum: { $multiply: ['$price', '$quantity'] } } } },
      { $match: { totalSaleAmount: { $gte: 100 } } },
    ],
    result: [
      { _id: 'abc', totalSaleAmount: 170 },
      { _id: 'def', totalSaleAmount: 112.5 },
      { _id: 'xyz', totalSaleAmount: 150 },
    ],
    unordered: true,
  },
  {
    name: '$group by an expression: the year of a date string ($substrCP)',
    docs: SALES,
    pipeline: [
      { $group: { _id: { $substrCP: ['$date', 0, 4] }, n: { $sum: 1 }, avgQty: { $avg: '$quantity' } } },
    ],
    result: [
      { _id: '2014', n: 5, avgQty: 8.6 },
      { _id: '2015', n: 2, avgQty: 7.5 },
      { _id: '2016', n: 1, avgQty: 5 },
    ],
    unordered: true,
  },
  {
    name: '$sortByCount of an expression ($toUpper), ties ordered by _id',
    docs: SALES,
    pipeline: [{ $sortByCount: { $toUpper: '$item' } }, { $sort: { count: -1, _id: 1 } }],
    result: [
      { _id: 'ABC', count: 3 },
      { _id: 'DEF', count: 2 },
      { _id: 'XYZ', count: 2 },
      { _id: 'JKL', count: 1 },
    ],
  },
  {
    name: '$set with $concatArrays',
    docs: [d(1, { homework: [10, 5, 10] }), d(2, { homework: [5, 6, 5] })],
    pipeline: [{ $set: { homework: { $concatArrays: ['$homework', [7]] } } }],
    result: [d(1, { homework: [10, 5, 10, 7] }), d(2, { homework: [5, 6, 5, 7] })],
  },
  {
    name: '$match with $expr, then $count',
    docs: SALES,
    pipeline: [
      { $match: { $expr: { $gt: [{ $multiply: ['$price', '$quantity'] }, 60] } } },
      { $count: 'big' },
    ],
    result: [{ big: 3 }],
  },
  {
    name: '$addToSet, then $size of the set',
    docs: SALES,
    pipeline: [
      { $group: { _id: null, items: { $addToSet: '$item' } } },
      { $project: { _id: 0, n: { $size: '$items' } } },
    ],
    result: [{ n: 4 }],
  },
  {
    name: '$project with $arrayElemAt and $ifNull',
    docs: SALES,
    pipeline: [
      {
        $project: {
          item: 1,
          first: { $arrayElemAt: [['$price', '$quantity'], 1] },
          d: { $ifNull: ['$discount', 'none'] },
        },
      },
      { $limit: 2 },
    ],
    result: [d(1, { item: 'abc', first: 2, d: 'none' }), d(2, { item: 'jkl', first: 1, d: 'none' })],
  },
  {
    name: '$cond manual: a discount by quantity',
    docs: [
      d(1, { item: 'abc1', qty: 300 }),
      d(2, { item: 'abc2', qty: 200 }),
      d(3, { item: 'xyz1', qty: 250 }),
    ],
    pipeline: [
      // biome-ignore lint/suspicious/noThenProperty: MongoDB's $cond names a branch `then`
      { $project: { item: 1, discount: { $cond: { if: { $gte: ['$qty', 250] }, then: 30, else: 20 } } } },
    ],
    result: [
      d(1, { item: 'abc1', discount: 30 }),
      d(2, { item: 'abc2', discount: 20 }),
      d(3, { item: 'xyz1', discount: 30 }),
    ],
  },
  {
    name: '$addFields with $add of fields and $cond on a comparison of two fields',
    docs: [d(1, { a: 2, b: 3 }), d(2, { a: 5, b: 1 })],
    pipeline: [
      { $addFields: { sum: { $add: ['$a', '$b'] }, bigger: { $cond: [{ $gt: ['$a', '$b'] }, 'a', 'b'] } } },
    ],
    result: [d(1, { a: 2, b: 3, sum: 5, bigger: 'b' }), d(2, { a: 5, b: 1, sum: 6, bigger: 'a' })],
  },
];

function headPaths(pipeline: Doc[]): string[] {
  const paths = new Set<string>();
  for (const stage of pipeline) {
    if (stage.$match) for (const p of queriedPaths(stage.$match as Doc)) paths.add(p);
    else if (stage.$sort) for (const p of Object.keys(stage.$sort as Doc)) paths.add(p);
    else break;
  }
  paths.delete('_id');
  return [...paths];
}

function sortById(docs: Doc[]): Doc[] {
  return [...docs].sort((a, b) => JSON.stringify(a._id).localeCompare(JSON.stringify(b._id)));
}

describe('aggregate gives MongoDB results', () => {
  for (const indexed of [false, true]) {
    it.each(cases.map((c) => [c.name, c] as const))(`%s${indexed ? ' (indexed)' : ''}`, async (_name, c) => {
      const col = await freshCollection(t);
      // Indexes on what the leading stages filter and sort on, which run over the table's columns.
      if (indexed) for (const path of headPaths(c.pipeline)) await col.index([path]);
      if (c.docs.length) await col.insert(c.docs);
      for (const [name, docs] of Object.entries(c.others ?? {})) {
        const created = await t.request({
          method: 'POST',
          url: `/v1/workplaces/${col.workplace}/storages`,
          body: { name },
        });
        expect(created.status, created.text).toBe(201);
        const res = await t.request({
          method: 'POST',
          url: `/v1/workplaces/${col.workplace}/storages/${name}/create`,
          body: { docs },
        });
        expect(res.status, res.text).toBe(201);
      }
      const res = await col.call('aggregate', { pipeline: c.pipeline });
      expect(res.status, res.text).toBe(200);
      if (c.unordered) expect(sortById(res.body.result)).toEqual(sortById(c.result));
      else expect(res.body.result).toEqual(c.result);
    });
  }
});

describe('aggregate refuses what MongoDB refuses, naming it', () => {
  it.each([
    ['an unknown stage', [{ $frobnicate: {} }], /Unrecognized pipeline stage name: '\$frobnicate'/],
    ['a stage MongoDB has and we do not', [{ $sample: { size: 1 } }], /'\$sample' is not supported/],
    ['two fields in a stage', [{ $match: {}, $sort: { a: 1 } }], /exactly one field/],
    ['a bad $match', [{ $match: { a: { $regx: 1 } } }], /\$regx/],
    ['$project {}', [{ $project: {} }], /at least one field/],
    [
      '$project mixing inclusion and exclusion',
      [{ $project: { a: 1, b: 0 } }],
      /Cannot do exclusion on field b in inclusion projection/,
    ],
    [
      '$project mixing exclusion and inclusion',
      [{ $project: { a: 0, b: 1 } }],
      /Cannot do inclusion on field b in exclusion projection/,
    ],
    [
      '$project computed in exclusion',
      [{ $project: { a: 0, b: '$x' } }],
      /Cannot use expression other than \$meta in exclusion projection/,
    ],
    [
      '$project path collision',
      [{ $project: { a: 1, 'a.b': 1 } }],
      /path collision at a\.b remaining portion b/,
    ],
    ['$project path collision the other way', [{ $project: { 'a.b': 1, a: 1 } }], /path collision at a/],
    ['$project empty sub-projection', [{ $project: { a: {} } }], /empty sub-projection/],
    ['$project $-field', [{ $project: { $a: 1 } }], /starting with '\$'/],
    ['an unknown expression operator', [{ $project: { a: { $frob: 1 } } }], /\$frob/],
    ['an undefined variable', [{ $project: { a: '$$nope' } }], /undefined variable '\$\$nope'/],
    [
      '$addFields {}',
      [{ $addFields: {} }],
      /Invalid \$addFields :: caused by :: specification must have at least one field/,
    ],
    [
      '$set of an empty object',
      [{ $set: { a: { b: {} } } }],
      /an empty object is not a valid value. Found empty object at path a\.b/,
    ],
    ['$unset {}', [{ $unset: {} }], /string or an array/],
    ['$unset of a number', [{ $unset: [1] }], /only string values/],
    ['$group without _id', [{ $group: { n: { $sum: 1 } } }], /must include an _id/],
    [
      '$group unknown accumulator',
      [{ $group: { _id: null, n: { $median: '$a' } } }],
      /unknown group operator '\$median'/,
    ],
    [
      '$group two accumulators in a field',
      [{ $group: { _id: null, n: { $sum: 1, $avg: 1 } } }],
      /must specify one accumulator/,
    ],
    ['$group a non-accumulator', [{ $group: { _id: null, n: 1 } }], /must be an accumulator object/],
    ['$group dotted field', [{ $group: { _id: null, 'a.b': { $sum: 1 } } }], /cannot contain '\.'/],
    [
      '$group array to a unary accumulator',
      [{ $group: { _id: null, s: { $sum: ['$a', '$b'] } } }],
      /unary operator/,
    ],
    [
      '$group $count with an argument',
      [{ $group: { _id: null, n: { $count: 1 } } }],
      /\$count takes no arguments/,
    ],
    ['$sort {}', [{ $sort: {} }], /at least one sort key/],
    ['$sort 2', [{ $sort: { a: 2 } }], /must be 1 or -1/],
    ['$sort $meta', [{ $sort: { a: { $meta: 'textScore' } } }], /query requires text score metadata/],
    ['$skip -1', [{ $skip: -1 }], /must not be negative/],
    ['$skip 1.5', [{ $skip: 1.5 }], /must be an integer/],
    ['$limit 0', [{ $limit: 0 }], /must be positive/],
    ['$limit "1"', [{ $limit: '1' }], /must be an integer/],
    ['$unwind without $', [{ $unwind: 'sizes' }], /should be prefixed with a '\$'/],
    [
      '$unwind unknown option',
      [{ $unwind: { path: '$a', foo: 1 } }],
      /Unrecognized option to \$unwind stage: 'foo'/,
    ],
    ['$unwind no path', [{ $unwind: { preserveNullAndEmptyArrays: true } }], /No path specified/],
    [
      '$unwind $-prefixed index',
      [{ $unwind: { path: '$a', includeArrayIndex: '$i' } }],
      /should not be prefixed/,
    ],
    ['$count ""', [{ $count: '' }], /non-empty string/],
    ['$count $x', [{ $count: '$x' }], /\$-prefixed/],
    ['$count a.b', [{ $count: 'a.b' }], /cannot contain '\.'/],
    ['$sortByCount a literal', [{ $sortByCount: 'tags' }], /\$-prefixed path or an expression object/],
    ['$replaceRoot without newRoot', [{ $replaceRoot: {} }], /no newRoot specified/],
    [
      '$replaceRoot unknown option',
      [{ $replaceRoot: { newRoot: '$a', x: 1 } }],
      /Unrecognized option to \$replaceRoot stage: 'x'/,
    ],
    [
      '$lookup pipeline form',
      [{ $lookup: { from: 'a', pipeline: [], as: 'b' } }],
      /'pipeline' is not supported/,
    ],
    [
      '$lookup without as',
      [{ $lookup: { from: 'a', localField: 'a', foreignField: 'b' } }],
      /Must specify 'as'/,
    ],
    [
      '$lookup without from',
      [{ $lookup: { as: 'a', localField: 'a', foreignField: 'b' } }],
      /Must specify 'from'/,
    ],
    [
      '$lookup without localField',
      [{ $lookup: { from: 'a', as: 'a', foreignField: 'b' } }],
      /both 'localField' and 'foreignField'/,
    ],
    [
      '$lookup unknown argument',
      [{ $lookup: { from: 'a', as: 'a', localField: 'a', foreignField: 'b', x: 1 } }],
      /Unknown argument to \$lookup: 'x'/,
    ],
    ['$facet {}', [{ $facet: {} }], /non-empty object/],
    ['$facet not an array', [{ $facet: { a: {} } }], /must be arrays/],
    [
      '$facet empty sub-pipeline',
      [{ $facet: { a: [] } }],
      /Sub-pipeline in \$facet stage cannot be empty \('a'\)/,
    ],
    [
      '$facet inside $facet',
      [{ $facet: { a: [{ $facet: { b: [] } }] } }],
      /not allowed to be used within a \$facet/,
    ],
    ['$facet $-name', [{ $facet: { $a: [] } }], /\$-prefixed/],
    [
      'more than 50 stages counting $facet sub-stages',
      [
        {
          $facet: {
            a: Array.from({ length: 30 }, () => ({ $skip: 0 })),
            b: Array.from({ length: 20 }, () => ({ $skip: 0 })),
          },
        },
      ],
      /more than 50 stages/,
    ],
  ])('%s', async (_what, pipeline, detail) => {
    const col = await freshCollection(t);
    await col.insert([{ a: 1 }]);
    const res = await col.call('aggregate', { pipeline });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(detail);
  });

  it.each([
    ['a number', 1, "resulting value was: 1. Type of resulting value: 'int'"],
    ['a missing field', '$nothing', "resulting value was: MISSING. Type of resulting value: 'missing'"],
    ['an array', '$a', "Type of resulting value: 'array'"],
  ])('refuses a newRoot that is %s, as MongoDB does', async (_what, newRoot, detail) => {
    const col = await freshCollection(t);
    await col.insert([{ a: [1] }]);
    const res = await col.call('aggregate', { pipeline: [{ $replaceRoot: { newRoot } }] });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toContain(detail);
  });

  it('raises nothing for a bad newRoot when no document reaches it', async () => {
    const col = await freshCollection(t);
    await col.insert([{ a: 1 }]);
    const res = await col.call('aggregate', {
      pipeline: [{ $match: { a: 2 } }, { $replaceRoot: { newRoot: 1 } }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual([]);
  });

  it.each([
    ['no pipeline', {}],
    ['a stage that is not an object', { pipeline: [1] }],
    [
      `${MAX_PIPELINE_STAGES + 1} stages`,
      { pipeline: Array.from({ length: MAX_PIPELINE_STAGES + 1 }, () => ({ $skip: 0 })) },
    ],
    ['a pipeline that is not an array', { pipeline: {} }],
    ['an unknown field', { pipeline: [], query: {} }],
  ])('refuses a body with %s', async (_what, body) => {
    const col = await freshCollection(t);
    const res = await col.call('aggregate', body);
    expect(res.status, res.text).toBe(400);
  });

  it('answers 404 for a collection that does not exist', async () => {
    const col = await freshCollection(t);
    const res = await t.request({ method: 'POST', url: `${col.url}x/aggregate`, body: { pipeline: [] } });
    expect(res.status, res.text).toBe(404);
    expect(res.body.code).toBe('COLLECTION_NOT_FOUND');
  });
});

/** `count` documents `{_id: i, b: [0, …, width - 1]}`: $unwind of `b` gives count × width rows. */
async function wideCollection(count: number, width: number) {
  const col = await freshCollection(t);
  const b = Array.from({ length: width }, (_, i) => i);
  for (let start = 0; start < count; start += 1000)
    await col.insert(
      Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({ _id: start + i, b })),
    );
  return col;
}

describe('aggregate limits', () => {
  it(`returns ${MAX_PIPELINE_RESULTS} documents and refuses one more`, async () => {
    const col = await wideCollection(101, 100);
    const full = await col.call('aggregate', {
      pipeline: [{ $unwind: '$b' }, { $limit: MAX_PIPELINE_RESULTS }],
    });
    expect(full.status, full.text).toBe(200);
    expect(full.body.result).toHaveLength(MAX_PIPELINE_RESULTS);
    const over = await col.call('aggregate', { pipeline: [{ $unwind: '$b' }] });
    expect(over.status, over.text).toBe(400);
    expect(over.body.detail).toMatch(/more than 10000 documents/);
    const facet = await col.call('aggregate', {
      pipeline: [{ $unwind: '$b' }, { $facet: { all: [{ $skip: 0 }] } }],
    });
    expect(facet.status, facet.text).toBe(400);
    expect(facet.body.detail).toMatch(/\$facet output 'all' has more than 10000 documents/);
  }, 60_000);

  it(`makes ${MAX_GROUPS} groups and refuses one more, in SQL`, async () => {
    const col = await wideCollection(1001, 100);
    const group = { $group: { _id: { a: '$_id', b: '$b' } } };
    const ok = await col.call('aggregate', {
      pipeline: [{ $unwind: '$b' }, { $limit: MAX_GROUPS }, group, { $count: 'groups' }],
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.result).toEqual([{ groups: MAX_GROUPS }]);
    const over = await col.call('aggregate', {
      pipeline: [{ $unwind: '$b' }, { $limit: MAX_GROUPS + 1 }, group, { $count: 'groups' }],
    });
    expect(over.status, over.text).toBe(400);
    expect(over.body.code).toBe('INVALID_QUERY');
    expect(over.body.detail).toMatch(/\$group made more than 100000 groups/);
  }, 120_000);
});
