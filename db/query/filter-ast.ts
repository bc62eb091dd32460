import { isPlainObject, type Json, type JsonObject, QueryError } from './errors.js';
import { describeValue } from './json.js';
import { type FieldPath, parsePath } from './path.js';
import { translateRegex } from './regex.js';

/** A parsed MongoDB query filter. */
export type Filter =
  | { kind: 'all' }
  | { kind: 'and' | 'or' | 'nor'; children: Filter[] }
  | { kind: 'field'; path: FieldPath; cond: Cond };

export type Scalar = null | boolean | number | string;

/** A condition on one field's value(s). */
export type Cond =
  | { op: 'eq'; value: Json }
  | { op: 'in'; values: Json[] }
  | { op: 'cmp'; cmp: '>' | '>=' | '<' | '<='; value: Scalar }
  | { op: 'exists'; value: boolean }
  | { op: 'type'; types: TypeName[] }
  | { op: 'size'; n: number }
  | { op: 'elemMatch'; filter: Filter }
  | { op: 'elemMatchValue'; cond: Cond }
  | { op: 'regex'; pattern: string; flags: string }
  | { op: 'mod'; divisor: number; remainder: number }
  | { op: 'bits'; test: BitTest; positions: number[] }
  | { op: 'not'; cond: Cond }
  | { op: 'and'; conds: Cond[] }
  | { op: 'none' };

export type BitTest = 'allSet' | 'anySet' | 'allClear' | 'anyClear';

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
  | 'number';

const TYPE_ALIASES: Record<string, TypeName> = {
  double: 'double',
  string: 'string',
  object: 'object',
  array: 'array',
  bool: 'bool',
  null: 'null',
  int: 'int',
  long: 'long',
  decimal: 'decimal',
  number: 'number',
  '1': 'double',
  '2': 'string',
  '3': 'object',
  '4': 'array',
  '8': 'bool',
  '10': 'null',
  '16': 'int',
  '18': 'long',
  '19': 'decimal',
};

export const SUPPORTED_QUERY_OPERATORS = [
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$and',
  '$or',
  '$nor',
  '$not',
  '$exists',
  '$type',
  '$size',
  '$all',
  '$elemMatch',
  '$regex',
  '$options',
  '$mod',
  '$bitsAllSet',
  '$bitsAnySet',
  '$bitsAllClear',
  '$bitsAnyClear',
  '$comment',
];

export const MAX_QUERY_DEPTH = 32;
export const MAX_QUERY_NODES = 1000;
export const MAX_IN_VALUES = 1000;

interface ParseState {
  nodes: number;
}

export function parseFilter(query: unknown): Filter {
  if (!isPlainObject(query)) throw new QueryError('The query must be a JSON object.');
  return parseQueryObject(query, { nodes: 0 }, 0);
}

function count(state: ParseState) {
  if (++state.nodes > MAX_QUERY_NODES)
    throw new QueryError(`The query has more than ${MAX_QUERY_NODES} conditions.`);
}

function parseQueryObject(query: JsonObject, state: ParseState, depth: number): Filter {
  if (depth > MAX_QUERY_DEPTH)
    throw new QueryError(`The query is nested deeper than ${MAX_QUERY_DEPTH} levels.`);
  const children: Filter[] = [];
  for (const [key, value] of Object.entries(query)) {
    count(state);
    if (key.startsWith('$')) {
      children.push(parseTopLevelOperator(key, value, state, depth));
    } else {
      const path = parsePath(key);
      children.push({ kind: 'field', path, cond: parseFieldValue(path, value, state, depth) });
    }
  }
  const real = children.filter((c) => c.kind !== 'all');
  if (real.length === 0) return { kind: 'all' };
  return real.length === 1 ? (real[0] as Filter) : { kind: 'and', children: real };
}

function parseTopLevelOperator(op: string, value: Json, state: ParseState, depth: number): Filter {
  switch (op) {
    case '$and':
    case '$or':
    case '$nor': {
      if (!Array.isArray(value) || value.length === 0)
        throw new QueryError(`${op} must be a non-empty array of query objects.`);
      const children = value.map((item, i) => {
        if (!isPlainObject(item)) throw new QueryError(`${op}[${i}] must be a query object.`);
        return parseQueryObject(item, state, depth + 1);
      });
      return { kind: op.slice(1) as 'and' | 'or' | 'nor', children };
    }
    case '$comment':
      return { kind: 'all' };
    default:
      throw new QueryError(
        `Unknown top-level query operator '${op}'. Supported: $and, $or, $nor, $comment, and field conditions.`,
      );
  }
}

function isOperatorObject(value: Json): value is JsonObject {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

function parseFieldValue(path: FieldPath, value: Json, state: ParseState, depth: number): Cond {
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    const dollar = keys.filter((k) => k.startsWith('$'));
    if (dollar.length > 0 && dollar.length < keys.length)
      throw new QueryError(
        `The condition on '${path.text}' mixes operators (${dollar.join(', ')}) with plain fields; use one or the other.`,
      );
    if (isOperatorObject(value)) return parseOperators(path, value, state, depth);
  }
  return { op: 'eq', value };
}

function parseOperators(path: FieldPath, ops: JsonObject, state: ParseState, depth: number): Cond {
  const conds: Cond[] = [];
  const hasRegex = '$regex' in ops;
  if ('$options' in ops && !hasRegex) throw new QueryError(`$options on '${path.text}' needs a $regex.`);
  for (const [op, arg] of Object.entries(ops)) {
    count(state);
    if (op === '$options') continue;
    conds.push(parseOperator(path, op, arg, ops, state, depth));
  }
  return conds.length === 1 ? (conds[0] as Cond) : { op: 'and', conds };
}

function scalarOperand(path: FieldPath, op: string, arg: Json): Scalar {
  if (arg === null || typeof arg !== 'object') return arg;
  throw new QueryError(
    `${op} on '${path.text}' compares with an ${Array.isArray(arg) ? 'array' : 'object'}; only numbers, strings, booleans and null are supported as ${op} operands.`,
  );
}

function arrayOperand(path: FieldPath, op: string, arg: Json): Json[] {
  if (!Array.isArray(arg)) throw new QueryError(`${op} on '${path.text}' needs an array.`);
  if (arg.length > MAX_IN_VALUES)
    throw new QueryError(`${op} on '${path.text}' has more than ${MAX_IN_VALUES} values.`);
  for (const v of arg) {
    if (isOperatorObject(v))
      throw new QueryError(`${op} on '${path.text}' holds an operator object; ${op} takes plain values.`);
  }
  return arg;
}

const BIT_TESTS: Record<'$bitsAllSet' | '$bitsAnySet' | '$bitsAllClear' | '$bitsAnyClear', BitTest> = {
  $bitsAllSet: 'allSet',
  $bitsAnySet: 'anySet',
  $bitsAllClear: 'allClear',
  $bitsAnyClear: 'anyClear',
};

/** Our bound on a bit position (MongoDB takes 64-bit ones): every one past 63 tests the sign bit. */
const MAX_BIT_POSITION = 2147483647;
/** Bits 63 and up of a 64-bit integer all equal its sign bit (MongoDB sign-extends). */
const SIGN_BIT = 63;

/**
 * The bit positions a bitmask or position list names, distinct, with those past the sign bit
 * folded onto it. A bitmask is exact: the request parser refuses integers a double cannot hold.
 */
function bitPositions(path: FieldPath, op: string, arg: Json): number[] {
  let positions: number[];
  if (typeof arg === 'number') {
    if (!Number.isInteger(arg) || arg < 0 || arg >= 2 ** 63)
      throw new QueryError(
        `${op} on '${path.text}' needs a bitmask that is a non-negative 64-bit integer, not ${arg}.`,
      );
    positions = [];
    for (let bit = 0, rest = arg; rest > 0; bit++, rest = Math.floor(rest / 2))
      if (rest % 2 === 1) positions.push(bit);
  } else if (Array.isArray(arg)) {
    if (arg.length > MAX_IN_VALUES)
      throw new QueryError(`${op} on '${path.text}' has more than ${MAX_IN_VALUES} bit positions.`);
    positions = arg.map((p) => {
      if (typeof p !== 'number' || !Number.isInteger(p) || p < 0 || p > MAX_BIT_POSITION)
        throw new QueryError(
          `${op} on '${path.text}': bit positions must be integers from 0 to ${MAX_BIT_POSITION}, not ${typeof p === 'number' ? p : describeValue(p)}.`,
        );
      return Math.min(p, SIGN_BIT);
    });
  } else {
    throw new QueryError(
      `${op} on '${path.text}' takes a non-negative integer bitmask or an array of bit positions${isPlainObject(arg) ? ' (BinData bitmasks have no JSON form here)' : ''}, not ${describeValue(arg)}.`,
    );
  }
  return [...new Set(positions)].sort((a, b) => a - b);
}

function parseOperator(
  path: FieldPath,
  op: string,
  arg: Json,
  all: JsonObject,
  state: ParseState,
  depth: number,
): Cond {
  switch (op) {
    case '$eq':
      return { op: 'eq', value: arg };
    case '$ne':
      return { op: 'not', cond: { op: 'eq', value: arg } };
    case '$gt':
      return { op: 'cmp', cmp: '>', value: scalarOperand(path, op, arg) };
    case '$gte':
      return { op: 'cmp', cmp: '>=', value: scalarOperand(path, op, arg) };
    case '$lt':
      return { op: 'cmp', cmp: '<', value: scalarOperand(path, op, arg) };
    case '$lte':
      return { op: 'cmp', cmp: '<=', value: scalarOperand(path, op, arg) };
    case '$in':
      return { op: 'in', values: arrayOperand(path, op, arg) };
    case '$nin':
      return { op: 'not', cond: { op: 'in', values: arrayOperand(path, op, arg) } };
    case '$all': {
      const values = arrayOperand(path, op, arg);
      if (values.length === 0) return { op: 'none' };
      return values.length === 1
        ? { op: 'eq', value: values[0] as Json }
        : { op: 'and', conds: values.map((value) => ({ op: 'eq', value }) as Cond) };
    }
    case '$exists':
      if (typeof arg !== 'boolean' && typeof arg !== 'number')
        throw new QueryError(`$exists on '${path.text}' needs true or false.`);
      return { op: 'exists', value: Boolean(arg) };
    case '$type': {
      const list = Array.isArray(arg) ? arg : [arg];
      if (list.length === 0) throw new QueryError(`$type on '${path.text}' needs at least one type.`);
      const types = list.map((t) => {
        const name = TYPE_ALIASES[String(t)];
        if (name === undefined || (typeof t !== 'string' && typeof t !== 'number'))
          throw new QueryError(
            `$type on '${path.text}': unknown or unsupported type ${JSON.stringify(t)}. Supported: ${Object.keys(TYPE_ALIASES).join(', ')}.`,
          );
        return name;
      });
      return { op: 'type', types };
    }
    case '$size':
      if (typeof arg !== 'number' || !Number.isInteger(arg) || arg < 0)
        throw new QueryError(`$size on '${path.text}' needs a non-negative integer.`);
      return { op: 'size', n: arg };
    case '$elemMatch': {
      if (!isPlainObject(arg)) throw new QueryError(`$elemMatch on '${path.text}' needs an object.`);
      const keys = Object.keys(arg);
      // MongoDB: an object of operators applies to the element itself; otherwise it is a query
      // on elements that are documents ($and/$or/$nor count as query operators).
      const valueForm =
        keys.length > 0 && keys.every((k) => k.startsWith('$') && !['$and', '$or', '$nor'].includes(k));
      if (valueForm) return { op: 'elemMatchValue', cond: parseOperators(path, arg, state, depth + 1) };
      return { op: 'elemMatch', filter: parseQueryObject(arg, state, depth + 1) };
    }
    case '$regex': {
      if (typeof arg !== 'string') throw new QueryError(`$regex on '${path.text}' needs a string pattern.`);
      const options = all.$options ?? '';
      if (typeof options !== 'string') throw new QueryError(`$options on '${path.text}' needs a string.`);
      return { op: 'regex', ...translateRegex(arg, options, path.text) };
    }
    case '$mod': {
      if (
        !Array.isArray(arg) ||
        arg.length !== 2 ||
        !arg.every((n) => typeof n === 'number' && Number.isFinite(n))
      )
        throw new QueryError(`$mod on '${path.text}' needs an array of two numbers, [divisor, remainder].`);
      const divisor = Math.trunc(arg[0] as number);
      if (divisor === 0) throw new QueryError(`$mod on '${path.text}': the divisor must not be 0.`);
      return { op: 'mod', divisor, remainder: Math.trunc(arg[1] as number) };
    }
    case '$bitsAllSet':
    case '$bitsAnySet':
    case '$bitsAllClear':
    case '$bitsAnyClear':
      return { op: 'bits', test: BIT_TESTS[op], positions: bitPositions(path, op, arg) };
    case '$not': {
      if (!isOperatorObject(arg))
        throw new QueryError(`$not on '${path.text}' needs an object of operators, such as {"$gt": 5}.`);
      return { op: 'not', cond: parseOperators(path, arg, state, depth + 1) };
    }
    default:
      throw new QueryError(
        `Unknown query operator '${op}' on '${path.text}'. Supported: ${SUPPORTED_QUERY_OPERATORS.join(', ')}.`,
      );
  }
}
