/**
 * fast-check arbitraries for MongoDB-shaped requests to the storage API: documents, filters,
 * updates, sorts, projections and index definitions, for the grammar fuzz
 * (test/integration/grammar-fuzz.test.ts).
 *
 * The point is to reach every branch of the query compiler (mongo/) and the SQL it emits with
 * inputs that look like what users send, not to produce random JSON. So:
 *
 * - Every name comes from tiny pools (KEYS, TOP_KEYS) and every value from small pools of edge
 *   values, so that different documents put strings, numbers, booleans, null, arrays, nested
 *   arrays and objects at the SAME paths, queries hit those paths, and paths are often blocked by
 *   a scalar (`a.b` where `a` is 5) or cross arrays (`a.0.b` where `a` is a list of documents).
 * - Numeric segments (`0`, `1`) are both field names and array indexes in MongoDB: they are in the
 *   key pool of documents too, so both readings occur.
 * - Numbers include int32/int53/double boundaries (for `$type: "int"`, `$inc` overflow, `$mul`
 *   to infinity) and strings include regex and LIKE metacharacters, newlines and non-ASCII.
 * - Each operator has a small-weight branch of invalid-but-plausible operands (unknown operators,
 *   wrong operand types, conflicting update paths, bad modifiers): the server must answer those
 *   with a 4xx, never a 5xx. The weights keep most requests valid, so most answers are 2xx and the
 *   SQL actually runs.
 */
import fc from 'fast-check';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

// ---- Values -----------------------------------------------------------------------------------

/** Integers and doubles around the edges the server cares about: int32 (`$type: "int"`), 2^53, overflow. */
export const NUMBERS = [
  0, 1, 2, 3, -1, 10, 1.5, -0.5, 0.1, 2147483647, 2147483648, -2147483649, 9007199254740992, 1e21,
  1.7976931348623157e308, -1e308, 5e-324,
];

/** Strings that are regex/LIKE/jsonpath metacharacters, numbers-as-text, case pairs, newlines, non-ASCII. */
export const STRINGS = [
  '',
  'a',
  'A',
  'b',
  'ab',
  'abc',
  'a\nb',
  'é',
  '10',
  '1',
  'x y',
  'null',
  'true',
  '%_',
  '\\',
  '"',
  "'",
  '$a',
  'a.b',
  '2024-01-01T00:00:00.000Z',
  '😀',
];

/** Strings that JSON allows and PostgreSQL's jsonb does not (NUL, a lone surrogate): rare, as in real traffic. */
export const UNSTORABLE_STRINGS = ['a\u0000b', '\ud800'];

/**
 * Strings past the sizes the server treats specially: sort and index keys keep ~1,000 bytes of a
 * string, and a btree entry holds at most ~2,700 bytes.
 */
export const LONG_STRINGS = ['a'.repeat(1100), `${'b'.repeat(3000)}a`, '😀'.repeat(800), 'é'.repeat(1500)];

export const scalarArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom(...NUMBERS) },
  { weight: 12, arbitrary: fc.integer({ min: -5, max: 5 }) },
  { weight: 30, arbitrary: fc.constantFrom(...STRINGS) },
  { weight: 12, arbitrary: fc.boolean() },
  { weight: 12, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constantFrom(...LONG_STRINGS) },
  { weight: 1, arbitrary: fc.constantFrom(...UNSTORABLE_STRINGS) },
);

/** Nested field names: letters and the numeric segments that double as array indexes. */
export const KEYS = ['a', 'b', 'c', 'x', '0', '1'];
/** Top-level fields: `a`/`b`/`c` hold anything; `arr` mostly lists of documents; `u` is near-unique (for a unique index). */
export const TOP_KEYS = ['a', 'b', 'c', 'arr', 'n', 'u'];

/** Any JSON value up to a few levels deep, with keys from KEYS: arrays of arrays and documents in arrays occur. */
export const valueArb: fc.Arbitrary<Json> = fc.letrec<{ value: Json; array: Json[]; object: JsonObject }>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: 'small', maxDepth: 3, depthIdentifier: 'value' },
      { weight: 6, arbitrary: scalarArb },
      { weight: 2, arbitrary: tie('array') },
      { weight: 2, arbitrary: tie('object') },
    ),
    array: fc.array(tie('value'), { maxLength: 4, depthIdentifier: 'value' }),
    object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), {
      maxKeys: 3,
      noNullPrototype: true,
      depthIdentifier: 'value',
    }),
  }),
).value;

const subDocArb: fc.Arbitrary<JsonObject> = fc.dictionary(fc.constantFrom(...KEYS), valueArb, {
  maxKeys: 3,
  noNullPrototype: true,
});

/** `_id`s from a small pool, so creates collide (409) now and then and queries on `_id` match. */
export const idArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 300 }) },
  { weight: 1, arbitrary: fc.constantFrom('a', 'b', 'id1', '') },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }).map((k) => ({ k })) },
);

/** A document: any subset of TOP_KEYS (half of them with an `_id` from idArb) and always a `u`, nearly unique. */
export const docArb: fc.Arbitrary<JsonObject> = fc
  .record(
    {
      _id: idArb,
      a: valueArb,
      b: valueArb,
      c: valueArb,
      arr: fc.oneof({ weight: 3, arbitrary: fc.array(subDocArb, { maxLength: 3 }) }, valueArb),
      n: fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(...NUMBERS)),
      u: fc.integer({ min: 0, max: 1_000_000_000 }),
    },
    { requiredKeys: ['u'], noNullPrototype: true },
  )
  .map((d) => d as JsonObject);

// ---- Paths ------------------------------------------------------------------------------------

/** A field path: a top-level key, then 0-2 segments of KEYS (so `a.0.b`, `arr.x`, `c.1.0`), or `_id`. */
export const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TOP_KEYS) },
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.constantFrom(...TOP_KEYS), fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 2 }))
      .map(([top, rest]) => [top, ...rest].join('.')),
  },
  { weight: 1, arbitrary: fc.constantFrom('_id', '_id.k', 'missing', 'a.b.c.x.0') },
);

/**
 * Paths MongoDB refuses in queries, sorts, projections and indexes (positional, empty segments,
 * `$` fields), for the invalid branches. In updates the positional ones are valid.
 */
export const badPathArb = fc.constantFrom(
  '',
  'a..b',
  '.a',
  'a.',
  '$a',
  'a.$',
  'a.$[]',
  'a.$[x]',
  'a.b.$',
  '$',
);

// ---- Filters ----------------------------------------------------------------------------------

const TYPE_NAMES = [
  'double',
  'string',
  'object',
  'array',
  'bool',
  'null',
  'int',
  'long',
  'decimal',
  'number',
  'date',
  'objectId',
  'binData',
  'undefined',
  'minKey',
  'maxKey',
];
const TYPE_CODES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, -1, 127, 2.0];
const typeArb = fc.oneof(fc.constantFrom(...TYPE_NAMES), fc.constantFrom(...TYPE_CODES));

/**
 * Regex pieces chosen for the translation in mongo/regex/translate.ts: anchors, PCRE class escapes it
 * rewrites (\d \w \s \b \B \z), classes with and without negation, alternation, lookarounds, and
 * whitespace and `#` that mean something under the `x` flag.
 */
const REGEX_PIECES = [
  '^a',
  'a$',
  'A',
  'b',
  '.',
  '.*',
  '\\d',
  '\\w+',
  '\\s',
  '\\S',
  '\\b',
  '\\Bb',
  '\\z',
  '\\.',
  '\\n',
  '[a-z]',
  '[^a]',
  '[\\d\\s]',
  '(a|b)',
  '(?:ab)?',
  '(?=a)',
  '(?!b)',
  '(?<=a)b',
  'a{1,2}',
  '^$',
  ' a b ',
  '# c\n',
  'é',
  '1',
];
/** Regexes that are invalid or use constructs the server refuses: these must be a 400. */
const BAD_REGEXES = [
  '(',
  '[a',
  'a**',
  '\\',
  '(?<n>a)',
  '(?i)a',
  'a++',
  '\\p{L}',
  '[\\W]',
  '*a',
  'a{2,1}',
  '(?#c)',
];
const regexArb = fc
  .array(fc.constantFrom(...REGEX_PIECES), { minLength: 1, maxLength: 3 })
  .map((p) => p.join(''));
/** Every subset of MongoDB's options, in any order, sometimes repeated; `x` is the one PostgreSQL lacks. */
const optionsArb = fc
  .array(fc.constantFrom('i', 'm', 's', 'x', 'u'), { maxLength: 4 })
  .map((o) => o.join(''));

const valuesArb = fc.array(valueArb, { maxLength: 4 });

/** Operators MongoDB has but the server does not support, typos, and supported operators with wrong operands. */
const badOperatorArb: fc.Arbitrary<JsonObject> = fc.oneof(
  fc.constantFrom<JsonObject>(
    { $regx: 'a' },
    { $where: 'this.a == 1' },
    { $expr: { $eq: ['$a', 1] } },
    { $text: { $search: 'a' } },
    { $near: [0, 0] },
    { $eleMatch: { a: 1 } },
    { $jsonSchema: {} },
    { $size: -1 },
    { $size: 1.5 },
    { $size: 'a' },
    { $size: null },
    { $mod: [0, 1] },
    { $mod: [1] },
    { $mod: 'x' },
    { $mod: [1, 'a'] },
    { $mod: [1e308, 1] },
    { $mod: [2, 1e21] },
    { $bitsAllSet: -1 },
    { $bitsAnySet: 1.5 },
    { $bitsAllClear: 2 ** 63 },
    { $bitsAnyClear: 1e21 },
    { $bitsAllSet: [-1] },
    { $bitsAnySet: [2 ** 31] },
    { $bitsAllClear: ['1'] },
    { $bitsAnyClear: '5' },
    { $bitsAllSet: null },
    { $bitsAnySet: { $binary: { base64: 'AQ==', subType: '00' } } },
    { $size: 2147483648 },
    { $size: 1e21 },
    { $in: 5 },
    { $nin: { a: 1 } },
    { $in: [{ $gt: 1 }] },
    { $all: [{ $elemMatch: { a: 1 } }, 1] },
    { $all: [1, { $elemMatch: { a: 1 } }] },
    { $all: [{ $elemMatch: { a: 1 }, b: 1 }] },
    { $elemMatch: { $elemMatch: { $gt: [1] } } },
    { $type: '2' },
    { $type: 0 },
    { $type: 2.5 },
    { $type: 'Date' },
    { $mod: [] },
    { $mod: [1, 2, 3] },
    { $mod: [2 ** 63, 1] },
    { $mod: [0.5, 1] },
    { $all: 1 },
    { $exists: 'yes' },
    { $exists: null },
    { $type: 'foo' },
    { $type: 99 },
    { $type: [] },
    { $type: null },
    { $regex: 5 },
    { $regex: 'a', $options: 'g' },
    { $regex: 'a', $options: 5 },
    { $options: 'i' },
    { $not: 5 },
    { $not: { a: 1 } },
    { $not: {} },
    { $elemMatch: 5 },
    { $elemMatch: {} },
    { $and: [{ a: 1 }] },
    { $gt: 1, b: 2 },
  ),
  fc.constantFrom(...BAD_REGEXES).map((re) => ({ $regex: re })),
);

/** `$jsonSchema` arguments: MongoDB's keywords over the generated values, valid or not. */
const jsonSchemaArb: fc.Arbitrary<JsonObject> = fc.letrec<{ schema: JsonObject }>((tie) => ({
  schema: fc
    .array(
      fc.oneof(
        { depthSize: 'small', maxDepth: 3, depthIdentifier: 'schema' },
        fc.tuple(
          fc.constantFrom('type', 'bsonType'),
          fc.constantFrom('object', 'number', 'int', 'bool', 'x'),
        ),
        fc.tuple(
          fc.constantFrom(
            'minimum',
            'maxLength',
            'minItems',
            'maxProperties',
            'multipleOf',
            'pattern',
            'enum',
          ),
          valueArb,
        ),
        fc.tuple(fc.constantFrom('required', 'allOf', 'items'), fc.array(valueArb, { maxLength: 2 })),
        fc.tuple(
          fc.constantFrom('properties', 'patternProperties', 'dependencies'),
          fc.dictionary(pathArb, tie('schema'), { maxKeys: 2, noNullPrototype: true }),
        ),
        fc.tuple(fc.constantFrom('not', 'additionalProperties', 'items'), tie('schema')),
      ),
      { maxLength: 3, depthIdentifier: 'schema' },
    )
    .map((kws) => Object.fromEntries(kws) as JsonObject),
})).schema;

/** Bad top-level queries: empty or non-array logical operators, unknown and unsupported operators, bad paths. */
const badTopLevelArb: fc.Arbitrary<JsonObject> = fc.oneof(
  fc.constantFrom<JsonObject>(
    { $and: [] },
    { $or: { a: 1 } },
    { $nor: [5] },
    { $foo: 1 },
    { $where: 'true' },
    { $expr: { $gt: ['$a'] } },
    { $text: { $search: 'a' } },
    { $jsonSchema: { $ref: '#/definitions/a' } },
    { $jsonSchema: { properties: { a: { type: 'integer' } } } },
    { $jsonSchema: { enum: [] } },
    { $jsonSchema: 'object' },
    { 'a.0.0.0.0.0': 1 },
  ),
  badPathArb.map((p) => ({ [p]: 1 })),
);

/**
 * The recursive heart of the grammar: a query (fields side by side, logical operators), a field
 * condition (a literal or operators), an object of operators on one field, and one operator.
 */
export const filterArbs = fc.letrec<{ query: JsonObject; cond: Json; ops: JsonObject; op: JsonObject }>(
  (tie) => {
    const depth = { depthSize: 'small' as const, maxDepth: 3, depthIdentifier: 'filter' };
    return {
      // A query: fields side by side (implicit AND), sometimes with $and/$or/$nor and $comment.
      query: fc.oneof(
        depth,
        { weight: 12, arbitrary: fc.dictionary(pathArb, tie('cond'), { maxKeys: 3, noNullPrototype: true }) },
        {
          weight: 5,
          arbitrary: fc
            .tuple(
              fc.constantFrom('$and', '$or', '$nor'),
              fc.array(tie('query'), { minLength: 1, maxLength: 3, depthIdentifier: 'filter' }),
              fc.dictionary(pathArb, tie('cond'), { maxKeys: 1, noNullPrototype: true }),
            )
            .map(([op, list, fields]) => ({ ...fields, [op]: list })),
        },
        { weight: 1, arbitrary: tie('cond').map((c) => ({ $comment: 'fuzz', a: c })) },
        { weight: 1, arbitrary: jsonSchemaArb.map((schema) => ({ $jsonSchema: schema })) },
        { weight: 1, arbitrary: badTopLevelArb },
      ),
      // A field's condition: a literal (equality, also with documents and arrays) or operators.
      cond: fc.oneof(depth, { weight: 3, arbitrary: valueArb }, { weight: 7, arbitrary: tie('ops') }),
      // One or two operators on the same field (`{$gte: 1, $lt: 5}`, `{$regex, $options}`).
      ops: fc
        .array(tie('op'), { minLength: 1, maxLength: 2, depthIdentifier: 'filter' })
        .map((list) => Object.assign({}, ...list) as JsonObject),
      op: fc.oneof(
        depth,
        { weight: 2, arbitrary: valueArb.map((v) => ({ $eq: v })) },
        { weight: 2, arbitrary: valueArb.map((v) => ({ $ne: v })) },
        {
          weight: 5,
          arbitrary: fc
            .tuple(
              fc.constantFrom('$gt', '$gte', '$lt', '$lte'),
              fc.oneof({ weight: 4, arbitrary: scalarArb }, { weight: 1, arbitrary: valueArb }),
            )
            .map(([op, v]) => ({ [op]: v })),
        },
        {
          weight: 3,
          arbitrary: fc.tuple(fc.constantFrom('$in', '$nin'), valuesArb).map(([op, v]) => ({ [op]: v })),
        },
        { weight: 2, arbitrary: fc.constantFrom<Json>(true, false, 0, 1).map((v) => ({ $exists: v })) },
        {
          weight: 2,
          arbitrary: fc
            .oneof(typeArb, fc.array(typeArb, { minLength: 1, maxLength: 3 }))
            .map((t) => ({ $type: t })),
        },
        { weight: 2, arbitrary: fc.integer({ min: 0, max: 3 }).map((n) => ({ $size: n })) },
        { weight: 2, arbitrary: valuesArb.map((v) => ({ $all: v })) },
        {
          weight: 1,
          arbitrary: fc
            .array(fc.oneof(tie('query'), tie('ops')), { minLength: 1, maxLength: 2 })
            .map((qs) => ({ $all: qs.map((q) => ({ $elemMatch: q })) })),
        },
        // Value form ({$elemMatch: {$gt: 1}}) and query form ({$elemMatch: {x: 1}}) differ in MongoDB.
        { weight: 2, arbitrary: tie('ops').map((o) => ({ $elemMatch: o })) },
        { weight: 2, arbitrary: tie('query').map((q) => ({ $elemMatch: q })) },
        {
          weight: 5,
          arbitrary: fc
            .tuple(regexArb, fc.option(optionsArb, { nil: undefined }))
            .map(([re, o]): JsonObject => (o === undefined ? { $regex: re } : { $regex: re, $options: o })),
        },
        {
          weight: 2,
          arbitrary: fc
            .tuple(
              fc.constantFrom(1, 2, 3, -2, 2.5, 2 ** 62, -(2 ** 63)),
              fc.constantFrom(0, 1, -1, 1.5, 2 ** 62),
            )
            .map(([d, r]) => ({ $mod: [d, r] })),
        },
        {
          weight: 2,
          arbitrary: fc
            .tuple(
              fc.constantFrom('$bitsAllSet', '$bitsAnySet', '$bitsAllClear', '$bitsAnyClear'),
              fc.oneof(
                fc.constantFrom<Json>(0, 1, 5, 35, 2 ** 31, Number.MAX_SAFE_INTEGER, 2 ** 62 + 2 ** 10),
                fc.array(fc.constantFrom(0, 1, 5, 52, 62, 63, 64, 200, 2 ** 31 - 1), { maxLength: 4 }),
              ),
            )
            .map(([op, mask]) => ({ [op]: mask })),
        },
        { weight: 2, arbitrary: tie('ops').map((o) => ({ $not: o })) },
        { weight: 2, arbitrary: badOperatorArb },
      ),
    };
  },
);

export const queryArb: fc.Arbitrary<JsonObject> = filterArbs.query;

// ---- Sorts and projections --------------------------------------------------------------------

export const sortArb: fc.Arbitrary<Json> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.dictionary(pathArb, fc.constantFrom(1, -1), {
      minKeys: 1,
      maxKeys: 3,
      noNullPrototype: true,
    }),
  },
  // Not 1/-1, or not a path: refused (some by the request schema, some by the compiler).
  {
    weight: 1,
    arbitrary: fc.constantFrom<Json>(
      { a: 0 },
      { a: 'asc' },
      { a: { $meta: 'textScore' } },
      { '': 1 },
      { 'a..b': 1 },
      { $natural: 1 },
    ),
  },
);

/** `$slice` counts, and now and then counts beyond int32 and int64 (SQL parameters have types). */
const HUGE_COUNTS = [2147483648, -2147483649, 1e21];
const sliceArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -3, max: 3 }) },
  {
    weight: 4,
    arbitrary: fc.tuple(fc.integer({ min: -3, max: 3 }), fc.integer({ min: 1, max: 3 })).map((t) => [...t]),
  },
  { weight: 1, arbitrary: fc.constantFrom<Json>(...HUGE_COUNTS, [1e21, 1], [1, 1e21]) },
);

/**
 * MongoDB's projections: inclusion (dotted paths, maybe `_id: 0`), exclusion, `$slice` alone or
 * with either; and the errors: mixing inclusion and exclusion, path collisions, unsupported
 * projection operators.
 */
export const projectionArb: fc.Arbitrary<Json> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.dictionary(pathArb, fc.constantFrom<Json>(1, true), {
          minKeys: 1,
          maxKeys: 3,
          noNullPrototype: true,
        }),
        fc.boolean(),
      )
      .map(([f, noId]) => (noId ? { ...f, _id: 0 } : f)),
  },
  {
    weight: 3,
    arbitrary: fc.dictionary(pathArb, fc.constantFrom<Json>(0, false), {
      minKeys: 1,
      maxKeys: 3,
      noNullPrototype: true,
    }),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(pathArb, sliceArb, fc.option(fc.tuple(pathArb, fc.constantFrom<Json>(0, 1)), { nil: undefined }))
      .map(([p, s, other]) =>
        other ? { [p]: { $slice: s }, [other[0]]: other[1] } : { [p]: { $slice: s } },
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Json>(
      { a: 1, b: 0 },
      { a: 1, 'a.b': 1 },
      { 'a.b': 0, a: 0 },
      { a: { $elemMatch: { x: 1 } } },
      { a: { $meta: 'textScore' } },
      { 'a.$': 1 },
      { a: 'x' },
      { a: { $slice: 'x' } },
      { a: { $slice: [1, -1] } },
      { a: { $slice: [1, 2, 3] } },
      { '': 1 },
      { a: { b: 1 } },
      { a: {} },
    ),
  },
);

// ---- Updates ----------------------------------------------------------------------------------

/** `$push`'s argument: a value, or `$each` with `$slice`/`$sort`/`$position` (each optional, valid or not). */
const pushArgArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: valueArb },
  {
    weight: 4,
    arbitrary: fc
      .record(
        {
          $each: valuesArb,
          $slice: fc.oneof(
            { weight: 8, arbitrary: fc.integer({ min: -3, max: 3 }) },
            fc.constantFrom(...HUGE_COUNTS),
          ),
          $sort: fc.oneof(
            fc.constantFrom<Json>(1, -1),
            fc.dictionary(fc.constantFrom('a', 'b', 'x', 'a.b'), fc.constantFrom(1, -1), {
              minKeys: 1,
              maxKeys: 2,
              noNullPrototype: true,
            }),
          ),
          $position: fc.oneof(
            { weight: 8, arbitrary: fc.integer({ min: -3, max: 3 }) },
            fc.constantFrom(...HUGE_COUNTS),
          ),
        },
        { requiredKeys: ['$each'], noNullPrototype: true },
      )
      .map((r) => r as Json),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Json>(
      { $each: 5 },
      { $each: [1], $slice: 'a' },
      { $each: [1], $sort: 0 },
      { $each: [1], $position: 1.5 },
      { $each: [1], $foo: 1 },
      { $slice: 1 },
      { $each: [1], $sort: { '': 1 } },
    ),
  },
);

/**
 * `$pull`'s condition: a value, a condition on the element (the comparison operators, which is
 * what the server supports there; now and then any operator), or a query on document elements.
 */
const pullArgArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: valueArb },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte'), scalarArb)
      .map(([op, v]) => ({ [op]: v })),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('$in', '$nin'), valuesArb).map(([op, v]) => ({ [op]: v })),
  },
  { weight: 1, arbitrary: filterArbs.ops },
  {
    weight: 2,
    arbitrary: fc.dictionary(fc.constantFrom('a', 'b', 'x'), filterArbs.cond, {
      minKeys: 1,
      maxKeys: 2,
      noNullPrototype: true,
    }),
  },
);

type OpArgs = [string, fc.Arbitrary<Json>];
/** Each update operator with the arguments it takes, valid ones weighted over invalid ones. */
const UPDATE_OPERATORS: OpArgs[] = [
  ['$set', valueArb],
  ['$setOnInsert', valueArb],
  ['$unset', fc.constantFrom<Json>('', 1, true)],
  [
    '$inc',
    fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom<Json>(...NUMBERS) },
      { weight: 1, arbitrary: fc.constantFrom<Json>('1', null, [1]) },
    ),
  ],
  [
    '$mul',
    fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom<Json>(...NUMBERS) },
      { weight: 1, arbitrary: fc.constantFrom<Json>('2', true) },
    ),
  ],
  ['$min', valueArb],
  ['$max', valueArb],
  [
    '$rename',
    fc.oneof(
      { weight: 6, arbitrary: pathArb },
      { weight: 1, arbitrary: fc.constantFrom<Json>('', '$x', 1, 'a.$') },
    ),
  ],
  [
    '$currentDate',
    fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom<Json>(true, { $type: 'date' }, { $type: 'timestamp' }) },
      fc.constantFrom<Json>(false, { $type: 'x' }, 5, {}),
    ),
  ],
  ['$push', pushArgArb],
  [
    '$addToSet',
    fc.oneof(
      { weight: 3, arbitrary: valueArb },
      { weight: 3, arbitrary: valuesArb.map((v) => ({ $each: v })) },
      { weight: 1, arbitrary: fc.constantFrom<Json>({ $each: 5 }, { $each: [1], $slice: 1 }) },
    ),
  ],
  ['$pull', pullArgArb],
  [
    '$pullAll',
    fc.oneof(
      { weight: 5, arbitrary: valuesArb },
      { weight: 1, arbitrary: fc.constantFrom<Json>(5, 'a', null) },
    ),
  ],
  [
    '$pop',
    fc.oneof({ weight: 8, arbitrary: fc.constantFrom<Json>(1, -1) }, fc.constantFrom<Json>(0, 2, 'a')),
  ],
  [
    '$bit',
    fc.oneof(
      {
        weight: 8,
        arbitrary: fc
          .array(
            fc.tuple(
              fc.constantFrom('and', 'or', 'xor'),
              fc.constantFrom(0, 1, 5, -1, -6, 2 ** 52, Number.MAX_SAFE_INTEGER, 2 ** 60, -(2 ** 63)),
            ),
            { minLength: 1, maxLength: 3 },
          )
          .map((ops): Json => Object.fromEntries(ops)),
      },
      fc.constantFrom<Json>({}, 5, { not: 1 }, { and: 1.5 }, { or: '1' }, { xor: 2 ** 63 }, { and: null }),
    ),
  ],
];

/**
 * Positional update paths: `$` (the element the query matched), `$[]` (every element) and
 * `$[<id>]` (the elements arrayFiltersArb's filter for `<id>` selects), nested too.
 */
const positionalPathArb = fc.constantFrom(
  'a.$',
  'a.$[]',
  'a.$[i]',
  'arr.$.x',
  'arr.$[].x',
  'arr.$[e].x',
  'c.$[]',
  'c.$[i].$[]',
  'arr.$[e].x.$[i]',
  '$[]',
  'a.$[I]',
  'a.$.$',
);

/** arrayFilters for the identifiers above, and the ones MongoDB refuses (unused, unnamed, malformed). */
const arrayFiltersArb: fc.Arbitrary<Json> = fc.constantFrom<Json>(
  [{ i: { $gt: 0 } }],
  [{ 'e.x': { $exists: true } }],
  [{ i: { $gt: 0 } }, { 'e.x': 1 }],
  [{ i: { $in: ['a', 1] } }],
  [{ e: { $type: 'object' } }],
  [{ i: 1 }, { i: 2 }],
  [{ i: 1, 'e.x': 2 }],
  [{}],
  [5],
  5,
  [{ i: { $foo: 1 } }],
);

/** `{$op: {path: arg, ...}}` for one operator; the same path under two operators is a conflict. */
const operatorEntryArb: fc.Arbitrary<[string, JsonObject]> = fc
  .constantFrom(...UPDATE_OPERATORS)
  .chain(([op, argArb]) =>
    fc
      .dictionary(
        fc.oneof(
          { weight: 40, arbitrary: pathArb },
          { weight: 4, arbitrary: positionalPathArb },
          { weight: 1, arbitrary: badPathArb },
        ),
        argArb,
        {
          minKeys: 1,
          maxKeys: 2,
          noNullPrototype: true,
        },
      )
      .map((args) => [op, args] as [string, JsonObject]),
  );

/** A document of update operators: 1-3 operators (same-operator entries merge). */
const operatorUpdateArb: fc.Arbitrary<JsonObject> = fc
  .array(operatorEntryArb, { minLength: 1, maxLength: 3 })
  .map((entries) => {
    const out: JsonObject = {};
    for (const [op, args] of entries) out[op] = { ...((out[op] as JsonObject | undefined) ?? {}), ...args };
    return out;
  });

/** Update documents: operators, replacements (keeping or changing `_id`), and refused shapes. */
export const updateDocArb: fc.Arbitrary<JsonObject> = fc.oneof(
  { weight: 12, arbitrary: operatorUpdateArb },
  { weight: 3, arbitrary: docArb },
  {
    weight: 1,
    arbitrary: fc.constantFrom<JsonObject>(
      {},
      { $set: { a: 1 }, b: 2 },
      { $foo: { a: 1 } },
      { $bit: { a: { and: 1 } } },
      { $set: 5 },
      { $inc: [] },
      { $set: {} },
      { $set: { _id: 'other' } },
      { $unset: { _id: 1 } },
      { $rename: { a: 'a' } },
      { $rename: { a: 'a.b' } },
      { $set: { a: 1 }, $inc: { 'a.b': 1 } },
      { $set: { 'a.b': 1, 'a.b.c': 2 } },
      { a: { $b: 1 } },
      { $set: { a: { $b: 1 } } },
      { $set: { a: { 'b.c': 1 } } },
      { $push: { a: { $each: [1], $position: 1, $slice: -1, $sort: { '': 1 } } } },
    ),
  },
);

// ---- Requests ---------------------------------------------------------------------------------

const skipLimitArb = fc.record(
  {
    skip: fc.oneof(
      { weight: 10, arbitrary: fc.integer({ min: 0, max: 5 }) },
      fc.constantFrom(2147483648, 1e15, 1e21),
    ),
    limit: fc.integer({ min: 1, max: 50 }),
  },
  { requiredKeys: [], noNullPrototype: true },
);

/** One step of the fuzz: a document operation, or creating/dropping an index on fuzzed paths. */
export type FuzzAction =
  | { kind: 'read' | 'count' | 'delete' | 'update' | 'create' | SingleRoute; body: JsonObject }
  | { kind: 'createIndex'; body: JsonObject }
  /** Drops one of the indexes the run has made (`pick` modulo their number), or a missing one. */
  | { kind: 'dropIndex'; pick: number };

const readArb = fc
  .record(
    {
      query: queryArb,
      sort: sortArb,
      fields: projectionArb,
      page: skipLimitArb,
    },
    { requiredKeys: ['query'], noNullPrototype: true },
  )
  .map(({ page, ...rest }) => ({ kind: 'read' as const, body: { ...rest, ...(page ?? {}) } as JsonObject }));

const optionalUpsertArb = fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, fc.boolean());
const optionalArrayFiltersArb = fc.oneof(
  { weight: 12, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: arrayFiltersArb },
);

/** The fields of a body that are present: `undefined` stands for leaving one out. */
const present = (fields: Record<string, Json | undefined>): JsonObject =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as JsonObject;

/** Filters for the identifiers positionalPathArb uses, so that most positional updates can apply. */
const FILTER_FOR: Record<string, JsonObject> = { i: { i: { $gt: 0 } }, e: { 'e.x': { $exists: true } } };

/**
 * arrayFilters for an update: usually the filters of the identifiers its paths use (none without
 * one), sometimes a random list (mostly refused: unused or undefined identifiers).
 */
const arrayFiltersFor = (doc: JsonObject, random: Json | undefined): Json | undefined => {
  if (random !== undefined) return random;
  const ids = [
    ...new Set([...JSON.stringify(doc).matchAll(/\$\[([a-zA-Z]\w*)\]/g)].map((m) => m[1] as string)),
  ];
  const filters = ids.map((id) => FILTER_FOR[id]).filter((f) => f !== undefined);
  return filters.length > 0 ? filters : undefined;
};

const updateArb = fc
  .tuple(queryArb, updateDocArb, optionalUpsertArb, optionalArrayFiltersArb)
  .map(([query, doc, upsert, random]) => ({
    kind: 'update' as const,
    body: present({ query, doc, upsert, arrayFilters: arrayFiltersFor(doc, random) }),
  }));

/** The single-document operations: each route with the body fields it takes, sometimes left out. */
const SINGLE_ROUTES = {
  'update-one': { doc: true, fields: false, arrayFilters: true },
  'replace-one': { doc: true, fields: false, arrayFilters: false },
  'delete-one': { doc: false, fields: false, arrayFilters: false },
  'find-one-and-update': { doc: true, fields: true, arrayFilters: true },
  'find-one-and-replace': { doc: true, fields: true, arrayFilters: false },
  'find-one-and-delete': { doc: false, fields: true, arrayFilters: false },
} as const;
type SingleRoute = keyof typeof SINGLE_ROUTES;

const singleArb = fc
  .record(
    {
      kind: fc.constantFrom(...(Object.keys(SINGLE_ROUTES) as SingleRoute[])),
      query: queryArb,
      // What each route takes (operators, or a replacement), and now and then the other.
      operators: fc.oneof(
        { weight: 8, arbitrary: operatorUpdateArb },
        { weight: 1, arbitrary: updateDocArb },
      ),
      replacement: fc.oneof({ weight: 8, arbitrary: docArb }, { weight: 1, arbitrary: updateDocArb }),
      sort: fc.option(sortArb, { nil: undefined }),
      fields: fc.option(projectionArb, { nil: undefined }),
      upsert: optionalUpsertArb,
      arrayFilters: optionalArrayFiltersArb,
      returnDocument: fc.option(fc.constantFrom('before', 'after'), { nil: undefined }),
    },
    { noNullPrototype: true },
  )
  .map(({ kind, query, operators, replacement, sort, fields, upsert, arrayFilters, returnDocument }) => {
    const takes = SINGLE_ROUTES[kind];
    const finds = kind.startsWith('find-');
    const doc = kind.includes('replace') ? replacement : operators;
    return {
      kind,
      body: present({
        query,
        sort,
        ...(takes.doc ? { doc, upsert } : {}),
        ...(takes.fields ? { fields } : {}),
        ...(takes.arrayFilters ? { arrayFilters: arrayFiltersFor(doc, arrayFilters) } : {}),
        ...(finds && takes.doc ? { returnDocument } : {}),
      }),
    };
  });

const createArb = fc
  .oneof(
    { weight: 10, arbitrary: fc.array(docArb, { minLength: 1, maxLength: 5 }) },
    // Field names MongoDB refuses on insert, an array `_id`, a non-document.
    {
      weight: 1,
      arbitrary: fc.constantFrom<Json[]>(
        [{ $a: 1 }],
        [{ 'a.b': 1 }],
        [{ _id: [1] }],
        [5],
        [{ a: { $b: 1 } }],
      ),
    },
  )
  .map((docs) => ({ kind: 'create' as const, body: { docs } as JsonObject }));

const indexKeyArb = fc.array(
  fc.oneof(
    pathArb.map((p) => p as Json),
    fc.tuple(pathArb, fc.constantFrom(1, -1)).map(([p, d]) => ({ [p]: d }) as Json),
  ),
  { minLength: 1, maxLength: 2 },
);

const createIndexArb = fc
  .tuple(
    fc.integer({ min: 0, max: 9 }),
    fc.oneof(
      { weight: 8, arbitrary: indexKeyArb },
      { weight: 1, arbitrary: badPathArb.map((p) => [p as Json]) },
    ),
    fc.boolean(),
  )
  .map(([n, key, unique]) => ({
    kind: 'createIndex' as const,
    body: { name: `fz${n}`, key, ...(unique ? { unique: true } : {}) } as JsonObject,
  }));

/**
 * The request mix: mostly reads and updates (where the grammar is), counts and creates to keep
 * the collection populated, a few deletes, and now and then an index change so that both the
 * plain and the indexed SQL shapes run.
 */
export const actionArb: fc.Arbitrary<FuzzAction> = fc.oneof(
  { weight: 34, arbitrary: readArb },
  { weight: 10, arbitrary: queryArb.map((query) => ({ kind: 'count' as const, body: { query } })) },
  { weight: 30, arbitrary: updateArb },
  { weight: 10, arbitrary: singleArb },
  { weight: 12, arbitrary: createArb },
  { weight: 3, arbitrary: queryArb.map((query) => ({ kind: 'delete' as const, body: { query } })) },
  { weight: 1, arbitrary: createIndexArb },
  { weight: 1, arbitrary: fc.nat(8).map((pick) => ({ kind: 'dropIndex' as const, pick })) },
);
