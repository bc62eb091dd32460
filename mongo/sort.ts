import { QueryError } from '../errors.js';
import type { IndexedPath } from './filter/sql.js';
import { isPlainObject } from './value/json.js';
import type { Params } from './value/params.js';
import { missingPredicate, parsePath, rootNavs } from './value/path.js';

export interface SortKey {
  path: string;
  dir: 1 | -1;
  /** `{"$meta": "textScore"}`: by the query's `$text` score, highest first (`dir` is -1). */
  meta?: 'textScore';
}

/** MongoDB's words when the score is asked for and the query has no `$text`. */
export function textScoreUnavailable(where: string): QueryError {
  return new QueryError(
    `query requires text score metadata, but it is not available (${where} asks for {"$meta": "textScore"}; the query needs a $text).`,
  );
}

export const MAX_SORT_KEYS = 32;

/**
 * `{"a": 1, "b.c": -1}` → keys in order. Values are validated by the spec (1, -1 or the text
 * score's `$meta`); `hasText` says whether the query has a `$text`, which the score needs.
 */
export function parseSort(sort: unknown, hasText = false): SortKey[] {
  if (sort === undefined) return [];
  if (!isPlainObject(sort)) throw new QueryError('sort must be an object such as {"age": -1}.');
  const keys = Object.entries(sort);
  if (keys.length > MAX_SORT_KEYS) throw new QueryError(`sort has more than ${MAX_SORT_KEYS} keys.`);
  return keys.map(([path, dir]): SortKey => {
    parsePath(path, 'sort path');
    if (isPlainObject(dir) && dir.$meta === 'textScore' && Object.keys(dir).length === 1) {
      if (!hasText) throw textScoreUnavailable(`sort on '${path}'`);
      return { path, dir: -1, meta: 'textScore' };
    }
    if (dir !== 1 && dir !== -1)
      throw new QueryError(`sort on '${path}' must be 1 or -1, not ${JSON.stringify(dir)}.`);
    return { path, dir };
  });
}

export interface SortColumns {
  /** The key columns for a path in each direction, when an index covers it. */
  indexed(path: string): (IndexedPath & { desc?: string }) | undefined;
  /** The `$text` score as a non-negative float4 (text-search.ts), for a `$meta` sort. */
  textScore?: (() => string) | undefined;
  /** A compound index's key columns that give the whole sort (the sort's directions apply). */
  compound?(keys: SortKey[]): { columns: string[] } | undefined;
}

/** One expression of the ORDER BY, with its direction: the keyset of a cursor compares the same. */
export interface OrderKey {
  sql: string;
  dir: 1 | -1;
}

/**
 * ORDER BY in MongoDB's order: BSON type brackets, arrays by their smallest element ascending and
 * largest descending, missing as null. Indexed paths sort by their key columns (so the btree can
 * deliver the order); others by mdb.sort_key(). Ties are broken by _id, in the last key's direction,
 * so pages are stable and a single-key sort matches the index order exactly. Every expression is a
 * non-null bytea (an index's key column is the same mdb.sort_key() the fallback computes), so the
 * last one is always `id` and the list orders documents totally.
 */
export function compileOrderKeys(keys: SortKey[], columns: SortColumns, params: Params): OrderKey[] {
  const parts: OrderKey[] = [];
  // A $meta key has no index column: such a sort never takes a compound index's.
  const whole = keys.some((k) => k.meta !== undefined) ? undefined : columns.compound?.(keys);
  if (whole) {
    keys.forEach(({ dir }, n) => {
      parts.push({ sql: whole.columns[n] as string, dir });
    });
    parts.push({ sql: 'id', dir: keys.at(-1)?.dir === -1 ? -1 : 1 });
    return parts;
  }
  for (const { path, dir, meta } of keys) {
    if (meta === 'textScore') {
      if (!columns.textScore) throw textScoreUnavailable('the sort');
      // float4send of a non-negative float sorts bytewise as the number does: a bytea like the
      // other keys, so cursors take it as they take them.
      parts.push({ sql: `float4send(${columns.textScore()})`, dir: -1 });
      continue;
    }
    if (path === '_id') {
      parts.push({ sql: 'id', dir });
      return parts; // _id is unique: later keys cannot change the order
    }
    const idx = columns.indexed(path);
    const column = dir === 1 ? idx?.key : idx?.desc;
    if (column) parts.push({ sql: column, dir });
    else parts.push({ sql: documentSortKey(path, dir, params), dir });
  }
  parts.push({ sql: 'id', dir: keys.at(-1)?.dir === -1 ? -1 : 1 });
  return parts;
}

/** The BSON-order sort key of a path of the row's `doc`, for rows no index covers. */
export function documentSortKey(path: string, dir: 1 | -1, params: Params): string {
  const parsed = parsePath(path);
  const missing = missingPredicate(parsed);
  const navsRef = params.jsonpathArray(rootNavs(parsed));
  return `mdb.sort_key(doc, ${navsRef}, ${dir}, ${missing ? params.jsonpath(missing) : 'null'})`;
}

/** How many expressions compileOrderKeys gives for a sort, known before the catalog is. */
export function orderKeyCount(keys: SortKey[]): number {
  const id = keys.findIndex((k) => k.path === '_id' && k.meta === undefined);
  return id === -1 ? keys.length + 1 : id + 1;
}

export function orderByText(order: OrderKey[]): string {
  return order.map((k) => `${k.sql} ${k.dir === 1 ? 'asc' : 'desc'}`).join(', ');
}

export function compileSort(keys: SortKey[], columns: SortColumns, params: Params): string {
  return orderByText(compileOrderKeys(keys, columns, params));
}
