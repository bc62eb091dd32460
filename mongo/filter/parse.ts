import { QueryError } from '../../errors.js';
import type { Expr } from '../expr/ast.js';
import { parseExpression } from '../expr/parse.js';
import { compileRegexJs, translateRegex } from '../regex/translate.js';
import { describeValue, isPlainObject, type Json, type JsonObject } from '../value/json.js';
import { type FieldPath, parsePath } from '../value/path.js';
import { TYPE_ALIAS_NAMES, TYPE_CODE_NUMBERS, type TypeName, typeAlias, typeOfCode } from '../value/types.js';
import { parseJsonSchema, type Schema } from './json-schema.js';
import { MAX_IN_VALUES, MAX_QUERY_DEPTH, MAX_QUERY_NODES } from './limits.js';
import { parseTextOperator, type TextSearch } from './text-search.js';

/** A parsed MongoDB query filter. */
export type Filter =
  | { kind: 'all' }
  | { kind: 'and' | 'or' | 'nor'; children: Filter[] }
  | { kind: 'field'; path: FieldPath; cond: Cond }
  | { kind: 'jsonSchema'; schema: Schema }
  /**
   * `$expr`: an aggregation expression on the whole document, true where it is truthy. With
   * `guard`, the expression is evaluated only on documents the guard admits (mongo/rules.ts,
   * guardExpressions): an expression that can raise never runs on a document a rule hides.
   */
  | {
      kind: 'expr';
      expr: Expr;
      guard?: Filter;
      /**
       * Set where the expression is `$eq` of a document field and this scalar, and the filter
       * also ANDs `{path: value}` (mongo/rules.ts, impliedEqualities): the expression then differs
       * from that condition only on documents holding an array at the path, so where an index
       * answers the condition exactly and no document holds one (the index is not multikey), it
       * adds nothing and is left out of the SQL.
       */
      alsoField?: { path: FieldPath; value: Json };
    }

  /** `$text`: only at the top, or in a top-level `$and` (checkTextPlacement). */
  | { kind: 'text'; search: TextSearch };

export type Scalar = null | boolean | number | string;

/** A condition on one field's value(s). */
export type Cond =
  | { op: 'eq'; value: Json }
  | { op: 'in'; values: Json[] }
  /** An object or array operand compares in BSON order within its type bracket (see filter/sql.ts). */
  | { op: 'cmp'; cmp: '>' | '>=' | '<' | '<='; value: Json }
  | { op: 'exists'; value: boolean }
  | { op: 'type'; types: TypeName[] }
  | { op: 'size'; n: number }
  | { op: 'elemMatch'; filter: Filter }
  | { op: 'elemMatchValue'; cond: Cond }
  /** `pattern`/`flags` for like_regex in SQL, `js` for filter/match.ts: one pattern, two engines. */
  | { op: 'regex'; pattern: string; flags: string; js: RegExp }
  | { op: 'mod'; divisor: number; remainder: number }
  | { op: 'bits'; test: BitTest; positions: number[] }
  | { op: 'not'; cond: Cond }
  | { op: 'and'; conds: Cond[] }
  | { op: 'none' };

export type BitTest = 'allSet' | 'anySet' | 'allClear' | 'anyClear';

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
  '$jsonSchema',
  '$expr',
  '$text',
];

interface ParseState {
  nodes: number;
  /** MongoDB's kBanAllSpecialFeatures: no $jsonSchema. */
  banSpecial?: boolean;
  /** Why `$expr` is refused here, where it is: it applies only to a whole document. */
  noExpr?: string;
  variables?: ReadonlySet<string>;
}

export interface ParseOptions {
  /** Variables `$expr` may name besides `$$ROOT` and `$$CURRENT` (a rule's `$$AUTH`: mongo/rules.ts). */
  variables?: ReadonlySet<string>;
  /**
   * Where MongoDB bans its special query operators ($jsonSchema): the conditions of $pull,
   * arrayFilters and the $elemMatch projection.
   */
  banSpecial?: boolean;
  /** Refuses `$expr`, naming the place: filters on array elements ($pull, arrayFilters). */
  noExpr?: string;
  /** Whether `$text` may appear (default true): not in a filter on array elements, as in MongoDB. */
  text?: boolean;
}

/**
 * Whether the filter holds `_id` to one value (an equality on `_id`, alone or in an `$and`), so
 * that it matches at most one document: `_id` is unique.
 */
export function pinsOneId(filter: Filter): boolean {
  if (filter.kind === 'field') return filter.path.text === '_id' && filter.cond.op === 'eq';
  return filter.kind === 'and' && filter.children.some(pinsOneId);
}

export function parseFilter(query: unknown, options: ParseOptions = {}): Filter {
  if (!isPlainObject(query)) throw new QueryError('The query must be a JSON object.');
  const { text = true, ...rest } = options;
  const filter = parseQueryObject(query, { nodes: 0, ...rest }, 0);
  checkTextPlacement(filter, text);
  return filter;
}

/** The query's `$text`, if it has one (at most one, at the top or in a top-level `$and`). */
export function textSearchOf(filter: Filter): TextSearch | undefined {
  if (filter.kind === 'text') return filter.search;
  if (filter.kind !== 'and') return undefined;
  for (const child of filter.children) {
    const found = textSearchOf(child);
    if (found) return found;
  }
  return undefined;
}

/** MongoDB's rules for where `$text` may be, with its words where it has them. */
function checkTextPlacement(filter: Filter, allowed: boolean): void {
  let count = 0;
  const visit = (f: Filter, context: 'top' | 'or' | 'nor' | 'elemMatch'): void => {
    switch (f.kind) {
      case 'text':
        if (!allowed)
          throw new QueryError('$text is not allowed in this context (a filter on array elements).');
        if (++count > 1) throw new QueryError('Too many text expressions: a query holds at most one $text.');
        if (context === 'nor') throw new QueryError('text expression not allowed in nor.');
        if (context === 'or')
          throw new QueryError(
            '$text under $or is not supported; put $text at the top level or in a top-level $and.',
          );
        if (context === 'elemMatch') throw new QueryError('$text is not allowed inside $elemMatch.');
        return;
      case 'and':
        for (const c of f.children) visit(c, context);
        return;
      case 'or':
      case 'nor':
        for (const c of f.children) visit(c, context === 'top' || context === 'or' ? f.kind : context);
        return;
      case 'field':
        visitCond(f.cond);
        return;
      default:
        return;
    }
  };
  const visitCond = (c: Cond): void => {
    if (c.op === 'elemMatch') visit(c.filter, 'elemMatch');
    else if (c.op === 'and') c.conds.forEach(visitCond);
    else if (c.op === 'not') visitCond(c.cond);
    else if (c.op === 'elemMatchValue') visitCond(c.cond);
  };
  visit(filter, 'top');
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
    case '$jsonSchema':
      if (state.banSpecial) throw new QueryError('$jsonSchema is not allowed in this context.');
      return { kind: 'jsonSchema', schema: parseJsonSchema(value, state, depth + 1) };
    case '$expr':
      if (state.noExpr !== undefined) throw new QueryError(`$expr is not allowed ${state.noExpr}.`);
      return { kind: 'expr', expr: parseExpression(value, '$expr', state.variables) };
    case '$text':
      return { kind: 'text', search: parseTextOperator(value) };
    default:
      throw new QueryError(
        `Unknown top-level query operator '${op}'. Supported: $and, $or, $nor, $expr, $jsonSchema, $text, $comment, and field conditions.`,
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

/**
 * `$all` of values is an equality per value; `$all` of `{$elemMatch: …}` is one $elemMatch per
 * element. MongoDB decides which by the first element and refuses a mix in either direction.
 */
function parseAll(path: FieldPath, arg: Json, state: ParseState, depth: number): Cond {
  if (!Array.isArray(arg)) throw new QueryError(`$all on '${path.text}' needs an array.`);
  if (arg.length > MAX_IN_VALUES)
    throw new QueryError(`$all on '${path.text}' has more than ${MAX_IN_VALUES} values.`);
  if (arg.length === 0) return { op: 'none' };
  const firstKey = (v: Json) => (isPlainObject(v) ? Object.keys(v)[0] : undefined);
  let conds: Cond[];
  if (firstKey(arg[0] as Json) === '$elemMatch') {
    conds = arg.map((v) => {
      if (firstKey(v) !== '$elemMatch')
        throw new QueryError(
          `$all on '${path.text}' mixes $elemMatch conditions with other values ($all/$elemMatch has to be consistent).`,
        );
      const keys = Object.keys(v as JsonObject);
      // MongoDB reads only the first field of each element; a second one would be ignored.
      if (keys.length > 1)
        throw new QueryError(
          `$all on '${path.text}': an element holding $elemMatch must hold nothing else, not also ${keys.slice(1).join(', ')}.`,
        );
      count(state);
      return parseOperator(path, '$elemMatch', (v as JsonObject).$elemMatch as Json, {}, state, depth);
    });
  } else {
    conds = arg.map((value) => {
      const key = firstKey(value);
      if (key?.startsWith('$'))
        throw new QueryError(
          `$all on '${path.text}' holds an operator object (${key}); $all takes plain values or only $elemMatch conditions (no $ expressions in $all).`,
        );
      return { op: 'eq', value };
    });
  }
  return conds.length === 1 ? (conds[0] as Cond) : { op: 'and', conds };
}

/** A `$type` alias or code, with MongoDB's errors. */
function typeName(path: FieldPath, t: Json): TypeName {
  const where = `$type on '${path.text}'`;
  if (typeof t === 'string') {
    const name = typeAlias(t);
    if (name === undefined)
      throw new QueryError(
        `${where}: unknown type name alias ${JSON.stringify(t)}. Aliases: ${TYPE_ALIAS_NAMES.join(', ')}.`,
      );
    return name;
  }
  if (typeof t === 'number') {
    const name = typeOfCode(t);
    if (name === undefined)
      throw new QueryError(
        `${where}: invalid numerical type code ${t}${t === 0 ? ' (for a missing field use {"$exists": false})' : ''}. Codes: ${TYPE_CODE_NUMBERS.join(', ')}.`,
      );
    return name;
  }
  throw new QueryError(
    `${where}: a type must be represented as a number or a string, not ${describeValue(t)}.`,
  );
}

/** MongoDB coerces $mod's operands to 64-bit integers, truncating; beyond them it refuses. */
const INT64_BOUND = 2 ** 63;

/** `[divisor, remainder]`, checked in MongoDB's order with its words ("malformed mod, …"). */
function parseMod(path: FieldPath, arg: Json): Cond {
  const fail = (why: string) => {
    throw new QueryError(`$mod on '${path.text}': ${why}; it takes [divisor, remainder].`);
  };
  if (!Array.isArray(arg)) return fail(`malformed mod, needs to be an array, not ${describeValue(arg)}`);
  const [d, r] = arg;
  if (d === undefined) return fail('malformed mod, not enough elements');
  if (typeof d !== 'number') return fail(`malformed mod, divisor not a number (${describeValue(d)})`);
  if (r === undefined) return fail('malformed mod, not enough elements');
  if (typeof r !== 'number') return fail(`malformed mod, remainder not a number (${describeValue(r)})`);
  if (arg.length > 2) return fail('malformed mod, too many elements');
  const [divisor, remainder] = [d, r].map(Math.trunc) as [number, number];
  for (const [name, n] of [
    ['divisor', divisor],
    ['remainder', remainder],
  ] as const)
    if (!(n >= -INT64_BOUND && n < INT64_BOUND))
      fail(`malformed mod, ${name} value is invalid: ${n} is out of bounds for a 64-bit integer`);
  if (divisor === 0) fail('divisor cannot be 0');
  return { op: 'mod', divisor, remainder };
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
      return { op: 'cmp', cmp: '>', value: arg };
    case '$gte':
      return { op: 'cmp', cmp: '>=', value: arg };
    case '$lt':
      return { op: 'cmp', cmp: '<', value: arg };
    case '$lte':
      return { op: 'cmp', cmp: '<=', value: arg };
    case '$in':
      return { op: 'in', values: arrayOperand(path, op, arg) };
    case '$nin':
      return { op: 'not', cond: { op: 'in', values: arrayOperand(path, op, arg) } };
    case '$all':
      return parseAll(path, arg, state, depth);
    case '$exists':
      if (typeof arg !== 'boolean' && typeof arg !== 'number')
        throw new QueryError(`$exists on '${path.text}' needs true or false.`);
      return { op: 'exists', value: Boolean(arg) };
    case '$type': {
      const list = Array.isArray(arg) ? arg : [arg];
      // MongoDB words it "<path> must match at least one type".
      if (list.length === 0) throw new QueryError(`$type on '${path.text}' must match at least one type.`);
      return { op: 'type', types: list.map((t) => typeName(path, t)) };
    }
    case '$size':
      if (typeof arg !== 'number' || !Number.isInteger(arg) || arg < 0)
        throw new QueryError(`$size on '${path.text}' needs a non-negative integer.`);
      return { op: 'size', n: arg };
    case '$elemMatch': {
      if (!isPlainObject(arg)) throw new QueryError(`$elemMatch on '${path.text}' needs an object.`);
      const keys = Object.keys(arg);
      // MongoDB: an object of operators applies to the element itself; otherwise it is a query
      // on elements that are documents ($and/$or/$nor, $jsonSchema and $expr count as query operators).
      const valueForm =
        keys.length > 0 &&
        keys.every((k) => k.startsWith('$') && !['$and', '$or', '$nor', '$jsonSchema', '$expr'].includes(k));
      if (valueForm) return { op: 'elemMatchValue', cond: parseOperators(path, arg, state, depth + 1) };
      // MongoDB: "$expr can only be applied to the top-level document".
      const outer = state.noExpr;
      state.noExpr = 'inside $elemMatch: it can only be applied to the top-level document';
      try {
        return { op: 'elemMatch', filter: parseQueryObject(arg, state, depth + 1) };
      } finally {
        state.noExpr = outer;
      }
    }
    case '$regex': {
      if (typeof arg !== 'string') throw new QueryError(`$regex on '${path.text}' needs a string pattern.`);
      const options = all.$options ?? '';
      if (typeof options !== 'string') throw new QueryError(`$options on '${path.text}' needs a string.`);
      return {
        op: 'regex',
        ...translateRegex(arg, options, path.text),
        js: compileRegexJs(arg, options, path.text),
      };
    }
    case '$mod':
      return parseMod(path, arg);
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
