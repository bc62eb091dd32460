/**
 * MongoDB's positional update paths: `$` (the element the query matched), `$[]` (every element)
 * and `$[<id>]` (the elements the array filter named `<id>` matches). Parsing checks them with
 * MongoDB's rules and errors; applying turns one positional path into the concrete paths of one
 * document, read before any operator changes it, as MongoDB resolves its update tree against the
 * document it started from.
 */

import { QueryError } from '../../errors.js';
import { type MatchDetails, matchFilter } from '../filter/match.js';
import { type Filter, parseFilter } from '../filter/parse.js';
import { preview } from '../value/compare.js';
import { describeValue, getOwn, isPlainObject, type Json, type JsonObject } from '../value/json.js';
import { isIndex, isPositionalPath, type Positional, positional, type UpdatePath } from './path.js';

/** MongoDB's identifiers: a lowercase letter, then letters and digits. */
const IDENTIFIER = /^[a-z][a-zA-Z0-9]*$/;

/** The checks MongoDB makes on a path's positional segments when it parses the update. */
export function checkPositionalPath(path: UpdatePath, arrayFilters: ReadonlyMap<string, Filter>): void {
  const first = positional(path.segments[0] as string);
  if (first?.kind === 'first')
    throw new QueryError(
      `Cannot have positional (i.e. '$') element in the first position in path '${path.text}'.`,
    );
  if (first !== undefined)
    throw new QueryError(
      `Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '${path.text}'.`,
    );
  if (path.segments.filter((s) => s === '$').length > 1)
    throw new QueryError(`Too many positional (i.e. '$') elements found in path '${path.text}'.`);
  for (const s of path.segments) {
    const p = positional(s);
    if (p?.kind === 'filtered' && !arrayFilters.has(p.id))
      throw new QueryError(`No array filter found for identifier '${p.id}' in path '${path.text}'.`);
  }
}

/**
 * The `arrayFilters` option: a filter per identifier, each on `<id>` and `<id>.<field>` keys, in
 * the query grammar. Errors name the filter's index.
 */
export function parseArrayFilters(raw: unknown): Map<string, Filter> {
  const filters = new Map<string, Filter>();
  if (raw === undefined) return filters;
  if (!Array.isArray(raw))
    throw new QueryError(`arrayFilters must be an array of filter objects, not ${describeValue(raw)}.`);
  for (const [i, item] of raw.entries()) {
    const at = `arrayFilters[${i}]`;
    if (!isPlainObject(item))
      throw new QueryError(`${at}: an array filter must be an object, not ${describeValue(item)}.`);
    let filter: Filter;
    try {
      filter = parseFilter(item, {
        banSpecial: true,
        noExpr: 'in arrayFilters, which apply to array elements',
        text: false,
      });
    } catch (err) {
      if (err instanceof QueryError) throw new QueryError(`${at}: ${err.message}`);
      throw err;
    }
    const names = [...topLevelNames(filter)];
    if (names.length === 0)
      throw new QueryError(`${at}: Cannot use an expression without a top-level field name in arrayFilters.`);
    if (names.length > 1)
      throw new QueryError(
        `${at}: Error parsing array filter: Expected a single top-level field name, found '${names[0]}' and '${names[1]}'.`,
      );
    const id = names[0] as string;
    if (!IDENTIFIER.test(id))
      throw new QueryError(
        `${at}: Error parsing array filter: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '${id}'.`,
      );
    if (filters.has(id))
      throw new QueryError(`${at}: Found multiple array filters with the same top-level field name ${id}.`);
    filters.set(id, filter);
  }
  return filters;
}

/** MongoDB refuses an array filter that no path of the update uses. */
export function checkFiltersUsed(
  arrayFilters: ReadonlyMap<string, Filter>,
  paths: UpdatePath[],
  update: unknown,
): void {
  const used = new Set<string>();
  for (const path of paths)
    for (const s of path.segments) {
      const p = positional(s);
      if (p?.kind === 'filtered') used.add(p.id);
    }
  for (const id of arrayFilters.keys())
    if (!used.has(id))
      throw new QueryError(
        `The array filter for identifier '${id}' was not used in the update ${preview(update as Json)}.`,
      );
}

function topLevelNames(filter: Filter, out = new Set<string>()): Set<string> {
  if (filter.kind === 'field') out.add(filter.path.segments[0] as string);
  else if ('children' in filter) for (const c of filter.children) topLevelNames(c, out);
  return out;
}

/** What resolving positional paths in one document needs. */
export interface PositionalContext {
  root: JsonObject;
  arrayFilters: ReadonlyMap<string, Filter>;
  /** The index `$` stands for: the query's match in the document, or an error. */
  matchedIndex: () => string;
}

const NO_MATCH = 'The positional operator did not find the match needed from the query.';

/**
 * The `$` of one document: the position, in the first array its path crossed, of the element the
 * query matched (MongoDB's elemMatchKey). An inserting upsert has no match, as in MongoDB.
 */
export function matchedIndexOf(doc: JsonObject, filter: Filter | undefined, isInsert: boolean): () => string {
  let index: string | undefined;
  return () => {
    if (index !== undefined) return index;
    if (isInsert || filter === undefined) throw new QueryError(NO_MATCH);
    const details: MatchDetails = {};
    if (!matchFilter(doc, filter, details) || details.elemMatchKey === undefined)
      throw new QueryError(NO_MATCH);
    index = String(details.elemMatchKey);
    return index;
  };
}

/** The concrete paths a path stands for in one document: itself when it holds no positional segment. */
export function resolvePaths(path: UpdatePath, ctx: PositionalContext): UpdatePath[] {
  if (!isPositionalPath(path)) return [path];
  let prefixes: string[][] = [[]];
  for (const seg of path.segments) {
    const p = positional(seg);
    if (p === undefined) prefixes = prefixes.map((prefix) => [...prefix, seg]);
    else if (p.kind === 'first') {
      const index = ctx.matchedIndex();
      prefixes = prefixes.map((prefix) => [...prefix, index]);
    } else prefixes = prefixes.flatMap((prefix) => matchingElements(prefix, p, ctx));
  }
  return prefixes.map((segments) => ({ text: segments.join('.'), segments }));
}

function matchingElements(
  prefix: string[],
  p: Positional & { kind: 'all' | 'filtered' },
  ctx: PositionalContext,
): string[][] {
  const value = valueAt(ctx.root, prefix);
  if (value === undefined)
    throw new QueryError(
      `The path '${prefix.join('.')}' must exist in the document in order to apply array updates.`,
    );
  if (!Array.isArray(value))
    throw new QueryError(
      `Cannot apply array updates to non-array element ${prefix[prefix.length - 1]}: ${preview(value)}.`,
    );
  const out: string[][] = [];
  for (const [i, element] of value.entries()) {
    if (p.kind === 'filtered') {
      const filter = ctx.arrayFilters.get(p.id) as Filter;
      // MongoDB matches the array filter against {<id>: element}.
      if (!matchFilter({ [p.id]: element }, filter)) continue;
    }
    out.push([...prefix, String(i)]);
  }
  return out;
}

/** A path walked as updates walk it: object fields, and array elements by index only. */
function valueAt(root: Json, segments: string[]): Json | undefined {
  let value: Json | undefined = root;
  for (const seg of segments) {
    if (Array.isArray(value)) value = isIndex(seg) ? value[Number(seg)] : undefined;
    else if (isPlainObject(value)) value = getOwn(value, seg);
    else return undefined;
  }
  return value;
}
