import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { parseFilter } from '../../../mongo/filter/parse.js';
import {
  applyProjection,
  MAX_PROJECTION_FIELDS,
  parseProjection,
  projectsEverything,
} from '../../../mongo/projection.js';
import { isPlainObject, type Json, type JsonObject } from '../../../mongo/value/json.js';

/** Any attempt to modify the input then throws (ESM is strict mode), wherever it happens. */
function deepFreeze<T extends Json>(value: T): T {
  if (Array.isArray(value)) for (const item of value) deepFreeze(item);
  else if (isPlainObject(value)) for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

function project(doc: JsonObject, fields: unknown, query?: JsonObject): JsonObject {
  return applyProjection(doc, parseProjection(fields, query && parseFilter(query)));
}

function parseError(fields: unknown, query: JsonObject = {}): QueryError {
  try {
    parseProjection(fields, parseFilter(query));
  } catch (err) {
    expect(err).toBeInstanceOf(QueryError);
    return err as QueryError;
  }
  throw new Error(`parseProjection accepted ${JSON.stringify(fields)}`);
}

const DOC: JsonObject = { _id: 'x', a: 1, b: 2, c: { d: 3 } };
const ARR: JsonObject = { _id: 1, a: [{ b: 1, c: 2 }, { c: 3 }, 5] };

type Case = [name: string, doc: JsonObject, fields: unknown, expected: JsonObject];

const cases: Case[] = [
  // Whole-document projections.
  ['undefined fields return everything', DOC, undefined, DOC],
  ['{} returns everything', DOC, {}, DOC],

  // Inclusion and exclusion.
  ['inclusion with 1', DOC, { a: 1 }, { _id: 'x', a: 1 }],
  ['inclusion with true', DOC, { a: true }, { _id: 'x', a: 1 }],
  ['any non-zero number includes', DOC, { a: 2, b: -1, c: 0.5 }, DOC],
  [
    'inclusion keeps document order, not projection order',
    DOC,
    { c: 1, a: 1 },
    { _id: 'x', a: 1, c: { d: 3 } },
  ],
  ['inclusion of a missing field leaves only _id', DOC, { z: 1 }, { _id: 'x' }],
  ['inclusion keeps an object value whole', DOC, { c: 1 }, { _id: 'x', c: { d: 3 } }],
  ['inclusion keeps an array value whole', { a: [1, { b: 2 }, [3]] }, { a: 1 }, { a: [1, { b: 2 }, [3]] }],
  ['exclusion with 0', DOC, { b: 0 }, { _id: 'x', a: 1, c: { d: 3 } }],
  ['exclusion with false', DOC, { b: false, c: false }, { _id: 'x', a: 1 }],
  ['exclusion of a missing field changes nothing', DOC, { z: 0 }, DOC],

  // _id rules.
  ['{_id: 0} alone excludes only _id', DOC, { _id: 0 }, { a: 1, b: 2, c: { d: 3 } }],
  ['{_id: false} alone excludes only _id', DOC, { _id: false }, { a: 1, b: 2, c: { d: 3 } }],
  ['{_id: 1} alone returns only _id', DOC, { _id: 1 }, { _id: 'x' }],
  ['{_id: true} alone returns only _id', DOC, { _id: true }, { _id: 'x' }],
  ['_id excluded from an inclusion', DOC, { _id: 0, a: 1 }, { a: 1 }],
  ['_id included in an inclusion', DOC, { a: 1, _id: 1 }, { _id: 'x', a: 1 }],
  ['_id included in an exclusion', DOC, { _id: 1, a: 0 }, { _id: 'x', b: 2, c: { d: 3 } }],
  ['_id excluded in an exclusion', DOC, { a: 0, _id: 0 }, { b: 2, c: { d: 3 } }],
  ['inclusion on a document without _id', { a: 1, b: 2 }, { a: 1 }, { a: 1 }],
  [
    'a sub-path of _id replaces the implicit _id inclusion',
    { _id: { x: 1, y: 2 }, a: 1 },
    { '_id.x': 1 },
    { _id: { x: 1 } },
  ],
  ['a sub-path of a scalar _id yields nothing', DOC, { '_id.x': 1 }, {}],
  ['excluding a sub-path of _id', { _id: { x: 1, y: 2 }, a: 1 }, { '_id.x': 0 }, { _id: { y: 2 }, a: 1 }],
  ['_id moves first for {}', { a: 1, _id: 2, b: 3 }, {}, { _id: 2, a: 1, b: 3 }],
  ['_id moves first in an inclusion', { a: 1, b: 3, _id: 2 }, { b: 1 }, { _id: 2, b: 3 }],
  ['_id moves first in an exclusion', { a: 1, b: 3, _id: 2 }, { a: 0 }, { _id: 2, b: 3 }],

  // Dotted paths through objects.
  ['dotted inclusion', { a: { b: 1, c: 2 } }, { 'a.b': 1 }, { a: { b: 1 } }],
  ['dotted exclusion', { a: { b: 1, c: 2 } }, { 'a.b': 0 }, { a: { c: 2 } }],
  ['deep dotted inclusion', { a: { b: { c: 1, d: 2 }, e: 3 } }, { 'a.b.c': 1 }, { a: { b: { c: 1 } } }],
  ['deep dotted exclusion', { a: { b: { c: 1, d: 2 }, e: 3 } }, { 'a.b.c': 0 }, { a: { b: { d: 2 }, e: 3 } }],
  [
    'two sub-paths keep document order',
    { a: { d: 4, c: 3, b: 2 } },
    { 'a.b': 1, 'a.d': 1 },
    { a: { d: 4, b: 2 } },
  ],
  ['two sibling exclusions', { a: { b: 1, c: 2, d: 3 } }, { 'a.b': 0, 'a.c': 0 }, { a: { d: 3 } }],
  ['sub-projection object equals a dotted path', { a: { b: 1, c: 2 } }, { a: { b: 1 } }, { a: { b: 1 } }],
  [
    'dotted key inside a sub-projection',
    { a: { b: { c: 1, d: 2 } } },
    { a: { 'b.c': 1 } },
    { a: { b: { c: 1 } } },
  ],
  ['sub-projection exclusion', { a: { b: 1, c: 2 }, d: 1 }, { a: { b: 0 } }, { a: { c: 2 }, d: 1 }],
  ['missing parent: inclusion yields nothing', { _id: 1, x: 1 }, { 'a.b': 1 }, { _id: 1 }],
  ['missing parent: exclusion changes nothing', { _id: 1, x: 1 }, { 'a.b': 0 }, { _id: 1, x: 1 }],
  ['scalar parent: inclusion omits it', { _id: 1, a: 5 }, { 'a.b': 1 }, { _id: 1 }],
  ['null parent: inclusion omits it', { _id: 1, a: null }, { 'a.b': 1 }, { _id: 1 }],
  ['string parent: inclusion omits it', { _id: 1, a: 'str' }, { 'a.b': 1 }, { _id: 1 }],
  ['scalar parent: exclusion keeps it', { _id: 1, a: 5 }, { 'a.b': 0 }, { _id: 1, a: 5 }],
  ['parent without the sub-field: inclusion keeps {}', { a: { c: 1 } }, { 'a.b': 1 }, { a: {} }],
  ['numeric segments are field names, not indexes', { a: [10, 20] }, { 'a.0': 1 }, { a: [] }],
  ['numeric segment on an object', { a: { '0': 'x', '1': 'y' } }, { 'a.0': 1 }, { a: { '0': 'x' } }],

  // Dotted paths through arrays.
  ['inclusion through an array', ARR, { 'a.b': 1 }, { _id: 1, a: [{ b: 1 }, {}] }],
  ['exclusion through an array', ARR, { 'a.b': 0 }, { _id: 1, a: [{ c: 2 }, { c: 3 }, 5] }],
  ['inclusion through an array of scalars yields []', { a: [1, 'x', null] }, { 'a.b': 1 }, { a: [] }],
  ['inclusion through an empty array', { a: [] }, { 'a.b': 1 }, { a: [] }],
  ['inclusion keeps an array leaf whole', { a: [{ b: [1, 2], c: 1 }] }, { 'a.b': 1 }, { a: [{ b: [1, 2] }] }],
  [
    'inclusion descends into nested arrays',
    { a: [[{ b: 1, c: 2 }, 7], [], 8] },
    { 'a.b': 1 },
    { a: [[{ b: 1 }], []] },
  ],
  [
    'exclusion descends into nested arrays',
    { a: [[{ b: 1, c: 2 }, 7], 8] },
    { 'a.b': 0 },
    { a: [[{ c: 2 }, 7], 8] },
  ],
  [
    'inclusion through arrays at two levels',
    { a: [{ b: [{ c: 1, d: 2 }, 3] }, { b: { c: 4, d: 5 } }] },
    { 'a.b.c': 1 },
    { a: [{ b: [{ c: 1 }] }, { b: { c: 4 } }] },
  ],

  // $slice.
  [
    '$slice alone keeps every field',
    { _id: 1, a: [1, 2, 3], b: 2 },
    { a: { $slice: 2 } },
    { _id: 1, a: [1, 2], b: 2 },
  ],
  ['$slice negative counts from the end', { a: [1, 2, 3] }, { a: { $slice: -2 } }, { a: [2, 3] }],
  ['$slice 0 empties the array', { a: [1, 2, 3] }, { a: { $slice: 0 } }, { a: [] }],
  ['$slice beyond the length', { a: [1, 2] }, { a: { $slice: 5 } }, { a: [1, 2] }],
  ['$slice negative beyond the length', { a: [1, 2] }, { a: { $slice: -5 } }, { a: [1, 2] }],
  ['$slice fractions truncate like MongoDB', { a: [1, 2, 3] }, { a: { $slice: 1.9 } }, { a: [1] }],
  ['$slice [skip, limit]', { a: [1, 2, 3, 4] }, { a: { $slice: [1, 2] } }, { a: [2, 3] }],
  [
    '$slice negative skip counts from the end',
    { a: [1, 2, 3, 4] },
    { a: { $slice: [-3, 2] } },
    { a: [2, 3] },
  ],
  ['$slice negative skip beyond the start', { a: [1, 2, 3] }, { a: { $slice: [-10, 2] } }, { a: [1, 2] }],
  ['$slice skip beyond the end', { a: [1, 2, 3] }, { a: { $slice: [10, 2] } }, { a: [] }],
  [
    '$slice on a non-array leaves it',
    { a: 'abc', b: { c: 1 } },
    { a: { $slice: 1 }, b: { $slice: 1 } },
    { a: 'abc', b: { c: 1 } },
  ],
  ['$slice on a missing field adds nothing', { _id: 1, b: 1 }, { a: { $slice: 1 } }, { _id: 1, b: 1 }],
  [
    '$slice in an inclusion is included, in document order',
    { _id: 1, a: [1, 2, 3], b: 2, c: 3 },
    { b: 1, a: { $slice: 1 } },
    { _id: 1, a: [1], b: 2 },
  ],
  [
    '$slice in an exclusion',
    { _id: 1, a: [1, 2, 3], b: 2, c: 3 },
    { b: 0, a: { $slice: -1 } },
    { _id: 1, a: [3], c: 3 },
  ],
  [
    '{_id: 0} with $slice is an exclusion',
    { _id: 1, a: [1, 2], b: 2 },
    { _id: 0, a: { $slice: 1 } },
    { a: [1], b: 2 },
  ],
  [
    '{_id: 1} with $slice is an inclusion',
    { _id: 1, a: [1, 2], b: 2 },
    { _id: 1, a: { $slice: 1 } },
    { _id: 1, a: [1] },
  ],
  [
    'dotted $slice alone keeps the sibling fields',
    { a: { b: [1, 2], c: 3 } },
    { 'a.b': { $slice: 1 } },
    { a: { b: [1], c: 3 } },
  ],
  [
    'dotted $slice in an inclusion drops the siblings (MongoDB 4.4+)',
    { _id: 1, qty: 100, details: { colors: ['blue', 'red'], sizes: ['S', 'M'] } },
    { qty: 1, 'details.colors': { $slice: 1 } },
    { _id: 1, qty: 100, details: { colors: ['blue'] } },
  ],
  [
    'dotted $slice through an array slices object elements only',
    { a: [{ b: [1, 2] }, { b: 3 }, [{ b: [1, 2] }], 4] },
    { 'a.b': { $slice: 1 } },
    { a: [{ b: [1] }, { b: 3 }, [{ b: [1, 2] }], 4] },
  ],
  [
    '$slice in a sub-projection',
    { a: { b: [1, 2, 3], c: 1 } },
    { a: { b: { $slice: -1 } } },
    { a: { b: [3], c: 1 } },
  ],
];

// The manual's "$elemMatch (projection)" collections.
const SCHOOL_1: JsonObject = {
  _id: 1,
  zipcode: '63109',
  students: [
    { name: 'john', school: 102, age: 10 },
    { name: 'jess', school: 102, age: 11 },
    { name: 'jeff', school: 108, age: 15 },
  ],
};
const SCHOOL_3: JsonObject = {
  _id: 3,
  zipcode: '63109',
  students: [
    { name: 'ajax', school: 100, age: 7 },
    { name: 'achilles', school: 100, age: 8 },
  ],
};
const SCHOOL_4: JsonObject = {
  _id: 4,
  zipcode: '63109',
  students: [
    { name: 'barney', school: 102, age: 7 },
    { name: 'ruth', school: 102, age: 16 },
  ],
};
const PLAYER: JsonObject = {
  _id: 1,
  name: 'player1',
  games: [
    { game: 'abc', score: 8 },
    { game: 'xyz', score: 5 },
  ],
  joined: '2020-01-01',
  lastLogin: '2020-05-01',
};

cases.push(
  [
    '$elemMatch with the bitwise tests',
    { _id: 1, a: [{ b: 4 }, { b: 6 }, { b: -1 }, { b: 7.5 }] },
    { a: { $elemMatch: { b: { $bitsAllSet: [1, 2], $bitsAnyClear: 63 } } } },
    { _id: 1, a: [{ b: 6 }] },
  ],
  [
    '$elemMatch with bit tests on negative numbers',
    { _id: 1, a: [2, -2, 5] },
    { a: { $elemMatch: { $bitsAllSet: [1, 63], $bitsAllClear: [0] } } },
    { _id: 1, a: [-2] },
  ],
  [
    '$elemMatch with $exists: false needs every value missing',
    { _id: 1, a: [{ b: [{ c: 1 }, { d: 1 }] }, { b: [{ d: 1 }] }] },
    { a: { $elemMatch: { 'b.c': { $exists: false } } } },
    { _id: 1, a: [{ b: [{ d: 1 }] }] },
  ],
  [
    '$elemMatch: the first matching element',
    SCHOOL_1,
    { students: { $elemMatch: { school: 102 } } },
    { _id: 1, students: [{ name: 'john', school: 102, age: 10 }] },
  ],
  [
    '$elemMatch: no match leaves the field out',
    SCHOOL_3,
    { students: { $elemMatch: { school: 102 } } },
    { _id: 3 },
  ],
  [
    '$elemMatch on several fields',
    SCHOOL_1,
    { students: { $elemMatch: { school: 102, age: { $gt: 10 } } } },
    { _id: 1, students: [{ name: 'jess', school: 102, age: 11 }] },
  ],
  [
    '$elemMatch on several fields, later element',
    SCHOOL_4,
    { students: { $elemMatch: { school: 102, age: { $gt: 10 } } } },
    { _id: 4, students: [{ name: 'ruth', school: 102, age: 16 }] },
  ],
  [
    '$elemMatch with an inclusion',
    SCHOOL_1,
    { zipcode: 1, students: { $elemMatch: { school: 108 } } },
    { _id: 1, zipcode: '63109', students: [{ name: 'jeff', school: 108, age: 15 }] },
  ],
  [
    '$elemMatch comes after the included fields (MongoDB 4.4+)',
    PLAYER,
    { games: { $elemMatch: { score: { $gt: 5 } } }, joined: 1, lastLogin: 1 },
    { _id: 1, joined: '2020-01-01', lastLogin: '2020-05-01', games: [{ game: 'abc', score: 8 }] },
  ],
  [
    '$elemMatch with _id excluded',
    PLAYER,
    { _id: 0, games: { $elemMatch: { game: 'xyz' } } },
    { games: [{ game: 'xyz', score: 5 }] },
  ],
  [
    "$elemMatch with the issue's results example",
    {
      _id: 3,
      results: [
        { product: 'abc', score: 7 },
        { product: 'xyz', score: 8 },
        { product: 'xyz', score: 9 },
      ],
    },
    { results: { $elemMatch: { product: 'xyz', score: { $gte: 8 } } } },
    { _id: 3, results: [{ product: 'xyz', score: 8 }] },
  ],
  [
    '$elemMatch on values',
    { _id: 1, a: [1, 5, 9] },
    { a: { $elemMatch: { $gte: 4, $lt: 9 } } },
    { _id: 1, a: [5] },
  ],
  [
    '$elemMatch with $or',
    PLAYER,
    { games: { $elemMatch: { $or: [{ score: 5 }, { game: 'none' }] } } },
    { _id: 1, games: [{ game: 'xyz', score: 5 }] },
  ],
  [
    '$elemMatch with $ne skips scalar elements',
    { _id: 1, a: [3, { b: 2 }, { b: 1 }] },
    { a: { $elemMatch: { b: { $ne: 2 } } } },
    { _id: 1, a: [{ b: 1 }] },
  ],
  [
    '$elemMatch with dotted and array paths in the element',
    { _id: 1, a: [{ b: [{ c: 1 }] }, { b: [{ c: 2 }, { c: 3 }] }] },
    { a: { $elemMatch: { 'b.c': 3 } } },
    { _id: 1, a: [{ b: [{ c: 2 }, { c: 3 }] }] },
  ],
  [
    '$elemMatch with null matches a missing field',
    { _id: 1, a: [{ b: 1 }, { c: 1 }] },
    { a: { $elemMatch: { b: null } } },
    { _id: 1, a: [{ c: 1 }] },
  ],
  [
    '$elemMatch with equality to an object',
    { _id: 1, a: [{ b: { x: 1, y: 2 } }, { b: { y: 2, x: 1 } }] },
    { a: { $elemMatch: { b: { y: 2, x: 1 } } } },
    { _id: 1, a: [{ b: { x: 1, y: 2 } }] },
  ],
  [
    '$elemMatch on a non-array leaves the field out',
    { _id: 1, a: { b: 1 }, c: 2 },
    { a: { $elemMatch: { b: 1 } } },
    { _id: 1 },
  ],
  ['$elemMatch on a missing field', { _id: 1, c: 2 }, { a: { $elemMatch: { b: 1 } } }, { _id: 1 }],
  [
    '$elemMatch and $slice on other fields',
    { _id: 1, a: [{ b: 1 }, { b: 2 }], c: [1, 2, 3] },
    { a: { $elemMatch: { b: 2 } }, c: { $slice: -1 } },
    { _id: 1, c: [3], a: [{ b: 2 }] },
  ],
  [
    '$elemMatch with $exists and $type',
    { _id: 1, a: [{ b: 'x' }, { b: 2 }] },
    { a: { $elemMatch: { b: { $exists: true, $type: 'number' } } } },
    { _id: 1, a: [{ b: 2 }] },
  ],
  [
    '$elemMatch with $in, $nin and $mod',
    { _id: 1, a: [{ b: 4 }, { b: 7 }, { b: 9 }] },
    { a: { $elemMatch: { b: { $in: [7, 9], $nin: [7], $mod: [3, 0] } } } },
    { _id: 1, a: [{ b: 9 }] },
  ],
  [
    '$elemMatch with $size and $all',
    { _id: 1, a: [{ t: ['x'] }, { t: ['x', 'y'] }] },
    { a: { $elemMatch: { t: { $size: 2, $all: ['x'] } } } },
    { _id: 1, a: [{ t: ['x', 'y'] }] },
  ],
  [
    '$elemMatch compares strings by code point',
    { _id: 1, a: ['\uffff', '\u{1F600}'] },
    { a: { $elemMatch: { $gt: '\uffff' } } },
    { _id: 1, a: ['\u{1F600}'] },
  ],
  [
    '$elemMatch compares within a type',
    { _id: 1, a: ['10', true, 10] },
    { a: { $elemMatch: { $gt: 5 } } },
    { _id: 1, a: [10] },
  ],
);

// The manual's "$ (projection)" collection.
const STUDENTS: JsonObject[] = [
  { _id: 1, semester: 1, grades: [70, 87, 90] },
  { _id: 2, semester: 1, grades: [90, 88, 92] },
  { _id: 3, semester: 1, grades: [85, 100, 90] },
];
const GRADES_7: JsonObject = {
  _id: 7,
  semester: 3,
  grades: [
    { grade: 80, mean: 75, std: 8 },
    { grade: 85, mean: 90, std: 5 },
    { grade: 90, mean: 85, std: 3 },
  ],
};
const GRADES_8: JsonObject = {
  _id: 8,
  semester: 3,
  grades: [
    { grade: 92, mean: 88, std: 8 },
    { grade: 78, mean: 90, std: 5 },
    { grade: 88, mean: 85, std: 3 },
  ],
};

type PositionalCase = [
  name: string,
  doc: JsonObject,
  query: JsonObject,
  fields: unknown,
  expected: JsonObject,
];

const positionalCases: PositionalCase[] = [
  ...STUDENTS.map(
    (doc, i): PositionalCase => [
      `the first grade >= 85 (student ${i + 1})`,
      doc,
      { semester: 1, grades: { $gte: 85 } },
      { 'grades.$': 1 },
      { _id: doc._id as number, grades: [[87], [90], [85]][i] as Json[] },
    ],
  ),
  [
    "a condition on the elements' field",
    GRADES_7,
    { 'grades.mean': { $gt: 70 } },
    { 'grades.$': 1 },
    { _id: 7, grades: [{ grade: 80, mean: 75, std: 8 }] },
  ],
  [
    'an $elemMatch query',
    GRADES_8,
    { grades: { $elemMatch: { mean: { $gt: 70 }, grade: { $gt: 90 } } } },
    { 'grades.$': 1 },
    { _id: 8, grades: [{ grade: 92, mean: 88, std: 8 }] },
  ],
  [
    'an $elemMatch query, later element',
    GRADES_7,
    { grades: { $elemMatch: { mean: { $gt: 80 }, grade: { $gt: 85 } } } },
    { 'grades.$': 1 },
    { _id: 7, grades: [{ grade: 90, mean: 85, std: 3 }] },
  ],
  [
    'with other inclusions, in document order',
    GRADES_7,
    { 'grades.grade': 85 },
    { semester: 1, 'grades.$': true },
    { _id: 7, semester: 3, grades: [{ grade: 85, mean: 90, std: 5 }] },
  ],
  [
    'with _id excluded',
    STUDENTS[0] as JsonObject,
    { grades: 90 },
    { _id: 0, 'grades.$': 1 },
    { grades: [90] },
  ],
  [
    'inside $and',
    STUDENTS[0] as JsonObject,
    { $and: [{ semester: 1 }, { grades: { $lt: 80 } }] },
    { 'grades.$': 1 },
    { _id: 1, grades: [70] },
  ],
  [
    '$in',
    STUDENTS[1] as JsonObject,
    { grades: { $in: [92, 88] } },
    { 'grades.$': 1 },
    { _id: 2, grades: [88] },
  ],
  [
    'several conditions on the array: the last one recorded wins (MongoDB: undefined)',
    STUDENTS[0] as JsonObject,
    { grades: { $gte: 80, $lt: 90 } },
    { 'grades.$': 1 },
    { _id: 1, grades: [70] },
  ],
  [
    'a dotted positional path',
    {
      _id: 1,
      a: {
        b: [
          { c: 1, d: 1 },
          { c: 2, d: 2 },
        ],
      },
    },
    { 'a.b.c': 2 },
    { 'a.b.$': 1 },
    { _id: 1, a: { b: [{ c: 2, d: 2 }] } },
  ],
  [
    'the offset counts scalar elements',
    { _id: 1, a: [5, { b: 1 }] },
    { 'a.b': 1 },
    { 'a.$': 1 },
    { _id: 1, a: [{ b: 1 }] },
  ],
  [
    'with $slice on another field',
    { _id: 1, a: [1, 2], b: [1, 2, 3] },
    { a: 2 },
    { 'a.$': 1, b: { $slice: 1 } },
    { _id: 1, a: [2], b: [1] },
  ],
];

describe('applyProjection', () => {
  it.each(positionalCases)('positional $: %s', (_name, doc, query, fields, expected) => {
    const input = deepFreeze(structuredClone(doc));
    const result = project(input, fields, query);
    expect(result).toStrictEqual(expected);
    expect(JSON.stringify(result)).toBe(JSON.stringify(expected));
    expect(input).toStrictEqual(doc);
  });

  it.each([
    ['a query that matches the whole array', { grades: [70, 87, 90] }],
    ['$size', { grades: { $size: 3 } }],
    ['$ne', { grades: { $ne: 1 } }],
    ['$or', { $or: [{ grades: 70 }, { semester: 1 }] }],
    ['$nor', { $nor: [{ grades: 1 }] }],
  ])('positional $ without a recorded element (%s) is a QueryError', (_name, query) => {
    const projection = parseProjection({ 'grades.$': 1 }, parseFilter(query));
    expect(() => applyProjection(STUDENTS[0] as JsonObject, projection)).toThrow(
      /positional projection 'grades\.\$' found no array element the query matched/,
    );
  });

  it('evaluates $regex in an $elemMatch projection and a positional query', () => {
    const elemMatch = parseProjection({ a: { $elemMatch: { b: { $regex: '^x', $options: 'i' } } } });
    expect(applyProjection({ a: [{ b: 'ax' }, { b: 1 }, { b: 'Xa' }, { b: 'xb' }] }, elemMatch)).toEqual({
      a: [{ b: 'Xa' }],
    });
    expect(applyProjection({ a: [{ b: 'ax' }] }, elemMatch)).toEqual({});
    const positional = parseProjection({ 'a.$': 1 }, parseFilter({ a: { $regex: 'c\\z' } }));
    expect(applyProjection({ a: ['c\n', 'abc', 'c'] }, positional)).toEqual({ a: ['abc'] });
  });
});

describe('applyProjection', () => {
  it.each(cases)('%s', (_name, doc, fields, expected) => {
    const input = deepFreeze(structuredClone(doc));
    const result = project(input, fields);
    expect(result).toStrictEqual(expected);
    // toStrictEqual ignores key order; the serialization does not.
    expect(JSON.stringify(result)).toBe(JSON.stringify(expected));
    expect(input).toStrictEqual(doc);
  });

  it('puts _id first', () => {
    const result = project({ z: 1, a: { _id: 3 }, _id: 'id', b: 2 }, { b: 0 });
    expect(Object.keys(result)[0]).toBe('_id');
    expect(Object.keys(result)).toEqual(['_id', 'z', 'a']);
    // Only the top-level _id moves.
    expect(Object.keys(project({ a: { x: 1, _id: 2 } }, {}).a as JsonObject)).toEqual(['x', '_id']);
  });

  it('returns a document that shares nothing with the input', () => {
    const doc: JsonObject = { _id: 1, a: { b: [1, { c: 2 }] }, d: [{ e: 1 }] };
    for (const fields of [{}, { a: 1, d: 1 }, { x: 0 }, { 'd.e': { $slice: 1 } }]) {
      const result = project(doc, fields);
      expect(result).not.toBe(doc);
      ((result.a as JsonObject).b as Json[]).push(99);
      (((result.a as JsonObject).b as Json[])[1] as JsonObject).c = 'changed';
      (result.d as Json[]).length = 0;
    }
    expect(doc).toStrictEqual({ _id: 1, a: { b: [1, { c: 2 }] }, d: [{ e: 1 }] });
  });

  it('keeps a __proto__ key as data', () => {
    const doc = JSON.parse('{"_id":1,"__proto__":{"x":1},"a":{"__proto__":[1,2]}}') as JsonObject;
    for (const fields of [{}, { a: 1, ['__proto__']: 1 }, { 'a.__proto__': { $slice: 1 } }]) {
      const result = project(doc, JSON.parse(JSON.stringify(fields)));
      expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
      expect(Object.hasOwn(result, '__proto__')).toBe(true);
    }
    const sliced = project(doc, JSON.parse('{"a.__proto__":{"$slice":1}}'));
    expect(JSON.stringify(sliced)).toBe('{"_id":1,"__proto__":{"x":1},"a":{"__proto__":[1]}}');
  });

  it('can apply one parsed projection to many documents', () => {
    const projection = parseProjection({ 'a.b': 1, c: { $slice: 1 } });
    expect(applyProjection({ a: { b: 1 }, c: [1, 2] }, projection)).toStrictEqual({ a: { b: 1 }, c: [1] });
    expect(applyProjection({ _id: 2, a: [{ b: 2 }], c: 'c' }, projection)).toStrictEqual({
      _id: 2,
      a: [{ b: 2 }],
      c: 'c',
    });
  });
});

describe('projectsEverything', () => {
  // Reads skip applyProjection when this holds, so it must hold only where the projection is the identity.
  it.each([
    [undefined, true],
    [{}, true],
    [{ a: 0 }, false],
    [{ _id: 0 }, false],
    [{ _id: 1 }, false],
    [{ a: 1 }, false],
    [{ a: { $slice: 1 } }, false],
  ])('%j: %s', (fields, expected) => {
    const projection = parseProjection(fields);
    expect(projectsEverything(projection)).toBe(expected);
    if (expected) expect(applyProjection(DOC, projection)).toStrictEqual(DOC);
  });
});

const longPath = `${'a.'.repeat(512)}b`;
const manyFields = Object.fromEntries(
  Array.from({ length: MAX_PROJECTION_FIELDS + 1 }, (_, i) => [`f${i}`, 1]),
);
const nestedLong: JsonObject = {};
{
  let node = nestedLong;
  for (let i = 0; i < 600; i++) {
    const next: JsonObject = {};
    node.a = next;
    node = next;
  }
  node.b = 1;
}

type ErrorCase = [name: string, fields: unknown, message: RegExp];

const errors: ErrorCase[] = [
  // The shape of `fields`.
  ['a string', 'a', /must be a JSON object, got the string "a"/],
  ['null', null, /must be a JSON object, got null/],
  ['an array', ['a'], /must be a JSON object, got an array/],
  ['a number', 1, /must be a JSON object, got a number/],

  // Values.
  ['a string value', { a: 'x' }, /Invalid projection value for field a: the string "x"/],
  ['a null value', { 'a.b': null }, /Invalid projection value for field a\.b: null/],
  ['an array value', { a: [1] }, /Invalid projection value for field a: an array/],
  ['a nested string value', { a: { b: '' } }, /Invalid projection value for field a\.b/],
  ['an empty sub-projection', { a: {} }, /empty sub-projection .* at path a/],

  // Mixing inclusion and exclusion.
  ['exclusion after inclusion', { a: 1, b: 0 }, /^Cannot do exclusion on field b in inclusion projection$/],
  ['inclusion after exclusion', { a: 0, b: 1 }, /^Cannot do inclusion on field b in exclusion projection$/],
  [
    'dotted exclusion after inclusion',
    { a: 1, 'c.d': false },
    /Cannot do exclusion on field c\.d in inclusion/,
  ],
  ['mixing inside a sub-projection', { a: { b: 1, c: 0 } }, /Cannot do exclusion on field a\.c in inclusion/],
  ['$slice does not excuse mixing', { s: { $slice: 1 }, a: 0, b: 1 }, /Cannot do inclusion on field b/],
  [
    'a sub-path of _id is not exempt',
    { a: 1, '_id.x': 0 },
    /Cannot do exclusion on field _id\.x in inclusion/,
  ],
  ['a nested _id is not exempt', { a: 1, b: { _id: 0 } }, /Cannot do exclusion on field b\._id in inclusion/],

  // Path collisions.
  [
    'inclusion of a prefix, then a sub-path',
    { a: 1, 'a.b': 1 },
    /^Path collision at a\.b remaining portion b$/,
  ],
  ['inclusion of a sub-path, then the prefix', { 'a.b': 1, a: 1 }, /^Path collision at a \(overlaps a\.b\)$/],
  ['exclusion collision', { 'a.b.c': 0, 'a.b': 0 }, /Path collision at a\.b \(overlaps a\.b\.c\)/],
  [
    'deep remaining portion',
    { 'a.b': 0, 'a.b.c.d': 0 },
    /Path collision at a\.b\.c\.d remaining portion c\.d/,
  ],
  ['sub-projection against a dotted path', { a: { b: 1 }, 'a.b': 1 }, /Path collision at a\.b/],
  ['$slice against a sub-path', { a: { $slice: 1 }, 'a.b': 1 }, /Path collision at a\.b remaining portion b/],
  ['_id against a sub-path of _id', { _id: 0, '_id.x': 1 }, /Path collision at _id\.x/],

  // Unsupported operators and $-paths.
  ['$meta without $text in the query', { score: { $meta: 'textScore' } }, /text score metadata/],
  [
    '$meta other than textScore',
    { score: { $meta: 'indexKey' } },
    /\$meta \(at path score\) supports only "textScore"/,
  ],
  ['$meta on a dotted path', { 'a.score': { $meta: 'textScore' } }, /top-level field/],
  ['an unknown operator', { a: { $foo: 1 } }, /\$foo .*not supported/],
  ['a top-level $ key', { $a: 1 }, /'\$a' has a segment starting with '\$' \('\$a'\).*not supported/],
  ['a $ segment', { 'a.$b': 0 }, /'a\.\$b' .*\('\$b'\)/],
  ['a $ key in a sub-projection', { a: { b: 1, $c: 1 } }, /projection of a must be either one operator or/],
  ['an operator with extra fields', { a: { $slice: 1, b: 1 } }, /projection of a .*\$slice, b/],

  // Path syntax and limits.
  ['an empty key', { '': 1 }, /empty field name/],
  ['an empty key in a sub-projection', { a: { '': 1 } }, /empty field name .*'a\.'/],
  ['an empty middle segment', { 'a..b': 1 }, /'a\.\.b' has an empty segment/],
  ['a leading dot', { '.a': 1 }, /'\.a' has an empty segment/],
  ['a trailing dot', { 'a.': 1 }, /'a\.' has an empty segment/],
  ['too many fields', manyFields, new RegExp(`at most ${MAX_PROJECTION_FIELDS} fields`)],
  ['a path over 1024 characters', { [longPath]: 1 }, /longer than 1024 characters/],
  ['sub-projections nested past 1024 characters', nestedLong, /longer than 1024 characters/],

  // $slice arguments.
  [
    '$slice with a string',
    { a: { $slice: 'x' } },
    /\$slice only supports numbers and \[skip, limit\] arrays.*path a/,
  ],
  ['$slice with null', { a: { $slice: null } }, /\$slice only supports numbers/],
  ['$slice with a boolean', { a: { $slice: true } }, /\$slice only supports numbers/],
  ['$slice with one element', { a: { $slice: [1] } }, /form \[skip, limit\] \(at path a\)/],
  ['$slice with three elements', { a: { $slice: [1, 2, 3] } }, /form \[skip, limit\]/],
  ['$slice with a string skip', { a: { $slice: ['1', 2] } }, /skip argument to be a number/],
  ['$slice with a string limit', { a: { $slice: [1, '2'] } }, /limit argument to be a number/],
  [
    '$slice with a zero limit',
    { a: { $slice: [1, 0] } },
    /\$slice limit must be positive, got 0 \(at path a\)/,
  ],
  [
    '$slice with a negative limit',
    { 'x.y': { $slice: [0, -1] } },
    /limit must be positive, got -1 \(at path x\.y\)/,
  ],
  ['$slice with a limit truncating to 0', { a: { $slice: [0, 0.5] } }, /limit must be positive, got 0/],
  [
    '$slice on a positional path (MongoDB 4.4+)',
    { 'instock.$': { $slice: 1 } },
    /positional projection instock\.\$: an object.*cannot be combined/,
  ],

  // $elemMatch (manual: "$elemMatch (projection)").
  [
    '$elemMatch with a number',
    { a: { $elemMatch: 1 } },
    /\$elemMatch \(projection\) needs an object.*a number \(at path a\)/,
  ],
  ['$elemMatch with an array', { a: { $elemMatch: [1] } }, /needs an object.*an array/],
  [
    '$elemMatch on a dotted path',
    { 'a.b': { $elemMatch: { c: 1 } } },
    /Cannot use \$elemMatch projection on a nested field \(at path a\.b\)/,
  ],
  ['$elemMatch in a sub-projection', { a: { b: { $elemMatch: { c: 1 } } } }, /nested field \(at path a\.b\)/],
  [
    '$elemMatch after an exclusion',
    { b: 0, a: { $elemMatch: { c: 1 } } },
    /Cannot do inclusion on field a in exclusion projection/,
  ],
  [
    'an exclusion after $elemMatch',
    { a: { $elemMatch: { c: 1 } }, b: 0 },
    /Cannot do exclusion on field b in inclusion projection/,
  ],
  [
    '$elemMatch with an unknown operator',
    { a: { $elemMatch: { c: { $foo: 1 } } } },
    /Unknown query operator '\$foo' on 'c'/,
  ],
  ['$elemMatch and $slice on one field', { a: { $elemMatch: { c: 1 }, $slice: 1 } }, /either one operator/],
  ['$elemMatch twice on one field', { a: { $elemMatch: { c: 1 } }, 'a.b': 1 }, /Path collision at a\.b/],
];

/** Refused because of the query the positional projection is read with. */
const positionalErrors: [name: string, fields: unknown, query: JsonObject, message: RegExp][] = [
  ['$slice and a positional on one path', { 'a.$': 1, a: { $slice: 1 } }, { a: 1 }, /Path collision at a/],
  ['no query', { 'grades.$': 1 }, {}, /Positional projection 'grades\.\$' does not match the query document/],
  [
    'a query on another field',
    { 'grades.$': 1 },
    { semester: 1 },
    /does not match the query document: .*'grades'/,
  ],
  [
    'a query on a field sharing a prefix',
    { 'grades.$': 1 },
    { gradesX: 1 },
    /does not match the query document/,
  ],
  [
    'exclusion with the positional operator',
    { 'grades.$': 0 },
    { grades: 1 },
    /Cannot exclude array elements with the positional operator \(at grades\.\$\)/,
  ],
  [
    'two positional projections',
    { 'a.$': 1, 'b.$': 1 },
    { a: 1, b: 1 },
    /more than one positional projection per query \(a\.\$ and b\.\$\)/,
  ],
  [
    '$ twice in one path',
    { 'a.$.b.$': 1 },
    { a: 1 },
    /'a\.\$\.b\.\$' contains the positional operator more than once/,
  ],
  [
    '$ in the middle of a path',
    { 'a.$.b': 1 },
    { a: 1 },
    /'a\.\$\.b': the positional operator may only be used at the end/,
  ],
  ['a lone $', { $: 1 }, {}, /needs an array field before/],
  [
    'positional and $elemMatch',
    { 'a.$': 1, b: { $elemMatch: { c: 1 } } },
    { a: 1 },
    /Cannot specify positional operator and \$elemMatch/,
  ],
  [
    '$elemMatch and positional',
    { b: { $elemMatch: { c: 1 } }, 'a.$': 1 },
    { a: 1 },
    /Cannot specify positional operator and \$elemMatch/,
  ],
  [
    'positional in an exclusion',
    { b: 0, 'a.$': 1 },
    { a: 1 },
    /Cannot do inclusion on field a\.\$ in exclusion projection/,
  ],
  [
    'an exclusion after a positional',
    { 'a.$': 1, b: 0 },
    { a: 1 },
    /Cannot do exclusion on field b in inclusion projection/,
  ],
  [
    'positional with an operator',
    { 'a.$': { $elemMatch: { b: 1 } } },
    { a: 1 },
    /positional projection a\.\$: an object/,
  ],
];

describe('parseProjection errors', () => {
  it.each(errors)('rejects %s', (_name, fields, message) => {
    expect(parseError(fields).message).toMatch(message);
  });

  it.each(positionalErrors)('rejects a positional projection: %s', (_name, fields, query, message) => {
    expect(parseError(fields, query).message).toMatch(message);
  });

  it('accepts exactly the maximum number of fields', () => {
    const fields = Object.fromEntries(Array.from({ length: MAX_PROJECTION_FIELDS }, (_, i) => [`f${i}`, 0]));
    expect(parseProjection(fields).mode).toBe('exclusion');
  });
});
