/** What $push's $sort and $pull do with the elements of an array: order them, or test each one. */

import { matchFilter } from '../filter/match.js';
import { bsonCompare, jsonEqual } from '../value/compare.js';
import { getOwn, isPlainObject, type Json } from '../value/json.js';
import type { PullMatcher, PushSort } from './parse.js';
import { isIndex, type UpdatePath } from './path.js';

/** An empty array sorts below null in MongoDB; undefined stands for it among sort keys. */
type SortKey = Json | undefined;

export function sortElements(arr: Json[], sort: PushSort): Json[] {
  if (typeof sort === 'number') return [...arr].sort((a, b) => sort * bsonCompare(a, b));
  const keyed = arr.map((value) => ({ value, keys: sort.map((s) => sortKey(value, s.path, s.dir)) }));
  keyed.sort((a, b) => {
    for (const [i, s] of sort.entries()) {
      const c = compareSortKeys(a.keys[i], b.keys[i]);
      if (c !== 0) return s.dir * c;
    }
    return 0;
  });
  return keyed.map((k) => k.value);
}

/** As in find's sort: an array field sorts by its smallest element ascending and its largest descending. */
function sortKey(element: Json, path: UpdatePath, dir: 1 | -1): SortKey {
  const keys: SortKey[] = [];
  for (const v of valuesAt(element, path.segments)) {
    if (!Array.isArray(v)) keys.push(v);
    else if (v.length === 0) keys.push(undefined);
    else keys.push(...v);
  }
  if (keys.length === 0) return null;
  return keys.reduce((best, k) => (dir * compareSortKeys(k, best) < 0 ? k : best));
}

function compareSortKeys(a: SortKey, b: SortKey): number {
  if (a === undefined || b === undefined) return (a === undefined ? 0 : 1) - (b === undefined ? 0 : 1);
  return bsonCompare(a, b);
}

/**
 * The values a dotted path reaches, with MongoDB's implicit traversal of arrays of documents. A field
 * missing from a document counts as null, as it does for query equality.
 */
function valuesAt(value: Json, segs: string[], i = 0, out: Json[] = []): Json[] {
  if (i === segs.length) {
    out.push(value);
    return out;
  }
  const seg = segs[i] as string;
  if (Array.isArray(value)) {
    const indexed = isIndex(seg) ? value[Number(seg)] : undefined;
    if (indexed !== undefined) valuesAt(indexed, segs, i + 1, out);
    for (const e of value) if (isPlainObject(e)) valuesAt(e, segs, i, out);
  } else if (isPlainObject(value)) {
    valuesAt(getOwn(value, seg) ?? null, segs, i + 1, out);
  }
  return out;
}

export function pullMatches(matcher: PullMatcher, element: Json): boolean {
  switch (matcher.kind) {
    case 'equal':
      return jsonEqual(element, matcher.value);
    case 'document':
      return isPlainObject(element) && matchFilter(element, matcher.filter);
    case 'element':
      return matchFilter({ [matcher.key]: element }, matcher.filter);
  }
}
