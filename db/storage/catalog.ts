import { implies } from '../../mongo/filter/index-predicate.js';
import type { Filter } from '../../mongo/filter/parse.js';
import { compileJsonpathPredicate, type IndexedPath } from '../../mongo/filter/sql.js';
import {
  type TextIndexRef,
  textConfiguration,
  textLanguageMap,
  textWeights,
} from '../../mongo/filter/text-search.js';
import { type IndexKind, type IndexOptionsInput, parseIndexKind } from '../../mongo/index-options.js';
import type { SortKey } from '../../mongo/sort.js';
import { getOwn, isPlainObject, type Json } from '../../mongo/value/json.js';
import { missingPredicate, multikeyPredicate, parsePath, rootNavs } from '../../mongo/value/path.js';
import type { Sql, TransactionSql } from '../connection/sql.js';
import { catalogId, workplaceSchema } from '../platform/workplaces.js';
import { StatementTexts } from './statement-texts.js';

/** A collection as the data layer needs it: where its table is and which paths its indexes cover. */
export interface CollectionRef {
  workplaceId: string;
  id: string;
  name: string;
  /** `wp_<workplace id>.c_<collection id>`, built from catalog ids only. */
  table: string;
  indexes: IndexRow[];
  /** collections.catalog_version when this was read (see migration 0007). */
  version: string;
  /**
   * Which key columns serve a path, built with the ref from `indexes`. A ref is never changed once
   * read, and the catalog cache hands the same one to every read until it expires: the lookup is
   * built once per entry, not on every request, and lives only as long as its ref.
   */
  paths: PathLookup;
  /** The partial and sparse indexes with their predicates; a query may use one its filter implies. */
  partial: PartialIndex[];
  /**
   * The texts of the ref's read and count statements (db/storage/statement-texts.ts says why they are
   * shared). They name the ref's table, so they belong to it, and live as long as the catalog
   * cache's entry: every request in that time sends the same string objects.
   */
  texts: StatementTexts;
  /** The text index, if the collection has one (at most one, as in MongoDB). */
  text?: TextIndexRef;
}

/** Distinct read and count statements one collection's ref keeps: query shapes, not values. */
const MAX_TEXTS_PER_COLLECTION = 200;

/** A text index's fields all have `"text"`; the other indexes' fields 1 or -1. */
export type IndexKey = [path: string, dir: 1 | -1 | 'text'][];

export interface IndexRow {
  id: string;
  name: string;
  key: IndexKey;
  is_unique: boolean;
  /** Some document's indexed path has crossed an array. */
  multikey: boolean;
  /** The creation options besides `key` and `unique`, as given (migration 0014). */
  options: IndexOptions;
}

/** An index's creation options besides its key and uniqueness; absent when not given. */
export interface IndexOptions {
  [option: string]: Json;
}

export const ID_INDEX_NAME = '_id_';

interface PartialIndex {
  row: IndexRow;
  predicate: Filter;
}

/** What an index's options make of it (checked when it was created). */
export function indexKind(ix: Pick<IndexRow, 'key' | 'options'>): IndexKind {
  return parseIndexKind(
    ix.key.map(([p]) => p),
    ix.options as IndexOptionsInput,
  );
}

export function tableOf(workplaceId: string, collectionId: string): string {
  return `"${workplaceSchema(workplaceId)}"."c_${catalogId(collectionId)}"`;
}

export type Lookup<T> = { workplace: false } | { workplace: true; found: T | undefined };

export async function listCollections(sql: Sql, workplace: string): Promise<string[] | undefined> {
  const rows = await sql<{ wid: string; name: string | null }[]>`
    select w.id as wid, c.name from workplaces w left join collections c on c.workplace_id = w.id
    where w.name = ${workplace} order by c.name collate "C"`;
  if (rows.length === 0) return undefined;
  return rows.flatMap((r) => (r.name === null ? [] : [r.name]));
}

/** The collection with its indexes, in one catalog query. */
export async function findCollection(
  sql: Sql,
  workplace: string,
  name: string,
): Promise<Lookup<CollectionRef>> {
  const [row] = await sql<
    { wid: string; cid: string | null; cname: string | null; version: string; indexes: IndexRow[] | null }[]
  >`
    select w.id as wid, c.id as cid, c.name as cname, c.catalog_version::text as version,
      (select coalesce(jsonb_agg(jsonb_build_object('id', i.id::text, 'name', i.name, 'key', i.key,
                                                    'is_unique', i.is_unique, 'multikey', i.multikey,
                                                    'options', i.options)
                                 order by i.id), '[]')
       from collection_indexes i where i.collection_id = c.id) as indexes
    from workplaces w left join collections c on c.workplace_id = w.id and c.name = ${name}
    where w.name = ${workplace}`;
  if (!row) return { workplace: false };
  if (row.cid === null || row.cname === null) return { workplace: true, found: undefined };
  const indexes = row.indexes ?? [];
  const partial = indexes.flatMap((ix) => {
    const { predicate } = indexKind(ix);
    return predicate ? [{ row: ix, predicate }] : [];
  });
  const full = indexes.filter((ix) => !partial.some((p) => p.row === ix));
  return {
    workplace: true,
    found: {
      workplaceId: row.wid,
      id: row.cid,
      name: row.cname,
      table: tableOf(row.wid, row.cid),
      indexes,
      version: row.version,
      paths: buildPathLookup(full),
      partial,
      texts: new StatementTexts(MAX_TEXTS_PER_COLLECTION),
      ...textIndexRef(indexes),
    },
  };
}

export type CreateCollectionResult =
  | { created: true }
  | { created: false; conflictsWith: string }
  | { created: false; noWorkplace: true };

export function createCollection(sql: Sql, workplace: string, name: string): Promise<CreateCollectionResult> {
  return sql.begin(async (tx): Promise<CreateCollectionResult> => {
    const [w] = await tx<{ id: string }[]>`select id from workplaces where name = ${workplace} for share`;
    if (!w) return { created: false, noWorkplace: true };
    const [row] = await tx<{ id: string }[]>`
      insert into collections (workplace_id, name) values (${w.id}, ${name})
      on conflict do nothing returning id`;
    if (!row) {
      const [existing] = await tx<{ name: string }[]>`
        select name from collections where workplace_id = ${w.id} and lower(name) = lower(${name})`;
      return { created: false, conflictsWith: existing?.name ?? name };
    }
    await tx.unsafe(`create table ${tableOf(w.id, row.id)} (id bytea primary key, doc jsonb not null)`);
    return { created: true };
  });
}

/** Drops the table (documents and indexes) and the catalog rows together. */
export function deleteCollection(sql: Sql, workplace: string, name: string): Promise<Lookup<true>> {
  return sql.begin(async (tx): Promise<Lookup<true>> => {
    const [row] = await tx<{ wid: string; cid: string | null }[]>`
      select w.id as wid, c.id as cid from workplaces w
      left join collections c on c.workplace_id = w.id and c.name = ${name}
      where w.name = ${workplace}`;
    if (!row) return { workplace: false };
    if (row.cid === null) return { workplace: true, found: undefined };
    await tx`delete from collections where id = ${row.cid}`;
    await tx.unsafe(`drop table ${tableOf(row.wid, row.cid)}`);
    return { workplace: true, found: true };
  });
}

function columnPrefix(indexId: string, field: number): string {
  return `i${catalogId(indexId)}_${field}`;
}

type PathLookup = (path: string) => (IndexedPath & { desc?: string }) | undefined;

const ID_PATH: IndexedPath = Object.freeze({ key: 'id', truncated: false });

/**
 * Which key columns serve a path: a single-field index first (it has btrees in both directions),
 * then an index that leads with the path, then any index holding it; of equals, the first given.
 */
function buildPathLookup(indexes: IndexRow[]): PathLookup {
  const map = new Map<string, IndexedPath & { desc: string; rank: number }>();
  for (const ix of indexes) {
    // A text index has no key columns; $text finds its tsvector column through textIndexRef.
    if (isTextIndex(ix)) continue;
    ix.key.forEach(([path, _dir], n) => {
      const rank = ix.key.length === 1 ? 0 : n === 0 ? 1 : 2;
      const existing = map.get(path);
      if (existing && existing.rank <= rank) return;
      const p = columnPrefix(ix.id, n);
      map.set(path, {
        key: `"${p}_a"`,
        desc: `"${p}_d"`,
        ...(ix.multikey ? { multikey: `"${p}_m"`, elementKeys: `"${p}_k"` } : {}),
        truncated: true,
        rank,
      });
    });
  }
  return (path) => (path === '_id' ? ID_PATH : map.get(path));
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
export function indexesFor(c: CollectionRef, filter: Filter): IndexChoice {
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

export type CreateIndexResult =
  | { created: IndexRow }
  | { exists: true }
  | { duplicates: true }
  /** The name of the collection's text index, when a second one was asked for. */
  | { textIndex: string };

export function isTextIndex(ix: Pick<IndexRow, 'key'>): boolean {
  return ix.key.some(([, dir]) => dir === 'text');
}

function textColumn(indexId: string): string {
  return `t${catalogId(indexId)}`;
}

/** A text index's language and weights, read from its options as they were given. */
function textIndexPlan(key: IndexKey, options: IndexOptions) {
  const weights = isPlainObject(options.weights) ? options.weights : {};
  const { letters, rankWeights } = textWeights(
    key.map(([path]) => {
      const w = getOwn(weights, path);
      return typeof w === 'number' ? w : 1;
    }),
  );
  const language = typeof options.default_language === 'string' ? options.default_language : 'english';
  const override = typeof options.language_override === 'string' ? options.language_override : 'language';
  return {
    config: textConfiguration(language, 'default_language'),
    override,
    fields: key.map(([path], n) => [rootNavs(parsePath(path)), letters[n] as string]),
    rankWeights,
  };
}

/** The collection's text index as `$text` and `$meta: "textScore"` compile against it. */
function textIndexRef(indexes: IndexRow[]): { text?: TextIndexRef } {
  const ix = indexes.find(isTextIndex);
  if (!ix) return {};
  const plan = textIndexPlan(ix.key, ix.options);
  return {
    text: {
      column: `"${textColumn(ix.id)}"`,
      config: plan.config,
      walks: plan.fields.flatMap(([walks]) => walks as string[]),
      rankWeights: plan.rankWeights,
    },
  };
}

/**
 * Adds generated key columns per field and the btrees over them, in one transaction, so a unique
 * index that existing documents violate leaves nothing behind.
 */
export async function createIndex(
  sql: Sql,
  c: CollectionRef,
  name: string,
  key: IndexKey,
  unique: boolean,
  options: IndexOptions = {},
): Promise<CreateIndexResult> {
  try {
    return await sql.begin(async (tx): Promise<CreateIndexResult> => {
      // Building the btrees takes as long as the collection is big; the request timeout is for queries.
      await tx`set local statement_timeout = 0`;
      await lockForIndexChange(tx, c);
      if (isTextIndex({ key })) {
        // Under the lock, so two requests cannot each add one.
        const [other] = await tx<{ name: string }[]>`
          select name from collection_indexes where collection_id = ${c.id} and name <> ${name}
            and exists (select 1 from jsonb_array_elements(key) as e where e ->> 1 = 'text')`;
        if (other) return { textIndex: other.name };
      }
      const [row] = await tx<{ id: string }[]>`
        insert into collection_indexes (collection_id, name, key, is_unique, options)
        values (${c.id}, ${name}, ${tx.json(key)}, ${unique}, ${tx.json(options)})
        on conflict do nothing returning id::text as id`;
      if (!row) return { exists: true };
      if (isTextIndex({ key })) {
        const plan = textIndexPlan(key, options);
        await tx`select mdb.add_text_index(${c.table}::regclass, ${textColumn(row.id)},
          ${tx.json(plan.fields)}, ${plan.override}, ${tx.json(textLanguageMap())}, ${plan.config})`;
        // Nothing tracks arrays for it: it has no key columns that arrays would make inexact.
        await tx`update collection_indexes set multikey = true where id = ${row.id}`;
        return { created: { id: row.id, name, key, is_unique: false, multikey: true, options } };
      }
      await addIndexStructures(tx, c.table, row.id, key, unique, indexKind({ key, options }));
      const anyArray = key.map((_k, n) => `"${columnPrefix(row.id, n)}_m"`).join(' or ');
      const [mk] = await tx.unsafe<{ multikey: boolean }[]>(
        `update collection_indexes set multikey = exists (select 1 from ${c.table} where ${anyArray})
         where id = $1 returning multikey`,
        [row.id],
      );
      return {
        created: { id: row.id, name, key, is_unique: unique, multikey: mk?.multikey ?? true, options },
      };
    });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return { duplicates: true };
    throw err;
  }
}

async function addIndexStructures(
  tx: TransactionSql,
  table: string,
  indexId: string,
  key: IndexKey,
  unique: boolean,
  kind: IndexKind,
) {
  for (const [n, [path]] of key.entries()) {
    const parsed = parsePath(path);
    await tx`select mdb.add_index_field(${table}::regclass, ${columnPrefix(indexId, n)},
      ${rootNavs(parsed)}::jsonpath[], ${missingPredicate(parsed) ?? null}::jsonpath,
      ${multikeyPredicate(parsed)}::jsonpath)`;
  }
  // A partial or sparse index's btrees hold only the documents its predicate column accepts; the
  // key columns exist for every document, so a query the index cannot serve still reads them right.
  let only = '';
  if (kind.predicate) {
    const { path, vars } = compileJsonpathPredicate(kind.predicate);
    await tx`select mdb.add_index_predicate(${table}::regclass, ${indexId}::bigint, ${path}::jsonpath, ${tx.json(vars)})`;
    only = ` and "p${catalogId(indexId)}"`;
  }
  const where = only ? ` where "p${catalogId(indexId)}"` : '';
  const col = (n: number, suffix: 'a' | 'd' | 'm' | 'k') => `"${columnPrefix(indexId, n)}_${suffix}"`;
  const ddl: string[] = [];
  if (key.length === 1) {
    ddl.push(`create index "x${indexId}_a" on ${table} (${col(0, 'a')}, id)${where}`);
    ddl.push(`create index "x${indexId}_d" on ${table} (${col(0, 'd')}, id)${where}`);
  } else {
    const lastDir = key.at(-1)?.[1] === -1 ? 'desc' : 'asc';
    const cols = key.map(([, dir], n) => (dir === 1 ? `${col(n, 'a')} asc` : `${col(n, 'd')} desc`));
    ddl.push(`create index "x${indexId}" on ${table} (${cols.join(', ')}, id ${lastDir})${where}`);
  }
  // Documents whose path crosses an array are found through these (usually tiny) partial indexes,
  // and by the keys of all their values (NULL for other documents) for equality and $in.
  key.forEach((_k, n) => {
    ddl.push(`create index "x${indexId}_m${n}" on ${table} (id) where ${col(n, 'm')}${only}`);
    ddl.push(
      `create index "x${indexId}_k${n}" on ${table} using gin (${col(n, 'k')}) with (fastupdate = off) where ${col(n, 'm')}${only}`,
    );
  });
  if (unique) {
    const cols = key.map((_k, n) => col(n, 'a')).join(', ');
    const anyMulti = key.map((_k, n) => col(n, 'm')).join(' or ');
    ddl.push(`create unique index "x${indexId}_u" on ${table} (${cols}) where not (${anyMulti})${only}`);
  }
  if (kind.expireAfterSeconds !== undefined) {
    const [[path]] = key as [[string, 1 | -1]];
    await tx`select mdb.add_index_expiry(${table}::regclass, ${indexId}::bigint, ${rootNavs(parsePath(path))}::jsonpath[])`;
    const t = `"t${catalogId(indexId)}"`;
    ddl.push(`create index "x${indexId}_t" on ${table} (${t}) where ${t} is not null${only}`);
  }
  for (const statement of ddl) await tx.unsafe(statement);
}

/**
 * Takes the collection's table before its catalog rows change, as every write does (a write takes
 * the table, then may flag an index multikey, which bumps the collection's catalog version).
 * Writers are then either finished, and an index built now sees their arrays, or waiting, and their
 * guarded statements fail on the catalog version this transaction replaces and run again with the
 * new one (db/storage/documents.ts). Taking the catalog row first would also deadlock with such a writer.
 */
async function lockForIndexChange(tx: TransactionSql, c: CollectionRef): Promise<void> {
  await tx.unsafe(`lock table ${c.table} in access exclusive mode`);
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

export async function deleteIndex(sql: Sql, c: CollectionRef, name: string): Promise<boolean> {
  return sql.begin(async (tx) => {
    await lockForIndexChange(tx, c);
    const [row] = await tx<{ id: string; key: IndexKey }[]>`
      delete from collection_indexes where collection_id = ${c.id} and name = ${name}
      returning id::text as id, key`;
    if (!row) return false;
    if (isTextIndex(row)) {
      await tx.unsafe(`alter table ${c.table} drop column "${textColumn(row.id)}"`);
      return true;
    }
    const drops = row.key.flatMap((_k, n) =>
      (['a', 'd', 'm', 'k'] as const).map((s) => `drop column "${columnPrefix(row.id, n)}_${s}"`),
    );
    // A partial, sparse or TTL index's own columns.
    drops.push(
      `drop column if exists "p${catalogId(row.id)}"`,
      `drop column if exists "t${catalogId(row.id)}"`,
    );
    await tx.unsafe(`alter table ${c.table} ${drops.join(', ')}`);
    return true;
  });
}
