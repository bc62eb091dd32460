/**
 * Planning one statement over a collection's documents, before its SQL is written: which indexes
 * serve the filter (every full index, and the partial and sparse ones the filter implies), the
 * WHERE they give, whether that SQL is right only while the catalog says what it said (then the
 * catalog guard goes in the statement's LIMIT), the `$text` score, and the LIMIT itself. Every
 * statement that filters a collection's documents takes its WHERE and its LIMIT from here.
 */
import { implies } from '../../mongo/filter/index-predicate.js';
import { type Filter, textSearchOf } from '../../mongo/filter/parse.js';
import { compileFilter, keyIsExact } from '../../mongo/filter/sql.js';
import { compileTextScore } from '../../mongo/filter/text-search.js';
import type { SortColumns, SortKey } from '../../mongo/sort.js';
import type { Params } from '../../mongo/value/params.js';
import { catalogId } from '../platform/workplaces.js';
import {
  buildPathLookup,
  type CollectionRef,
  columnPrefix,
  type IndexRow,
  type PathLookup,
} from './catalog.js';

/**
 * Whether a LIMIT checks the catalog guard (guardedLimit): `always` (every write, see
 * documents.ts), `if-catalog-dependent` (a guarded read: only one whose SQL depends on the catalog
 * carries it; it reads the catalog version with the statement's own snapshot, the one its rows
 * are read with, so a read never runs on a catalog other than the one it was compiled from), or
 * `never`.
 */
export type Guard = 'always' | 'if-catalog-dependent' | 'never';

/** What a statement over a collection needs of its filter, planned once. */
export interface FilterPlan {
  /** The WHERE condition: the chosen partial indexes' predicates, then the compiled filter. */
  where: string;
  /**
   * The key columns an ORDER BY may use, with the filter's `$text` score (`columns.textScore`,
   * when the filter searches and the collection has a text index).
   */
  columns: SortColumns;
  /**
   * ` limit …` of `count` rows (none when undefined), carrying the catalog guard as `guard` says.
   * Asked last: the ORDER BY compiled before it may have used a catalog-dependent column.
   */
  limit(count: string | undefined, guard: Guard): string;
}

/** The plan of `filter` over `c`, its values bound in `params`. */
export function planFilter(c: CollectionRef, filter: Filter, params: Params): FilterPlan {
  const columns = catalogDependentColumns(c, filter);
  const where = columns.predicate + compileFilter(filter, { params, indexed: columns.indexed, text: c.text });
  const search = textSearchOf(filter);
  const index = c.text;
  const textScore = search && index ? () => compileTextScore(search, index, params) : undefined;
  return {
    where,
    columns: { indexed: columns.indexed, compound: columns.compound, textScore },
    limit(count, guard) {
      if (guard === 'always' || (guard === 'if-catalog-dependent' && columns.dependsOnCatalog))
        return guardedLimit(c, count);
      return count === undefined ? '' : ` limit ${count}`;
    },
  };
}

/** The key columns a compound index gives a sort over all its fields, in the sort's directions. */
export interface CompoundOrder {
  columns: string[];
  /** Read backwards: right only while the index is not multikey (see `compoundOrder`). */
  reversed: boolean;
}

/** The indexes a statement may use, and the condition that lets the planner use partial ones. */
export interface IndexChoice {
  indexed: PathLookup;
  /** `"p<id>" and ` for each partial index chosen for some path, to prefix the filter with. */
  predicate: string;
  compound(keys: SortKey[]): CompoundOrder | undefined;
}

/**
 * The indexes a query may use: every full index, and the partial and sparse ones whose predicate
 * its filter implies (then preferred, being smaller). Their predicate columns are ANDed into the
 * statement, which changes nothing (every match satisfies them) but lets the planner prove the
 * partial btrees' condition. A partial index never serves a query it could answer incompletely.
 */
function indexesFor(c: CollectionRef, filter: Filter): IndexChoice {
  const usable = c.partial.filter((p) => implies(filter, p.predicate)).map((p) => p.row);
  const full = c.indexes.filter((ix) => !c.partial.some((p) => p.row === ix));
  if (usable.length === 0)
    return { indexed: c.paths, predicate: '', compound: (k) => compoundOrder(full, k) };
  const indexed = buildPathLookup([...usable, ...full]);
  const chosen = usable.filter((ix) =>
    ix.key.some(([path], n) => indexed(path)?.key === `"${columnPrefix(ix.id, n)}_a"`),
  );
  return {
    indexed,
    predicate: chosen.map((ix) => `"p${catalogId(ix.id)}" and `).join(''),
    compound: (keys) => compoundOrder([...usable, ...full], keys),
  };
}

/**
 * A compound index serves a sort over exactly its fields in its directions, or all reversed (a
 * backward scan). Reversed, the sort uses the index's key columns although each is the other
 * direction's: a document's smallest and largest values differ only when its path holds an array,
 * so this holds only while the index is not multikey.
 */
function compoundOrder(indexes: IndexRow[], keys: SortKey[]): CompoundOrder | undefined {
  if (keys.length < 2) return undefined;
  for (const ix of indexes) {
    if (ix.key.length !== keys.length) continue;
    if (!ix.key.every(([path], n) => path === keys[n]?.path)) continue;
    const same = ix.key.every(([, dir], n) => dir === keys[n]?.dir);
    const reversed = ix.key.every(([, dir], n) => dir === -(keys[n]?.dir ?? 0));
    if (!same && !(reversed && !ix.multikey)) continue;
    const columns = ix.key.map(([, dir], n) => `"${columnPrefix(ix.id, n)}_${dir === 1 ? 'a' : 'd'}"`);
    return { columns, reversed: !same };
  }
  return undefined;
}

/**
 * The collection's key columns, noting whether the statement used one whose SQL is right only
 * while the catalog says what it said: an index that has not gone multikey, whose key conditions
 * are then exact btree ranges that would miss documents with arrays on the path. Other columns
 * cannot give a wrong answer from a stale entry: `_id`'s is the primary key, a multikey index's
 * conditions hold whatever is written, and a dropped index's columns fail the statement (42703),
 * which the catalog cache retries.
 */
function catalogDependentColumns(c: CollectionRef, filter: Filter) {
  const choice = indexesFor(c, filter);
  const columns = {
    dependsOnCatalog: false,
    predicate: choice.predicate,
    indexed(path: string) {
      const idx = choice.indexed(path);
      if (idx && idx.key !== 'id' && !idx.multikey) columns.dependsOnCatalog = true;
      return idx;
    },
    compound(keys: SortKey[]) {
      const order = choice.compound(keys);
      if (order?.reversed) columns.dependsOnCatalog = true;
      return order;
    },
  };
  return columns;
}

/**
 * Whether the filter's top-level conditions pin every field of a unique index to one exact key: an
 * index that is not multikey (its unique btree holds every document then), neither partial nor
 * sparse, and values other than null whose keys are exact in its (cut) key columns.
 */
export function pinsUniqueIndex(c: CollectionRef, filter: Filter): boolean {
  const pinned = new Set<string>();
  for (const f of filter.kind === 'and' ? filter.children : [filter]) {
    if (f.kind !== 'field' || f.cond.op !== 'eq') continue;
    const v = f.cond.value;
    if (v !== null && keyIsExact({ truncated: true }, v)) pinned.add(f.path.text);
  }
  if (pinned.size === 0) return false;
  return c.indexes.some(
    (ix) =>
      ix.is_unique &&
      !ix.multikey &&
      !c.partial.some((p) => p.row === ix) &&
      ix.key.every(([path, dir]) => dir !== 'text' && pinned.has(path)),
  );
}

/**
 * Wraps an INSERT or UPDATE of documents so that, in the same statement, every index that is not
 * yet multikey becomes so if a written document's indexed path crosses an array. The statement
 * answers one row, `n`: the number of documents written.
 *
 * The statement carries the catalog guard (guardedLimit): which indexes are pending comes from the
 * catalog the request read, and an index created since would otherwise never learn of the arrays
 * this statement writes.
 */
export function trackingMultikey(c: CollectionRef, dml: string): string {
  const pending = c.indexes.filter((ix) => !ix.multikey);
  if (pending.length === 0)
    return `with w as (${dml} returning 1) select count(*) as n from w${guardedLimit(c, undefined)}`;
  const flags = pending.map(
    (ix) =>
      `(${ix.key.map((_k, n) => `"${columnPrefix(ix.id, n)}_m"`).join(' or ')}) as "m${catalogId(ix.id)}"`,
  );
  const which = pending.map(
    (ix) => `(id = ${catalogId(ix.id)} and exists (select 1 from w where w."m${ix.id}"))`,
  );
  return `with w as (${dml} returning ${flags.join(', ')}),
    f as (update collection_indexes set multikey = true
          where collection_id = ${catalogId(c.id)} and not multikey and (${which.join(' or ')}))
    select count(*) as n from w${guardedLimit(c, undefined)}`;
}

/**
 * A condition that holds while `c.version` is its collection's catalog version, and otherwise fails
 * the statement (SQLSTATE WP001, STALE_CATALOG) so that it runs again with a fresh entry
 * (db/storage/catalog-cache.ts). It does no DDL and is as right in a prepared statement as in one parsed
 * anew (migration 0021). Statements carry it in their LIMIT (guardedLimit), never in a WHERE.
 */
export function catalogGuard(c: CollectionRef): string {
  const cid = catalogId(c.id);
  // `select 1`, not a zero-column select: Citus runs this sub-select of the coordinator's catalog
  // first and hands its rows to the worker as an intermediate result, which it cannot describe
  // without a column (42601, "a column definition list is required").
  return `(exists (select 1 from collections where id = ${cid} and catalog_version = ${catalogId(c.version)}) or mdb.stale_catalog(${cid}))`;
}

/**
 * A LIMIT of `count` rows (SQL; none when undefined) that first checks the catalog guard of `c`
 * (catalogGuard).
 *
 * Why a LIMIT and not a condition of the WHERE: a planner that proves the WHERE false drops the
 * whole scan with every condition in it, the guard too. PostgreSQL 17 does so for two equalities
 * of one key column with different constants (`$all: ["a", "b"]` over an index not yet multikey),
 * and that proof is right only while the index is not multikey, which is what the guard checks. A
 * Limit node evaluates its count once, before it reads its input, whatever that input is. The
 * count is evaluated with the statement's snapshot, which PostgreSQL takes after it has locked the
 * statement's tables, so a write that waited behind an index build sees the version the build
 * committed. mdb.stale_catalog is VOLATILE so that the planner, which evaluates a LIMIT's stable
 * functions to estimate it, never calls it.
 */
export function guardedLimit(c: CollectionRef, count: string | undefined): string {
  return ` limit (case when ${catalogGuard(c)} then ${count ?? 'null'} end)::bigint`;
}
