import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { applyUpdate, jsonEqual, parseUpdate, upsertSeed } from '../../../mongo/update/update.js';
import type { Json, JsonObject } from '../../../mongo/value/json.js';

const NOW = new Date('2024-05-06T07:08:09.123Z');

/** Frozen inputs make any mutation by the module throw (ESM is strict mode). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function run(doc: JsonObject, update: unknown, isInsert = false): JsonObject {
  return applyUpdate(deepFreeze(doc), parseUpdate(deepFreeze(update)), { now: NOW, isInsert });
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

interface ApplyCase {
  name: string;
  doc: JsonObject;
  update: JsonObject;
  expected: JsonObject;
  insert?: boolean;
}

const applyCases: ApplyCase[] = [
  // $set
  {
    name: '$set adds a top-level field',
    doc: { _id: 1 },
    update: { $set: { a: 1 } },
    expected: { _id: 1, a: 1 },
  },
  { name: '$set overwrites a field', doc: { a: 1 }, update: { $set: { a: 'x' } }, expected: { a: 'x' } },
  {
    name: '$set creates missing intermediate objects',
    doc: {},
    update: { $set: { 'a.b.c': 1 } },
    expected: { a: { b: { c: 1 } } },
  },
  {
    name: '$set into a subdocument keeps its siblings',
    doc: { a: { x: 1 } },
    update: { $set: { 'a.y': 2 } },
    expected: { a: { x: 1, y: 2 } },
  },
  {
    name: '$set an array index in range',
    doc: { a: [1, 2] },
    update: { $set: { 'a.1': 'x' } },
    expected: { a: [1, 'x'] },
  },
  {
    name: '$set an array index past the end pads with null',
    doc: { a: [1] },
    update: { $set: { 'a.2': 'x' } },
    expected: { a: [1, null, 'x'] },
  },
  {
    name: '$set a numeric segment on an object is a field name',
    doc: { a: { b: 1 } },
    update: { $set: { 'a.0': 1 } },
    expected: { a: { b: 1, '0': 1 } },
  },
  {
    name: '$set a numeric segment on a missing field creates an object',
    doc: {},
    update: { $set: { 'a.0': 1 } },
    expected: { a: { '0': 1 } },
  },
  {
    name: '$set into a document inside an array',
    doc: { a: [{ b: 1 }, { b: 2 }] },
    update: { $set: { 'a.1.b': 3 } },
    expected: { a: [{ b: 1 }, { b: 3 }] },
  },
  {
    name: '$set past the end of an array creates a padded document',
    doc: { a: [] },
    update: { $set: { 'a.2.b': 1 } },
    expected: { a: [null, null, { b: 1 }] },
  },
  {
    name: '$set replaces a whole subdocument',
    doc: { a: { x: 1 } },
    update: { $set: { a: { y: [1, { z: 2 }] } } },
    expected: { a: { y: [1, { z: 2 }] } },
  },
  { name: '$set null', doc: { a: 1 }, update: { $set: { a: null } }, expected: { a: null } },
  { name: '$set over a null value', doc: { a: null }, update: { $set: { a: 1 } }, expected: { a: 1 } },
  {
    name: 'an empty $set changes nothing',
    doc: { _id: 1, a: 1 },
    update: { $set: {} },
    expected: { _id: 1, a: 1 },
  },
  {
    name: 'several operators together',
    doc: { _id: 'x', n: 1, tags: ['a'], old: true },
    update: { $set: { s: 'v' }, $inc: { n: 2 }, $push: { tags: 'b' }, $unset: { old: '' } },
    expected: { _id: 'x', n: 3, tags: ['a', 'b'], s: 'v' },
  },
  {
    name: 'sibling paths under one parent do not conflict',
    doc: {},
    update: { $set: { 'a.b': 1 }, $inc: { 'a.c': 2 } },
    expected: { a: { b: 1, c: 2 } },
  },
  {
    name: 'paths sharing a string prefix but not a segment do not conflict',
    doc: {},
    update: { $set: { a: 1, ab: 2 } },
    expected: { a: 1, ab: 2 },
  },

  // $unset
  { name: '$unset removes a field', doc: { a: 1, b: 2 }, update: { $unset: { a: '' } }, expected: { b: 2 } },
  {
    name: '$unset a nested field',
    doc: { a: { b: 1, c: 2 } },
    update: { $unset: { 'a.b': 1 } },
    expected: { a: { c: 2 } },
  },
  {
    name: '$unset a missing field is a no-op',
    doc: { a: 1 },
    update: { $unset: { b: '' } },
    expected: { a: 1 },
  },
  {
    name: '$unset a missing nested path creates nothing',
    doc: {},
    update: { $unset: { 'a.b': '' } },
    expected: {},
  },
  {
    name: '$unset an array element sets it to null',
    doc: { a: [1, 2, 3] },
    update: { $unset: { 'a.1': '' } },
    expected: { a: [1, null, 3] },
  },
  {
    name: '$unset an index past the end is a no-op',
    doc: { a: [1] },
    update: { $unset: { 'a.5': '' } },
    expected: { a: [1] },
  },
  {
    name: '$unset through a scalar is a no-op',
    doc: { a: 5 },
    update: { $unset: { 'a.b': '' } },
    expected: { a: 5 },
  },
  {
    name: '$unset a field name on an array is a no-op',
    doc: { a: [1] },
    update: { $unset: { 'a.x': '' } },
    expected: { a: [1] },
  },

  // $inc and $mul
  { name: '$inc adds to a number', doc: { a: 1 }, update: { $inc: { a: 2 } }, expected: { a: 3 } },
  { name: '$inc by a negative fraction', doc: { a: 1 }, update: { $inc: { a: -0.5 } }, expected: { a: 0.5 } },
  { name: '$inc a missing field sets it', doc: {}, update: { $inc: { a: 5 } }, expected: { a: 5 } },
  { name: '$inc a missing nested field', doc: {}, update: { $inc: { 'a.b': 1 } }, expected: { a: { b: 1 } } },
  {
    name: '$inc an array element',
    doc: { a: [1, 2] },
    update: { $inc: { 'a.1': 10 } },
    expected: { a: [1, 12] },
  },
  {
    name: '$inc past the end of an array pads it',
    doc: { a: [] },
    update: { $inc: { 'a.1': 1 } },
    expected: { a: [null, 1] },
  },
  { name: '$mul multiplies', doc: { a: 3 }, update: { $mul: { a: 4 } }, expected: { a: 12 } },
  { name: '$mul by a fraction', doc: { a: 3 }, update: { $mul: { a: 0.5 } }, expected: { a: 1.5 } },
  { name: '$mul a missing field sets 0', doc: {}, update: { $mul: { a: 7 } }, expected: { a: 0 } },

  // $min and $max
  { name: '$min replaces a larger value', doc: { a: 5 }, update: { $min: { a: 3 } }, expected: { a: 3 } },
  { name: '$min keeps a smaller value', doc: { a: 5 }, update: { $min: { a: 8 } }, expected: { a: 5 } },
  { name: '$min sets a missing field', doc: {}, update: { $min: { a: 8 } }, expected: { a: 8 } },
  {
    name: '$min: null is below numbers',
    doc: { a: 1 },
    update: { $min: { a: null } },
    expected: { a: null },
  },
  {
    name: '$min: numbers are below strings',
    doc: { a: 'x' },
    update: { $min: { a: 5 } },
    expected: { a: 5 },
  },
  {
    name: '$min compares strings bytewise',
    doc: { a: 'a' },
    update: { $min: { a: 'B' } },
    expected: { a: 'B' },
  },
  {
    name: '$min compares strings by code point, not UTF-16 unit',
    doc: { a: '\uffff' },
    update: { $min: { a: '😀' } },
    expected: { a: '\uffff' },
  },
  { name: '$max replaces a smaller value', doc: { a: 5 }, update: { $max: { a: 9 } }, expected: { a: 9 } },
  { name: '$max keeps a larger value', doc: { a: 5 }, update: { $max: { a: 1 } }, expected: { a: 5 } },
  { name: '$max sets a missing field', doc: {}, update: { $max: { 'a.b': 1 } }, expected: { a: { b: 1 } } },
  {
    name: '$max: objects are above strings',
    doc: { a: 'z' },
    update: { $max: { a: {} } },
    expected: { a: {} },
  },
  {
    name: '$max: arrays are above objects',
    doc: { a: { x: 1 } },
    update: { $max: { a: [] } },
    expected: { a: [] },
  },
  {
    name: '$max: booleans are above arrays',
    doc: { a: [1] },
    update: { $max: { a: false } },
    expected: { a: false },
  },
  {
    name: '$max: true is above false',
    doc: { a: false },
    update: { $max: { a: true } },
    expected: { a: true },
  },
  {
    name: '$max compares arrays element-wise',
    doc: { a: [1, 2] },
    update: { $max: { a: [1, 3] } },
    expected: { a: [1, 3] },
  },
  {
    name: '$max: a longer array with an equal start is greater',
    doc: { a: [1] },
    update: { $max: { a: [1, 0] } },
    expected: { a: [1, 0] },
  },
  {
    name: '$max compares objects field by field',
    doc: { a: { x: 1 } },
    update: { $max: { a: { x: 2 } } },
    expected: { a: { x: 2 } },
  },
  { name: '$max leaves an equal value', doc: { a: 2 }, update: { $max: { a: 2.0 } }, expected: { a: 2 } },

  // $rename
  {
    name: '$rename moves a field',
    doc: { _id: 1, a: 1 },
    update: { $rename: { a: 'b' } },
    expected: { _id: 1, b: 1 },
  },
  {
    name: '$rename overwrites the destination',
    doc: { a: 1, b: 2 },
    update: { $rename: { a: 'b' } },
    expected: { b: 1 },
  },
  {
    name: '$rename of a missing source is a no-op',
    doc: { b: 2 },
    update: { $rename: { a: 'b' } },
    expected: { b: 2 },
  },
  {
    name: '$rename a nested field to the top level',
    doc: { a: { b: 1, c: 2 } },
    update: { $rename: { 'a.b': 'x' } },
    expected: { a: { c: 2 }, x: 1 },
  },
  {
    name: '$rename into a new nested destination',
    doc: { a: 1 },
    update: { $rename: { a: 'b.c.d' } },
    expected: { b: { c: { d: 1 } } },
  },
  {
    name: '$rename an array field',
    doc: { a: [1, 2] },
    update: { $rename: { a: 'b' } },
    expected: { b: [1, 2] },
  },
  {
    name: '$rename through a scalar source is a no-op',
    doc: { a: 5 },
    update: { $rename: { 'a.b': 'c' } },
    expected: { a: 5 },
  },

  // $currentDate
  {
    name: '$currentDate true writes the ISO date',
    doc: {},
    update: { $currentDate: { at: true } },
    expected: { at: '2024-05-06T07:08:09.123Z' },
  },
  {
    name: '$currentDate {$type: date} writes the ISO date',
    doc: {},
    update: { $currentDate: { 'meta.at': { $type: 'date' } } },
    expected: { meta: { at: '2024-05-06T07:08:09.123Z' } },
  },
  {
    name: '$currentDate {$type: timestamp} writes epoch milliseconds',
    doc: { at: 'old' },
    update: { $currentDate: { at: { $type: 'timestamp' } } },
    expected: { at: 1714979289123 },
  },

  // $setOnInsert
  {
    name: '$setOnInsert is ignored on an update',
    doc: { _id: 1 },
    update: { $setOnInsert: { a: 1 }, $set: { b: 2 } },
    expected: { _id: 1, b: 2 },
  },
  {
    name: '$setOnInsert applies on an insert',
    doc: { _id: 1 },
    update: { $setOnInsert: { a: 1 }, $set: { b: 2 } },
    expected: { _id: 1, a: 1, b: 2 },
    insert: true,
  },
  // MongoDB checks _id after the update: $set may repeat its value (1 and 1.0 are one number here)
  {
    name: '$set _id to its value',
    doc: { _id: 1, a: 1 },
    update: { $set: { _id: 1.0, a: 2 } },
    expected: { _id: 1, a: 2 },
  },
  {
    name: '$set _id to an equal document in another key order',
    doc: { _id: { k: 1, j: 2 } },
    update: { $set: { _id: { j: 2, k: 1 } } },
    expected: { _id: { j: 2, k: 1 } },
  },
  {
    name: '$set a field of _id to its value',
    doc: { _id: { x: 1 } },
    update: { $set: { '_id.x': 1 } },
    expected: { _id: { x: 1 } },
  },
  {
    name: '$set _id on an insert without one',
    doc: { a: 1 },
    update: { $set: { _id: 5 } },
    expected: { _id: 5, a: 1 },
    insert: true,
  },
  {
    name: '$set _id on an upsert to the _id its query fixed',
    doc: { _id: 7 },
    update: { $set: { _id: 7 } },
    expected: { _id: 7 },
    insert: true,
  },
  {
    name: '$setOnInsert may set _id on an insert',
    doc: { a: 1 },
    update: { $setOnInsert: { _id: 'new' } },
    expected: { _id: 'new', a: 1 },
    insert: true,
  },
  {
    name: '$setOnInsert may repeat the _id the query fixed',
    doc: { _id: 7 },
    update: { $setOnInsert: { _id: 7 } },
    expected: { _id: 7 },
    insert: true,
  },

  // $push
  { name: '$push appends', doc: { a: [1] }, update: { $push: { a: 2 } }, expected: { a: [1, 2] } },
  {
    name: '$push to a missing field creates the array',
    doc: {},
    update: { $push: { a: 1 } },
    expected: { a: [1] },
  },
  {
    name: '$push to a missing nested field',
    doc: {},
    update: { $push: { 'a.b': 1 } },
    expected: { a: { b: [1] } },
  },
  {
    name: '$push an object as one element',
    doc: { a: [] },
    update: { $push: { a: { x: 1 } } },
    expected: { a: [{ x: 1 }] },
  },
  {
    name: '$push an array as one element',
    doc: { a: [] },
    update: { $push: { a: [1, 2] } },
    expected: { a: [[1, 2]] },
  },
  {
    name: '$push $each appends each',
    doc: { a: [1] },
    update: { $push: { a: { $each: [2, 3] } } },
    expected: { a: [1, 2, 3] },
  },
  {
    name: '$push an empty $each creates an empty array',
    doc: {},
    update: { $push: { a: { $each: [] } } },
    expected: { a: [] },
  },
  {
    name: '$push $position 0 prepends',
    doc: { a: [1, 2] },
    update: { $push: { a: { $each: [9], $position: 0 } } },
    expected: { a: [9, 1, 2] },
  },
  {
    name: '$push $position in the middle',
    doc: { a: [1, 2, 3] },
    update: { $push: { a: { $each: [8, 9], $position: 1 } } },
    expected: { a: [1, 8, 9, 2, 3] },
  },
  {
    name: '$push $position past the end appends',
    doc: { a: [1] },
    update: { $push: { a: { $each: [9], $position: 10 } } },
    expected: { a: [1, 9] },
  },
  {
    name: '$push a negative $position counts from the end',
    doc: { a: [1, 2, 3] },
    update: { $push: { a: { $each: [9], $position: -1 } } },
    expected: { a: [1, 2, 9, 3] },
  },
  {
    name: '$push a negative $position before the start prepends',
    doc: { a: [1, 2] },
    update: { $push: { a: { $each: [9], $position: -10 } } },
    expected: { a: [9, 1, 2] },
  },
  {
    name: '$push a positive $slice keeps the first n',
    doc: { a: [1, 2] },
    update: { $push: { a: { $each: [3, 4], $slice: 3 } } },
    expected: { a: [1, 2, 3] },
  },
  {
    name: '$push a negative $slice keeps the last n',
    doc: { a: [1, 2] },
    update: { $push: { a: { $each: [3, 4], $slice: -3 } } },
    expected: { a: [2, 3, 4] },
  },
  {
    name: '$push $slice 0 empties',
    doc: { a: [1, 2] },
    update: { $push: { a: { $each: [3], $slice: 0 } } },
    expected: { a: [] },
  },
  {
    name: '$push a $slice longer than the array keeps all',
    doc: { a: [1] },
    update: { $push: { a: { $each: [2], $slice: -10 } } },
    expected: { a: [1, 2] },
  },
  {
    name: '$push $sort 1 sorts numbers',
    doc: { a: [3, 1] },
    update: { $push: { a: { $each: [2], $sort: 1 } } },
    expected: { a: [1, 2, 3] },
  },
  {
    name: '$push $sort 1 sorts mixed types in BSON order',
    doc: { a: [true, [1], { x: 1 }, 'a'] },
    update: { $push: { a: { $each: [1, null], $sort: 1 } } },
    expected: { a: [null, 1, 'a', { x: 1 }, [1], true] },
  },
  {
    name: '$push $sort -1 sorts descending',
    doc: { a: ['b', 'a'] },
    update: { $push: { a: { $each: ['c'], $sort: -1 } } },
    expected: { a: ['c', 'b', 'a'] },
  },
  {
    name: '$push $sort by a field of embedded documents',
    doc: { a: [{ s: 3 }, { s: 1 }] },
    update: { $push: { a: { $each: [{ s: 2 }], $sort: { s: 1 } } } },
    expected: { a: [{ s: 1 }, { s: 2 }, { s: 3 }] },
  },
  {
    name: '$push $sort descending by a field, missing as null',
    doc: { a: [{ s: 1 }, { t: 1 }] },
    update: { $push: { a: { $each: [{ s: 2 }], $sort: { s: -1 } } } },
    expected: { a: [{ s: 2 }, { s: 1 }, { t: 1 }] },
  },
  {
    name: '$push $sort by two fields',
    doc: {
      a: [
        { x: 1, y: 1 },
        { x: 0, y: 5 },
        { x: 1, y: 2 },
      ],
    },
    update: { $push: { a: { $each: [], $sort: { x: -1, y: 1 } } } },
    expected: {
      a: [
        { x: 1, y: 1 },
        { x: 1, y: 2 },
        { x: 0, y: 5 },
      ],
    },
  },
  {
    name: '$push $sort by a dotted field',
    doc: { a: [{ p: { q: 2 } }, { p: { q: 1 } }] },
    update: { $push: { a: { $each: [], $sort: { 'p.q': 1 } } } },
    expected: { a: [{ p: { q: 1 } }, { p: { q: 2 } }] },
  },
  {
    name: '$push $sort by an array field uses its smallest element ascending',
    doc: { a: [{ s: 3 }, { s: [2, 4] }, { s: [] }] },
    update: { $push: { a: { $each: [], $sort: { s: 1 } } } },
    expected: { a: [{ s: [] }, { s: [2, 4] }, { s: 3 }] },
  },
  {
    name: '$push $sort by an array field uses its largest element descending',
    doc: { a: [{ s: 3 }, { s: [2, 4] }] },
    update: { $push: { a: { $each: [], $sort: { s: -1 } } } },
    expected: { a: [{ s: [2, 4] }, { s: 3 }] },
  },
  {
    name: '$push: $position, then $sort, then $slice (top three scores)',
    doc: { scores: [50, 90, 70] },
    update: { $push: { scores: { $each: [80, 60], $position: 0, $sort: -1, $slice: 3 } } },
    expected: { scores: [90, 80, 70] },
  },
  {
    name: '$push $position then $slice without $sort',
    doc: { a: [1, 2, 3] },
    update: { $push: { a: { $each: [0], $position: 0, $slice: 2 } } },
    expected: { a: [0, 1] },
  },

  // $addToSet
  {
    name: '$addToSet adds a missing element',
    doc: { a: [1] },
    update: { $addToSet: { a: 2 } },
    expected: { a: [1, 2] },
  },
  {
    name: '$addToSet skips a present element',
    doc: { a: [1, 2] },
    update: { $addToSet: { a: 2 } },
    expected: { a: [1, 2] },
  },
  {
    name: '$addToSet: 1 and 1.0 are equal',
    doc: { a: [1] },
    update: { $addToSet: { a: 1.0 } },
    expected: { a: [1] },
  },
  {
    name: '$addToSet compares objects ignoring key order',
    doc: { a: [{ x: 1, y: 2 }] },
    update: { $addToSet: { a: { y: 2, x: 1 } } },
    expected: { a: [{ x: 1, y: 2 }] },
  },
  {
    name: '$addToSet to a missing field creates the array',
    doc: {},
    update: { $addToSet: { a: 'x' } },
    expected: { a: ['x'] },
  },
  {
    name: '$addToSet an array as one element',
    doc: { a: [[1, 2]] },
    update: { $addToSet: { a: [1, 3] } },
    expected: {
      a: [
        [1, 2],
        [1, 3],
      ],
    },
  },
  {
    name: '$addToSet $each adds the missing ones, once each',
    doc: { a: [1, 2] },
    update: { $addToSet: { a: { $each: [2, 3, 3, 4] } } },
    expected: { a: [1, 2, 3, 4] },
  },
  {
    name: '$addToSet an empty $each',
    doc: { a: [1] },
    update: { $addToSet: { a: { $each: [] } } },
    expected: { a: [1] },
  },

  // $pull
  {
    name: '$pull a value removes every equal element',
    doc: { a: [1, 2, 1, 3] },
    update: { $pull: { a: 1 } },
    expected: { a: [2, 3] },
  },
  { name: '$pull a string', doc: { a: ['x', 'y'] }, update: { $pull: { a: 'x' } }, expected: { a: ['y'] } },
  {
    name: '$pull an array value removes only equal arrays',
    doc: { a: [[1, 2], [2, 1], 1, 2] },
    update: { $pull: { a: [1, 2] } },
    expected: { a: [[2, 1], 1, 2] },
  },
  {
    name: '$pull $gte',
    doc: { a: [1, 5, 6, 9] },
    update: { $pull: { a: { $gte: 6 } } },
    expected: { a: [1, 5] },
  },
  {
    name: '$pull $gt and $lt together',
    doc: { a: [1, 5, 6, 9] },
    update: { $pull: { a: { $gt: 1, $lt: 9 } } },
    expected: { a: [1, 9] },
  },
  {
    name: '$pull comparisons are type-bracketed',
    doc: { a: [1, 'a', null, true, 10] },
    update: { $pull: { a: { $lt: 5 } } },
    expected: { a: ['a', null, true, 10] },
  },
  {
    name: '$pull $lte on strings',
    doc: { a: ['a', 'b', 'c', 1] },
    update: { $pull: { a: { $lte: 'b' } } },
    expected: { a: ['c', 1] },
  },
  {
    name: '$pull $eq null',
    doc: { a: [null, 0, false] },
    update: { $pull: { a: { $eq: null } } },
    expected: { a: [0, false] },
  },
  { name: '$pull $ne', doc: { a: [1, 2, 1] }, update: { $pull: { a: { $ne: 1 } } }, expected: { a: [1, 1] } },
  {
    name: '$pull $in',
    doc: { a: [1, 2, 3, 'x'] },
    update: { $pull: { a: { $in: [1, 'x'] } } },
    expected: { a: [2, 3] },
  },
  {
    name: '$pull $nin',
    doc: { a: [1, 2, 3] },
    update: { $pull: { a: { $nin: [1, 3] } } },
    expected: { a: [1, 3] },
  },
  {
    name: '$pull an operator condition also tests the elements of array elements',
    doc: { a: [[3, 7], [1, 2], 9] },
    update: { $pull: { a: { $gt: 5 } } },
    expected: { a: [[1, 2]] },
  },
  {
    name: '$pull an object matches documents by their fields',
    doc: { a: [{ item: 'A', n: 1 }, { item: 'B', n: 2 }, 'B'] },
    update: { $pull: { a: { item: 'B' } } },
    expected: { a: [{ item: 'A', n: 1 }, 'B'] },
  },
  {
    name: '$pull an object needs every field to match',
    doc: {
      a: [
        { item: 'B', n: 1 },
        { item: 'B', n: 2 },
      ],
    },
    update: { $pull: { a: { item: 'B', n: 2 } } },
    expected: { a: [{ item: 'B', n: 1 }] },
  },
  {
    name: '$pull an object with an operator on a field',
    doc: { a: [{ score: 9 }, { score: 5 }, { other: 10 }] },
    update: { $pull: { a: { score: { $gt: 8 } } } },
    expected: { a: [{ score: 5 }, { other: 10 }] },
  },
  {
    name: '$pull an object on a dotted field',
    doc: { a: [{ p: { q: 1 } }, { p: { q: 2 } }] },
    update: { $pull: { a: { 'p.q': 2 } } },
    expected: { a: [{ p: { q: 1 } }] },
  },
  {
    name: '$pull an object matches array fields by any element',
    doc: { a: [{ tags: ['x', 'y'] }, { tags: ['z'] }] },
    update: { $pull: { a: { tags: 'x' } } },
    expected: { a: [{ tags: ['z'] }] },
  },
  {
    name: '$pull an object with null matches a missing field',
    doc: { a: [{ x: 1 }, { y: 1 }] },
    update: { $pull: { a: { x: null } } },
    expected: { a: [{ x: 1 }] },
  },
  {
    name: '$pull an empty object removes every document',
    doc: { a: [{ x: 1 }, 1, {}, [2]] },
    update: { $pull: { a: {} } },
    expected: { a: [1, [2]] },
  },
  {
    name: '$pull from a missing field is a no-op',
    doc: { b: 1 },
    update: { $pull: { a: 1 } },
    expected: { b: 1 },
  },
  {
    name: '$pull through a missing parent is a no-op',
    doc: { a: {} },
    update: { $pull: { 'a.b.c': 1 } },
    expected: { a: {} },
  },
  {
    name: '$pull through an index past the end is a no-op',
    doc: { a: [1] },
    update: { $pull: { 'a.3.b': 1 } },
    expected: { a: [1] },
  },

  // $pullAll
  {
    name: '$pullAll removes all listed values',
    doc: { a: [1, 2, 3, 1] },
    update: { $pullAll: { a: [1, 3] } },
    expected: { a: [2] },
  },
  {
    name: '$pullAll compares documents ignoring key order',
    doc: { a: [{ x: 1, y: 2 }, { x: 2 }] },
    update: { $pullAll: { a: [{ y: 2, x: 1 }] } },
    expected: { a: [{ x: 2 }] },
  },
  {
    name: '$pullAll does not match documents partially',
    doc: { a: [{ x: 1, y: 2 }] },
    update: { $pullAll: { a: [{ x: 1 }] } },
    expected: { a: [{ x: 1, y: 2 }] },
  },
  {
    name: '$pullAll from a missing field is a no-op',
    doc: {},
    update: { $pullAll: { a: [1] } },
    expected: {},
  },

  // $pop
  {
    name: '$pop 1 removes the last element',
    doc: { a: [1, 2, 3] },
    update: { $pop: { a: 1 } },
    expected: { a: [1, 2] },
  },
  {
    name: '$pop -1 removes the first element',
    doc: { a: [1, 2, 3] },
    update: { $pop: { a: -1 } },
    expected: { a: [2, 3] },
  },
  {
    name: '$pop an empty array leaves it empty',
    doc: { a: [] },
    update: { $pop: { a: 1 } },
    expected: { a: [] },
  },
  { name: '$pop a missing field is a no-op', doc: {}, update: { $pop: { a: -1 } }, expected: {} },
  {
    name: '$pop through a missing parent is a no-op',
    doc: { a: { x: 1 } },
    update: { $pop: { 'a.b.c': 1 } },
    expected: { a: { x: 1 } },
  },
  {
    name: '$pop a nested array',
    doc: { a: { b: [1, 2] } },
    update: { $pop: { 'a.b': 1 } },
    expected: { a: { b: [1] } },
  },

  // $bit: the manual's examples (13 and 10 is 8, 3 or 5 is 7, 1 xor 5 is 4)
  { name: '$bit and', doc: { a: 13 }, update: { $bit: { a: { and: 10 } } }, expected: { a: 8 } },
  { name: '$bit or', doc: { a: 3 }, update: { $bit: { a: { or: 5 } } }, expected: { a: 7 } },
  { name: '$bit xor', doc: { a: 1 }, update: { $bit: { a: { xor: 5 } } }, expected: { a: 4 } },
  {
    name: '$bit applies its operations in the order written',
    doc: { a: 6, b: 6 },
    update: { $bit: { a: { and: 3, or: 8 }, b: { or: 8, and: 3 } } },
    expected: { a: 10, b: 2 },
  },
  {
    name: '$bit creates a missing field from 0',
    doc: {},
    update: { $bit: { a: { or: 5 }, 'b.c': { and: 5 }, d: { xor: -1 } } },
    expected: { a: 5, b: { c: 0 }, d: -1 },
  },
  {
    name: '$bit in two’s complement',
    doc: { a: -8, b: 5, c: -1 },
    update: { $bit: { a: { or: 3 }, b: { xor: -1 }, c: { and: 2 ** 52 } } },
    expected: { a: -5, b: -6, c: 2 ** 52 },
  },
  {
    name: '$bit on an array element and up to 2^53 - 1',
    doc: { a: [1, 2 ** 52] },
    update: { $bit: { 'a.0': { or: 2 ** 52 }, 'a.1': { or: 2 ** 52 - 1 } } },
    expected: { a: [2 ** 52 + 1, 2 ** 53 - 1] },
  },
  {
    name: '$bit on 5.0 (JSON: an integer)',
    doc: { a: 5.0 },
    update: { $bit: { a: { and: 4 } } },
    expected: { a: 4 },
  },

  // replacement
  {
    name: 'a replacement keeps the original _id',
    doc: { _id: 'x', a: 1, b: 2 },
    update: { c: 3 },
    expected: { _id: 'x', c: 3 },
  },
  {
    name: 'a replacement may repeat the same _id',
    doc: { _id: { k: 1, j: 2 }, a: 1 },
    update: { b: 1, _id: { j: 2, k: 1 } },
    expected: { _id: { k: 1, j: 2 }, b: 1 },
  },
  { name: 'an empty replacement keeps only _id', doc: { _id: 1, a: 1 }, update: {}, expected: { _id: 1 } },
  {
    name: 'a replacement of a document without _id',
    doc: { a: 1 },
    update: { b: [1, { c: 2 }] },
    expected: { b: [1, { c: 2 }] },
  },
  {
    name: 'an upsert replacement takes the _id it brings',
    doc: {},
    update: { a: 1, _id: 9 },
    expected: { _id: 9, a: 1 },
    insert: true,
  },
  {
    name: 'an upsert replacement takes the _id of the seed',
    doc: { _id: 4, q: 1 },
    update: { a: 1 },
    expected: { _id: 4, a: 1 },
    insert: true,
  },
];

describe('applyUpdate', () => {
  it.each(applyCases)('$name', ({ doc, update, expected, insert }) => {
    const before = structuredClone(doc);
    const result = run(doc, update, insert);
    expect(result).toStrictEqual(expected);
    expect(doc).toStrictEqual(before);
    if ('_id' in result) expect(Object.keys(result)[0]).toBe('_id');
  });

  it('moves _id to the first key', () => {
    const result = run({ a: 1, _id: 'x' }, { $set: { b: 2 } });
    expect(Object.keys(result)).toEqual(['_id', 'a', 'b']);
  });

  it('puts the seed _id first after a replacement', () => {
    expect(Object.keys(run({ _id: 1 }, { a: 1, b: 2 }))).toEqual(['_id', 'a', 'b']);
  });

  it('returns values that share nothing with the parsed update', () => {
    const update = parseUpdate({ $set: { a: { b: [1] } }, $push: { c: { x: 1 } } });
    const first = applyUpdate({}, update, { now: NOW, isInsert: false });
    ((first.a as JsonObject).b as Json[]).push(2);
    ((first.c as JsonObject[])[0] as JsonObject).x = 5;
    expect(applyUpdate({}, update, { now: NOW, isInsert: false })).toStrictEqual({
      a: { b: [1] },
      c: [{ x: 1 }],
    });
  });

  it('returns a new document even when nothing changes', () => {
    const doc = { a: { b: 1 } };
    const result = applyUpdate(doc, parseUpdate({ $unset: { x: 1 } }), { now: NOW, isInsert: false });
    expect(result).not.toBe(doc);
    expect(result.a).not.toBe(doc.a);
  });

  it('keeps a field named __proto__ as data and never touches Object.prototype', () => {
    const result = run({}, { $set: { '__proto__.polluted': 1 } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(JSON.stringify(result)).toBe('{"__proto__":{"polluted":1}}');
  });

  it('reads a field named constructor as missing when absent', () => {
    // toStrictEqual would compare the 'constructor' field as the object's class, so compare the JSON.
    expect(JSON.stringify(run({}, { $inc: { 'constructor.x': 1 } }))).toBe('{"constructor":{"x":1}}');
  });

  it('copies an own __proto__ field of the input as data', () => {
    const doc = JSON.parse('{"__proto__": {"a": 1}, "b": 1}') as JsonObject;
    const result = run(doc, { $inc: { b: 1 } });
    expect(JSON.stringify(result)).toBe('{"__proto__":{"a":1},"b":2}');
  });
});

interface ApplyErrorCase {
  name: string;
  doc: JsonObject;
  update: JsonObject;
  error: RegExp;
  insert?: boolean;
}

const applyErrorCases: ApplyErrorCase[] = [
  {
    name: '$set through a scalar',
    doc: { a: 5 },
    update: { $set: { 'a.b': 1 } },
    error: /^Cannot create field 'b' in element \{a: 5\} \(\$set on 'a\.b'\)/,
  },
  {
    name: '$set through a nested string',
    doc: { a: { b: 'x' } },
    update: { $set: { 'a.b.c': 1 } },
    error: /Cannot create field 'c' in element \{b: "x"\}.*\$set on 'a\.b\.c'/,
  },
  {
    name: '$set through null',
    doc: { a: [null] },
    update: { $set: { 'a.0.b': 1 } },
    error: /Cannot create field 'b' in element \{0: null\}.*'a\.0\.b'/,
  },
  {
    name: '$set a field name on an array',
    doc: { a: [1] },
    update: { $set: { 'a.x': 1 } },
    error: /Cannot create field 'x' in element \{a: \[1\]\}.*\$set on 'a\.x'/,
  },
  {
    name: '$set a non-canonical index on an array',
    doc: { a: [1] },
    update: { $set: { 'a.01': 1 } },
    error: /Cannot create field '01' in element \{a: \[1\]\}/,
  },
  {
    name: '$set an index that would pad an array too far',
    doc: { a: [] },
    update: { $set: { 'a.2000000': 1 } },
    error: /\$set on 'a\.2000000' would pad an array with more than 1500000 nulls/,
  },
  {
    name: '$inc a string names the document',
    doc: { _id: 'x', a: 'text' },
    update: { $inc: { a: 1 } },
    error:
      /^Cannot apply \$inc to a value of non-numeric type: field 'a' of document with _id "x" is a string\.$/,
  },
  {
    name: '$inc null',
    doc: { a: null },
    update: { $inc: { a: 1 } },
    error: /Cannot apply \$inc to a value of non-numeric type: field 'a' is null/,
  },
  {
    name: '$inc an object',
    doc: { a: { b: 1 } },
    update: { $inc: { a: 1 } },
    error: /Cannot apply \$inc .* field 'a' is an object/,
  },
  {
    name: '$inc a field name on an array',
    doc: { a: [] },
    update: { $inc: { 'a.b': 1 } },
    error: /Cannot create field 'b' in element \{a: \[\]\} \(\$inc on 'a\.b'\)/,
  },
  {
    name: '$mul a boolean',
    doc: { a: true },
    update: { $mul: { a: 2 } },
    error: /Cannot apply \$mul to a value of non-numeric type: field 'a' is a boolean/,
  },
  {
    name: '$push to a string',
    doc: { _id: 1, a: 'x' },
    update: { $push: { a: 1 } },
    error: /Cannot apply \$push to a non-array value: field 'a' of document with _id 1 is a string/,
  },
  {
    name: '$push to an object',
    doc: { a: { b: 1 } },
    update: { $push: { a: { $each: [1] } } },
    error: /Cannot apply \$push to a non-array value: field 'a' is an object/,
  },
  {
    name: '$addToSet to a number',
    doc: { a: 1 },
    update: { $addToSet: { a: 1 } },
    error: /Cannot apply \$addToSet to a non-array value: field 'a' is a number/,
  },
  {
    name: '$pull from a string',
    doc: { a: 'x' },
    update: { $pull: { a: 'x' } },
    error: /Cannot apply \$pull to a non-array value: field 'a'/,
  },
  {
    name: '$pullAll from an object',
    doc: { a: { b: 1 } },
    update: { $pullAll: { 'a.b': [1] } },
    error: /Cannot apply \$pullAll to a non-array value: field 'a\.b' is a number/,
  },
  // MongoDB's PathNotViable: the removing operators do nothing on a missing path, but a scalar
  // (or a field name on an array) in the way is an error; $unset stays a no-op there.
  {
    name: '$pop through a scalar',
    doc: { a: { b: 1 } },
    update: { $pop: { 'a.b.c': 1 } },
    error: /^Cannot use the part \(c\) of \(a\.b\.c\) to traverse the element \{b: 1\} \(\$pop/,
  },
  {
    name: '$pull through a scalar',
    doc: { a: 1 },
    update: { $pull: { 'a.b': 1 } },
    error: /^Cannot use the part \(b\) of \(a\.b\) to traverse the element \{a: 1\} \(\$pull/,
  },
  {
    name: '$pullAll through null',
    doc: { a: null },
    update: { $pullAll: { 'a.b': [1] } },
    error: /^Cannot use the part \(b\) of \(a\.b\) to traverse the element \{a: null\} \(\$pullAll/,
  },
  {
    name: '$pop a field name on an array',
    doc: { a: [{ b: [1] }] },
    update: { $pop: { 'a.b': 1 } },
    error: /^Cannot use the part \(b\) of \(a\.b\) to traverse the element \{a: \[\{"b":\[1\]\}\]\}/,
  },
  {
    name: '$pull through an array element that is a scalar',
    doc: { a: [1] },
    update: { $pull: { 'a.0.b': 1 } },
    error: /^Cannot use the part \(b\) of \(a\.0\.b\) to traverse the element \{0: 1\}/,
  },
  {
    name: '$pop a number',
    doc: { a: 5 },
    update: { $pop: { a: 1 } },
    error: /Cannot apply \$pop to a non-array value: field 'a' is a number/,
  },
  {
    name: '$bit on a string',
    doc: { _id: 1, a: '5' },
    update: { $bit: { a: { and: 1 } } },
    error:
      /^Cannot apply \$bit to a value of non-integral type: field 'a' of document with _id 1 is a string/,
  },
  {
    name: '$bit on a fraction',
    doc: { a: 1.5 },
    update: { $bit: { a: { or: 1 } } },
    error: /Cannot apply \$bit to a value of non-integral type: field 'a' is the number 1\.5/,
  },
  {
    name: '$bit on null',
    doc: { a: null },
    update: { $bit: { a: { or: 1 } } },
    error: /Cannot apply \$bit to a value of non-integral type: field 'a' is null/,
  },
  {
    name: '$bit on a number beyond 64-bit integers',
    doc: { a: 2 ** 63 },
    update: { $bit: { a: { and: 1 } } },
    error: /Cannot apply \$bit .* field 'a' is the number 9223372036854776000, not a 64-bit integer/,
  },
  {
    name: '$bit whose result a double cannot hold',
    doc: { a: 2 ** 60 },
    update: { $bit: { a: { or: 1 } } },
    error:
      /\$bit on 'a' would give 1152921504606846977, an integer a JSON number \(a double\) cannot hold exactly/,
  },
  {
    name: '$bit through a scalar',
    doc: { a: 5 },
    update: { $bit: { 'a.b': { or: 1 } } },
    error: /^Cannot create field 'b' in element \{a: 5\} \(\$bit on 'a\.b'\)/,
  },
  {
    name: '$rename a source inside an array of documents',
    doc: { a: [{ b: 1 }] },
    update: { $rename: { 'a.b': 'c' } },
    error: /The source field for \$rename cannot be an array element: 'a\.b' has an array field called 'a'/,
  },
  {
    name: '$rename an array element',
    doc: { a: [1, 2] },
    update: { $rename: { 'a.0': 'c' } },
    error: /The source field for \$rename cannot be an array element: 'a\.0'/,
  },
  {
    name: '$rename to a destination inside an array',
    doc: { a: 1, b: [{}] },
    update: { $rename: { a: 'b.0.c' } },
    error: /The destination field for \$rename cannot be an array element: 'b\.0\.c'/,
  },
  {
    name: '$rename to a destination through a scalar',
    doc: { a: 1, b: 5 },
    update: { $rename: { a: 'b.c' } },
    error: /Cannot create field 'c' in element \{b: 5\} \(\$rename on 'b\.c'\)/,
  },
  {
    name: 'a replacement with a different _id',
    doc: { _id: 1, a: 1 },
    update: { _id: 2, a: 1 },
    error: /The replacement document would modify the immutable field '_id'/,
  },
  {
    name: '$set _id to another value',
    doc: { _id: 1 },
    update: { $set: { _id: 2 } },
    error:
      /^Performing an update on the path '_id' would modify the immutable field '_id' \(\$set: from 1 to 2\)/,
  },
  {
    name: '$set inside _id to another value',
    doc: { _id: { x: 1 } },
    update: { $set: { '_id.x': 2 } },
    error:
      /on the path '_id\.x' would modify the immutable field '_id' \(\$set: from \{"x":1\} to \{"x":2\}\)/,
  },
  {
    name: '$set inside _id adding a field',
    doc: { _id: { x: 1 } },
    update: { $set: { '_id.y': 1 } },
    error: /on the path '_id\.y' would modify the immutable field '_id'/,
  },
  {
    name: '$set _id on an upsert whose query fixed another _id',
    doc: { _id: 1 },
    update: { $set: { _id: 2 } },
    error: /on the path '_id' would modify the immutable field '_id'/,
    insert: true,
  },
  {
    name: '$setOnInsert of an _id other than the one the query fixed',
    doc: { _id: 1 },
    update: { $setOnInsert: { _id: 2 } },
    error: /the \(immutable\) field '_id' was found to have been altered to _id: 2/,
    insert: true,
  },
  {
    name: '$setOnInsert of an array _id',
    doc: {},
    update: { $setOnInsert: { _id: [1] } },
    error: /The '_id' value cannot be of type array/,
    insert: true,
  },
];

describe('applyUpdate errors', () => {
  it.each(applyErrorCases)('$name', ({ doc, update, error, insert }) => {
    const parsed = parseUpdate(update);
    expect(
      queryError(() => applyUpdate(deepFreeze(doc), parsed, { now: NOW, isInsert: insert ?? false })).message,
    ).toMatch(error);
  });
});

interface ParseErrorCase {
  name: string;
  update: unknown;
  error: RegExp;
}

const deep: JsonObject = {};
{
  let cur = deep;
  for (let i = 0; i < 120; i++) cur = cur.x = {};
}

const parseErrorCases: ParseErrorCase[] = [
  { name: 'a number', update: 5, error: /The update must be a JSON object, not a number/ },
  { name: 'null', update: null, error: /The update must be a JSON object, not null/ },
  { name: 'a string', update: 'x', error: /not a string/ },
  { name: 'a pipeline', update: [{ $set: { a: 1 } }], error: /Pipeline-style updates .* are not supported/ },
  {
    name: 'a field after an operator',
    update: { $set: { a: 1 }, b: 2 },
    error: /mixes update operators and plain fields: 'b' is a plain field among update operators/,
  },
  {
    name: 'an operator after a field',
    update: { a: 1, $set: { b: 2 } },
    error: /mixes update operators and plain fields: '\$set' is an update operator among plain fields/,
  },
  {
    name: 'a misspelled operator',
    update: { $sett: { a: 1 } },
    error: /^Unknown update operator '\$sett'\. Supported: \$set, /,
  },
  {
    name: '$bit with a number',
    update: { $bit: { a: 5 } },
    error:
      /The \$bit modifier is not compatible with a number \(on 'a'\)\. You must pass in an embedded document/,
  },
  {
    name: '$bit with no operation',
    update: { $bit: { a: {} } },
    error: /You must pass in at least one bitwise operation \(on 'a'\)/,
  },
  {
    name: '$bit with an unknown operation',
    update: { $bit: { a: { not: 1 } } },
    error: /The \$bit modifier only supports 'and', 'or', and 'xor', not 'not'/,
  },
  {
    name: '$bit with a fraction',
    update: { $bit: { a: { and: 1.5 } } },
    error: /The \$bit modifier field must be an integer; 1\.5 is not supported here/,
  },
  {
    name: '$bit with a string',
    update: { $bit: { a: { or: '1' } } },
    error: /The \$bit modifier field must be an integer; "1" is not supported here/,
  },
  {
    name: '$bit beyond 64-bit integers',
    update: { $bit: { a: { xor: 2 ** 63 } } },
    error: /The \$bit operand \{xor: 9223372036854776000\} on 'a' is not a 64-bit integer/,
  },
  {
    name: '$bit on _id',
    update: { $bit: { _id: { and: 1 } } },
    error: /would modify the immutable field '_id' \(\$bit\)/,
  },
  {
    name: '$bit conflicting with $inc',
    update: { $inc: { a: 1 }, $bit: { 'a.b': { and: 1 } } },
    error: /Updating the path 'a\.b' would create a conflict at 'a'/,
  },
  { name: '$where', update: { $where: 'x' }, error: /Unknown update operator '\$where'/ },
  {
    name: 'an operator with a number',
    update: { $set: 5 },
    error: /The value of \$set must be an object .*not a number/,
  },
  {
    name: 'an operator with an array',
    update: { $unset: ['a'] },
    error: /The value of \$unset must be an object .*not an array/,
  },
  { name: 'an operator with null', update: { $inc: null }, error: /The value of \$inc must be an object/ },

  // replacement documents
  {
    name: 'a replacement with a nested $ field',
    update: { a: { $b: 1 } },
    error: /The dollar \(\$\) prefixed field '\$b' in 'a\.\$b' is not allowed in a replacement document/,
  },
  {
    name: 'a replacement with a $ field in an array',
    update: { a: [{ x: 1 }, { $y: 1 }] },
    error: /prefixed field '\$y' in 'a\.1\.\$y'/,
  },
  {
    name: 'a replacement with a dotted top-level field',
    update: { 'a.b': 1 },
    error: /The dotted field 'a\.b' in 'a\.b' is not allowed in a replacement document/,
  },
  {
    name: 'a replacement with a dotted nested field',
    update: { a: { 'b.c': 1 } },
    error: /The dotted field 'b\.c'/,
  },
  { name: 'a replacement nested too deep', update: deep, error: /nested deeper than 100 levels/ },

  // paths
  {
    name: 'an empty path',
    update: { $set: { '': 1 } },
    error: /An empty field path is not allowed \(in \$set\)/,
  },
  {
    name: 'an empty segment',
    update: { $set: { 'a..b': 1 } },
    error: /The path 'a\.\.b' in \$set contains an empty field name/,
  },
  {
    name: 'a trailing dot',
    update: { $inc: { 'a.': 1 } },
    error: /The path 'a\.' in \$inc contains an empty field name/,
  },
  {
    name: 'a leading dot',
    update: { $unset: { '.a': 1 } },
    error: /The path '\.a' in \$unset contains an empty field name/,
  },
  {
    name: 'the positional $ first',
    update: { $set: { '$.a': 1 } },
    error: /^Cannot have positional \(i\.e\. '\$'\) element in the first position in path '\$\.a'/,
  },
  {
    name: 'the all-positional $[] first',
    update: { $inc: { '$[].b': 1 } },
    error: /^Cannot have array filter identifier \(i\.e\. '\$\[<id>\]'\) element in the first position/,
  },
  {
    name: 'a filtered positional $[id] without its array filter',
    update: { $set: { 'a.$[elem]': 1 } },
    error: /^No array filter found for identifier 'elem' in path 'a\.\$\[elem\]'/,
  },
  {
    name: 'a $-prefixed segment',
    update: { $set: { 'a.$x': 1 } },
    error: /has a field name starting with '\$' \('\$x'\)/,
  },
  {
    name: 'too many segments',
    update: { $set: { [Array.from({ length: 33 }, () => 'a').join('.')]: 1 } },
    error: /has more than 32 segments/,
  },
  {
    name: 'a path too long',
    update: { $set: { ['a'.repeat(1025)]: 1 } },
    error: /is longer than 1024 characters/,
  },

  // conflicts
  {
    name: 'a path below another operator',
    update: { $set: { a: 1 }, $inc: { 'a.b': 1 } },
    error: /^Updating the path 'a\.b' would create a conflict at 'a' \(\$inc on 'a\.b', \$set on 'a'\)/,
  },
  {
    name: 'a path above an earlier one',
    update: { $set: { 'a.b.c': 1 }, $unset: { a: 1 } },
    error: /Updating the path 'a' would create a conflict at 'a' \(\$unset on 'a', \$set on 'a\.b\.c'\)/,
  },
  {
    name: 'the same path in two operators',
    update: { $set: { a: 1 }, $max: { a: 2 } },
    error: /Updating the path 'a' would create a conflict at 'a'/,
  },
  {
    name: 'the same nested path in two operators',
    update: { $push: { 'x.y': 1 }, $pull: { 'x.y': 1 } },
    error: /Updating the path 'x\.y' would create a conflict at 'x\.y'/,
  },
  {
    name: 'a $rename source',
    update: { $rename: { a: 'b' }, $set: { 'a.c': 1 } },
    error: /Updating the path 'a\.c' would create a conflict at 'a' \(\$set on 'a\.c', \$rename on 'a'\)/,
  },
  {
    name: 'a $rename destination',
    update: { $set: { b: 1 }, $rename: { a: 'b' } },
    error: /Updating the path 'b' would create a conflict at 'b' \(\$rename on 'b', \$set on 'b'\)/,
  },
  {
    name: 'two $renames to one destination',
    update: { $rename: { a: 'c', b: 'c' } },
    error: /Updating the path 'c' would create a conflict at 'c'/,
  },
  {
    name: '$setOnInsert against $set',
    update: { $set: { a: 1 }, $setOnInsert: { 'a.b': 1 } },
    error:
      /Updating the path 'a\.b' would create a conflict at 'a' \(\$setOnInsert on 'a\.b', \$set on 'a'\)/,
  },
  {
    name: 'array index paths overlap too',
    update: { $set: { 'a.0': 1 }, $inc: { 'a.0.b': 1 } },
    error: /Updating the path 'a\.0\.b' would create a conflict at 'a\.0'/,
  },

  // _id
  {
    name: '$unset _id',
    update: { $unset: { _id: 1 } },
    error: /on the path '_id' would modify the immutable field '_id' \(\$unset\)/,
  },
  { name: '$inc _id', update: { $inc: { _id: 1 } }, error: /immutable field '_id' \(\$inc\)/ },
  {
    name: '$rename from _id',
    update: { $rename: { _id: 'x' } },
    error: /on the path '_id' would modify the immutable field/,
  },
  {
    name: '$rename to _id',
    update: { $rename: { x: '_id' } },
    error: /on the path '_id' would modify the immutable field/,
  },
  {
    name: '$push to _id',
    update: { $push: { '_id.list': 1 } },
    error: /on the path '_id\.list' would modify/,
  },

  // arguments
  {
    name: '$inc by a string',
    update: { $inc: { a: '1' } },
    error: /^Cannot increment with non-numeric argument: \{a: "1"\} \(\$inc\)/,
  },
  {
    name: '$inc by null',
    update: { $inc: { a: null } },
    error: /Cannot increment with non-numeric argument: \{a: null\}/,
  },
  {
    name: '$mul by a boolean',
    update: { $mul: { a: true } },
    error: /Cannot multiply with non-numeric argument: \{a: true\} \(\$mul\)/,
  },
  { name: '$pop 2', update: { $pop: { a: 2 } }, error: /\$pop on 'a' expects 1 or -1, found: 2/ },
  { name: '$pop 0', update: { $pop: { a: 0 } }, error: /\$pop on 'a' expects 1 or -1, found: 0/ },
  { name: '$pop "1"', update: { $pop: { a: '1' } }, error: /\$pop on 'a' expects 1 or -1, found: "1"/ },
  {
    name: '$rename to a number',
    update: { $rename: { a: 1 } },
    error: /The 'to' field for \$rename of 'a' must be a string path/,
  },
  {
    name: '$rename to itself',
    update: { $rename: { a: 'a' } },
    error: /The source and target field for \$rename must differ: 'a'/,
  },
  {
    name: '$rename into itself',
    update: { $rename: { a: 'a.b' } },
    error: /The source and target field for \$rename must not be on the same path: 'a' and 'a\.b'/,
  },
  {
    name: '$rename out of itself',
    update: { $rename: { 'a.b': 'a' } },
    error: /must not be on the same path: 'a\.b' and 'a'/,
  },
  {
    name: '$rename to a positional path',
    update: { $rename: { a: 'b.$' } },
    error: /^The destination field for \$rename may not be dynamic: b\.\$/,
  },
  {
    name: '$rename to an empty path',
    update: { $rename: { a: '' } },
    error: /An empty field path is not allowed \(in \$rename\)/,
  },
  {
    name: '$currentDate false',
    update: { $currentDate: { a: false } },
    error: /\$currentDate on 'a' takes true or \{"\$type"/,
  },
  {
    name: '$currentDate a string',
    update: { $currentDate: { a: 'date' } },
    error: /\$currentDate on 'a' takes true/,
  },
  {
    name: '$currentDate an unknown $type',
    update: { $currentDate: { a: { $type: 'Date' } } },
    error: /\$currentDate on 'a'/,
  },
  {
    name: '$currentDate extra keys',
    update: { $currentDate: { a: { $type: 'date', x: 1 } } },
    error: /\$currentDate on 'a'/,
  },
  {
    name: '$set a value with a $ field',
    update: { $set: { a: { $b: 1 } } },
    error: /The dollar \(\$\) prefixed field '\$b' in 'a\.\$b' is not allowed in \$set/,
  },
  {
    name: '$setOnInsert a value with a dotted field',
    update: { $setOnInsert: { a: { 'b.c': 1 } } },
    error: /The dotted field 'b\.c' in 'a\.b\.c' is not allowed in \$setOnInsert/,
  },
  {
    name: '$max a value with a $ field',
    update: { $max: { a: [{ $x: 1 }] } },
    error: /'\$x' in 'a\.0\.\$x' is not allowed in \$max/,
  },

  // $push and $addToSet modifiers
  {
    name: '$push $each not an array',
    update: { $push: { a: { $each: 1 } } },
    error: /\$each in \$push on 'a' must be an array, not a number/,
  },
  {
    name: '$push modifiers without $each',
    update: { $push: { a: { $slice: 1 } } },
    error: /\$push on 'a' has modifiers but no \$each/,
  },
  {
    name: '$push an unknown modifier',
    update: { $push: { a: { $each: [], $foo: 1 } } },
    error: /Unrecognized clause '\$foo' in \$push on 'a'\. Supported: \$each, \$position, \$sort, \$slice/,
  },
  {
    name: '$push modifiers mixed with a field',
    update: { $push: { a: { $each: [], b: 1 } } },
    error: /Unrecognized clause 'b' in \$push on 'a'/,
  },
  {
    name: '$push a fractional $slice',
    update: { $push: { a: { $each: [], $slice: 1.5 } } },
    error: /\$slice in \$push on 'a' must be an integer, not 1\.5/,
  },
  {
    name: '$push a string $position',
    update: { $push: { a: { $each: [], $position: 'x' } } },
    error: /\$position in \$push on 'a' must be an integer/,
  },
  {
    name: '$push $sort 0',
    update: { $push: { a: { $each: [], $sort: 0 } } },
    error: /\$sort in \$push on 'a' must be 1, -1 or an object/,
  },
  {
    name: '$push an empty $sort object',
    update: { $push: { a: { $each: [], $sort: {} } } },
    error: /\$sort in \$push on 'a' must be 1, -1 or an object/,
  },
  {
    name: '$push a $sort direction of 2',
    update: { $push: { a: { $each: [], $sort: { s: 2 } } } },
    error: /\$sort in \$push on 'a': 's' must be 1 or -1, not 2/,
  },
  {
    name: '$push a positional $sort field',
    update: { $push: { a: { $each: [], $sort: { 's.$': 1 } } } },
    error: /The path 's\.\$' in the \$sort of \$push on 'a' uses the positional operator '\$'/,
  },
  {
    name: '$push an element with a $ field',
    update: { $push: { a: { $each: [{ ok: 1 }, { $x: 1 }] } } },
    error: /'\$x' in 'a\.1\.\$x' is not allowed in \$push/,
  },
  {
    name: '$push a lone $ object',
    update: { $push: { a: { $x: 1 } } },
    error: /Unrecognized clause '\$x' in \$push on 'a'/,
  },
  {
    name: '$addToSet with $slice',
    update: { $addToSet: { a: { $each: [], $slice: 1 } } },
    error: /Unrecognized clause '\$slice' in \$addToSet on 'a'\. Supported: \$each/,
  },
  {
    name: '$addToSet $each not an array',
    update: { $addToSet: { a: { $each: 'x' } } },
    error: /\$each in \$addToSet on 'a' must be an array, not a string/,
  },
  {
    name: '$addToSet a value with a dotted field',
    update: { $addToSet: { a: { 'x.y': 1 } } },
    error: /The dotted field 'x\.y' in 'a\.x\.y' is not allowed in \$addToSet/,
  },

  // $pull and $pullAll
  {
    name: '$pull a $regex that does not compile',
    update: { $pull: { a: { $regex: '(' } } },
    error: /^In the condition of \$pull on 'a': \$regex on 'a' is not a valid regular expression/,
  },
  {
    name: '$pull an unknown escape in a $regex inside $elemMatch on a field',
    update: { $pull: { a: { b: { $elemMatch: { c: { $regex: '\\y' } } } } } },
    error: /^In the condition of \$pull on 'a': \$regex on 'c' uses the escape \\y/,
  },
  {
    name: '$pull an unknown operator',
    update: { $pull: { a: { $where: 'x' } } },
    error: /^In the condition of \$pull on 'a': Unknown query operator '\$where' on 'a'/,
  },
  {
    name: '$pull $in not an array',
    update: { $pull: { a: { $in: 1 } } },
    error: /^In the condition of \$pull on 'a': \$in on 'a' needs an array/,
  },
  {
    name: '$pull $nin not an array',
    update: { $pull: { a: { b: { $nin: 'x' } } } },
    error: /^In the condition of \$pull on 'a': \$nin on 'b' needs an array/,
  },
  {
    name: '$pull $size not an integer',
    update: { $pull: { a: { $size: 'x' } } },
    error: /\$size on 'a' needs a non-negative integer/,
  },
  {
    name: '$pull operators before fields',
    update: { $pull: { a: { $gt: 1, b: 2 } } },
    error: /The condition on 'a' mixes operators \(\$gt\) with plain fields/,
  },
  {
    name: '$pull fields before operators (a query on documents, where $gt is no top-level operator)',
    update: { $pull: { a: { b: 2, $gt: 1 } } },
    error: /Unknown top-level query operator '\$gt'/,
  },
  {
    name: '$pull a field condition mixing operators and fields',
    update: { $pull: { a: { b: { $gt: 1, c: 1 } } } },
    error: /The condition on 'b' mixes operators \(\$gt\) with plain fields/,
  },
  {
    name: '$pull a positional field',
    update: { $pull: { a: { 'b.$': 1 } } },
    error: /The field path 'b\.\$' has a segment starting with '\$'/,
  },
  {
    name: '$pullAll a number',
    update: { $pullAll: { a: 1 } },
    error: /\$pullAll on 'a' requires an array argument, not a number/,
  },
  {
    name: '$pullAll an object',
    update: { $pullAll: { a: { b: 1 } } },
    error: /\$pullAll on 'a' requires an array argument, not an object/,
  },
];

describe('parseUpdate errors', () => {
  it.each(parseErrorCases)('rejects $name', ({ update, error }) => {
    expect(queryError(() => parseUpdate(update)).message).toMatch(error);
  });
});

describe('parseUpdate', () => {
  it('reads {} as an empty replacement', () => {
    expect(parseUpdate({})).toStrictEqual({ kind: 'replacement', doc: {} });
  });

  it('reads plain fields as a replacement', () => {
    expect(parseUpdate({ a: 1, b: { c: [1] } })).toStrictEqual({
      kind: 'replacement',
      doc: { a: 1, b: { c: [1] } },
    });
  });

  it('accepts empty operator objects', () => {
    expect(parseUpdate({ $set: {}, $unset: {} })).toStrictEqual({
      kind: 'operators',
      ops: [],
      arrayFilters: new Map(),
    });
  });

  it('allows $setOnInsert of _id', () => {
    expect(parseUpdate({ $setOnInsert: { _id: 1 } }).kind).toBe('operators');
  });

  it('allows a path of exactly 32 segments and 1024 characters', () => {
    const segments = `${Array.from({ length: 31 }, () => 'a').join('.')}.${'b'.repeat(1024 - 62)}`;
    expect(segments.length).toBe(1024);
    expect(parseUpdate({ $set: { [segments]: 1 } }).kind).toBe('operators');
  });

  it('does not keep references to the request body', () => {
    const body = { $set: { a: { b: 1 } } };
    const parsed = parseUpdate(body);
    body.$set.a.b = 2;
    expect(applyUpdate({}, parsed, { now: NOW, isInsert: false })).toStrictEqual({ a: { b: 1 } });
  });
});

interface SeedCase {
  name: string;
  query: JsonObject;
  expected: JsonObject;
}

const seedCases: SeedCase[] = [
  { name: 'an empty query', query: {}, expected: {} },
  { name: 'a field equality', query: { a: 1 }, expected: { a: 1 } },
  { name: 'several equalities', query: { a: 1, b: 'x', c: null }, expected: { a: 1, b: 'x', c: null } },
  { name: 'an _id kept first', query: { a: 1, _id: 'x' }, expected: { _id: 'x', a: 1 } },
  { name: 'a dotted path', query: { 'a.b': 1 }, expected: { a: { b: 1 } } },
  {
    name: 'two dotted paths under one parent',
    query: { 'a.b': 1, 'a.c': 2 },
    expected: { a: { b: 1, c: 2 } },
  },
  { name: 'a numeric segment makes an object field', query: { 'a.0': 1 }, expected: { a: { '0': 1 } } },
  { name: 'an object literal', query: { a: { b: 1 } }, expected: { a: { b: 1 } } },
  { name: 'an array literal', query: { a: [1, 2] }, expected: { a: [1, 2] } },
  { name: 'an empty object literal', query: { a: {} }, expected: { a: {} } },
  { name: '$eq', query: { a: { $eq: 5 } }, expected: { a: 5 } },
  { name: '$eq of an object', query: { a: { $eq: { b: 1 } } }, expected: { a: { b: 1 } } },
  { name: '$eq next to a range', query: { a: { $gt: 1, $eq: 3 } }, expected: { a: 3 } },
  { name: 'a range is ignored', query: { a: { $gt: 5 }, b: 1 }, expected: { b: 1 } },
  { name: '$ne is ignored', query: { a: { $ne: 5 } }, expected: {} },
  { name: '$in with one value', query: { a: { $in: [5] } }, expected: { a: 5 } },
  { name: '$in with two values is ignored', query: { a: { $in: [5, 6] } }, expected: {} },
  { name: '$in with no values is ignored', query: { a: { $in: [] } }, expected: {} },
  { name: '$and clauses', query: { $and: [{ a: 1 }, { b: { $eq: 2 } }] }, expected: { a: 1, b: 2 } },
  {
    name: 'nested $and',
    query: { $and: [{ $and: [{ 'x.y': 1 }] }, { z: 2 }] },
    expected: { x: { y: 1 }, z: 2 },
  },
  { name: '$and beside fields', query: { $and: [{ 'a.b': 1 }], 'a.c': 2 }, expected: { a: { b: 1, c: 2 } } },
  { name: 'a one-clause $or', query: { $or: [{ a: 1 }], b: 2 }, expected: { a: 1, b: 2 } },
  { name: 'a one-clause $or with $eq', query: { $or: [{ 'a.b': { $eq: 1 } }] }, expected: { a: { b: 1 } } },
  {
    name: 'an $or of several clauses is ignored',
    query: { $or: [{ a: 1 }, { a: 1 }], b: 2 },
    expected: { b: 2 },
  },
  { name: 'a one-clause $and', query: { $and: [{ a: { $eq: 1 } }] }, expected: { a: 1 } },
  {
    name: '$all with one value',
    query: { a: { $all: [1] }, 'b.c': { $all: [[2]] } },
    expected: { a: 1, b: { c: [2] } },
  },
  { name: '$all with no values is ignored', query: { a: { $all: [] } }, expected: {} },
  { name: '$elemMatch is ignored', query: { a: { $elemMatch: { $eq: 1 } } }, expected: {} },
  { name: '$not is ignored', query: { a: { $not: { $eq: 1 } } }, expected: {} },
  {
    name: 'dotted _id paths build an _id',
    query: { '_id.x': 1, '_id.y': 2 },
    expected: { _id: { x: 1, y: 2 } },
  },
  { name: '$nor is ignored', query: { $nor: [{ a: 1 }] }, expected: {} },
  { name: '$comment is ignored', query: { $comment: 'x', a: 1 }, expected: { a: 1 } },
  { name: '$exists is ignored', query: { a: { $exists: true } }, expected: {} },
  { name: 'an _id from $and first', query: { a: 1, $and: [{ _id: 3 }] }, expected: { _id: 3, a: 1 } },
];

const seedErrorCases: { name: string; query: unknown; error: RegExp }[] = [
  { name: 'a path and its child', query: { a: 1, 'a.b': 2 }, error: /both paths 'a\.b' and 'a' are matched/ },
  {
    name: 'a child then its parent',
    query: { 'a.b': 1, a: { $eq: 2 } },
    error: /both paths 'a' and 'a\.b' are matched/,
  },
  {
    name: 'a path twice through $and',
    query: { a: 1, $and: [{ a: 1 }] },
    error: /path 'a' is matched twice/,
  },
  { name: '$eq and a one-value $in', query: { a: { $eq: 1, $in: [1] } }, error: /path 'a' is matched twice/ },
  { name: 'a positional path', query: { 'a.$': 1 }, error: /uses the positional operator '\$'/ },
  { name: 'an empty segment', query: { 'a..b': 1 }, error: /contains an empty field name/ },
  { name: '$and not an array', query: { $and: { a: 1 } }, error: /\$and must be an array of query objects/ },
  { name: '$and with a non-object', query: { $and: [1] }, error: /\$and\[0\] must be a query object/ },
  {
    name: 'a literal with a $ field',
    query: { a: { b: { $gt: 1 } } },
    error: /prefixed field '\$gt' in 'a\.b\.\$gt'/,
  },
  { name: 'a query that is not an object', query: [1], error: /The query must be a JSON object/ },
  {
    name: '$all with several values',
    query: { a: { $all: [1, 2] } },
    error: /\$all on 'a' holds several values/,
  },
  { name: 'a path twice in $and', query: { $and: [{ a: 1 }, { a: 1 }] }, error: /path 'a' is matched twice/ },
  {
    name: 'two values in $and',
    query: { $and: [{ a: { $eq: 1 } }, { a: 2 }] },
    error: /path 'a' is matched twice/,
  },
  {
    name: '_id and a field of it',
    query: { _id: 1, '_id.x': 1 },
    error: /both paths '_id\.x' and '_id' are matched/,
  },
];

/** A replacement takes only _id from the query, and only from conditions on _id itself. */
const replacementSeedCases: SeedCase[] = [
  { name: 'an _id', query: { _id: 1, a: 2 }, expected: { _id: 1 } },
  {
    name: 'an _id from $eq, $in, $all, $and and $or',
    query: { $or: [{ $and: [{ _id: { $all: [3] } }] }] },
    expected: { _id: 3 },
  },
  { name: 'no fields besides _id', query: { x: 1, 'y.z': { $eq: 2 }, $or: [{ w: 1 }] }, expected: {} },
  {
    name: 'conflicts outside _id are ignored',
    query: { _id: 1, x: [1, { x: 1 }], 'x.x': 1 },
    expected: { _id: 1 },
  },
  { name: '$all with several values outside _id', query: { x: { $all: [1, 2] } }, expected: {} },
];

const replacementSeedErrorCases: { name: string; query: JsonObject; error: RegExp }[] = [
  {
    name: 'dotted _id paths',
    query: { '_id.x': 1, '_id.y': 2 },
    error: /takes _id from a condition on '_id' itself, not on '_id\.x'/,
  },
  {
    name: '_id twice in $and',
    query: { $and: [{ _id: 1 }, { _id: 1 }] },
    error: /path '_id' is matched twice/,
  },
  {
    name: '$all of several _id values',
    query: { _id: { $all: [1, 2] } },
    error: /\$all on '_id' holds several values/,
  },
  {
    name: '_id and a field of it',
    query: { _id: { x: 1 }, '_id.x': 1 },
    error: /both paths '_id\.x' and '_id'/,
  },
];

describe('upsertSeed', () => {
  const OPERATORS = parseUpdate({ $set: { r: 1 } });

  it.each(seedCases)('$name', ({ query, expected }) => {
    const seed = upsertSeed(deepFreeze(query), OPERATORS);
    expect(seed).toStrictEqual(expected);
    if ('_id' in seed) expect(Object.keys(seed)[0]).toBe('_id');
  });

  it.each(seedErrorCases)('rejects $name', ({ query, error }) => {
    expect(queryError(() => upsertSeed(query as JsonObject, OPERATORS)).message).toMatch(error);
  });

  it.each(replacementSeedCases)('for a replacement: $name', ({ query, expected }) => {
    expect(upsertSeed(deepFreeze(query), parseUpdate({ r: 1 }))).toStrictEqual(expected);
  });

  it.each(replacementSeedErrorCases)('for a replacement: rejects $name', ({ query, error }) => {
    expect(queryError(() => upsertSeed(query, parseUpdate({ r: 1 }))).message).toMatch(error);
  });

  it('does not share values with the query', () => {
    const query = { a: { b: [1] } };
    const seed = upsertSeed(query, OPERATORS);
    ((seed.a as JsonObject).b as Json[]).push(2);
    expect(query.a.b).toEqual([1]);
  });

  it('seeds an upsert that then applies its operators', () => {
    const update = parseUpdate({ $set: { 'm.y': 2 }, $inc: { n: 5 }, $setOnInsert: { created: 'now' } });
    const seed = upsertSeed({ _id: 'k', n: { $gt: 1 }, 'm.x': 1 }, update);
    expect(applyUpdate(seed, update, { now: NOW, isInsert: true })).toStrictEqual({
      _id: 'k',
      m: { x: 1, y: 2 },
      n: 5,
      created: 'now',
    });
  });
});

const equalCases: { name: string; a: Json; b: Json; equal: boolean }[] = [
  { name: '1 and 1.0', a: 1, b: 1.0, equal: true },
  { name: '0 and -0', a: 0, b: -0, equal: true },
  { name: '1 and "1"', a: 1, b: '1', equal: false },
  { name: '0 and false', a: 0, b: false, equal: false },
  { name: '"" and null', a: '', b: null, equal: false },
  { name: 'null and null', a: null, b: null, equal: true },
  { name: 'null and {}', a: null, b: {}, equal: false },
  { name: '[] and {}', a: [], b: {}, equal: false },
  { name: '{} and []', a: {}, b: [], equal: false },
  { name: 'objects in another key order', a: { a: 1, b: 2 }, b: { b: 2, a: 1 }, equal: true },
  {
    name: 'nested objects in another key order',
    a: { x: [{ p: 1, q: [2] }] },
    b: { x: [{ q: [2], p: 1 }] },
    equal: true,
  },
  { name: 'objects with an extra key', a: { a: 1 }, b: { a: 1, b: null }, equal: false },
  { name: 'objects with different keys', a: { a: 1 }, b: { b: 1 }, equal: false },
  { name: 'objects with different values', a: { a: 1 }, b: { a: 2 }, equal: false },
  { name: 'arrays in another order', a: [1, 2], b: [2, 1], equal: false },
  { name: 'arrays of another length', a: [1], b: [1, 1], equal: false },
  { name: 'equal arrays', a: [1, 'x', null, [true]], b: [1, 'x', null, [true]], equal: true },
  { name: 'an array and its element', a: ['a'], b: 'a', equal: false },
  { name: 'strings', a: 'é', b: 'é', equal: true },
];

describe('jsonEqual', () => {
  it.each(equalCases)('$name', ({ a, b, equal }) => {
    expect(jsonEqual(a, b)).toBe(equal);
    expect(jsonEqual(b, a)).toBe(equal);
  });
});
