import type { Filter } from '../../mongo/filter/parse.js';
import { compileJsonpathPredicate, type IndexedPath } from '../../mongo/filter/sql.js';
import {
  type TextIndexRef,
  textConfiguration,
  textLanguageMap,
  textWeights,
} from '../../mongo/filter/text-search.js';
import { type IndexKind, type IndexOptionsInput, parseIndexKind } from '../../mongo/index-options.js';
import { parseRules, type Rules, type StoredRules } from '../../mongo/rules.js';
import { getOwn, isPlainObject, type Json, type JsonObject } from '../../mongo/value/json.js';
import { missingPredicate, multikeyPredicate, parsePath, rootNavs } from '../../mongo/value/path.js';
import type { Sql, TransactionSql } from '../connection/sql.js';
import { catalogId, workplaceSchema } from '../platform/workplaces.js';
import { preparedBudgetOf, StatementTexts } from './statement-texts.js';

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
  /** The rules end users are held to (migration 0025); undefined when it never had any. */
  rules?: Rules;
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
    {
      wid: string;
      cid: string | null;
      cname: string | null;
      version: string;
      indexes: IndexRow[] | null;
      rules: JsonObject | null;
    }[]
  >`
    select w.id as wid, c.id as cid, c.name as cname, c.catalog_version::text as version, c.rules,
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
      texts: new StatementTexts(MAX_TEXTS_PER_COLLECTION, preparedBudgetOf(sql)),
      ...textIndexRef(indexes),
      ...(row.rules ? { rules: parseRules(row.rules) } : {}),
    },
  };
}

/**
 * Replaces a collection's rules, bumping its catalog version in the same UPDATE: every process's
 * cached entry is then stale (announced by migration 0024's trigger, and checked by the catalog
 * guard), so a request runs wholly under the rules before or after. False when there is no such
 * collection.
 */
export async function replaceRules(
  sql: Sql,
  workplace: string,
  name: string,
  rules: StoredRules,
): Promise<Lookup<true>> {
  const rows = await sql<{ found: boolean }[]>`
    select (select true from collections c where c.workplace_id = w.id and c.name = ${name}) as found
    from workplaces w where w.name = ${workplace}`;
  if (rows.length === 0) return { workplace: false };
  const updated = await sql`
    update collections c set rules = ${JSON.stringify(rules)}::text::jsonb, catalog_version = catalog_version + 1
    from workplaces w where w.id = c.workplace_id and w.name = ${workplace} and c.name = ${name}
    returning 1`;
  return { workplace: true, found: updated.length > 0 ? true : undefined };
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

export function columnPrefix(indexId: string, field: number): string {
  return `i${catalogId(indexId)}_${field}`;
}

export type PathLookup = (path: string) => (IndexedPath & { desc?: string }) | undefined;

const ID_PATH: IndexedPath = Object.freeze({ key: 'id', truncated: false });

/**
 * Which key columns serve a path: a single-field index first (it has btrees in both directions),
 * then an index that leads with the path, then any index holding it; of equals, the first given.
 */
export function buildPathLookup(indexes: IndexRow[]): PathLookup {
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
