import { describe, expect, it } from 'vitest';
import { isPlainObject, type Json, type JsonObject, QueryError } from '../../../db/query/errors.js';
import {
  applyProjection,
  MAX_PROJECTION_FIELDS,
  parseProjection,
  projectsEverything,
} from '../../../db/query/projection.js';

/** Any attempt to modify the input then throws (ESM is strict mode), wherever it happens. */
function deepFreeze<T extends Json>(value: T): T {
  if (Array.isArray(value)) for (const item of value) deepFreeze(item);
  else if (isPlainObject(value)) for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

function project(doc: JsonObject, fields: unknown): JsonObject {
  return applyProjection(doc, parseProjection(fields));
}

function parseError(fields: unknown): QueryError {
  try {
    parseProjection(fields);
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
  [
    '$elemMatch',
    { a: { $elemMatch: { b: 1 } } },
    /projection operator \$elemMatch \(at path a\) is not supported/,
  ],
  ['$meta', { score: { $meta: 'textScore' } }, /\$meta \(at path score\) is not supported/],
  ['an unknown operator', { a: { $foo: 1 } }, /\$foo .*not supported/],
  ['a positional path', { 'a.$': 1 }, /positional projection operator in 'a\.\$' is not supported/],
  ['a positional path mid-way', { 'a.$.b': 1 }, /positional .*'a\.\$\.b'/],
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
];

describe('parseProjection errors', () => {
  it.each(errors)('rejects %s', (_name, fields, message) => {
    expect(parseError(fields).message).toMatch(message);
  });

  it('accepts exactly the maximum number of fields', () => {
    const fields = Object.fromEntries(Array.from({ length: MAX_PROJECTION_FIELDS }, (_, i) => [`f${i}`, 0]));
    expect(parseProjection(fields).mode).toBe('exclusion');
  });
});
