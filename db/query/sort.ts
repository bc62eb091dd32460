import { isPlainObject, QueryError } from './errors.js';
import type { IndexedPath } from './filter-sql.js';
import type { Params } from './params.js';
import { missingPredicate, parsePath, rootNavs } from './path.js';

export interface SortKey {
  path: string;
  dir: 1 | -1;
}

export const MAX_SORT_KEYS = 32;

/** `{"a": 1, "b.c": -1}` → keys in order. Values are validated by the spec (1 or -1). */
export function parseSort(sort: unknown): SortKey[] {
  if (sort === undefined) return [];
  if (!isPlainObject(sort)) throw new QueryError('sort must be an object such as {"age": -1}.');
  const keys = Object.entries(sort);
  if (keys.length > MAX_SORT_KEYS) throw new QueryError(`sort has more than ${MAX_SORT_KEYS} keys.`);
  return keys.map(([path, dir]) => {
    parsePath(path, 'sort path');
    if (dir !== 1 && dir !== -1)
      throw new QueryError(`sort on '${path}' must be 1 or -1, not ${JSON.stringify(dir)}.`);
    return { path, dir };
  });
}

export interface SortColumns {
  /** The key columns for a path in each direction, when an index covers it. */
  indexed(path: string): (IndexedPath & { desc?: string }) | undefined;
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
  const whole = columns.compound?.(keys);
  if (whole) {
    keys.forEach(({ dir }, n) => {
      parts.push({ sql: whole.columns[n] as string, dir });
    });
    parts.push({ sql: 'id', dir: keys.at(-1)?.dir === -1 ? -1 : 1 });
    return parts;
  }
  for (const { path, dir } of keys) {
    if (path === '_id') {
      parts.push({ sql: 'id', dir });
      return parts; // _id is unique: later keys cannot change the order
    }
    const idx = columns.indexed(path);
    const column = dir === 1 ? idx?.key : idx?.desc;
    if (column) parts.push({ sql: column, dir });
    else {
      const parsed = parsePath(path);
      const missing = missingPredicate(parsed);
      const navsRef = params.jsonpathArray(rootNavs(parsed));
      parts.push({
        sql: `mdb.sort_key(doc, ${navsRef}, ${dir}, ${missing ? params.jsonpath(missing) : 'null'})`,
        dir,
      });
    }
  }
  parts.push({ sql: 'id', dir: keys.at(-1)?.dir === -1 ? -1 : 1 });
  return parts;
}

/** How many expressions compileOrderKeys gives for a sort, known before the catalog is. */
export function orderKeyCount(keys: SortKey[]): number {
  const id = keys.findIndex((k) => k.path === '_id');
  return id === -1 ? keys.length + 1 : id + 1;
}

export function orderByText(order: OrderKey[]): string {
  return order.map((k) => `${k.sql} ${k.dir === 1 ? 'asc' : 'desc'}`).join(', ');
}

export function compileSort(keys: SortKey[], columns: SortColumns, params: Params): string {
  return orderByText(compileOrderKeys(keys, columns, params));
}
