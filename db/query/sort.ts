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
}

/**
 * ORDER BY in MongoDB's order: BSON type brackets, arrays by their smallest element ascending and
 * largest descending, missing as null. Indexed paths sort by their key columns (so the btree can
 * deliver the order); others by mdb.sort_key(). Ties are broken by _id, in the last key's direction,
 * so pages are stable and a single-key sort matches the index order exactly.
 */
export function compileSort(keys: SortKey[], columns: SortColumns, params: Params): string {
  const parts: string[] = [];
  let idSeen = false;
  for (const { path, dir } of keys) {
    const order = dir === 1 ? 'asc' : 'desc';
    if (path === '_id') {
      parts.push(`id ${order}`);
      idSeen = true;
      break; // _id is unique: later keys cannot change the order
    }
    const idx = columns.indexed(path);
    const column = dir === 1 ? idx?.key : idx?.desc;
    if (column) parts.push(`${column} ${order}`);
    else {
      const parsed = parsePath(path);
      const missing = missingPredicate(parsed);
      const navsRef = params.jsonpathArray(rootNavs(parsed));
      parts.push(
        `mdb.sort_key(doc, ${navsRef}, ${dir}, ${missing ? params.jsonpath(missing) : 'null'}) ${order}`,
      );
    }
  }
  if (!idSeen) parts.push(`id ${keys.at(-1)?.dir === -1 ? 'desc' : 'asc'}`);
  return parts.join(', ');
}
