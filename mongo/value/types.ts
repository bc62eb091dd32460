/**
 * MongoDB's type names and codes as JSON values take them: one JSON number is `int` where it is an
 * integer of 32 bits and `double` otherwise, as the `$type` query operator, `$jsonSchema`'s
 * `bsonType`, the `$type` expression, index-predicate implication and the SQL (mdb.expr_type) decide.
 */
import { isPlainObject, type Json } from './json.js';

/** Whether `n` is an integer of 32 bits: what MongoDB would store as an `int`. */
export function isInt32(n: number): boolean {
  return Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;
}

/**
 * The types `$type` names. JSON has the first group; the others are BSON types with no JSON form,
 * which MongoDB accepts and which match nothing here.
 */
export type TypeName =
  | 'double'
  | 'string'
  | 'object'
  | 'array'
  | 'bool'
  | 'null'
  | 'int'
  | 'long'
  | 'decimal'
  | 'number'
  | 'noJsonForm';

/** MongoDB's type aliases (case-sensitive) and codes, as its findBSONTypeAlias and BSONType. */
const TYPES: readonly (readonly [alias: string, code: number, type: TypeName])[] = [
  ['double', 1, 'double'],
  ['string', 2, 'string'],
  ['object', 3, 'object'],
  ['array', 4, 'array'],
  ['binData', 5, 'noJsonForm'],
  ['undefined', 6, 'noJsonForm'],
  ['objectId', 7, 'noJsonForm'],
  ['bool', 8, 'bool'],
  ['date', 9, 'noJsonForm'],
  ['null', 10, 'null'],
  ['regex', 11, 'noJsonForm'],
  ['dbPointer', 12, 'noJsonForm'],
  ['javascript', 13, 'noJsonForm'],
  ['symbol', 14, 'noJsonForm'],
  ['javascriptWithScope', 15, 'noJsonForm'],
  ['int', 16, 'int'],
  ['timestamp', 17, 'noJsonForm'],
  ['long', 18, 'long'],
  ['decimal', 19, 'decimal'],
  ['minKey', -1, 'noJsonForm'],
  ['maxKey', 127, 'noJsonForm'],
];
const TYPE_ALIASES = new Map<string, TypeName>([
  ...TYPES.map(([a, , t]) => [a, t] as const),
  ['number', 'number'],
]);
const TYPE_CODES = new Map<number, TypeName>(TYPES.map(([, c, t]) => [c, t]));
export const TYPE_ALIAS_NAMES: readonly string[] = [...TYPE_ALIASES.keys()];
export const TYPE_CODE_NUMBERS: readonly number[] = [...TYPE_CODES.keys()];

/** A type alias of `$type` (and `$jsonSchema`'s `bsonType`), or undefined. */
export function typeAlias(alias: string): TypeName | undefined {
  return TYPE_ALIASES.get(alias);
}

/** A type code of `$type`, or undefined. */
export function typeOfCode(code: number): TypeName | undefined {
  return Number.isInteger(code) ? TYPE_CODES.get(code) : undefined;
}

/** Whether `v` is of the type `$type` names `t` (JSON's types; the others match nothing). */
export function hasType(v: Json, t: string): boolean {
  switch (t) {
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isPlainObject(v);
    case 'null':
      return v === null;
    case 'bool':
      return typeof v === 'boolean';
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number';
    case 'int':
      return typeof v === 'number' && isInt32(v);
    case 'double':
      return typeof v === 'number' && !isInt32(v);
    default:
      // long and decimal (JSON has one number type), and the BSON types with no JSON form: the
      // compiler matches nothing for them.
      return false;
  }
}

/** The type names of `$type` and of the messages (mdb.expr_type). */
export function typeName(v: Json | undefined): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'number':
      return isInt32(v) ? 'int' : 'double';
    case 'boolean':
      return 'bool';
    case 'string':
      return 'string';
    default:
      return 'object';
  }
}
