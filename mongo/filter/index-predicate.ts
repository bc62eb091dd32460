import { QueryError } from '../../errors.js';
import { compareStrings } from '../value/compare.js';
import { isPlainObject, type Json } from '../value/json.js';
import { parsePath } from '../value/path.js';
import { isInt32, type TypeName } from '../value/types.js';
import { type Cond, type Filter, parseFilter } from './parse.js';

/**
 * Partial and sparse indexes: which documents belong to one (its predicate, a filter), and whether
 * a query's filter implies that predicate, so that every document the query matches is in the
 * index and the index may serve it. Implication is decided here, conservatively: "no" only costs
 * the index, "yes" must be certain.
 */

const COMPARISONS = new Set(['$eq', '$gt', '$gte', '$lt', '$lte', '$type', '$exists', '$in']);

/**
 * MongoDB's partialFilterExpression subset (6.0+): equality (`{f: v}`, `$eq`), `$exists: true`,
 * `$gt $gte $lt $lte`, `$type`, `$in`, and `$and`/`$or` of those. Anything else is an error naming
 * it, checked on the JSON since the parsed filter no longer tells `$ne` from `$not`.
 */
export function parsePartialFilter(expr: unknown): Filter {
  if (!isPlainObject(expr)) throw new QueryError('partialFilterExpression must be a query object.');
  checkPartial(expr);
  const filter = parseFilter(expr);
  if (filter.kind === 'all')
    throw new QueryError('partialFilterExpression must hold at least one condition.');
  return filter;
}

function unsupported(what: string): never {
  throw new QueryError(
    `partialFilterExpression: unsupported expression in partial index: ${what}. Supported: equality, $eq, $exists: true, $gt, $gte, $lt, $lte, $type, $in, $and, $or.`,
  );
}

function checkPartial(query: { [k: string]: Json }): void {
  for (const [key, value] of Object.entries(query)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0)
        throw new QueryError(`partialFilterExpression: ${key} must be a non-empty array of query objects.`);
      for (const item of value) {
        if (!isPlainObject(item))
          throw new QueryError(`partialFilterExpression: ${key} must be a non-empty array of query objects.`);
        checkPartial(item);
      }
    } else if (key.startsWith('$')) {
      unsupported(`'${key}'`);
    } else {
      parsePath(key, 'partialFilterExpression path');
      checkFieldValue(key, value);
    }
  }
}

function checkFieldValue(path: string, value: Json): void {
  const ops = isPlainObject(value) ? Object.keys(value) : [];
  if (!isPlainObject(value) || !ops.some((k) => k.startsWith('$'))) {
    checkOperand(path, 'equality', value);
    return;
  }
  for (const op of ops) {
    const arg = value[op] as Json;
    if (!COMPARISONS.has(op)) unsupported(`'${op}' on '${path}'`);
    if (op === '$exists' && arg !== true) unsupported(`'$exists: ${JSON.stringify(arg)}' on '${path}'`);
    if (op === '$in') {
      if (!Array.isArray(arg))
        throw new QueryError(`partialFilterExpression: $in on '${path}' needs an array.`);
      for (const v of arg) checkOperand(path, '$in', v);
    } else if (op !== '$type' && op !== '$exists') checkOperand(path, op, arg);
  }
}

/** The predicate column is a jsonpath, which cannot compare objects and arrays (a deviation). */
function checkOperand(path: string, op: string, v: Json): void {
  if (typeof v === 'object' && v !== null)
    throw new QueryError(
      `partialFilterExpression: ${op} on '${path}' with an object or array is not supported here; compare its fields instead.`,
    );
}

/** A sparse index holds the documents that have at least one of its fields (even as null). */
export function sparseFilter(paths: string[]): Filter {
  const children: Filter[] = paths.map((p) => ({
    kind: 'field',
    path: parsePath(p),
    cond: { op: 'exists', value: true },
  }));
  return children.length === 1 ? (children[0] as Filter) : { kind: 'or', children };
}

/** Whether every document `query` matches also matches `predicate`. */
export function implies(query: Filter, predicate: Filter): boolean {
  switch (predicate.kind) {
    case 'all':
      return true;
    case 'and':
      return predicate.children.every((p) => implies(query, p));
    case 'or':
      if (predicate.children.some((p) => implies(query, p))) return true;
      break;
    case 'nor':
      return false;
    case 'field':
      break;
  }
  switch (query.kind) {
    case 'and':
      return query.children.some((q) => implies(q, predicate));
    case 'or':
      return query.children.every((q) => implies(q, predicate));
    case 'field':
      return (
        predicate.kind === 'field' &&
        query.path.text === predicate.path.text &&
        condImplies(query.cond, predicate.cond)
      );
    default:
      return false;
  }
}

function condImplies(q: Cond, p: Cond): boolean {
  if (p.op === 'and') return p.conds.every((c) => condImplies(q, c));
  if (q.op === 'and') return q.conds.some((c) => condImplies(c, p));
  if (q.op === 'none') return true; // matches nothing
  if (
    q.op === 'in' &&
    q.values.length > 0 &&
    (p.op === 'eq' || p.op === 'in' || p.op === 'cmp' || p.op === 'type')
  )
    return q.values.every((v) => condImplies({ op: 'eq', value: v }, p));
  switch (p.op) {
    case 'exists':
      return p.value ? needsField(q) : false;
    case 'eq':
      return q.op === 'eq' && sameScalar(q.value, p.value);
    case 'in':
      return q.op === 'eq' && p.values.some((v) => sameScalar(q.value, v));
    case 'cmp':
      return rangeImplies(q, p);
    case 'type':
      return typeImplies(q, p.types);
    default:
      return false;
  }
}

/**
 * Conditions that no document without the field matches. Equality and ranges with null match a
 * missing field, and so do negations.
 */
function needsField(q: Cond): boolean {
  switch (q.op) {
    case 'eq':
      return q.value !== null;
    case 'in':
      return q.values.every((v) => v !== null);
    case 'cmp':
      return q.value !== null;
    case 'exists':
      return q.value;
    case 'type':
    case 'size':
    case 'elemMatch':
    case 'elemMatchValue':
    case 'regex':
    case 'mod':
    case 'bits':
    case 'none':
      return true;
    case 'and':
      return q.conds.some(needsField);
    case 'not':
      return false;
  }
}

function isScalar(v: Json): v is null | boolean | number | string {
  return v === null || typeof v !== 'object';
}

function sameScalar(a: Json, b: Json): boolean {
  return isScalar(a) && isScalar(b) && a === b;
}

/** Numbers by value, strings by code point (jsonpath's order, UTF-8's byte order); nothing else. */
function compare(a: Json, b: Json): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  return undefined;
}

function satisfies(v: Json, p: Cond & { op: 'cmp' }): boolean {
  const c = compare(v, p.value);
  if (c === undefined) return false;
  switch (p.cmp) {
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
  }
}

/**
 * A range implies a range of the same direction and type whose bound it is inside; an equality, a
 * value inside the range. Both are MongoDB's "some value on the path" tests, so a document with an
 * array that has such a value satisfies both.
 */
function rangeImplies(q: Cond, p: Cond & { op: 'cmp' }): boolean {
  if (q.op === 'eq') return satisfies(q.value, p);
  if (q.op !== 'cmp') return false;
  const c = compare(q.value, p.value);
  if (c === undefined) return false;
  const up = (x: string) => x === '>' || x === '>=';
  if (up(q.cmp) !== up(p.cmp)) return false;
  if (c === 0) return q.cmp === p.cmp || p.cmp.length === 2; // `> v` implies `>= v`, not the reverse
  return up(p.cmp) ? c > 0 : c < 0;
}

function typeOf(v: Json): TypeName[] {
  if (typeof v === 'number') return [isInt32(v) ? 'int' : 'double', 'number'];
  if (typeof v === 'string') return ['string'];
  if (typeof v === 'boolean') return ['bool'];
  return [];
}

function typeImplies(q: Cond, types: TypeName[]): boolean {
  const has = (t: TypeName) => types.includes(t);
  switch (q.op) {
    case 'eq':
      return typeOf(q.value).some(has);
    case 'cmp':
      return typeof q.value === 'number' ? has('number') : typeof q.value === 'string' && has('string');
    case 'regex':
      return has('string');
    case 'type':
      return q.types.every((t) => has(t) || ((t === 'int' || t === 'double') && has('number')));
    default:
      return false;
  }
}
