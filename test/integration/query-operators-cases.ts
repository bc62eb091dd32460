/**
 * The cases of query-operators-manual.test.ts, which runs them through the API on both evaluators,
 * and of test/unit/mongo/filter-operands.test.ts, which runs them on filter/match.ts alone. Where
 * they come from is said there.
 */
import type { Json, JsonObject } from '../../mongo/value/json.js';

export interface OperatorCase {
  name: string;
  docs: JsonObject[];
  query: JsonObject;
  ids: Json[];
}

const docs = (values: [Json, Json][], field = 'val'): JsonObject[] =>
  values.map(([_id, v]) => ({ _id, [field]: v }));

// array_comparison_correctness.js's documents, without ids 16 to 23 (MinKey and MaxKey).
const JSTEST = docs([
  [0, [1, 2]],
  [1, [3, 4]],
  [2, [3, 1]],
  [3, { test: 5 }],
  [4, [{ test: 7 }]],
  [5, [true, false]],
  [6, 2],
  [7, 3],
  [8, 4],
  [9, [2]],
  [10, [3]],
  [11, [4]],
  [12, [1, true]],
  [13, [true, 1]],
  [14, [1, 4]],
  [15, [null]],
  [24, true],
  [25, false],
]);

// FerretDB's mongosh runs: ltexample, and gtexample (the same but for nested-string).
const LT_EXAMPLE = docs(
  [
    ['scalar-null', null],
    ['scalar-number', 1],
    ['scalar-string', 'a'],
    ['array-empty', []],
    ['array-null', [null]],
    ['array-mixed', [1, 'z', 'b']],
    ['array-string', ['d']],
    ['array-bool', [false]],
    ['nested-empty', [[]]],
    ['nested-mixed', [['c'], [1, 'z', 'b']]],
    ['nested-string', [['g']]],
    ['nested-bool', [[true]]],
  ],
  'v',
);
const GT_EXAMPLE = LT_EXAMPLE.map((d) => (d._id === 'nested-string' ? { ...d, v: [['a']] } : d));

const OBJECTS = docs([
  [1, { x: 1 }],
  [2, { x: 2 }],
  [3, { x: 'a' }],
  [4, { y: 1 }],
  [5, { x: 1, y: 1 }],
  [6, {}],
  [7, [{ x: 0 }]],
  [8, 5],
  [9, [[{ x: 9 }]]],
]);

// The manual's $all page.
const INVENTORY: JsonObject[] = [
  {
    _id: 'xyz',
    tags: ['school', 'book', 'bag', 'headphone', 'appliance'],
    qty: [
      { size: 'S', num: 10, color: 'blue' },
      { size: 'M', num: 45, color: 'blue' },
      { size: 'L', num: 100, color: 'green' },
    ],
  },
  {
    _id: 'abc',
    tags: ['appliance', 'school', 'book'],
    qty: [
      { size: '6', num: 100, color: 'green' },
      { size: '6', num: 50, color: 'blue' },
      { size: '8', num: 100, color: 'brown' },
    ],
  },
  {
    _id: 'efg',
    tags: ['school', 'book'],
    qty: [
      { size: 'S', num: 10, color: 'blue' },
      { size: 'M', num: 100, color: 'blue' },
      { size: 'L', num: 100, color: 'green' },
    ],
  },
  { _id: 'ijk', tags: ['electronics', 'school'], qty: [{ size: 'M', num: 100, color: 'green' }] },
];

// The manual's $type page (its NumberLong and NumberInt as JSON numbers).
const ADDRESS_BOOK: JsonObject[] = [
  { _id: 1, address: '2030 Martian Way', zipCode: '90698345' },
  { _id: 2, address: '156 Lunar Place', zipCode: 43339374 },
  { _id: 3, address: '2324 Pluto Place', zipCode: 3921412 },
  { _id: 4, address: '55 Saturn Ring', zipCode: 88602117 },
  { _id: 5, address: '104 Venus Drive', zipCode: ['834847278', '1893289032'] },
];
const GRADES: JsonObject[] = [
  { _id: 1, name: 'Alice King', classAverage: 87.33333333333333 },
  { _id: 2, name: 'Bob Jenkins', classAverage: '83.52' },
  { _id: 3, name: 'Cathy Hart', classAverage: '94.06' },
  { _id: 4, name: 'Drew Williams', classAverage: 93 },
];
const SENSORS: JsonObject[] = [
  { _id: 1, readings: [25, 23, ['Warn: High Temp!', 55], ['ERROR: SYSTEM SHUTDOWN!', 66]] },
  { _id: 2, readings: [25, 25, 24, 23] },
  { _id: 3, readings: [22, 24, []] },
  { _id: 4, readings: [] },
  { _id: 5, readings: 24 },
];
const EVERY_TYPE = docs([
  [1, 1.5],
  [2, 'a'],
  [3, { x: 1 }],
  [4, [1]],
  [5, true],
  [6, null],
  [7, 7],
  [8, 2 ** 31],
]);

// The manual's $mod page, then the edges: negative values, non-integers, non-numbers, 2^53.
const MOD_INVENTORY: JsonObject[] = [
  { _id: 1, item: 'abc123', qty: 0 },
  { _id: 2, item: 'xyz123', qty: 5 },
  { _id: 3, item: 'ijk123', qty: 12 },
];
const MOD_EDGES = docs(
  [
    [1, -4],
    [2, -5],
    [3, 5],
    [4, 4],
    [5, -5.5],
    [6, 5.9],
    [7, '5'],
    [8, null],
    [9, true],
    [10, [8, 5]],
    [11, 2 ** 53],
    [12, 1e300],
    [13, -0.5],
  ],
  'qty',
);

export const OPERATOR_CASES: OperatorCase[] = [
  // Comparisons with arrays: the whole array and the elements that are arrays, in BSON order.
  {
    name: '$lt 2: numbers and number elements',
    docs: JSTEST,
    query: { val: { $lt: 2 } },
    ids: [0, 2, 12, 13, 14],
  },
  { name: '$gt 2', docs: JSTEST, query: { val: { $gt: 2 } }, ids: [1, 2, 7, 8, 10, 11, 14] },
  { name: '$gt true: nothing is above true', docs: JSTEST, query: { val: { $gt: true } }, ids: [] },
  { name: '$lt true: false, also as an element', docs: JSTEST, query: { val: { $lt: true } }, ids: [5, 25] },
  { name: '$lt [-1]: null first', docs: JSTEST, query: { val: { $lt: [-1] } }, ids: [15] },
  {
    name: '$lt [3]: arrays only, element by element',
    docs: JSTEST,
    query: { val: { $lt: [3] } },
    ids: [0, 9, 12, 14, 15],
  },
  {
    name: '$gt [2]: a document or a boolean element is above a number',
    docs: JSTEST,
    query: { val: { $gt: [2] } },
    ids: [1, 2, 4, 5, 10, 11, 13],
  },
  { name: '$gt [15]', docs: JSTEST, query: { val: { $gt: [15] } }, ids: [4, 5, 13] },
  { name: '$gt [3, 3]', docs: JSTEST, query: { val: { $gt: [3, 3] } }, ids: [1, 4, 5, 11, 13] },
  {
    name: '$lte [3] takes the equal array',
    docs: JSTEST,
    query: { val: { $lte: [3] } },
    ids: [0, 9, 10, 12, 14, 15],
  },
  { name: '$gte [3, 4]', docs: JSTEST, query: { val: { $gte: [3, 4] } }, ids: [1, 4, 5, 11, 13] },
  {
    name: '$lt [3, 2]: a prefix comes first ([3] < [3, 2])',
    docs: JSTEST,
    query: { val: { $lt: [3, 2] } },
    ids: [0, 2, 9, 10, 12, 14, 15],
  },
  {
    name: '$gt [] is every non-empty array',
    docs: JSTEST,
    query: { val: { $gt: [] } },
    ids: [0, 1, 2, 4, 5, 9, 10, 11, 12, 13, 14, 15],
  },
  {
    name: '$lt []: nothing is below the empty array',
    docs: JSTEST,
    query: { val: { $lt: [] } },
    ids: [],
  },
  {
    name: "mongosh: $lt 'c' (strings and string elements)",
    docs: LT_EXAMPLE,
    query: { v: { $lt: 'c' } },
    ids: ['scalar-string', 'array-mixed'],
  },
  {
    name: "mongosh: $lt ['c'] (arrays, and arrays holding a smaller array)",
    docs: LT_EXAMPLE,
    query: { v: { $lt: ['c'] } },
    ids: ['array-empty', 'array-null', 'array-mixed', 'nested-empty', 'nested-mixed'],
  },
  {
    name: "mongosh: $lt [['c']]",
    docs: LT_EXAMPLE,
    query: { v: { $lt: [['c']] } },
    ids: [
      'array-empty',
      'array-null',
      'array-mixed',
      'array-string',
      'nested-empty',
      'nested-mixed',
      'nested-string',
    ],
  },
  {
    name: "mongosh: $gt 'c'",
    docs: GT_EXAMPLE,
    query: { v: { $gt: 'c' } },
    ids: ['array-mixed', 'array-string'],
  },
  {
    name: "mongosh: $gt [['c']]",
    docs: GT_EXAMPLE,
    query: { v: { $gt: [['c']] } },
    ids: ['array-bool', 'nested-mixed', 'nested-bool'],
  },
  // Comparisons with documents: field by field (type, name, value), a prefix first.
  { name: '$gt {x: 1}', docs: OBJECTS, query: { val: { $gt: { x: 1 } } }, ids: [2, 3, 4, 5] },
  {
    name: '$lt {x: 1} (and an element of an array)',
    docs: OBJECTS,
    query: { val: { $lt: { x: 1 } } },
    ids: [6, 7],
  },
  { name: '$lte {x: 1}', docs: OBJECTS, query: { val: { $lte: { x: 1 } } }, ids: [1, 6, 7] },
  {
    name: '$gte {} is every document',
    docs: OBJECTS,
    query: { val: { $gte: {} } },
    ids: [1, 2, 3, 4, 5, 6, 7],
  },
  {
    name: "the field's type before its name: {b: 1} < {a: 'x'}",
    docs: docs([
      [1, { b: 1 }],
      [2, { a: 'x' }],
    ]),
    query: { val: { $lt: { a: 'x' } } },
    ids: [1],
  },
  {
    name: 'nested documents compare recursively, numbers by value',
    docs: docs([
      [1, { a: { b: 9 } }],
      [2, { a: { b: 10 } }],
    ]),
    query: { val: { $gt: { a: { b: 9 } } } },
    ids: [2],
  },
  {
    name: "a dotted path reaches documents in an array's documents",
    docs: docs([
      [1, [{ b: { x: 2 } }, { b: { x: 0 } }]],
      [2, [{ b: { x: 1 } }]],
      [3, { b: [{ x: 3 }] }],
    ]),
    query: { 'val.b': { $gt: { x: 1 } } },
    ids: [1, 3],
  },
  {
    name: 'fields compare in JSONB order, shorter names first: {aa: 1, b: 5} is {b: 5, aa: 1} (MongoDB compares aa first)',
    docs: docs([[1, { aa: 1, b: 5 }]]),
    query: { val: { $gt: { ab: 0 } } },
    ids: [1],
  },
  {
    name: 'two bounds, an object range',
    docs: OBJECTS,
    query: { val: { $gt: { x: 1 }, $lt: { x: 'a' } } },
    ids: [2, 4, 5],
  },
  {
    name: '$not of an object comparison takes other types and missing fields',
    docs: [...OBJECTS, { _id: 10 }],
    query: { val: { $not: { $gte: { x: 1 } } } },
    ids: [6, 7, 8, 9, 10],
  },
  {
    name: 'value-form $elemMatch compares each element as it is',
    docs: docs([
      [1, [[2], 3]],
      [2, [[0], 3]],
      [3, [{ x: 1 }]],
    ]),
    query: { val: { $elemMatch: { $gt: [1] } } },
    ids: [1],
  },
  {
    name: 'value-form $elemMatch with an object equality and range',
    docs: docs([
      [1, [{ x: 1 }, 2]],
      [2, [{ x: 2 }]],
      [3, [[{ x: 1 }]]],
    ]),
    query: { val: { $elemMatch: { $in: [{ x: 1 }, 7], $lte: { x: 1 } } } },
    ids: [1],
  },
  // $all of $elemMatch conditions.
  {
    name: 'manual: $all with $elemMatch',
    docs: INVENTORY,
    query: {
      qty: {
        $all: [{ $elemMatch: { size: 'M', num: { $gt: 50 } } }, { $elemMatch: { num: 100, color: 'green' } }],
      },
    },
    ids: ['efg', 'ijk'],
  },
  {
    name: 'manual: $all of values',
    docs: INVENTORY,
    query: { tags: { $all: ['appliance', 'school', 'book'] } },
    ids: ['xyz', 'abc'],
  },
  {
    name: '$all of one $elemMatch on values',
    docs: INVENTORY,
    query: { tags: { $all: [{ $elemMatch: { $gte: 'e', $lt: 'f' } }] } },
    ids: ['ijk'],
  },
  // $type
  { name: 'manual: $type 2', docs: ADDRESS_BOOK, query: { zipCode: { $type: 2 } }, ids: [1, 5] },
  {
    name: "manual: $type 'string'",
    docs: ADDRESS_BOOK,
    query: { zipCode: { $type: 'string' } },
    ids: [1, 5],
  },
  {
    name: "manual: $type 'number'",
    docs: ADDRESS_BOOK,
    query: { zipCode: { $type: 'number' } },
    ids: [2, 3, 4],
  },
  {
    name: 'manual: $type [2, 1] (93 is an int)',
    docs: GRADES,
    query: { classAverage: { $type: [2, 1] } },
    ids: [1, 2, 3],
  },
  {
    name: "manual: $type ['string', 'double']",
    docs: GRADES,
    query: { classAverage: { $type: ['string', 'double'] } },
    ids: [1, 2, 3],
  },
  {
    name: "manual: $type 'array'",
    docs: SENSORS,
    query: { readings: { $type: 'array' } },
    ids: [1, 2, 3, 4],
  },
  { name: '$type 3 and 4', docs: EVERY_TYPE, query: { val: { $type: [3, 4] } }, ids: [3, 4] },
  { name: "$type 8 and 'null'", docs: EVERY_TYPE, query: { val: { $type: [8, 'null'] } }, ids: [5, 6] },
  {
    name: "$type 16 'int': integral within int32 (the array's element too)",
    docs: EVERY_TYPE,
    query: { val: { $type: 16 } },
    ids: [4, 7],
  },
  {
    name: "$type 1 'double': every other number",
    docs: EVERY_TYPE,
    query: { val: { $type: 1 } },
    ids: [1, 8],
  },
  {
    name: 'types with no JSON form match nothing',
    docs: EVERY_TYPE,
    query: {
      val: {
        $type: [
          'binData',
          'undefined',
          'objectId',
          'date',
          'regex',
          'dbPointer',
          'javascript',
          'symbol',
          'javascriptWithScope',
          'timestamp',
          'minKey',
          'maxKey',
          5,
          6,
          7,
          9,
          11,
          12,
          13,
          14,
          15,
          17,
          -1,
          127,
          'long',
          18,
          'decimal',
          19,
        ],
      },
    },
    ids: [],
  },
  { name: '$type as an integral double code', docs: EVERY_TYPE, query: { val: { $type: 2.0 } }, ids: [2] },
  // $mod
  { name: 'manual: $mod [4, 0]', docs: MOD_INVENTORY, query: { qty: { $mod: [4, 0] } }, ids: [1, 3] },
  { name: 'manual: $mod [4.0, 0]', docs: MOD_INVENTORY, query: { qty: { $mod: [4.0, 0] } }, ids: [1, 3] },
  {
    name: 'manual: $mod [4.5, 0] truncates',
    docs: MOD_INVENTORY,
    query: { qty: { $mod: [4.5, 0] } },
    ids: [1, 3],
  },
  {
    name: 'manual: $mod [4.99, 0] truncates',
    docs: MOD_INVENTORY,
    query: { qty: { $mod: [4.99, 0] } },
    ids: [1, 3],
  },
  {
    name: '$mod [4, -1]: a negative dividend has a negative remainder; values truncate',
    docs: MOD_EDGES,
    query: { qty: { $mod: [4, -1] } },
    ids: [2, 5],
  },
  {
    name: '$mod [4, 1]: array elements, non-integral values',
    docs: MOD_EDGES,
    query: { qty: { $mod: [4, 1] } },
    ids: [3, 6, 10],
  },
  {
    name: '$mod [-4, 1]: the divisor sign does not matter',
    docs: MOD_EDGES,
    query: { qty: { $mod: [-4, 1] } },
    ids: [3, 6, 10],
  },
  {
    name: '$mod [-4, 0]: -0.5 truncates to 0; 2^53 is tested',
    docs: MOD_EDGES,
    query: { qty: { $mod: [-4, 0] } },
    ids: [1, 4, 10, 11, 13],
  },
  {
    name: '$mod [2.9, 1.9] is [2, 1]',
    docs: MOD_EDGES,
    query: { qty: { $mod: [2.9, 1.9] } },
    ids: [3, 6, 10],
  },
  {
    name: '$mod by 2^62, a divisor beyond 2^53',
    docs: MOD_EDGES,
    query: { qty: { $mod: [2 ** 62, 5] } },
    ids: [3, 6, 10],
  },
  {
    name: '$mod by -2^63, the smallest 64-bit integer',
    docs: MOD_EDGES,
    query: { qty: { $mod: [-(2 ** 63), -4] } },
    ids: [1],
  },
  {
    name: '$not $mod takes non-numbers and missing fields',
    docs: MOD_EDGES,
    query: { qty: { $not: { $mod: [2, 0] } } },
    ids: [2, 3, 5, 6, 7, 8, 9, 12],
  },
];

export const OPERATOR_ERRORS: [query: JsonObject, detail: RegExp][] = [
  [
    { qty: { $all: [{ $elemMatch: { num: 100 } }, 5] } },
    /\$all on 'qty' mixes \$elemMatch .*has to be consistent/,
  ],
  [{ qty: { $all: [{ $elemMatch: { num: 100 } }, { num: 5 }] } }, /has to be consistent/],
  [
    { qty: { $all: [5, { $elemMatch: { num: 100 } }] } },
    /\$all on 'qty' holds an operator object \(\$elemMatch\).*no \$ expressions in \$all/,
  ],
  [{ qty: { $all: [{ $gt: 5 }] } }, /no \$ expressions in \$all/],
  [{ qty: { $all: [{ $elemMatch: { num: 100 }, x: 1 }] } }, /must hold nothing else, not also x/],
  [{ qty: { $all: [{ $elemMatch: 5 }] } }, /\$elemMatch on 'qty' needs an object/],
  [{ qty: { $all: 5 } }, /\$all on 'qty' needs an array/],
  [{ a: { $type: 'foo' } }, /\$type on 'a': unknown type name alias "foo"/],
  [{ a: { $type: '2' } }, /unknown type name alias "2"/],
  [{ a: { $type: 'Date' } }, /unknown type name alias "Date"/],
  [{ a: { $type: 100 } }, /\$type on 'a': invalid numerical type code 100/],
  [{ a: { $type: 2.5 } }, /invalid numerical type code 2\.5/],
  [{ a: { $type: 0 } }, /invalid numerical type code 0 \(for a missing field use \{"\$exists": false\}\)/],
  [{ a: { $type: -2 } }, /invalid numerical type code -2/],
  [
    { a: { $type: true } },
    /\$type on 'a': a type must be represented as a number or a string, not a boolean/,
  ],
  [{ a: { $type: null } }, /must be represented as a number or a string, not null/],
  [{ a: { $type: { x: 1 } } }, /must be represented as a number or a string, not an object/],
  [{ a: { $type: [] } }, /\$type on 'a' must match at least one type/],
  [{ a: { $type: ['string', 'foo'] } }, /unknown type name alias "foo"/],
  [{ a: { $type: [[2]] } }, /must be represented as a number or a string, not an array/],
  [{ qty: { $mod: 4 } }, /\$mod on 'qty': malformed mod, needs to be an array, not a number/],
  [{ qty: { $mod: [] } }, /malformed mod, not enough elements/],
  [{ qty: { $mod: [4] } }, /malformed mod, not enough elements/],
  [{ qty: { $mod: [4, 1, 2, 3] } }, /malformed mod, too many elements/],
  [{ qty: { $mod: ['a'] } }, /malformed mod, divisor not a number \(a string\)/],
  [{ qty: { $mod: [null, 1] } }, /malformed mod, divisor not a number \(null\)/],
  [{ qty: { $mod: [4, 'a', 3] } }, /malformed mod, remainder not a number/],
  [{ qty: { $mod: [4, [1]] } }, /malformed mod, remainder not a number \(an array\)/],
  [{ qty: { $mod: [0, 1] } }, /\$mod on 'qty': divisor cannot be 0/],
  [{ qty: { $mod: [0.5, 1] } }, /divisor cannot be 0/],
  [{ qty: { $mod: [-0.9, 0] } }, /divisor cannot be 0/],
  [
    { qty: { $mod: [1e19, 1] } },
    /malformed mod, divisor value is invalid: .* out of bounds for a 64-bit integer/,
  ],
  [{ qty: { $mod: [2 ** 63, 1] } }, /divisor value is invalid/],
  [{ qty: { $mod: [4, -1e300] } }, /malformed mod, remainder value is invalid/],
  [{ val: { $elemMatch: { $elemMatch: { $gt: [1] } } } }, /not supported in an \$elemMatch inside another/],
];
