import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { parseFilter } from '../../../mongo/filter/parse.js';
import { applyUpdate, parseUpdate } from '../../../mongo/update/update.js';
import type { JsonObject } from '../../../mongo/value/json.js';

/**
 * Positional update paths and $pull's conditions, with the documents and answers of MongoDB's
 * manual ("$ (update)", "$[]", "$[<identifier>]", "$pull") and jstests
 * (core/write/update/update_arrayFilters.js), errors included.
 */

const NOW = new Date('2024-05-06T07:08:09.123Z');

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

interface Case {
  name: string;
  doc: JsonObject;
  update: JsonObject;
  arrayFilters?: unknown;
  /** The query that matched the document, for `$`. */
  query?: JsonObject;
  insert?: boolean;
}

function run(c: Case): JsonObject {
  const update = parseUpdate(deepFreeze(c.update), { arrayFilters: deepFreeze(c.arrayFilters) });
  return applyUpdate(deepFreeze(c.doc), update, {
    now: NOW,
    isInsert: c.insert ?? false,
    ...(c.query ? { filter: parseFilter(c.query) } : {}),
  });
}

function queryError(fn: () => unknown): QueryError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(QueryError);
    return err as QueryError;
  }
  throw new Error('expected a QueryError');
}

const quizzes = {
  _id: 1,
  grades: [
    { type: 'quiz', questions: [10, 8, 5] },
    { type: 'quiz', questions: [8, 9, 6] },
    { type: 'hw', questions: [5, 4, 3] },
    { type: 'exam', questions: [25, 10, 23, 0] },
  ],
};

const applyCases: (Case & { expected: JsonObject })[] = [
  // $ (update)
  {
    name: '$ updates the element the query matched',
    doc: { _id: 1, grades: [85, 80, 80] },
    query: { _id: 1, grades: 80 },
    update: { $set: { 'grades.$': 82 } },
    expected: { _id: 1, grades: [85, 82, 80] },
  },
  {
    name: '$ in a document of the array',
    doc: {
      _id: 4,
      grades: [
        { grade: 80, mean: 75, std: 8 },
        { grade: 85, mean: 90, std: 5 },
        { grade: 85, mean: 85, std: 8 },
      ],
    },
    query: { _id: 4, 'grades.grade': 85 },
    update: { $set: { 'grades.$.std': 6 } },
    expected: {
      _id: 4,
      grades: [
        { grade: 80, mean: 75, std: 8 },
        { grade: 85, mean: 90, std: 6 },
        { grade: 85, mean: 85, std: 8 },
      ],
    },
  },
  {
    name: '$ with an $elemMatch of several fields',
    doc: {
      _id: 5,
      grades: [
        { grade: 80, mean: 75, std: 8 },
        { grade: 85, mean: 90, std: 5 },
        { grade: 90, mean: 85, std: 3 },
      ],
    },
    query: { _id: 5, grades: { $elemMatch: { grade: { $lte: 90 }, mean: { $gt: 80 } } } },
    update: { $set: { 'grades.$.std': 6 } },
    expected: {
      _id: 5,
      grades: [
        { grade: 80, mean: 75, std: 8 },
        { grade: 85, mean: 90, std: 6 },
        { grade: 90, mean: 85, std: 3 },
      ],
    },
  },
  {
    name: '$ with $inc, $push and $unset',
    doc: {
      a: [
        { n: 1, l: [] },
        { n: 2, l: [] },
      ],
    },
    query: { 'a.n': 2 },
    update: { $inc: { 'a.$.n': 10 }, $push: { 'a.$.l': 'x' }, $unset: { 'a.$.m': 1 } },
    expected: {
      a: [
        { n: 1, l: [] },
        { n: 12, l: ['x'] },
      ],
    },
  },
  {
    name: '$ with $pull on the matched element',
    doc: {
      a: [
        { k: 1, v: [1, 2] },
        { k: 2, v: [1, 2] },
      ],
    },
    query: { 'a.k': 2 },
    update: { $pull: { 'a.$.v': 1 } },
    expected: {
      a: [
        { k: 1, v: [1, 2] },
        { k: 2, v: [2] },
      ],
    },
  },
  {
    name: '$ takes the last array condition of an $and',
    doc: { a: [1, 2, 3], b: [4, 5, 6] },
    query: { a: 2, b: 6 },
    update: { $set: { 'a.$': 0 } },
    expected: { a: [1, 2, 0], b: [4, 5, 6] },
  },
  // jstests/core/write/update/update_array_offset_positional.js: array offsets give $ no match
  {
    name: '$ after an offset in the query path takes the traversal of the array after it',
    doc: { _id: 0, a: [{ b: [0, 1] }] },
    query: { _id: 0, 'a.0.b': 1 },
    update: { $set: { 'a.0.b.$': 2 } },
    expected: { _id: 0, a: [{ b: [0, 2] }] },
  },
  {
    name: '$ before an offset in the query path takes the traversal before it',
    doc: { _id: 0, a: [{ b: [0, 1] }] },
    query: { _id: 0, 'a.b.1': 1 },
    update: { $set: { 'a.$.b.1': 2 } },
    expected: { _id: 0, a: [{ b: [0, 2] }] },
  },
  {
    name: '$ ignores offset matches on another path',
    doc: { _id: 0, a: [0, 1], b: [{ c: [0] }] },
    query: { _id: 0, a: 1, 'b.0.c.0': 0 },
    update: { $set: { 'a.$': 2 } },
    expected: { _id: 0, a: [0, 2], b: [{ c: [0] }] },
  },
  {
    name: '$ creates a field past the end of a shorter array (the index is used as written)',
    doc: { a: [1, 2, 3], b: [] },
    query: { a: 3 },
    update: { $set: { 'b.$': 'x' } },
    expected: { a: [1, 2, 3], b: [null, null, 'x'] },
  },

  // $[]
  {
    name: '$[] updates every element',
    doc: { _id: 1, grades: [85, 82, 80] },
    update: { $inc: { 'grades.$[]': 10 } },
    expected: { _id: 1, grades: [95, 92, 90] },
  },
  {
    name: '$[] updates a field of every document',
    doc: {
      _id: 1,
      grades: [
        { grade: 80, mean: 75, std: 8 },
        { grade: 85, mean: 90, std: 6 },
        { grade: 85, mean: 85, std: 8 },
      ],
    },
    update: { $inc: { 'grades.$[].std': -2 } },
    expected: {
      _id: 1,
      grades: [
        { grade: 80, mean: 75, std: 6 },
        { grade: 85, mean: 90, std: 4 },
        { grade: 85, mean: 85, std: 6 },
      ],
    },
  },
  {
    name: '$[] of an empty array changes nothing',
    doc: { a: [] },
    update: { $set: { 'a.$[]': 1 } },
    expected: { a: [] },
  },
  {
    name: '$[] with $unset leaves nulls',
    doc: { _id: 0, a: [0, 1, 0, 1] },
    update: { $unset: { 'a.$[]': true } },
    expected: { _id: 0, a: [null, null, null, null] },
  },
  {
    name: '$[] with $min of a field',
    doc: {
      _id: 0,
      a: [
        { b: 0, c: 0 },
        { b: 0, c: -1 },
        { b: 1, c: 1 },
      ],
    },
    update: { $min: { 'a.$[].c': 0 } },
    expected: {
      _id: 0,
      a: [
        { b: 0, c: 0 },
        { b: 0, c: -1 },
        { b: 1, c: 0 },
      ],
    },
  },
  {
    name: '$[] with $addToSet, $push, $pop, $pullAll on arrays of arrays',
    doc: {
      a: [[0], [1]],
      b: [
        [0, 1],
        [2, 3],
      ],
      c: [[0]],
      d: [
        [0, 1, 2, 3],
        [1, 2, 3, 4],
      ],
    },
    update: {
      $addToSet: { 'a.$[]': 2 },
      $push: { 'b.$[]': 4 },
      $pop: { 'c.$[]': 1 },
      $pullAll: { 'd.$[]': [0, 2] },
    },
    expected: {
      a: [
        [0, 2],
        [1, 2],
      ],
      b: [
        [0, 1, 4],
        [2, 3, 4],
      ],
      c: [[]],
      d: [
        [1, 3],
        [1, 3, 4],
      ],
    },
  },
  {
    name: '$[] with $pull',
    doc: {
      _id: 0,
      a: [
        [0, 1],
        [1, 2],
      ],
    },
    update: { $pull: { 'a.$[]': 1 } },
    expected: { _id: 0, a: [[0], [2]] },
  },
  {
    name: '$[] with $mul, $bit and $currentDate',
    doc: { a: [1, 2], b: [0, 2], c: [0, 1] },
    update: { $mul: { 'a.$[]': 3 }, $bit: { 'b.$[]': { or: 10 } }, $currentDate: { 'c.$[]': true } },
    expected: { a: [3, 6], b: [10, 10], c: [NOW.toISOString(), NOW.toISOString()] },
  },
  {
    name: '$[] on an upsert whose query fixed the array',
    doc: { myArray: [5, 8] },
    update: { $set: { 'myArray.$[]': 10 } },
    insert: true,
    expected: { myArray: [10, 10] },
  },
  {
    name: '$[] and $[<id>] in nested arrays',
    doc: quizzes,
    update: { $inc: { 'grades.$[].questions.$[score]': 2 } },
    arrayFilters: [{ score: { $gte: 8 } }],
    expected: {
      _id: 1,
      grades: [
        { type: 'quiz', questions: [12, 10, 5] },
        { type: 'quiz', questions: [10, 11, 6] },
        { type: 'hw', questions: [5, 4, 3] },
        { type: 'exam', questions: [27, 12, 25, 0] },
      ],
    },
  },
  {
    name: '$[].$[j] in an array of arrays',
    doc: {
      _id: 0,
      a: [
        [0, 1],
        [0, 1],
      ],
    },
    update: { $set: { 'a.$[].$[j]': 2 } },
    arrayFilters: [{ j: 0 }],
    expected: {
      _id: 0,
      a: [
        [2, 1],
        [2, 1],
      ],
    },
  },

  // $[<identifier>]
  {
    name: '$[<id>] updates the elements its filter matches',
    doc: { _id: 3, grades: [95, 110, 100] },
    update: { $set: { 'grades.$[element]': 100 } },
    arrayFilters: [{ element: { $gte: 100 } }],
    expected: { _id: 3, grades: [95, 100, 100] },
  },
  {
    name: '$[<id>] on a field of the documents the filter matches',
    doc: {
      _id: 2,
      grades: [
        { grade: 90, mean: 75, std: 6 },
        { grade: 87, mean: 90, std: 3 },
        { grade: 85, mean: 85, std: 4 },
      ],
    },
    update: { $set: { 'grades.$[elem].mean': 100 } },
    arrayFilters: [{ 'elem.grade': { $gte: 85 } }],
    expected: {
      _id: 2,
      grades: [
        { grade: 90, mean: 100, std: 6 },
        { grade: 87, mean: 100, std: 3 },
        { grade: 85, mean: 100, std: 4 },
      ],
    },
  },
  {
    name: '$[<id>] with a filter of several conditions',
    doc: {
      _id: 1,
      grades: [
        { grade: 80, mean: 75, std: 6 },
        { grade: 85, mean: 100, std: 4 },
        { grade: 85, mean: 100, std: 6 },
      ],
    },
    update: { $inc: { 'grades.$[elem].std': -1 } },
    arrayFilters: [{ 'elem.grade': { $gte: 80 }, 'elem.std': { $gt: 5 } }],
    expected: {
      _id: 1,
      grades: [
        { grade: 80, mean: 75, std: 5 },
        { grade: 85, mean: 100, std: 4 },
        { grade: 85, mean: 100, std: 5 },
      ],
    },
  },
  {
    name: '$[<id>] with a negation ($ne also takes documents without the field)',
    doc: { _id: 1, degrees: [{ level: 'Master' }, { level: 'Bachelor' }, {}] },
    update: { $set: { 'degrees.$[degree].gradcampaign': 1 } },
    arrayFilters: [{ 'degree.level': { $ne: 'Bachelor' } }],
    expected: {
      _id: 1,
      degrees: [{ level: 'Master', gradcampaign: 1 }, { level: 'Bachelor' }, { gradcampaign: 1 }],
    },
  },
  {
    name: '$[<id>] nested in $[<id>]',
    doc: quizzes,
    update: { $inc: { 'grades.$[t].questions.$[score]': 2 } },
    arrayFilters: [{ 't.type': 'quiz' }, { score: { $gte: 8 } }],
    expected: {
      _id: 1,
      grades: [
        { type: 'quiz', questions: [12, 10, 5] },
        { type: 'quiz', questions: [10, 11, 6] },
        { type: 'hw', questions: [5, 4, 3] },
        { type: 'exam', questions: [25, 10, 23, 0] },
      ],
    },
  },
  {
    name: '$[<id>] with an $or filter',
    doc: { _id: 0, a: [0, 1, 3] },
    update: { $set: { 'a.$[i]': 2 } },
    arrayFilters: [{ $or: [{ i: 0 }, { i: 3 }] }],
    expected: { _id: 0, a: [2, 1, 2] },
  },
  {
    name: '$[<id>] whose filter matches an array element through its own elements',
    doc: { a: [[1, 2], [3]] },
    update: { $set: { 'a.$[i]': 'x' } },
    arrayFilters: [{ i: 2 }],
    expected: { a: ['x', [3]] },
  },
  {
    name: '$[<id>] with $elemMatch, $exists, $type, $size, $in in filters',
    doc: { a: [{ b: [1, 5] }, { b: [] }, { c: 1 }, { b: 'x' }] },
    update: {
      $set: { 'a.$[m].m': 1, 'a.$[e].e': 1, 'a.$[t].t': 1, 'a.$[s].s': 1, 'a.$[n].n': 1 },
    },
    arrayFilters: [
      { m: { $elemMatch: { b: { $gt: 4 } } } },
      { 'e.c': { $exists: true } },
      { 't.b': { $type: 'string' } },
      { 's.b': { $size: 0 } },
      { 'n.b': { $in: [1, 'x'] } },
    ],
    expected: {
      a: [
        { b: [1, 5], n: 1 },
        { b: [], s: 1 },
        { c: 1, e: 1 },
        { b: 'x', t: 1, n: 1 },
      ],
    },
  },
  {
    name: '"a.$[i].b.$[k].c" and "a.$[j].b.$[k].d" meet in no path even when i and j both match',
    doc: { _id: 0, a: [{ x: 0, b: [{ y: 0, c: 0, d: 0 }] }] },
    update: { $set: { 'a.$[i].b.$[k].c': 1, 'a.$[j].b.$[k].d': 1 } },
    arrayFilters: [{ 'i.x': 0 }, { 'j.x': 0 }, { 'k.y': 0 }],
    expected: { _id: 0, a: [{ x: 0, b: [{ y: 0, c: 1, d: 1 }] }] },
  },
  {
    name: '$[i] and $[j] on the same field of disjoint elements',
    doc: {
      _id: 0,
      a: [
        { x: 0, b: [{ y: 0, c: 0 }] },
        { x: 1, b: [{ y: 0, c: 0 }] },
      ],
    },
    update: { $set: { 'a.$[i].b.$[k].c': 1, 'a.$[j].b.$[k].c': 2 } },
    arrayFilters: [{ 'i.x': 0 }, { 'j.x': 1 }, { 'k.y': 0 }],
    expected: {
      _id: 0,
      a: [
        { x: 0, b: [{ y: 0, c: 1 }] },
        { x: 1, b: [{ y: 0, c: 2 }] },
      ],
    },
  },
  {
    name: '$setOnInsert with $[<id>] on an inserting upsert',
    doc: { _id: 0, a: [0] },
    update: { $setOnInsert: { 'a.$[i]': 1 } },
    arrayFilters: [{ i: 0 }],
    insert: true,
    expected: { _id: 0, a: [1] },
  },
  {
    name: '$setOnInsert with $[] does nothing on an update',
    doc: { _id: 0, a: [0] },
    update: { $setOnInsert: { 'a.$[]': 1 } },
    expected: { _id: 0, a: [0] },
  },
  {
    name: '$setOnInsert with $ does nothing on an update whose query matched an element',
    doc: { _id: 0, a: [0] },
    query: { a: 0 },
    update: { $setOnInsert: { 'a.$': 1 } },
    expected: { _id: 0, a: [0] },
  },

  // $pull with a query condition
  {
    name: '$pull $in and a value, on two arrays',
    doc: {
      _id: 1,
      fruits: ['apples', 'pears', 'oranges', 'grapes', 'bananas'],
      vegetables: ['carrots', 'celery', 'squash', 'carrots'],
    },
    update: { $pull: { fruits: { $in: ['apples', 'oranges'] }, vegetables: 'carrots' } },
    expected: { _id: 1, fruits: ['pears', 'grapes', 'bananas'], vegetables: ['celery', 'squash'] },
  },
  {
    name: '$pull $gte',
    doc: { _id: 1, votes: [3, 5, 6, 7, 7, 8] },
    update: { $pull: { votes: { $gte: 6 } } },
    expected: { _id: 1, votes: [3, 5] },
  },
  {
    name: '$pull a field compared with a document operand, in BSON order within the type',
    doc: { _id: 1, a: [{ b: { x: 2 } }, { b: { x: 0 } }, { b: 5 }] },
    update: { $pull: { a: { b: { $gt: { x: 1 } } } } },
    expected: { _id: 1, a: [{ b: { x: 0 } }, { b: 5 }] },
  },
  {
    name: '$pull elements compared with an array operand: arrays as wholes, never scalars',
    doc: { _id: 1, a: [[1], [2], [3, 1], 7] },
    update: { $pull: { a: { $gte: [2] } } },
    expected: { _id: 1, a: [[1], 7] },
  },
  {
    name: '$pull documents by two fields (other fields do not matter)',
    doc: {
      _id: 1,
      results: [
        { item: 'A', score: 5 },
        { item: 'B', score: 8, comment: 'Strongly agree' },
      ],
    },
    update: { $pull: { results: { score: 8, item: 'B' } } },
    expected: { _id: 1, results: [{ item: 'A', score: 5 }] },
  },
  {
    name: '$pull documents by two fields: no element has both',
    doc: {
      _id: 2,
      results: [
        { item: 'C', score: 8 },
        { item: 'B', score: 4 },
      ],
    },
    update: { $pull: { results: { score: 8, item: 'B' } } },
    expected: {
      _id: 2,
      results: [
        { item: 'C', score: 8 },
        { item: 'B', score: 4 },
      ],
    },
  },
  {
    name: '$pull with $elemMatch on a nested array',
    doc: {
      _id: 1,
      results: [
        {
          item: 'A',
          score: 5,
          answers: [
            { q: 1, a: 4 },
            { q: 2, a: 6 },
          ],
        },
        {
          item: 'B',
          score: 8,
          answers: [
            { q: 1, a: 8 },
            { q: 2, a: 9 },
          ],
        },
      ],
    },
    update: { $pull: { results: { answers: { $elemMatch: { q: 2, a: { $gte: 8 } } } } } },
    expected: {
      _id: 1,
      results: [
        {
          item: 'A',
          score: 5,
          answers: [
            { q: 1, a: 4 },
            { q: 2, a: 6 },
          ],
        },
      ],
    },
  },
  {
    name: '$pull $elemMatch on the elements themselves matches only elements that are arrays',
    doc: { a: [{ score: 8, item: 'B' }, [{ score: 8, item: 'B' }], [1]] },
    update: { $pull: { a: { $elemMatch: { score: 8, item: 'B' } } } },
    expected: { a: [{ score: 8, item: 'B' }, [1]] },
  },
  {
    name: '$pull $exists on a field',
    doc: { a: [{ b: 1 }, { c: 1 }, 1, { b: null }] },
    update: { $pull: { a: { b: { $exists: true } } } },
    expected: { a: [{ c: 1 }, 1] },
  },
  {
    name: '$pull $or of field conditions',
    doc: { a: [{ b: 1 }, { c: 2 }, { b: 2, c: 3 }] },
    update: { $pull: { a: { $or: [{ b: 1 }, { c: 2 }] } } },
    expected: { a: [{ b: 2, c: 3 }] },
  },
  {
    name: '$pull $and and $nor',
    doc: { a: [{ b: 1, c: 1 }, { b: 1, c: 2 }, { b: 2 }] },
    update: { $pull: { a: { $and: [{ b: 1 }], $nor: [{ c: 2 }] } } },
    expected: { a: [{ b: 1, c: 2 }, { b: 2 }] },
  },
  {
    name: '$pull $nin',
    doc: { a: [1, 2, 3, 4] },
    update: { $pull: { a: { $nin: [1, 3] } } },
    expected: { a: [1, 3] },
  },
  {
    name: '$pull $type',
    doc: { a: [1, 'x', null, [2], { b: 1 }] },
    update: { $pull: { a: { $type: ['string', 'object'] } } },
    expected: { a: [1, null, [2]] },
  },
  {
    name: '$pull $size of elements that are arrays',
    doc: { a: [[1, 2], [1], [], 'xy'] },
    update: { $pull: { a: { $size: 2 } } },
    expected: { a: [[1], [], 'xy'] },
  },
  {
    name: '$pull $all on a field',
    doc: { a: [{ t: ['x', 'y', 'z'] }, { t: ['x'] }] },
    update: { $pull: { a: { t: { $all: ['x', 'y'] } } } },
    expected: { a: [{ t: ['x'] }] },
  },
  {
    name: '$pull $mod',
    doc: { a: [1, 2, 3, 4, 5, 6] },
    update: { $pull: { a: { $mod: [3, 0] } } },
    expected: { a: [1, 2, 4, 5] },
  },
  {
    name: '$pull $bitsAllSet',
    doc: { a: [1, 3, 5, 7, 'x'] },
    update: { $pull: { a: { $bitsAllSet: [0, 1] } } },
    expected: { a: [1, 5, 'x'] },
  },
  {
    name: '$pull $not',
    doc: { a: [1, 5, 9] },
    update: { $pull: { a: { $not: { $gt: 4 } } } },
    expected: { a: [5, 9] },
  },
  {
    name: '$pull an empty query removes every document element, not the others',
    doc: { a: [{}, { b: 1 }, 1, [1]] },
    update: { $pull: { a: {} } },
    expected: { a: [1, [1]] },
  },
  {
    name: '$pull $lt a document compares in BSON order',
    doc: { a: [{ a: 1 }, { b: 1 }, 1] },
    update: { $pull: { a: { $lt: { b: 1 } } } },
    expected: { a: [{ b: 1 }, 1] },
  },
  {
    name: '$pull $gt a document and $lt a number at once',
    doc: { a: [{ a: 1 }, [{ b: 1 }, 0]] },
    update: { $pull: { a: { $gt: { a: 1 }, $lt: 5 } } },
    expected: { a: [{ a: 1 }] },
  },
  {
    name: '$pull with $[<id>] on the arrays the filter selects',
    doc: {
      _id: 0,
      a: [
        [0, 1],
        [1, 2],
      ],
    },
    update: { $pull: { 'a.$[i]': 1 } },
    arrayFilters: [{ i: 2 }],
    expected: { _id: 0, a: [[0, 1], [2]] },
  },
  // $regex, evaluated in TypeScript with the pattern's JavaScript form
  {
    name: '$ from a query with $regex',
    doc: { a: ['b', 'ab', 'ac'] },
    query: { a: { $regex: '^a' } },
    update: { $set: { 'a.$': 'y' } },
    expected: { a: ['b', 'y', 'ac'] },
  },
  {
    name: '$ from a query with $regex on a field of the elements, m option',
    doc: { a: [{ s: 'x\ny' }, { s: 'q\nab' }] },
    query: { 'a.s': { $regex: '^a', $options: 'm' } },
    update: { $set: { 'a.$.hit': true } },
    expected: { a: [{ s: 'x\ny' }, { s: 'q\nab', hit: true }] },
  },
  {
    name: '$[i] with a $regex array filter: PCRE $ before a final newline, strings only',
    doc: { a: ['ax', 'ax\n', 'ax\ny', 1, ['ax']] },
    update: { $set: { 'a.$[i]': 'z' } },
    arrayFilters: [{ i: { $regex: 'x$' } }],
    expected: { a: ['z', 'z', 'ax\ny', 1, 'z'] },
  },
  {
    name: '$[i] with $not $regex and the i option',
    doc: { a: ['Ab', 'b', 'ab'] },
    update: { $set: { 'a.$[i]': 0 } },
    arrayFilters: [{ i: { $not: { $regex: '^A', $options: 'i' } } }],
    expected: { a: ['Ab', 0, 'ab'] },
  },
  {
    name: "$pull $regex (the manual's form)",
    doc: { tags: ['apple', 'banana', 'avocado', 'Apricot', 1] },
    update: { $pull: { tags: { $regex: '^a' } } },
    expected: { tags: ['banana', 'Apricot', 1] },
  },
  {
    name: '$pull a document condition with $regex inside $elemMatch',
    doc: { a: [{ b: [{ c: 'xy' }] }, { b: [{ c: 'y' }] }] },
    update: { $pull: { a: { b: { $elemMatch: { c: { $regex: 'x' } } } } } },
    expected: { a: [{ b: [{ c: 'y' }] }] },
  },
];

describe('positional updates and $pull conditions', () => {
  it.each(applyCases)('$name', (c) => {
    expect(run(c)).toStrictEqual(c.expected);
  });
});

const applyErrorCases: (Case & { error: RegExp })[] = [
  {
    name: '$ without a query match',
    doc: { a: [1, 2] },
    query: {},
    update: { $set: { 'a.$': 1 } },
    error: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    name: '$ with a query on another field than an array',
    doc: { a: [1, 2], b: 1 },
    query: { b: 1 },
    update: { $set: { 'a.$': 1 } },
    error: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    name: '$ with a negation ($ne records no match)',
    doc: { a: [1, 2] },
    query: { a: { $ne: 3 } },
    update: { $set: { 'a.$': 1 } },
    error: /^The positional operator did not find the match needed from the query\.$/,
  },
  ...(
    [
      { doc: { _id: 0, a: [0] }, query: { _id: 0, 'a.0': 0 }, path: 'a.$' },
      { doc: { _id: 0, a: [{ b: 0 }] }, query: { _id: 0, 'a.0.b': 0 }, path: 'a.$.b' },
      { doc: { _id: 0, a: [[0]] }, query: { _id: 0, 'a.0.0': 0 }, path: 'a.$.0' },
      { doc: { _id: 0, a: [{ b: [0] }] }, query: { _id: 0, 'a.0.b.0': 0 }, path: 'a.$.b.0' },
    ] as { doc: JsonObject; query: JsonObject; path: string }[]
  ).map(({ doc, query, path }) => ({
    name: `$ with only an array offset in the query (${Object.keys(query)[1]})`,
    doc,
    query,
    update: { $set: { [path]: 1 } },
    error: /^The positional operator did not find the match needed from the query\.$/,
  })),
  {
    name: '$ on an inserting upsert',
    doc: { a: 1 },
    query: { a: 1 },
    update: { $set: { 'b.$': 1 } },
    insert: true,
    error: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    name: '$ with a query whose $regex matches no element (the array itself is no string)',
    doc: { a: [['x']] },
    query: { a: { $regex: 'x' } },
    update: { $set: { 'a.$': 1 } },
    error: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    name: '$setOnInsert with $ on an update whose query matched no element (MongoDB resolves it first)',
    doc: { _id: 0, a: [0] },
    query: { _id: 0 },
    update: { $setOnInsert: { 'a.$': 1 } },
    error: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    name: '$setOnInsert with $[] on an update of a document without the array',
    doc: { _id: 0 },
    update: { $setOnInsert: { 'a.$[]': 1 } },
    error: /^The path 'a' must exist in the document in order to apply array updates\.$/,
  },
  {
    name: '$[] on a missing array',
    doc: { _id: 0 },
    update: { $set: { 'a.$[]': 1 } },
    error: /^The path 'a' must exist in the document in order to apply array updates\.$/,
  },
  {
    name: '$[] on an inserting upsert whose query did not fix the array',
    doc: {},
    update: { $set: { 'myArray.$[]': 10 } },
    insert: true,
    error: /^The path 'myArray' must exist in the document in order to apply array updates\.$/,
  },
  {
    name: '$[<id>] on a number',
    doc: { a: 1 },
    update: { $set: { 'a.$[i]': 1 } },
    arrayFilters: [{ i: 0 }],
    error: /^Cannot apply array updates to non-array element a: 1\.$/,
  },
  {
    name: '$[] on a document',
    doc: { a: { b: 1 } },
    update: { $unset: { 'a.$[].b': 1 } },
    error: /^Cannot apply array updates to non-array element a: \{"b":1\}\.$/,
  },
  {
    name: '$[] then a field on a scalar element',
    doc: { a: [1, { b: 1 }] },
    update: { $set: { 'a.$[].b': 2 } },
    error: /^Cannot create field 'b' in element \{0: 1\} \(\$set on 'a\.0\.b'\)/,
  },
  {
    name: '$[i] and $[j] on elements both match',
    doc: { a: [0, 1] },
    update: { $set: { 'a.$[i]': 1, 'a.$[j]': 2 } },
    arrayFilters: [{ i: 0 }, { j: { $lt: 1 } }],
    error: /^Update created a conflict at 'a\.0'\.$/,
  },
  {
    name: '$[i] and $[j].b on an element both match',
    doc: { a: [{ b: 0 }] },
    update: { $set: { 'a.$[i]': 1, 'a.$[j].b': 2 } },
    arrayFilters: [{ 'i.b': 0 }, { 'j.b': 0 }],
    error: /^Update created a conflict at 'a\.0'\.$/,
  },
  {
    name: '$[] and $ meet at the matched element',
    doc: { a: [1, 2] },
    query: { a: 2 },
    update: { $set: { 'a.$': 1 }, $inc: { 'a.$[]': 1 } },
    error: /^Updating the path 'a\.\$\[\]' would create a conflict at 'a'/,
  },
  {
    name: '$ and an index meet when the query matched that index',
    doc: { a: [1, 2] },
    query: { a: 1 },
    update: { $set: { 'a.$': 1, 'a.0': 2 } },
    error: /^Update created a conflict at 'a\.0'\.$/,
  },
  {
    name: 'nested $[k] under two matching ids',
    doc: {
      _id: 0,
      a: [
        { x: 0, b: [{ y: 0, c: 0 }] },
        { x: 1, b: [{ y: 0, c: 0 }] },
      ],
    },
    update: { $set: { 'a.$[i].b.$[k].c': 1, 'a.$[j].b.$[k].c': 2 } },
    arrayFilters: [{ 'i.x': 0 }, { 'j.x': 0 }, { 'k.y': 0 }],
    error: /^Update created a conflict at 'a\.0\.b\.0\.c'\.$/,
  },
  {
    name: '$inc of a string element found by $[]',
    doc: { _id: 1, a: [1, 'x'] },
    update: { $inc: { 'a.$[]': 1 } },
    error:
      /^Cannot apply \$inc to a value of non-numeric type: field 'a\.1' of document with _id 1 is a string/,
  },
];

describe('positional update errors', () => {
  it.each(applyErrorCases)('$name', (c) => {
    expect(queryError(() => run(c)).message).toMatch(c.error);
  });
});

const parseErrorCases: { name: string; update: JsonObject; arrayFilters?: unknown; error: RegExp }[] = [
  {
    name: '$ first',
    update: { $set: { '$.a': 1 } },
    error: /^Cannot have positional \(i\.e\. '\$'\) element in the first position in path '\$\.a'/,
  },
  {
    name: '$[] first',
    update: { $set: { '$[]': 1 } },
    error:
      /^Cannot have array filter identifier \(i\.e\. '\$\[<id>\]'\) element in the first position in path '\$\[\]'/,
  },
  {
    name: 'two $ in a path',
    update: { $set: { 'a.$.b.$': 1 } },
    error: /^Too many positional \(i\.e\. '\$'\) elements found in path 'a\.\$\.b\.\$'/,
  },
  {
    name: 'an identifier without an array filter',
    update: { $set: { 'a.$[i]': 0 } },
    error: /^No array filter found for identifier 'i' in path 'a\.\$\[i\]'/,
  },
  {
    name: 'an array filter no path uses',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ i: 0 }, { j: 0 }],
    error: /^The array filter for identifier 'j' was not used in the update \{"\$set":\{"a\.\$\[i\]":5\}\}/,
  },
  {
    name: 'an array filter with a replacement document',
    update: { a: 1 },
    arrayFilters: [{ i: 0 }],
    error: /^The array filter for identifier 'i' was not used in the update/,
  },
  {
    name: 'two array filters for one identifier',
    update: { $set: { 'a.$[i]': 5, 'a.$[j]': 6 } },
    arrayFilters: [{ i: 0 }, { j: 0 }, { i: 1 }],
    error: /^arrayFilters\[2\]: Found multiple array filters with the same top-level field name i/,
  },
  {
    name: 'an array filter naming two identifiers',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ i: 0, j: 0 }],
    error:
      /^arrayFilters\[0\]: Error parsing array filter: Expected a single top-level field name, found 'i' and 'j'/,
  },
  {
    name: 'an array filter with no field',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ $and: [{}] }],
    error: /^arrayFilters\[0\]: Cannot use an expression without a top-level field name in arrayFilters/,
  },
  {
    name: 'an identifier with a capital letter',
    update: { $set: { 'a.$[I]': 1 } },
    arrayFilters: [{ I: 0 }],
    error:
      /^arrayFilters\[0\]: Error parsing array filter: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found 'I'/,
  },
  {
    name: 'an identifier starting with $',
    update: { $set: { 'a.$[$i]': 1 } },
    arrayFilters: [{ $i: 0 }],
    error: /^arrayFilters\[0\]: Unknown top-level query operator '\$i'/,
  },
  {
    name: 'arrayFilters not an array',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: { i: 0 },
    error: /^arrayFilters must be an array of filter objects, not an object/,
  },
  {
    name: 'an array filter that is not an object',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ i: 0 }, 'bad'],
    error: /^arrayFilters\[1\]: an array filter must be an object, not a string/,
  },
  {
    name: 'an array filter with bad grammar',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ i: { $gt: 1, $size: 'x' } }],
    error: /^arrayFilters\[0\]: \$size on 'i' needs a non-negative integer/,
  },
  {
    name: 'an array filter with a $regex JavaScript cannot compile either',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ i: { $regex: 'a{2,1}' } }],
    error: /^arrayFilters\[0\]: \$regex on 'i' is not a valid regular expression/,
  },
  {
    name: 'an array filter with a $regex construct refused for both engines',
    update: { $set: { 'a.$[i]': 5 } },
    arrayFilters: [{ i: { $regex: '(?<n>x)' } }],
    error: /^arrayFilters\[0\]: \$regex on 'i' uses named groups/,
  },
  {
    name: '$[i] and an index at the same place',
    update: { $set: { 'a.$[i]': 0, 'a.0': 0 } },
    arrayFilters: [{ i: 0 }],
    error: /^Updating the path 'a\.0' would create a conflict at 'a'/,
  },
  {
    name: '$[i] and $ at the same place',
    update: { $set: { 'a.$[i]': 0, 'a.$': 0 } },
    arrayFilters: [{ i: 0 }],
    error: /^Updating the path 'a\.\$' would create a conflict at 'a'/,
  },
  {
    name: '$[i] and a field name at the same place',
    update: { $set: { 'a.$[i]': 0, 'a.b': 0 } },
    arrayFilters: [{ i: 0 }],
    error: /^Updating the path 'a\.b' would create a conflict at 'a'/,
  },
  {
    name: '$[] and a path below it',
    update: { $set: { 'a.$[]': 0 }, $inc: { 'a.$[].b': 1 } },
    error: /^Updating the path 'a\.\$\[\]\.b' would create a conflict at 'a\.\$\[\]'/,
  },
  {
    name: '$rename from a positional path',
    update: { $rename: { 'a.$[]': 'b' } },
    error: /^The source field for \$rename may not be dynamic: a\.\$\[\]/,
  },
  {
    name: '$rename from $',
    update: { $rename: { 'a.$': 'b' } },
    error: /^The source field for \$rename may not be dynamic: a\.\$/,
  },
  {
    name: '$rename to a positional path',
    update: { $rename: { a: 'b.$[]' } },
    error: /^The destination field for \$rename may not be dynamic: b\.\$\[\]/,
  },
  {
    name: 'a $pull condition with a __proto__ field among its operators',
    update: JSON.parse('{"$pull": {"a": {"$gt": 1, "__proto__": {"x": 1}}}}'),
    error: /The condition on 'a' mixes operators \(\$gt\) with plain fields/,
  },
  {
    name: 'a segment that only starts like an identifier',
    update: { $set: { 'a.$[i.j]': 1 } },
    error: /has a field name starting with '\$' \('\$\[i'\)/,
  },
];

describe('positional update parse errors', () => {
  it.each(parseErrorCases)('$name', ({ update, arrayFilters, error }) => {
    expect(queryError(() => parseUpdate(update, { arrayFilters })).message).toMatch(error);
  });

  it('accepts array filters every path uses, and none', () => {
    expect(() =>
      parseUpdate({ $set: { 'a.$[i]': 5, 'a.$[j]': 6 } }, { arrayFilters: [{ i: 0 }, { j: 0 }] }),
    ).not.toThrow();
    expect(() =>
      parseUpdate({ $set: { 'a.$[i]': 5 } }, { arrayFilters: [{ $or: [{ i: 0 }, { $and: [{}] }] }] }),
    ).not.toThrow();
    expect(() => parseUpdate({ $set: { a: 5 } }, { arrayFilters: [] })).not.toThrow();
  });
});
