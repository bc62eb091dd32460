import { QueryError } from '../../errors.js';
import { bsonCompare, jsonbKeys } from '../value/compare.js';
import { decimalText, modDecimal, roundDecimal } from '../value/decimal.js';
import { getOwn, isPlainObject, type Json, type JsonObject } from '../value/json.js';
import { isInt32, typeName } from '../value/types.js';
import type { Expr } from './ast.js';

/**
 * The expression operators in TypeScript, with the semantics and messages of their SQL form
 * (expr/sql.ts and migration 0016): doubles as MongoDB computes them, and the operators that work
 * on decimal digits on the number's decimal form (decimal.ts).
 */

type Value = Json | undefined;

export function truthy(v: Value): boolean {
  return v !== undefined && v !== null && v !== false && v !== 0;
}

/** BSON's order across types, missing first (mdb.expr_cmp). */
export function compareValues(a: Value, b: Value): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  return bsonCompare(a, b, jsonbKeys);
}

function fail(message: string): never {
  throw new QueryError(message);
}

const isNullish = (v: Value): v is null | undefined => v === undefined || v === null;

/** A double JSON can hold (mdb.expr_double). */
function finite(op: string, r: number): number {
  if (!Number.isFinite(r))
    fail(`${op} gave a result that is not a finite number, which JSON cannot represent`);
  // JSON has no negative zero: the database stores 0.
  return r === 0 ? 0 : r;
}

/** The least and greatest doubles' bounds where PostgreSQL's exp (and pow) would underflow or overflow. */
const EXP_MAX = 709.782712893384;
const EXP_MIN = -745.1332191019412;

function fold(op: '$add' | '$multiply', args: Value[]): Value {
  let acc = op === '$add' ? 0 : 1;
  for (const a of args) {
    if (isNullish(a)) return null;
    if (typeof a !== 'number')
      fail(`${op} only supports numeric${op === '$add' ? ' or date' : ''} types, not ${typeName(a)}`);
    acc = finite(op, op === '$add' ? acc + a : acc * a);
  }
  return acc;
}

function arith(op: string, a: Value, b: Value): Value {
  if (op === '$divide' || op === '$mod') {
    if (typeof a !== 'number' || typeof b !== 'number') {
      if (isNullish(a) || isNullish(b)) return null;
      fail(`${op} only supports numeric types, not ${typeName(a)} and ${typeName(b)}`);
    }
    if (b === 0) fail(`can't ${op} by zero`);
    return op === '$divide' ? finite(op, a / b) : finite(op, modDecimal(a, b));
  }
  if (isNullish(a) || isNullish(b)) return null;
  if (op === '$subtract') {
    if (typeof a !== 'number' || typeof b !== 'number')
      fail(`can't $subtract ${typeName(b)} from ${typeName(a)}`);
    return finite(op, a - b);
  }
  // $pow
  if (typeof a !== 'number') fail(`$pow's base must be numeric, not ${typeName(a)}`);
  if (typeof b !== 'number') fail(`$pow's exponent must be numeric, not ${typeName(b)}`);
  if (a === 0) {
    if (b < 0) fail('$pow cannot take a base of 0 and a negative exponent');
    return b === 0 ? 1 : 0;
  }
  if (a < 0 && !Number.isInteger(b)) return finite(op, Number.NaN);
  const e = b * Math.log(Math.abs(a));
  if (e > EXP_MAX) return finite(op, Number.POSITIVE_INFINITY);
  if (e <= EXP_MIN) return 0;
  return finite(op, a ** b);
}

function math(op: string, a: Value): Value {
  if (isNullish(a)) return null;
  if (typeof a !== 'number') fail(`${op} only supports numeric types, not ${typeName(a)}`);
  switch (op) {
    case '$abs':
      return finite(op, Math.abs(a));
    case '$ceil':
      return finite(op, Math.ceil(a));
    case '$floor':
      return finite(op, Math.floor(a));
    case '$sqrt':
      if (a < 0) fail(`$sqrt's argument must be greater than or equal to 0`);
      return finite(op, Math.sqrt(a));
    case '$exp':
      if (a > EXP_MAX) return finite(op, Number.POSITIVE_INFINITY);
      if (a <= EXP_MIN) return 0;
      return finite(op, Math.exp(a));
    default:
      if (a <= 0) fail(`${op}'s argument must be a positive number`);
      return finite(op, op === '$ln' ? Math.log(a) : Math.log10(a));
  }
}

function round(op: string, a: Value, place: Value): Value {
  if (isNullish(a) || isNullish(place)) return null;
  if (typeof a !== 'number') fail(`${op} only supports numeric types, not ${typeName(a)}`);
  if (typeof place !== 'number' || !Number.isInteger(place))
    fail(`${op}'s place must be an integer, not ${typeName(place)}`);
  if (place < -20 || place > 100) fail(`${op}'s place must be between -20 and 100`);
  return finite(op, roundDecimal(a, place, op === '$round' ? 'even' : 'trunc'));
}

/** A value as $toLower, $toUpper and $substrCP read it (mdb.expr_string). */
function asString(op: string, a: Value): string {
  if (isNullish(a)) return '';
  if (typeof a === 'string') return a;
  if (typeof a === 'number') return decimalText(a);
  return fail(`${op}: can't convert from BSON type ${typeName(a)} to String`);
}

/** An integer operand (mdb.expr_int). */
function int(message: string, a: Value): number {
  if (typeof a !== 'number' || !isInt32(a)) fail(`${message}, found: ${typeName(a)}`);
  return a;
}

/** MongoDB's whitespace for $trim (mdb.expr_trim; JSONB holds no \u0000). */
const WHITESPACE =
  ' \t\n\u000b\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

function trim(op: string, a: Value, chars: Value | typeof NO_CHARS): Value {
  if (isNullish(a)) return null;
  if (typeof a !== 'string') fail(`${op} requires its input to be a string, not ${typeName(a)}`);
  if (chars !== NO_CHARS && isNullish(chars)) return null;
  if (chars !== NO_CHARS && typeof chars !== 'string')
    fail(`${op} requires 'chars' to be a string, not ${typeName(chars)}`);
  const set = new Set(chars === NO_CHARS ? WHITESPACE : chars);
  const cps = [...a];
  let start = 0;
  let end = cps.length;
  if (op !== '$rtrim') while (start < end && set.has(cps[start] as string)) start++;
  if (op !== '$ltrim') while (end > start && set.has(cps[end - 1] as string)) end--;
  return cps.slice(start, end).join('');
}

const NO_CHARS = Symbol('no chars');

function indexOfCP(
  a: Value,
  sub: Value,
  start: Value | typeof NO_CHARS,
  stop: Value | typeof NO_CHARS,
): Value {
  if (isNullish(a)) return null;
  if (typeof a !== 'string')
    fail(`$indexOfCP requires a string as the first argument, found: ${typeName(a)}`);
  if (typeof sub !== 'string')
    fail(`$indexOfCP requires a string as the second argument, found: ${typeName(sub)}`);
  const cps = [...a];
  const wanted = [...sub];
  let i = 0;
  let j = cps.length;
  if (start !== NO_CHARS) {
    i = int('$indexOfCP requires an integral starting index', start);
    if (i < 0) fail('$indexOfCP requires a nonnegative starting index');
  }
  if (stop !== NO_CHARS) {
    j = int('$indexOfCP requires an integral ending index', stop);
    if (j < 0) fail('$indexOfCP requires a nonnegative ending index');
    j = Math.min(j, cps.length);
  }
  for (let k = i; k + wanted.length <= j; k++) if (wanted.every((ch, m) => cps[k + m] === ch)) return k;
  return -1;
}

function elemAt(a: Value, i: Value): Value {
  if (isNullish(a) || isNullish(i)) return null;
  if (!Array.isArray(a)) fail(`$arrayElemAt's first argument must be an array, but is ${typeName(a)}`);
  if (typeof i !== 'number')
    fail(`$arrayElemAt's second argument must be a numeric value, but is ${typeName(i)}`);
  const n = int(`$arrayElemAt's second argument must be representable as a 32-bit integer`, i);
  return a[n < 0 ? a.length + n : n];
}

const MAX_STRING_BYTES = 16 * 1024 * 1024;

const LOWER_ASCII = /[a-z]/g;
const UPPER_ASCII = /[A-Z]/g;

/** The value of an operator; `evaluate` evaluates an argument (lazily, where MongoDB is lazy). */
export function evaluateOperator(e: Expr & { kind: 'op' }, evaluate: (e: Expr) => Value): Value {
  const { op } = e;
  const lazy = e.args;
  switch (op) {
    case '$and':
      return lazy.every((x) => truthy(evaluate(x)));
    case '$or':
      return lazy.some((x) => truthy(evaluate(x)));
    case '$cond':
      return evaluate((truthy(evaluate(lazy[0] as Expr)) ? lazy[1] : lazy[2]) as Expr);
    case '$ifNull': {
      for (const x of lazy.slice(0, -1)) {
        const v = evaluate(x);
        if (!isNullish(v)) return v;
      }
      return evaluate(lazy[lazy.length - 1] as Expr);
    }
    case '$switch': {
      for (let i = 0; i + 1 < lazy.length; i += 2)
        if (truthy(evaluate(lazy[i] as Expr))) return evaluate(lazy[i + 1] as Expr);
      if (lazy.length % 2 === 1) return evaluate(lazy[lazy.length - 1] as Expr);
      return fail('$switch could not find a matching branch for an input, and no default was specified.');
    }
  }
  const args = lazy.map(evaluate);
  const [a, b, c] = args;
  const given = (i: number) => (i < args.length ? args[i] : NO_CHARS);
  switch (op) {
    case '$add':
    case '$multiply':
      return fold(op, args);
    case '$subtract':
    case '$divide':
    case '$mod':
    case '$pow':
      return arith(op, a, b);
    case '$abs':
    case '$ceil':
    case '$floor':
    case '$sqrt':
    case '$exp':
    case '$ln':
    case '$log10':
      return math(op, a);
    case '$round':
    case '$trunc':
      return round(op, a, args.length > 1 ? b : 0);
    case '$eq':
      return compareValues(a, b) === 0;
    case '$ne':
      return compareValues(a, b) !== 0;
    case '$gt':
      return compareValues(a, b) > 0;
    case '$gte':
      return compareValues(a, b) >= 0;
    case '$lt':
      return compareValues(a, b) < 0;
    case '$lte':
      return compareValues(a, b) <= 0;
    case '$cmp':
      return compareValues(a, b);
    case '$not':
      return !truthy(a);
    case '$concat': {
      let out = '';
      for (const x of args) {
        if (isNullish(x)) return null;
        if (typeof x !== 'string') fail(`$concat only supports strings, not ${typeName(x)}`);
        out += x;
        // mdb.expr_concat's bound, in UTF-8 bytes (a UTF-16 unit is at most 3 of them).
        if (out.length > MAX_STRING_BYTES / 3 && Buffer.byteLength(out) > MAX_STRING_BYTES)
          fail("$concat's result would be larger than 16 MiB");
      }
      return out;
    }
    case '$toLower':
      return asString(op, a).replace(UPPER_ASCII, (ch) => ch.toLowerCase());
    case '$toUpper':
      return asString(op, a).replace(LOWER_ASCII, (ch) => ch.toUpperCase());
    case '$substrCP': {
      const s = asString(op, a);
      const i = int('$substrCP: the starting index must be an integer', b);
      const n = int('$substrCP: the length must be an integer', c);
      if (i < 0) fail('$substrCP: the starting index must be a nonnegative integer');
      if (n < 0) fail('$substrCP: the length must be a nonnegative integer');
      return [...s].slice(i, i + n).join('');
    }
    case '$strLenCP':
      if (typeof a !== 'string') fail(`$strLenCP requires a string argument, found: ${typeName(a)}`);
      return [...a].length;
    case '$trim':
    case '$ltrim':
    case '$rtrim':
      return trim(op, a, given(1));
    case '$split':
      if (isNullish(a) || isNullish(b)) return null;
      if (typeof a !== 'string')
        fail(
          `$split requires an expression that evaluates to a string as a first argument, found: ${typeName(a)}`,
        );
      if (typeof b !== 'string')
        fail(
          `$split requires an expression that evaluates to a string as a second argument, found: ${typeName(b)}`,
        );
      if (b === '') fail('$split requires a non-empty separator');
      return a.split(b);
    case '$indexOfCP':
      return indexOfCP(a, b, given(2), given(3));
    case '$size':
      if (!Array.isArray(a)) fail(`The argument to $size must be an array, but was of type: ${typeName(a)}`);
      return a.length;
    case '$arrayElemAt':
      return elemAt(a, b);
    case '$in':
      if (!Array.isArray(b)) fail(`$in requires an array as a second argument, found: ${typeName(b)}`);
      return b.some((x) => compareValues(a, x) === 0);
    case '$isArray':
      return Array.isArray(a);
    case '$concatArrays': {
      const out: Json[] = [];
      for (const x of args) {
        if (isNullish(x)) return null;
        if (!Array.isArray(x)) fail(`$concatArrays only supports arrays, not ${typeName(x)}`);
        out.push(...x);
      }
      return out;
    }
    case '$type':
      return typeName(a);
  }
  throw new Error(`The expression operator '${op}' has no TypeScript form.`);
}

/** The value of an expression over a document; `undefined` where it is missing. */
export function evaluateExpression(
  e: Expr,
  current: Json,
  variables: ReadonlyMap<string, Json> = new Map(),
): Json | undefined {
  switch (e.kind) {
    case 'literal':
      return e.value;
    case 'path': {
      const base = e.variable === 'CURRENT' ? current : variables.get(e.variable);
      return base === undefined ? undefined : getPath(base, e.segments);
    }
    case 'object': {
      const out: JsonObject = {};
      for (const [name, value] of e.fields) {
        const v = evaluateExpression(value, current, variables);
        if (v !== undefined) out[name] = v;
      }
      return out;
    }
    case 'array':
      return e.items.map((i) => evaluateExpression(i, current, variables) ?? null);
    case 'op':
      return evaluateOperator(e, (arg) => evaluateExpression(arg, current, variables));
  }
}

/**
 * MongoDB's field path in expressions: through a document, the field; through an array, the path
 * from each element that is a document (or, nested, an array), collected into an array; other
 * elements give nothing. Numeric segments name fields, never array positions.
 */
export function getPath(value: Json, segments: string[]): Json | undefined {
  if (segments.length === 0) return value;
  if (Array.isArray(value)) {
    const out: Json[] = [];
    for (const element of value) {
      if (typeof element !== 'object' || element === null) continue;
      const v = getPath(element, segments);
      if (v !== undefined) out.push(v);
    }
    return out;
  }
  if (isPlainObject(value)) {
    const next = getOwn(value, segments[0] as string);
    return next === undefined ? undefined : getPath(next, segments.slice(1));
  }
  return undefined;
}
