import { describe, expect, it } from 'vitest';
import { implies, parsePartialFilter, sparseFilter } from '../../../mongo/filter/index-predicate.js';
import { parseFilter } from '../../../mongo/filter/parse.js';

const yes = (query: unknown, predicate: unknown) =>
  implies(parseFilter(query), parsePartialFilter(predicate));

describe('a query implies a partial index filter', () => {
  it.each([
    // equality
    [{ a: 1 }, { a: 1 }],
    [{ a: 1.0, b: 2 }, { a: 1 }],
    [{ a: { $eq: 'x' } }, { a: 'x' }],
    [{ a: { $in: ['x'] } }, { a: 'x' }],
    [{ a: null }, { a: null }],
    [{ $and: [{ b: 2 }, { a: true }] }, { a: true }],
    // $exists: true, by any condition that needs the field
    [{ a: 1 }, { a: { $exists: true } }],
    [{ a: { $gt: 1 } }, { a: { $exists: true } }],
    [{ a: { $lt: 'x' } }, { a: { $exists: true } }],
    [{ a: { $type: 'null' } }, { a: { $exists: true } }],
    [{ a: { $size: 0 } }, { a: { $exists: true } }],
    [{ a: { $regex: '^x' } }, { a: { $exists: true } }],
    [{ a: { $elemMatch: { b: 1 } } }, { a: { $exists: true } }],
    [{ a: { $in: [1, 'x'] } }, { a: { $exists: true } }],
    [{ a: { $exists: true } }, { a: { $exists: true } }],
    [{ a: { $all: [1] } }, { a: { $exists: true } }],
    // ranges: narrower or equal, same direction and type
    [{ a: { $gt: 5 } }, { a: { $gt: 5 } }],
    [{ a: { $gt: 5 } }, { a: { $gte: 5 } }],
    [{ a: { $gte: 6 } }, { a: { $gt: 5 } }],
    [{ a: { $gt: 5, $lt: 9 } }, { a: { $gt: 4 } }],
    [{ a: { $lte: 3 } }, { a: { $lt: 4 } }],
    [{ a: 7 }, { a: { $gt: 5 } }],
    [{ a: { $in: [6, 7] } }, { a: { $gt: 5 } }],
    [{ a: { $gt: 'm' } }, { a: { $gte: 'b' } }],
    [{ a: { $gt: 5, $lt: 8 } }, { a: { $gt: 1, $lt: 10 } }],
    // $type
    [{ a: 5 }, { a: { $type: 'number' } }],
    [{ a: 5 }, { a: { $type: 'int' } }],
    [{ a: 5.5 }, { a: { $type: 'double' } }],
    [{ a: 'x' }, { a: { $type: 'string' } }],
    [{ a: { $gt: 1 } }, { a: { $type: 'number' } }],
    [{ a: { $type: 'int' } }, { a: { $type: ['number'] } }],
    [{ a: { $regex: 'x' } }, { a: { $type: 'string' } }],
    // $in
    [{ a: 2 }, { a: { $in: [1, 2] } }],
    [{ a: { $in: [1, 2] } }, { a: { $in: [3, 2, 1] } }],
    // $and / $or on either side
    [
      { a: 1, b: 2 },
      { a: 1, b: 2 },
    ],
    [{ a: 1, b: 2, c: 3 }, { $and: [{ a: 1 }, { b: { $exists: true } }] }],
    [{ a: 1 }, { $or: [{ a: 1 }, { b: 1 }] }],
    [{ $or: [{ a: 1 }, { b: 1 }] }, { $or: [{ a: 1 }, { b: 1 }] }],
    [{ $or: [{ a: 6 }, { a: 7 }] }, { a: { $gt: 5 } }],
    [{ a: 1, $or: [{ b: 1 }, { b: 2 }] }, { $or: [{ a: 1 }, { c: 1 }] }],
    // dotted paths, same text
    [{ 'a.b': 1 }, { 'a.b': { $exists: true } }],
  ])('%j implies %j', (query, predicate) => {
    expect(yes(query, predicate)).toBe(true);
  });

  it.each([
    [{}, { a: 1 }],
    [{ a: 2 }, { a: 1 }],
    [{ a: '1' }, { a: 1 }],
    [{ a: { $in: [1, 2] } }, { a: 1 }],
    [{ a: { $ne: 1 } }, { a: 1 }],
    [{ b: 1 }, { a: 1 }],
    [{ 'a.b': 1 }, { a: { $exists: true } }],
    // null matches a missing field; so do negations
    [{ a: null }, { a: { $exists: true } }],
    [{ a: { $in: [1, null] } }, { a: { $exists: true } }],
    [{ a: { $gte: null } }, { a: { $exists: true } }],
    [{ a: { $exists: false } }, { a: { $exists: true } }],
    [{ a: { $ne: null } }, { a: { $exists: true } }],
    [{ a: { $not: { $gt: 1 } } }, { a: { $exists: true } }],
    [{ a: { $nin: [1] } }, { a: { $exists: true } }],
    [{ $nor: [{ a: null }] }, { a: { $exists: true } }],
    // wider, other direction, other type
    [{ a: { $gte: 5 } }, { a: { $gt: 5 } }],
    [{ a: { $gt: 4 } }, { a: { $gt: 5 } }],
    [{ a: { $lt: 9 } }, { a: { $gt: 5 } }],
    [{ a: 5 }, { a: { $gt: 5 } }],
    [{ a: { $in: [6, 5] } }, { a: { $gt: 5 } }],
    [{ a: { $gt: '6' } }, { a: { $gt: 5 } }],
    [{ a: 'x' }, { a: { $gt: 5 } }],
    [{ a: { $gt: 5 } }, { a: { $gt: 1, $lt: 10 } }],
    // $type
    [{ a: 5.5 }, { a: { $type: 'int' } }],
    [{ a: null }, { a: { $type: 'null' } }],
    [{ a: { $type: 'number' } }, { a: { $type: 'int' } }],
    [{ a: { $gt: 'x' } }, { a: { $type: 'number' } }],
    // $in
    [{ a: 4 }, { a: { $in: [1, 2] } }],
    [{ a: { $in: [1, 4] } }, { a: { $in: [1, 2] } }],
    // $or: every branch must imply it
    [{ $or: [{ a: 1 }, { b: 1 }] }, { a: 1 }],
    [{ $or: [{ a: 6 }, { a: 5 }] }, { a: { $gt: 5 } }],
    [{ a: 1 }, { $and: [{ a: 1 }, { b: 1 }] }],
    [{ c: 1 }, { $or: [{ a: 1 }, { b: 1 }] }],
    // $elemMatch conditions are about one element, not the field
    [{ a: { $elemMatch: { $gt: 6 } } }, { a: { $gt: 5 } }],
  ])('%j does not imply %j', (query, predicate) => {
    expect(yes(query, predicate)).toBe(false);
  });
});

describe('a sparse index', () => {
  const sparse = sparseFilter(['a', 'b']);
  it.each([
    [{ a: 1 }, true],
    [{ b: { $gt: 0 } }, true],
    [{ a: { $exists: true } }, true],
    [{ a: null }, false],
    [{}, false],
    [{ c: 1 }, false],
    [{ a: { $exists: false } }, false],
  ])('%j → %s', (query, expected) => {
    expect(implies(parseFilter(query), sparse)).toBe(expected);
  });
});
