// biome-ignore-all lint/suspicious/noThenProperty: MongoDB's $cond and $switch name an argument `then`.
/**
 * One table of cases per expression operator, evaluated on DOC: the values and errors of MongoDB's
 * manual page of each operator (its examples, with their documents' values put into DOC or given
 * as literals), plus null and missing operands and the errors of wrong types, with MongoDB's
 * messages (src/mongo/db/pipeline/expression.cpp), worded where ours name no value. Numbers in
 * messages are typed as `$type` names them: `int` for an integral number of 32 bits.
 * expressions.test.ts runs each case three ways: compiled to SQL, evaluated in TypeScript, and
 * through `$expr` on the read route.
 */
import type { Json, JsonObject } from '../../mongo/value/json.js';

export const DOC: JsonObject = {
  _id: 1,
  a: 5,
  b: 2,
  x: 1.5,
  neg: -3,
  s: 'Hello World',
  u: 'héllo',
  n: null,
  arr: [1, 2, 3],
  empty: [],
  obj: { k: 1 },
  docs: [{ k: 1 }, { k: 2 }, { j: 3 }],
  t: true,
  str5: '5',
  long: 'x'.repeat(40_000),
  big: 1e300,
  tiny: 1e-300,
};

/** The expression's value is missing (`$project` would leave the field out). */
export const MISSING = Symbol('missing');

export type Expected = Json | typeof MISSING | { error: string };

export type ExpressionCase = [expr: Json, expected: Expected];

const error = (message: string) => ({ error: message });

export const EXPRESSION_CASES: Record<string, ExpressionCase[]> = {
  'field paths and $literal': [
    ['$a', 5],
    ['$obj.k', 1],
    ['$docs.k', [1, 2]],
    ['$missing', MISSING],
    ['$n', null],
    [{ $literal: '$a' }, '$a'],
    [{ $literal: { $add: [1] } }, { $add: [1] }],
  ],
  $add: [
    [{ $add: ['$a', '$b'] }, 7],
    [{ $add: [0.1, 0.2] }, 0.30000000000000004],
    [{ $add: [] }, 0],
    [{ $add: [1, '$n'] }, null],
    [{ $add: [1, '$missing'] }, null],
    [{ $add: ['$s', 1] }, error('$add only supports numeric or date types, not string')],
    [{ $add: [null, '$s'] }, null],
    [{ $add: ['$big', '$big'] }, 2e300],
  ],
  $subtract: [
    [{ $subtract: ['$a', '$b'] }, 3],
    [{ $subtract: ['$a', null] }, null],
    [{ $subtract: ['$s', 1] }, error("can't $subtract int from string")],
    [{ $subtract: [1] }, error('Expression $subtract takes exactly 2 arguments. 1 were passed in')],
  ],
  $multiply: [
    [{ $multiply: ['$a', '$x'] }, 7.5],
    [{ $multiply: ['$tiny', '$tiny'] }, 0],
    [{ $multiply: ['$a', '$missing'] }, null],
    [{ $multiply: ['$a', '$s'] }, error('$multiply only supports numeric types, not string')],
    [{ $multiply: ['$big', '$big'] }, error('$multiply gave a result that is not a finite number')],
  ],
  $divide: [
    [{ $divide: ['$a', '$b'] }, 2.5],
    [{ $divide: [1, 3] }, 0.3333333333333333],
    [{ $divide: ['$a', 0] }, error("can't $divide by zero")],
    [{ $divide: ['$s', null] }, null],
    [{ $divide: ['$s', 1] }, error('$divide only supports numeric types, not string and int')],
    [{ $divide: ['$tiny', '$big'] }, 0],
  ],
  $mod: [
    [{ $mod: ['$a', '$b'] }, 1],
    [{ $mod: [-7, 3] }, -1],
    [{ $mod: [5.5, 2] }, 1.5],
    [{ $mod: ['$a', 0] }, error("can't $mod by zero")],
    [{ $mod: [null, 2] }, null],
    [{ $mod: [true, 2] }, error('$mod only supports numeric types, not bool and int')],
  ],
  $abs: [
    [{ $abs: -5 }, 5],
    [{ $abs: '$neg' }, 3],
    [{ $abs: null }, null],
    [{ $abs: '$missing' }, null],
    [{ $abs: '$s' }, error('$abs only supports numeric types, not string')],
    [{ $abs: [1, 2] }, error('Expression $abs takes exactly 1 arguments. 2 were passed in')],
  ],
  $ceil: [
    [{ $ceil: 1.2 }, 2],
    [{ $ceil: -1.2 }, -1],
    [{ $ceil: null }, null],
    [{ $ceil: 'x' }, error('$ceil only supports numeric types, not string')],
  ],
  $floor: [
    [{ $floor: 1.8 }, 1],
    [{ $floor: -1.2 }, -2],
    [{ $floor: '$missing' }, null],
  ],
  $round: [
    [{ $round: [19.25, 1] }, 19.2],
    [{ $round: [28.73, 1] }, 28.7],
    [{ $round: [-45.39, 1] }, -45.4],
    [{ $round: [1234.5678, -2] }, 1200],
    [{ $round: [1234.5678, 2] }, 1234.57],
    [{ $round: 3.5 }, 4],
    [{ $round: -2.5 }, -2],
    [{ $round: [2.5, 0] }, 2],
    [{ $round: '$a' }, 5],
    [{ $round: null }, null],
    [{ $round: [1.5, null] }, null],
    [{ $round: [1.5, 101] }, error("$round's place must be between -20 and 100")],
    [{ $round: [1.5, 1.5] }, error("$round's place must be an integer, not double")],
    [{ $round: '$s' }, error('$round only supports numeric types, not string')],
  ],
  $trunc: [
    [{ $trunc: [19.25, 1] }, 19.2],
    [{ $trunc: [-45.39, 1] }, -45.3],
    [{ $trunc: [23.298, -1] }, 20],
    [{ $trunc: [1.298, 0] }, 1],
    [{ $trunc: -1.6 }, -1],
    [{ $trunc: '$missing' }, null],
  ],
  $sqrt: [
    [{ $sqrt: 25 }, 5],
    [{ $sqrt: 2 }, Math.SQRT2],
    [{ $sqrt: -1 }, error("$sqrt's argument must be greater than or equal to 0")],
    [{ $sqrt: null }, null],
  ],
  $pow: [
    [{ $pow: [5, 0] }, 1],
    [{ $pow: [5, 2] }, 25],
    [{ $pow: [5, -2] }, 0.04],
    [{ $pow: [-5, 0.5] }, error('$pow gave a result that is not a finite number')],
    [{ $pow: [0, -1] }, error('$pow cannot take a base of 0 and a negative exponent')],
    [{ $pow: [2, null] }, null],
    [{ $pow: ['$s', 2] }, error("$pow's base must be numeric, not string")],
    [{ $pow: [2, '$s'] }, error("$pow's exponent must be numeric, not string")],
    [{ $pow: [10, -400] }, 0],
  ],
  $exp: [
    [{ $exp: 0 }, 1],
    [{ $exp: 1 }, Math.E],
    [{ $exp: 710 }, error('$exp gave a result that is not a finite number')],
    [{ $exp: -1000 }, 0],
    [{ $exp: '$missing' }, null],
  ],
  $ln: [
    [{ $ln: 1 }, 0],
    [{ $ln: 0 }, error("$ln's argument must be a positive number")],
    [{ $ln: 'x' }, error('$ln only supports numeric types, not string')],
  ],
  $log10: [
    [{ $log10: 100 }, 2],
    [{ $log10: 1000 }, 3],
    [{ $log10: -1 }, error("$log10's argument must be a positive number")],
    [{ $log10: null }, null],
  ],
  $eq: [
    [{ $eq: ['$a', 5] }, true],
    [{ $eq: ['$a', '$str5'] }, false],
    [{ $eq: ['$missing', null] }, false],
    [{ $eq: ['$missing', '$alsoMissing'] }, true],
    [{ $eq: [[1, 2], '$arr'] }, false],
    [{ $eq: ['$obj', { k: 1 }] }, true],
    [{ $eq: [5, 5.0] }, true],
  ],
  $ne: [
    [{ $ne: ['$a', '$b'] }, true],
    [{ $ne: ['$n', null] }, false],
    [{ $ne: ['$missing', null] }, true],
  ],
  $gt: [
    [{ $gt: ['$a', '$b'] }, true],
    [{ $gt: ['$s', 5] }, true],
    [{ $gt: ['$n', '$missing'] }, true],
    [{ $gt: [true, 'z'] }, true],
    [{ $gt: ['$arr', '$obj'] }, true],
    [{ $gt: ['$u', '$s'] }, true],
  ],
  $gte: [
    [{ $gte: ['$a', 5] }, true],
    [{ $gte: ['$missing', null] }, false],
  ],
  $lt: [
    [{ $lt: [null, 0] }, true],
    [{ $lt: ['$arr', [1, 2, 4]] }, true],
    [{ $lt: [{ a: 1 }, { a: 1, b: 0 }] }, true],
  ],
  $lte: [
    [{ $lte: ['$missing', null] }, true],
    [{ $lte: ['$a', 4] }, false],
  ],
  $cmp: [
    [{ $cmp: ['$a', '$b'] }, 1],
    [{ $cmp: ['$b', '$a'] }, -1],
    [{ $cmp: [5, 5.0] }, 0],
    [{ $cmp: ['abc', 'abd'] }, -1],
  ],
  $and: [
    [{ $and: [1, 'green'] }, true],
    [{ $and: [] }, true],
    [{ $and: [true, 0] }, false],
    [{ $and: ['$missing'] }, false],
    [{ $and: [null, true] }, false],
    [{ $and: [false, { $divide: [1, 0] }] }, false],
    [{ $and: ['$missing', { $divide: [1, 0] }] }, false],
  ],
  $or: [
    [{ $or: [] }, false],
    [{ $or: [0, '$s'] }, true],
    [{ $or: [false, null, '$missing'] }, false],
    [{ $or: [true, { $divide: [1, 0] }] }, true],
    [{ $or: ['$t', { $sqrt: -1 }] }, true],
  ],
  $not: [
    [{ $not: [0] }, true],
    [{ $not: [[false]] }, false],
    [{ $not: '$t' }, false],
    [{ $not: ['$missing'] }, true],
  ],
  $cond: [
    [{ $cond: [{ $gte: ['$a', 5] }, 30, 20] }, 30],
    [{ $cond: { if: false, then: 1, else: 2 } }, 2],
    [{ $cond: [true, 1, { $divide: [1, 0] }] }, 1],
    // An argument not taken is never evaluated, also where it is constant (the SQL must not
    // compute it while planning).
    [{ $cond: ['$t', 1, { $divide: [1, 0] }] }, 1],
    [{ $cond: ['$missing', 1, '$missing'] }, MISSING],
    [{ $cond: { if: true, then: 1 } }, error("Missing 'else' parameter to $cond")],
    [{ $cond: { if: true, then: 1, else: 2, x: 3 } }, error('Unrecognized parameter to $cond: x')],
  ],
  $ifNull: [
    [{ $ifNull: ['$missing', 'Unspecified'] }, 'Unspecified'],
    [{ $ifNull: ['$n', '$missing', 3] }, 3],
    [{ $ifNull: ['$a', 0] }, 5],
    [{ $ifNull: ['$a', { $ln: 0 }] }, 5],
    [{ $ifNull: ['$n', '$missing'] }, MISSING],
    [{ $ifNull: ['$missing', null] }, null],
    [{ $ifNull: ['$a'] }, error('$ifNull needs at least two arguments, had: 1')],
  ],
  $switch: [
    [
      {
        $switch: {
          branches: [
            { case: { $eq: ['$a', 1] }, then: 'one' },
            { case: { $eq: ['$a', 5] }, then: 'five' },
          ],
          default: 'other',
        },
      },
      'five',
    ],
    [{ $switch: { branches: [{ case: false, then: 1 }], default: '$a' } }, 5],
    [{ $switch: { branches: [{ case: '$t', then: 1 }], default: { $ln: 0 } } }, 1],
    [
      { $switch: { branches: [{ case: false, then: 1 }] } },
      error('$switch could not find a matching branch for an input, and no default was specified'),
    ],
    [{ $switch: { branches: [] } }, error('$switch requires at least one branch')],
    [
      { $switch: { branches: [{ case: true }] } },
      error("$switch requires each branch have a 'then' expression"),
    ],
  ],
  $concat: [
    [{ $concat: ['$s', '!'] }, 'Hello World!'],
    [{ $concat: [] }, ''],
    [{ $concat: ['$s', null] }, null],
    [{ $concat: ['$s', '$missing'] }, null],
    [{ $concat: ['$s', 1] }, error('$concat only supports strings, not int')],
    [
      // 585 parts, within the limit of 1,000; 512 copies of a 40,000-character field.
      Array.from({ length: 3 }).reduce<Json>((e) => ({ $concat: [e, e, e, e, e, e, e, e] }), '$long'),
      error("$concat's result would be larger than 16 MiB"),
    ],
  ],
  $toLower: [
    [{ $toLower: '$s' }, 'hello world'],
    [{ $toLower: 'ÉCOLE' }, 'École'],
    [{ $toLower: null }, ''],
    [{ $toLower: 1.5 }, '1.5'],
    [{ $toLower: [{ a: 1 }] }, error("$toLower: can't convert from BSON type object to String")],
  ],
  $toUpper: [
    [{ $toUpper: 'abc' }, 'ABC'],
    [{ $toUpper: '$missing' }, ''],
    [{ $toUpper: '$u' }, 'HéLLO'],
  ],
  $substrCP: [
    [{ $substrCP: ['$s', 0, 5] }, 'Hello'],
    [{ $substrCP: ['$u', 1, 3] }, 'éll'],
    [{ $substrCP: ['abc', 5, 1] }, ''],
    [{ $substrCP: ['😀x', 0, 1] }, '😀'],
    [{ $substrCP: [null, 0, 1] }, ''],
    [{ $substrCP: ['$s', -1, 2] }, error('$substrCP: the starting index must be a nonnegative integer')],
    [{ $substrCP: ['$s', 0.5, 1] }, error('$substrCP: the starting index must be an integer, found: double')],
    [{ $substrCP: ['$s', 0, '1'] }, error('$substrCP: the length must be an integer, found: string')],
  ],
  $strLenCP: [
    [{ $strLenCP: '$u' }, 5],
    [{ $strLenCP: 'cafétéria' }, 9],
    [{ $strLenCP: '😀' }, 1],
    [{ $strLenCP: '$n' }, error('$strLenCP requires a string argument, found: null')],
    [{ $strLenCP: '$missing' }, error('$strLenCP requires a string argument, found: missing')],
  ],
  $trim: [
    [{ $trim: { input: ' \t x y \n' } }, 'x y'],
    [{ $trim: { input: 'xxaxx', chars: 'x' } }, 'a'],
    [{ $trim: { input: null } }, null],
    [{ $trim: { input: 'a', chars: null } }, null],
    [{ $trim: { input: 'a', chars: '$missing' } }, null],
    [{ $trim: { input: 1, chars: null } }, error('$trim requires its input to be a string, not int')],
    [{ $trim: { input: 1 } }, error('$trim requires its input to be a string, not int')],
    [{ $trim: { chars: 'x' } }, error("$trim requires an 'input' field")],
  ],
  $ltrim: [[{ $ltrim: { input: '  x  ' } }, 'x  ']],
  $rtrim: [[{ $rtrim: { input: 'ab12', chars: '0123456789' } }, 'ab']],
  $split: [
    [{ $split: ['June-15-2013', '-'] }, ['June', '15', '2013']],
    [{ $split: ['', '-'] }, ['']],
    [{ $split: ['a-', '-'] }, ['a', '']],
    [{ $split: [null, '-'] }, null],
    [{ $split: ['a', ''] }, error('$split requires a non-empty separator')],
    [
      { $split: [1, '-'] },
      error('$split requires an expression that evaluates to a string as a first argument, found: int'),
    ],
    [
      { $split: ['a', 1] },
      error('$split requires an expression that evaluates to a string as a second argument, found: int'),
    ],
  ],
  $indexOfCP: [
    [{ $indexOfCP: ['cafeteria', 'e'] }, 3],
    [{ $indexOfCP: ['cafétéria', 'é'] }, 3],
    [{ $indexOfCP: ['cafétéria', 'e'] }, -1],
    [{ $indexOfCP: ['cafétéria', 't'] }, 4],
    [{ $indexOfCP: ['foo.bar.fi', '.', 5] }, 7],
    [{ $indexOfCP: ['vanilla', 'll', 0, 2] }, -1],
    [{ $indexOfCP: ['vanilla', 'nilla', 3, 5] }, -1],
    [{ $indexOfCP: ['abc', ''] }, 0],
    [{ $indexOfCP: ['abc', '', 3] }, 3],
    [{ $indexOfCP: ['abc', '', 4] }, -1],
    [{ $indexOfCP: [null, 'foo'] }, null],
    [{ $indexOfCP: ['vanilla', 'll', -1] }, error('$indexOfCP requires a nonnegative starting index')],
    [
      { $indexOfCP: ['abc', null] },
      error('$indexOfCP requires a string as the second argument, found: null'),
    ],
    [
      { $indexOfCP: ['abc'] },
      error('Expression $indexOfCP takes at least 2 arguments, and at most 4, but 1 were passed in'),
    ],
  ],
  $size: [
    [{ $size: '$arr' }, 3],
    [{ $size: '$empty' }, 0],
    [{ $size: [['a', 'b']] }, 2],
    [{ $size: '$s' }, error('The argument to $size must be an array, but was of type: string')],
    [{ $size: '$missing' }, error('The argument to $size must be an array, but was of type: missing')],
  ],
  $arrayElemAt: [
    [{ $arrayElemAt: ['$arr', 0] }, 1],
    [{ $arrayElemAt: ['$arr', -1] }, 3],
    [{ $arrayElemAt: ['$arr', 15] }, MISSING],
    [{ $arrayElemAt: ['$arr', -4] }, MISSING],
    [{ $arrayElemAt: ['$n', 0] }, null],
    [{ $arrayElemAt: ['$s', 0] }, error("$arrayElemAt's first argument must be an array, but is string")],
    [
      { $arrayElemAt: ['$arr', '0'] },
      error("$arrayElemAt's second argument must be a numeric value, but is string"),
    ],
    [
      { $arrayElemAt: ['$arr', 1.5] },
      error("$arrayElemAt's second argument must be representable as a 32-bit integer"),
    ],
  ],
  $in: [
    [{ $in: [2, '$arr'] }, true],
    [{ $in: ['abc', ['xyz', 'abc']] }, true],
    [{ $in: ['xy', ['xyz']] }, false],
    [{ $in: [[1, 2], [[1, 2]]] }, true],
    [{ $in: ['$missing', [null]] }, false],
    [{ $in: [1, '$s'] }, error('$in requires an array as a second argument, found: string')],
  ],
  $isArray: [
    [{ $isArray: '$arr' }, true],
    [{ $isArray: ['$s'] }, false],
    [{ $isArray: '$missing' }, false],
  ],
  $concatArrays: [
    [{ $concatArrays: [['hello', ' '], ['world']] }, ['hello', ' ', 'world']],
    [{ $concatArrays: ['$arr', '$empty', [[4]]] }, [1, 2, 3, [4]]],
    [{ $concatArrays: ['$arr', null] }, null],
    [{ $concatArrays: ['$arr', '$s'] }, error('$concatArrays only supports arrays, not string')],
  ],
  $type: [
    [{ $type: 'a' }, 'string'],
    [{ $type: '$a' }, 'int'],
    [{ $type: '$x' }, 'double'],
    [{ $type: '$big' }, 'double'],
    [{ $type: '$missing' }, 'missing'],
    [{ $type: '$n' }, 'null'],
    [{ $type: '$arr' }, 'array'],
    [{ $type: '$obj' }, 'object'],
    [{ $type: '$t' }, 'bool'],
  ],
  'objects and arrays of expressions': [
    [{ sum: { $add: ['$a', 1] }, gone: '$missing' }, { sum: 6 }],
    [
      ['$a', '$missing', { $literal: 1 }],
      [5, null, 1],
    ],
  ],
  // docs/storage.md, Deviations: on the number's decimal form (MongoDB: 2.67 and 0.0999…).
  'deviations: $round and $mod on the decimal form': [
    [{ $round: [2.675, 2] }, 2.68],
    [{ $mod: [5.5, 0.1] }, 0],
  ],
  'unknown operators and malformed expressions': [
    [{ $foo: 1 }, error("Unknown or unsupported expression operator '$foo'")],
    [{ $add: [1], $abs: 1 }, error("with an operator ('$add') must have exactly one field")],
    ['$$nope', error("Use of undefined variable '$$nope'")],
  ],
};

export const CASES: [name: string, expr: Json, expected: Expected][] = Object.entries(
  EXPRESSION_CASES,
).flatMap(([op, cases]) =>
  cases.map(([expr, expected]): [string, Json, Expected] => [
    `${op}: ${JSON.stringify(expr).slice(0, 150)}`,
    expr,
    expected,
  ]),
);
