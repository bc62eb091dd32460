import { QueryError } from '../../errors.js';
import { evaluateExpression, truthy } from '../expr/evaluate.js';
import { testRegex } from '../regex/run.js';
import { bsonCompare, compareStrings, jsonbKeys, jsonEqual, typeRank } from '../value/compare.js';
import { getOwn, isPlainObject, type Json } from '../value/json.js';
import { hasType } from '../value/types.js';
import { matchSchema } from './json-schema.js';
import type { Cond, Filter, Scalar } from './parse.js';

/**
 * A parsed filter evaluated on one JSON value, for the projections that depend on a match: the
 * `$elemMatch` projection's condition on each element, and the positional `$` projection's query.
 * Reads filter in SQL; this runs on the page read, on documents the SQL already chose, and follows
 * the compiler's semantics (filter/sql.ts) so both agree on what matches.
 * `$regex` runs the JavaScript form regex/translate.ts compiled beside the SQL one, on strings only, and
 * through regex/run.ts, which keeps a runaway pattern from holding the process.
 */

/** MongoDB's MatchDetails: the offset, in the first array a path crossed, of the element that matched. */
export interface MatchDetails {
  elemMatchKey?: number;
}

/** One value a path reaches: `offset` is its index in the first array crossed on the way. */
interface Reached {
  value: Json | undefined;
  offset: number | undefined;
  /** An element of an array at the end of the path, reached by the implicit traversal. */
  element: boolean;
}

const NUMERIC = /^(0|[1-9][0-9]{0,8})$/;

export function matchFilter(doc: Json, filter: Filter, details?: MatchDetails): boolean {
  switch (filter.kind) {
    case 'all':
      return true;
    case 'and':
      // Every child records its key; the last one that matched on an array wins, as in MongoDB.
      return filter.children.every((c) => matchFilter(doc, c, details));
    case 'or':
      // MongoDB's $or and $nor record no key.
      return filter.children.some((c) => matchFilter(doc, c));
    case 'nor':
      return !filter.children.some((c) => matchFilter(doc, c));
    case 'field':
      return matchPath(doc, filter.path.segments, filter.cond, details);
    case 'jsonSchema':
      return matchSchema(doc, filter.schema);
    case 'expr':
      return truthy(evaluateExpression(filter.expr, doc));
    case 'text':
      // Words and stems exist only in the database. A filter holding $text reaches here only as a
      // route's query (parseFilter keeps it out of arrayFilters, $pull and $elemMatch), evaluated
      // on a document that query's SQL matched (positional $ in updates and projections), so it
      // holds; the rest of the query still decides which array element matched.
      return true;
  }
}

/** Whether the values `segments` reach from `root` satisfy `cond`; with no segments, `root` as it is. */
export function matchPath(root: Json, segments: string[], cond: Cond, details?: MatchDetails): boolean {
  switch (cond.op) {
    case 'none':
      return false;
    case 'not':
      return !matchPath(root, segments, cond.cond);
    case 'and':
      return cond.conds.every((c) => matchPath(root, segments, c, details));
    case 'exists':
      // Not "some value is missing": `{"a.b": {$exists: false}}` fails when any element has `b`.
      if (!cond.value) return !matchPath(root, segments, { op: 'exists', value: true });
      return matchReached(root, segments, cond, details);
    default:
      return matchReached(root, segments, cond, details);
  }
}

function matchReached(root: Json, segments: string[], cond: Cond, details?: MatchDetails): boolean {
  const reached: Reached[] = [];
  walk(root, segments, undefined, segments.length > 0, reached);
  for (const r of reached) {
    const key = test(r, cond);
    if (key === false) continue;
    const offset = typeof key === 'number' ? key : r.offset;
    if (details && offset !== undefined) details.elemMatchKey = offset;
    return true;
  }
  return false;
}

/**
 * MongoDB's path walk: through objects, and through arrays into their object elements (a numeric
 * segment also indexes the array); an array at the end yields its elements, then itself. A field
 * missing from an object, or a scalar in the way, yields "missing" (what `{x: null}` matches).
 */
function walk(
  value: Json | undefined,
  segments: string[],
  offset: number | undefined,
  expandLeaf: boolean,
  out: Reached[],
): void {
  const [seg, ...rest] = segments;
  if (seg === undefined) {
    if (Array.isArray(value) && expandLeaf)
      for (const [i, item] of value.entries()) out.push({ value: item, offset: offset ?? i, element: true });
    out.push({ value, offset, element: false });
    return;
  }
  if (isPlainObject(value)) {
    walk(getOwn(value, seg), rest, offset, true, out);
  } else if (Array.isArray(value)) {
    if (NUMERIC.test(seg) && Number(seg) < value.length) walk(value[Number(seg)], rest, offset, true, out);
    for (const [i, item] of value.entries())
      if (isPlainObject(item)) walk(getOwn(item, seg), rest, offset ?? i, true, out);
  } else {
    out.push({ value: undefined, offset, element: false });
  }
}

/** false, true, or the offset of the element an $elemMatch matched. */
function test(r: Reached, cond: Cond): boolean | number {
  const v = r.value;
  switch (cond.op) {
    case 'eq':
      return cond.value === null
        ? v === null || v === undefined
        : v !== undefined && jsonEqual(v, cond.value);
    case 'in':
      return cond.values.some((x) =>
        x === null ? v === null || v === undefined : v !== undefined && jsonEqual(v, x),
      );
    case 'cmp': {
      if (cond.value === null)
        return (cond.cmp === '>=' || cond.cmp === '<=') && (v === null || v === undefined);
      if (v === undefined || v === null || typeRank(v) !== typeRank(cond.value)) return false;
      // Objects and arrays: BSON's order, fields in JSONB's order of keys, as mdb.bson_key.
      const c =
        typeof v === 'object'
          ? bsonCompare(v, cond.value, jsonbKeys)
          : compareScalars(v, cond.value as Exclude<Scalar, null>);
      return cond.cmp === '>' ? c > 0 : cond.cmp === '>=' ? c >= 0 : cond.cmp === '<' ? c < 0 : c <= 0;
    }
    case 'exists':
      return v !== undefined;
    case 'type':
      return v !== undefined && cond.types.some((t) => hasType(v, t));
    case 'size':
      return !r.element && Array.isArray(v) && v.length === cond.n;
    case 'bits':
      return testBits(v, cond);
    case 'mod':
      // The compiler's rule: numbers beyond 2^53 in size are not tested.
      return (
        typeof v === 'number' &&
        Math.abs(Math.trunc(v)) <= 2 ** 53 &&
        Math.trunc(v) % cond.divisor === cond.remainder
      );
    case 'regex':
      // An array at the end is tested through its elements; the array itself is no string.
      return typeof v === 'string' && testRegex(cond.js, v);
    case 'elemMatch':
    case 'elemMatchValue': {
      if (r.element || !Array.isArray(v)) return false;
      const i = elemMatchIndex(v, cond);
      return i < 0 ? false : i;
    }
    default:
      // not, and and none never get here (matchPath takes them); an operator added to the
      // filter grammar without a case here is refused rather than silently matching nothing.
      throw new QueryError(
        `The query condition '${(cond as Cond).op}' is not supported in the condition of a positional ($) or $elemMatch projection.`,
      );
  }
}

/**
 * The compiler's bit tests: integers within 2^53 in size (beyond, the stored decimal's low bits
 * are not the double's), negative ones in 64-bit two's complement; bit 63 and up is the sign.
 */
function testBits(v: Json | undefined, cond: Cond & { op: 'bits' }): boolean {
  if (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) > 2 ** 53) return false;
  const word = BigInt.asUintN(64, BigInt(v));
  const set = cond.test.endsWith('Set');
  const bit = (k: number) => (k >= 63 ? v < 0 : ((word >> BigInt(k)) & 1n) === 1n) === set;
  return cond.test.startsWith('all') ? cond.positions.every(bit) : cond.positions.some(bit);
}

/** Same-type scalars: strings by code point, as jsonpath compares them (not UTF-16 units). */
function compareScalars(a: Exclude<Scalar, null>, b: Exclude<Scalar, null>): number {
  if (typeof a === 'string') return compareStrings(a, b as string);
  return a === b ? 0 : a < b ? -1 : 1;
}

/**
 * The index of the first element `$elemMatch` accepts, or -1: a document the query matches
 * (`elemMatch`), or a value each operator accepts (`elemMatchValue`). The filter and the
 * `$elemMatch` projection both ask this.
 */
export function elemMatchIndex(
  items: readonly Json[],
  cond: Cond & { op: 'elemMatch' | 'elemMatchValue' },
): number {
  return items.findIndex((item) =>
    cond.op === 'elemMatch'
      ? isPlainObject(item) && matchFilter(item, cond.filter)
      : matchPath(item, [], cond.cond),
  );
}
