import { randomBytes } from 'node:crypto';
import { QueryError } from '../../errors.js';
import { keysetPredicate } from '../../mongo/cursor.js';
import { type Filter, pinsOneId } from '../../mongo/filter/parse.js';
import { compileFilterOn } from '../../mongo/filter/sql.js';
import { RegexSession } from '../../mongo/regex/run.js';
import { compileOrderKeys, orderByText, type SortKey } from '../../mongo/sort.js';
import { keyArrayLiteral } from '../../mongo/value/bson-key.js';
import { canonicalJson } from '../../mongo/value/compare.js';
import { type DocumentId, idFirst, type Json, type JsonObject } from '../../mongo/value/json.js';
import { Params } from '../../mongo/value/params.js';
import { type FieldPath, rootNavs } from '../../mongo/value/path.js';
import { idFirstJsonbBytes } from '../connection/jsonb-id-first.js';
import { CONFLICT_ATTEMPTS, retryingConflicts, type Sql, type TransactionSql } from '../connection/sql.js';
import type { CollectionRef } from './catalog.js';
import { citusCannotRun } from './citus-shapes.js';
import { type Guard, pinsUniqueIndex, planFilter, trackingMultikey } from './plan.js';
import type { RunOptions } from './statement-texts.js';
import { uniqueViolationOf } from './unique-violation.js';

/** Raised when an insert or upsert would duplicate `_id` or a unique index key. */
export class DuplicateKeyError extends Error {}

export const MAX_ID_BYTES = 1024;
/** Documents written back per UPDATE statement. */
const WRITE_BATCH = 1000;
/**
 * An update computes the new documents in the server, so it holds every matching document in
 * memory at once; past this it refuses rather than risk the process.
 */
export const MAX_UPDATE_MATCHES = 100_000;

// ---- ObjectId-style ids ------------------------------------------------------------------------
// 4-byte seconds, 5 random bytes per process, 3-byte counter: MongoDB's layout, so ids sort by
// creation time like ObjectIds do.
const processRandom = randomBytes(5);
let counter = randomBytes(3).readUIntBE(0, 3);

export function newObjectId(now = Date.now()): string {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(Math.floor(now / 1000) >>> 0, 0);
  processRandom.copy(b, 4);
  counter = (counter + 1) % 0x1000000;
  b.writeUIntBE(counter, 9, 3);
  return b.toString('hex');
}

/** MongoDB's limit on nested documents and arrays. */
export const MAX_DOCUMENT_DEPTH = 100;

/**
 * Refuses field names MongoDB refuses, and nesting past MAX_DOCUMENT_DEPTH. `path` holds the keys and
 * indexes leading to `value` (its length is the depth) and is joined only for an error: every
 * document written goes through here, a bulk insert a thousand at a time, and building every key's
 * path as a string would be most of the walk's cost.
 */
function validateFieldNames(value: JsonObject | Json[], path: (string | number)[]): void {
  if (path.length >= MAX_DOCUMENT_DEPTH)
    throw new QueryError(
      `The document is nested deeper than ${MAX_DOCUMENT_DEPTH} levels (at '${path.join('.')}').`,
    );
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v !== 'object' || v === null) continue;
      path.push(i);
      validateFieldNames(v, path);
      path.pop();
    }
    return;
  }
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (k === '')
      throw new QueryError(
        `The document has an empty field name${path.length ? ` under '${path.join('.')}'` : ''}.`,
      );
    if (k.startsWith('$'))
      throw new QueryError(`Field names may not start with '$': '${[...path, k].join('.')}'.`);
    if (k.includes('.'))
      throw new QueryError(`Field names may not contain '.': '${[...path, k].join('.')}'.`);
    const v = value[k];
    if (typeof v !== 'object' || v === null) continue;
    path.push(k);
    validateFieldNames(v, path);
    path.pop();
  }
}

/** Checks a document before it is stored, and gives it an `_id` if it has none. */
export function prepareDocument(doc: JsonObject, index?: number): JsonObject {
  validateFieldNames(doc, []);
  if (!('_id' in doc)) return { _id: newObjectId(), ...doc };
  const id = doc._id;
  if (Array.isArray(id)) throw new QueryError(`${documentAt(index)}: _id may not be an array.`);
  // A string id of up to SHORT_ID characters is within the limit however it is escaped and encoded.
  if (
    !(typeof id === 'string' && id.length <= SHORT_ID) &&
    Buffer.byteLength(JSON.stringify(id)) > MAX_ID_BYTES
  )
    throw new QueryError(`${documentAt(index)}: _id is longer than ${MAX_ID_BYTES} bytes.`);
  return idFirst(doc);
}

/** How an error names the document (a plain function: a closure per document costs a bulk insert). */
function documentAt(index: number | undefined): string {
  return index === undefined ? 'The document' : `Document ${index}`;
}

/** JSON.stringify writes a UTF-16 unit as at most 6 bytes (`\u001f`), plus the two quotes. */
const SHORT_ID = Math.floor((MAX_ID_BYTES - 2) / 6);

export interface ReadOptions {
  filter: Filter;
  sort: SortKey[];
  skip: number;
  limit: number;
  /** The ORDER BY values of the row to continue after (a decoded cursor). */
  after?: Buffer[];
  /** Select each document's `$text` score too (`s`), for a `$meta` projection. */
  textScore?: boolean;
}

export interface Statement {
  text: string;
  values: (string | Buffer)[];
  /** Whether postgres.js prepares it (db/storage/statement-texts.ts); unprepared when absent. */
  options?: RunOptions;
}

function shared(c: CollectionRef, text: string, values: (string | Buffer)[]): Statement {
  const s = c.texts.use(text);
  return { text: s.text, values, options: s.options };
}

/** A rule a written document must satisfy (an end user's `create` or `update` rule), and its name. */
export interface WriteCheck {
  kind: 'create' | 'update';
  rule: Filter;
}

/**
 * SQL that is true when `doc` (SQL of the new document: a column of a function scan of the
 * documents written, never a parameter, which a plan could fold into a constant) satisfies the
 * check's rule, and otherwise fails the statement (mdb.rule_refused, migration 0025), which then
 * writes nothing: the write and its check are one statement.
 */
function checked(check: WriteCheck, doc: string, params: Params): string {
  return `(case when ${compileFilterOn(check.rule, doc, params)} then true else mdb.rule_refused('${check.kind}', ${doc}) end)`;
}

/**
 * The one statement a read runs; exported so tests can EXPLAIN exactly what the API executes. It
 * reads one row past the limit, so that whether more remain is known without counting, and selects
 * each row's ORDER BY values (k0, k1, ...) beside the document: a cursor takes them from the last
 * row, as SQL computed them for the order, never from the (maybe projected) document. They are the
 * ORDER BY's own expressions, so the planner computes each once per row.
 */
export function readStatement(c: CollectionRef, o: ReadOptions, guarded = false): Statement {
  const params = new Params();
  const plan = planFilter(c, o.filter, params);
  const score = plan.columns.textScore;
  const order = compileOrderKeys(o.sort, plan.columns, params);
  const keyset = o.after ? `(${keysetPredicate(order, o.after, params)}) and ` : '';
  // A filter that pins `_id`, or every field of a unique index, matches at most one document, so
  // no page can follow: the lookups users send most run without the keys and the extra row.
  const byIndex = pinsUniqueIndex(c, o.filter);
  const single = byIndex || pinsOneId(o.filter);
  // A unique index is one only while no document holds an array on its paths (its btree leaves
  // those out), which the catalog says and the guard checks.
  const guard: Guard = !guarded ? 'never' : byIndex ? 'always' : 'if-catalog-dependent';
  const keys =
    (single ? '' : `, ${order.map((k, i) => `${k.sql} as k${i}`).join(', ')}`) +
    (o.textScore && score ? `, ${score()} as s` : '');
  const limit = single ? o.limit : o.limit + 1;
  // No OFFSET without a skip: a bound OFFSET is unknown to the generic plan of the prepared text,
  // which the planner then costs as skipping a tenth of the matches, finds dearer than a custom
  // plan and never uses, so every execution was planned again.
  const offset = o.skip > 0 ? ` offset ${params.int(o.skip)}` : '';
  const text = `select doc${keys} from ${c.table} where ${keyset}${plan.where} order by ${orderByText(order)}${offset}${plan.limit(params.int(limit), guard)}`;
  return shared(c, text, params.values);
}

export function countStatement(c: CollectionRef, filter: Filter, guarded = false): Statement {
  const params = new Params();
  const plan = planFilter(c, filter, params);
  const guard = plan.limit(undefined, guarded ? 'if-catalog-dependent' : 'never');
  return shared(c, `select count(*) as n from ${c.table} where ${plan.where}${guard}`, params.values);
}

/** More distinct values than this is an error rather than a response of unbounded size. */
export const MAX_DISTINCT_VALUES = 10_000;

/**
 * MongoDB's distinct in one statement: every value the path's walks reach in the matching
 * documents (an array value gives its elements, one level, as MongoDB's distinct expands the field
 * it ends on), grouped by JSON equality and ordered by BSON key. One row past the limit is read so
 * that too many values is known without counting them all. `v` breaks ties between values whose
 * keys are equal yet are not (numbers a double cannot tell apart), so the order is stable.
 */
function distinctStatement(c: CollectionRef, key: FieldPath, filter: Filter, guarded = false): Statement {
  const params = new Params();
  const plan = planFilter(c, filter, params);
  const navsRef = params.jsonpathArray(rootNavs(key));
  const text = `select e.v from ${c.table}
    cross join lateral unnest(${navsRef}) as n(p)
    cross join lateral jsonb_path_query(doc, n.p) as t(v)
    cross join lateral jsonb_array_elements(case when jsonb_typeof(t.v) = 'array' then t.v else jsonb_build_array(t.v) end) as e(v)
    where ${plan.where}
    group by e.v order by mdb.key(e.v), e.v${plan.limit(params.int(MAX_DISTINCT_VALUES + 1), guarded ? 'if-catalog-dependent' : 'never')}`;
  return shared(c, text, params.values);
}

export async function distinctValues(
  sql: Sql,
  c: CollectionRef,
  key: FieldPath,
  filter: Filter,
  guarded = false,
): Promise<Json[]> {
  const { text, values, options } = distinctStatement(c, key, filter, guarded);
  const rows = await sql.unsafe<{ v: Json }[]>(text, values, options);
  if (rows.length > MAX_DISTINCT_VALUES)
    throw new QueryError(
      `'${key.text}' has more than ${MAX_DISTINCT_VALUES} distinct values under the query; narrow the query and ask in parts.`,
    );
  return rows.map((r) => r.v);
}

export interface Page<T> {
  result: T;
  /** With `textScore`: each document's `$text` score, in the order of `result`. */
  scores?: number[];
  /** The ORDER BY values of the page's last document, when more documents follow it. */
  next?: Buffer[];
}

export async function readPage(
  sql: Sql,
  c: CollectionRef,
  o: ReadOptions,
  guarded = false,
): Promise<Page<JsonObject[]>> {
  const { text, values, options } = readStatement(c, o, guarded);
  const rows = await sql.unsafe<({ doc: JsonObject; s?: number } & Record<string, Buffer>)[]>(
    text,
    values,
    options,
  );
  const page = rows.slice(0, o.limit);
  const last = page.at(-1);
  const result = page.map((r) => idFirst(r.doc));
  const scores = o.textScore ? { scores: page.map((r) => Number(r.s ?? 0)) } : {};
  if (rows.length <= o.limit || !last) return { result, ...scores };
  const next: Buffer[] = [];
  for (let i = 0; `k${i}` in last; i++) next.push(last[`k${i}`] as Buffer);
  return { result, next, ...scores };
}

export async function readDocuments(
  sql: Sql,
  c: CollectionRef,
  o: ReadOptions,
  guarded = false,
): Promise<JsonObject[]> {
  return (await readPage(sql, c, o, guarded)).result;
}

/**
 * What readPage finds, as one JSON array in UTF-8, without parsing a document: each is the
 * database's own text of it (`{"k": v, ...}`: jsonb's spacing, and numbers with the digits stored)
 * with `_id` moved first. Parsing documents only to serialize them again was most of what a read
 * cost this server beyond the query itself.
 */
export async function readPageJson(
  sql: Sql,
  c: CollectionRef,
  o: ReadOptions,
  guarded = false,
): Promise<Page<Buffer>> {
  const { text, values, options } = readStatement(c, o, guarded);
  // Row by row (forEach) rather than from the query's result array: postgres.js's query objects
  // are often allocated in the old generation, and one that has answered keeps its result alive
  // until the next full collection, so every row of every read outlived the young-generation
  // collections. The callback is kept as long, so it is left holding an empty string.
  let json = '[';
  let n = 0;
  let lastKeys: Buffer[] | undefined;
  let more = false;
  await sql
    .unsafe(text, values, options)
    .raw()
    .forEach((row) => {
      const cells = row as unknown as Buffer[];
      if (++n > o.limit) {
        more = true;
        return;
      }
      const doc = idFirstJsonbBytes(cells[0] as Buffer);
      json += json.length > 1 ? `,${doc}` : doc;
      // Raw cells are text: bytea as `\x<hex>`. Only the last row's are kept (and decoded).
      if (n === o.limit) lastKeys = cells.slice(1);
    });
  const result = Buffer.from(`${json}]`, 'latin1');
  json = '';
  if (!more || !lastKeys) return { result };
  return { result, next: lastKeys.map((k) => Buffer.from(k.toString('latin1', 2), 'hex')) };
}

export async function countDocuments(
  sql: Sql,
  c: CollectionRef,
  filter: Filter,
  guarded = false,
): Promise<number> {
  const { text, values, options } = countStatement(c, filter, guarded);
  const [row] = await sql.unsafe<{ n: string }[]>(text, values, options);
  return Number(row?.n ?? 0);
}

/**
 * Whether each document satisfies `rule`, decided by the SQL a write's check runs (`checked`): the
 * rules' test (handlers/rules.ts) answers with the database, as a write would, never with a second
 * evaluation.
 */
export async function satisfying(sql: Sql, rule: Filter, docs: JsonObject[]): Promise<boolean[]> {
  if (docs.length === 0) return [];
  const params = new Params();
  params.values.push(JSON.stringify(docs));
  const rows = await sql.unsafe<{ ok: boolean }[]>(
    `select coalesce(${compileFilterOn(rule, 'x.d', params)}, false) as ok
     from jsonb_array_elements($1::text::jsonb) with ordinality as x (d, n) order by x.n`,
    params.values,
  );
  return rows.map((r) => r.ok);
}

/** The plan PostgreSQL chooses for a statement (tests assert that indexes are used). */
export async function explain(sql: Sql, s: Statement): Promise<string> {
  const rows = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`explain ${s.text}`, s.values);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/*
 * Every write is guarded (guardedLimit), whatever its filter: an insert or update must tell the
 * indexes built since its catalog was read that it writes arrays (trackingMultikey), and a filter
 * over a dropped index's columns must not run. A stale write fails whole and runs again with a
 * fresh entry (db/storage/catalog-cache.ts), so nothing is written twice.
 */

export async function deleteDocuments(sql: Sql, c: CollectionRef, filter: Filter): Promise<number> {
  const params = new Params();
  const plan = planFilter(c, filter, params);
  const s = shared(
    c,
    `with w as (delete from ${c.table} where ${plan.where} returning 1) select count(*) as n from w${plan.limit(undefined, 'always')}`,
    params.values,
  );
  try {
    const [row] = await retryingConflicts(() => sql.unsafe<{ n: string }[]>(s.text, s.values, s.options));
    return Number(row?.n ?? 0);
  } catch (err) {
    if (!citusCannotRun(err)) throw err;
  }
  // What Citus runs instead: the matches locked by a guarded sub-select (which rechecks the filter
  // on a row changed meanwhile, as the DELETE's own conditions would), then deleted by `id`.
  const locked = shared(
    c,
    `delete from ${c.table} where id in (select id from ${c.table} where ${plan.where} order by id${plan.limit(undefined, 'always')} for update)`,
    params.values,
  );
  const deleted = await retryingConflicts(() => sql.unsafe(locked.text, locked.values, locked.options));
  return deleted.count;
}

/**
 * JSON text whose top-level `member` parses to the documents being inserted, and stores as they
 * would written out again (http/json-depth.ts says when): PostgreSQL can take the documents from
 * it, and the server need not serialize them.
 */
export interface VerbatimDocuments {
  text: string;
  member: string;
}

/** Inserts all documents in one statement, or none. */
export async function insertDocuments(
  sql: Sql,
  c: CollectionRef,
  docs: JsonObject[],
  verbatim?: VerbatimDocuments,
  check?: WriteCheck,
): Promise<DocumentId[]> {
  const prepared = docs.map((d, i) => prepareDocument(d, i));
  const seen = new Set<string>();
  for (const d of prepared) {
    const key = canonicalJson(d._id as Json);
    if (seen.has(key))
      throw new DuplicateKeyError(`Duplicate _id ${key} within the request; nothing was written.`);
    seen.add(key);
  }
  const statement = verbatim
    ? insertVerbatim(c, docs, prepared, verbatim, check)
    : insertSerialized(c, prepared, check);
  try {
    await retryingConflicts(() => sql.unsafe(statement.text, statement.values, statement.options));
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw await describeDuplicate(sql, c, prepared, err);
    throw err;
  }
  return prepared.map((d) => d._id as DocumentId);
}

/** The keys of the documents' ids as one bound array (keyArrayLiteral). */
function idKeys(prepared: JsonObject[]): string {
  return keyArrayLiteral(prepared.map((d) => d._id as Json));
}

function insertSerialized(c: CollectionRef, prepared: JsonObject[], check?: WriteCheck): Statement {
  const params = new Params();
  params.values.push(JSON.stringify(prepared), idKeys(prepared));
  const where = check ? ` where ${checked(check, 'd', params)}` : '';
  return shared(
    c,
    trackingMultikey(
      c,
      `insert into ${c.table} (id, doc) select coalesce(k, mdb.key(d -> '_id')), d
        from rows from (jsonb_array_elements($1::text::jsonb), unnest($2::bytea[])) as a (d, k)${where}`,
    ),
    params.values,
  );
}

/**
 * The documents come from the text; those sent without `_id` get the one prepareDocument gave them
 * (by position, null for the others). ROWS FROM walks the documents, the generated ids and the
 * keys of all ids side by side, each array parsed once: an id picked from the parameter by
 * position in the select list was parsed again for every row under the generic plan of the
 * prepared statement.
 */
function insertVerbatim(
  c: CollectionRef,
  docs: JsonObject[],
  prepared: JsonObject[],
  verbatim: VerbatimDocuments,
  check?: WriteCheck,
): Statement {
  const given: (Json | null)[] = [];
  let generated = false;
  for (let i = 0; i < docs.length; i++) {
    const sent = '_id' in (docs[i] as JsonObject);
    given.push(sent ? null : ((prepared[i] as JsonObject)._id as Json));
    generated ||= !sent;
  }
  const params = new Params();
  params.values.push(
    verbatim.text,
    verbatim.member,
    generated ? JSON.stringify(given) : '[]',
    idKeys(prepared),
  );
  const where = check ? ` where ${checked(check, 'd', params)}` : '';
  return shared(
    c,
    trackingMultikey(
      c,
      `insert into ${c.table} (id, doc) select coalesce(k, mdb.key(d -> '_id')), d from (
        select case when e ? '_id' then e else jsonb_build_object('_id', g) || e end, k
        from rows from (jsonb_array_elements($1::text::jsonb -> $2::text), jsonb_array_elements($3::text::jsonb),
                        unnest($4::bytea[])) as a (e, g, k)) as x (d, k)${where}`,
    ),
    params.values,
  );
}

/** Names the offending key of a failed insert: an existing `_id`, or the unique index. */
async function describeDuplicate(
  sql: Sql,
  c: CollectionRef,
  docs: JsonObject[],
  err: unknown,
): Promise<Error> {
  const violation = uniqueViolationOf(err);
  if (violation.on === 'index') {
    const ix = c.indexes.find((i) => i.id === violation.indexId);
    const fields = ix?.key.map(([p]) => p).join(', ') ?? '?';
    return new DuplicateKeyError(
      `A document has the same value as another for the unique index '${ix?.name ?? '?'}' (${fields}); nothing was written.`,
    );
  }
  const ids = docs.map((d) => d._id as Json);
  const rows = await sql.unsafe<{ id: Json }[]>(
    `select doc -> '_id' as id from ${c.table} where id in (select mdb.key(x) from jsonb_array_elements($1::text::jsonb) as x) limit 5`,
    [JSON.stringify(ids)],
  );
  const named = rows.map((r) => canonicalJson(r.id)).join(', ');
  return new DuplicateKeyError(
    `Duplicate _id ${named || '(unknown)'}: it already exists; nothing was written.`,
  );
}

export interface UpdatePlan {
  filter: Filter;
  /** Computes the new document, or throws a QueryError that aborts the whole update. */
  apply(doc: JsonObject): JsonObject;
  /**
   * For upserts: the document to insert when nothing matched, and the query it came from, which
   * names the lock that makes concurrent upserts of one query insert one document.
   */
  upsert?: { query: JsonObject; document: () => JsonObject };
  modified(before: JsonObject, after: JsonObject): boolean;
  /** Default MAX_UPDATE_MATCHES. */
  maxMatches?: number;
  /**
   * Only the first matching document in `sort` order (default `_id`) is updated, as MongoDB's
   * updateOne, replaceOne, findOneAndUpdate and `update` without `multi` do.
   */
  single?: boolean;
  sort?: SortKey[];
  /**
   * With `single`: the outcome carries the document as it was before the update or after it, as
   * `project` makes it. `project` runs before the transaction commits, so an error there (a
   * positional projection the changed document no longer matches) writes nothing.
   */
  returning?: { which: 'before' | 'after'; project: (doc: JsonObject) => JsonObject };
  /**
   * An end user's rules, checked in the statement that writes: `update` on each changed document
   * after its change (the filter already holds it before), `create` on an upsert's new document.
   */
  checks?: { update?: WriteCheck; create?: WriteCheck };
}

export interface UpdateOutcome {
  matchedCount: number;
  modifiedCount: number;
  upsertedId?: DocumentId;
  /**
   * With `returning`: the document before or after, or null when there is none (nothing matched,
   * or an upsert inserted and `before` was asked for, as MongoDB answers).
   */
  document?: JsonObject | null;
}

/**
 * Reads the matching documents FOR UPDATE, computes the new ones in TypeScript, and writes the
 * changed ones back in batched statements, all in one transaction: an error in any document
 * (such as $inc on a string) writes nothing.
 */
export async function updateDocuments(sql: Sql, c: CollectionRef, plan: UpdatePlan): Promise<UpdateOutcome> {
  // The request's one regex budget, over its documents and its attempts.
  const regexes = new RegexSession();
  for (let attempt = 1; ; attempt++) {
    try {
      if (plan.single) {
        const outcome = await retryingConflicts(() => updateFirst(sql, c, plan, regexes));
        if (outcome) return outcome;
      }
      return await retryingConflicts(() => sql.begin((tx) => updateIn(tx, c, plan, regexes)));
    } catch (err) {
      if ((err as { code?: string }).code !== '23505') throw err;
      const violation = uniqueViolationOf(err);
      if (violation.on === 'index') {
        const ix = c.indexes.find((i) => i.id === violation.indexId);
        throw new DuplicateKeyError(
          `The update would give two documents the same value for the unique index '${ix?.name ?? '?'}'; nothing was written.`,
        );
      }
      // Another request inserted the document this upsert was about to insert: it matches now,
      // so the upsert runs again and updates it, as it would have done a moment later.
      if (plan.upsert && attempt < CONFLICT_ATTEMPTS) continue;
      throw new DuplicateKeyError(
        violation.on === 'id'
          ? 'The upsert would insert an _id that already exists; nothing was written.'
          : 'The update would duplicate a unique key; nothing was written.',
      );
    }
  }
}

/**
 * The first document matching `filter` in `sort` order, locked until the transaction ends.
 *
 * Under READ COMMITTED, `... order by ... limit 1 for update` may answer no row although a
 * matching row exists: when the row it waited for was changed by the transaction holding it so that
 * it no longer matches, PostgreSQL drops it and goes on only through the rows of the statement's
 * own snapshot, so a row committed meanwhile (a new document, or one made to match again) is not
 * seen. A queue whose workers claim and add documents hits that. So an empty answer is checked
 * with the same read unlocked, in a fresh snapshot: if a matching row exists, the locking read
 * runs again. Each such round means another transaction committed a change to a matching row, so
 * it ends; the statement timeout bounds it anyway. SKIP LOCKED would be cheaper under contention,
 * but it hands out a later document while an earlier one is held by a transaction that may roll
 * back or leave it matching, which breaks the promise of the first in `sort` order.
 */
async function lockFirst(
  tx: TransactionSql,
  c: CollectionRef,
  filter: Filter,
  sort: SortKey[],
): Promise<JsonObject | undefined> {
  const locking = firstStatement(c, filter, sort, 'locking');
  const first = firstStatement(c, filter, sort, 'plain');
  for (;;) {
    const [row] = await tx.unsafe<{ doc: JsonObject }[]>(locking.text, locking.values, locking.options);
    if (row) return row.doc;
    const [exists] = await tx.unsafe<{ doc: JsonObject }[]>(first.text, first.values, first.options);
    if (!exists) return undefined;
  }
}

/**
 * The statement that reads the first document matching `filter` in `sort` order: with the version
 * of its row (`xmin`, the transaction that wrote it) when `versioned`, with a row lock when
 * `locking`.
 */
function firstStatement(
  c: CollectionRef,
  filter: Filter,
  sort: SortKey[],
  mode: 'locking' | 'versioned' | 'plain',
): Statement {
  const params = new Params();
  const plan = planFilter(c, filter, params);
  const orderBy = orderByText(compileOrderKeys(sort, plan.columns, params));
  const columns = mode === 'versioned' ? 'doc, xmin::text as v' : 'doc';
  const lock = mode === 'locking' ? ' for update' : '';
  return shared(
    c,
    `select ${columns} from ${c.table} where ${plan.where} order by ${orderBy}${plan.limit('1', 'always')}${lock}`,
    params.values,
  );
}

/** The condition that holds for the row of `doc` while it is still the version `v` (firstStatement). */
function atVersion(params: Params, doc: JsonObject, v: string): string {
  return `id = ${params.key(doc._id as Json)} and xmin = ${params.typed(v, 'xid')}`;
}

const CITUS_CANNOT = Symbol('Citus cannot run the versioned read');

/**
 * The first match of a versioned read (firstStatement), or CITUS_CANNOT where Citus cannot plan
 * it (db/storage/citus-shapes.ts): the caller then takes the locking path, which reads the same match.
 */
async function versionedFirst(
  sql: Sql,
  read: Statement,
): Promise<{ doc: JsonObject; v: string } | undefined | typeof CITUS_CANNOT> {
  try {
    const [row] = await sql.unsafe<{ doc: JsonObject; v: string }[]>(read.text, read.values, read.options);
    return row;
  } catch (err) {
    if (citusCannotRun(err)) return CITUS_CANNOT;
    throw err;
  }
}

/** How often updateFirst reads again after the document changed under it before it takes locks. */
const OPTIMISTIC_ATTEMPTS = 3;

/**
 * A single-document update without a transaction: the first match is read with its row version,
 * the new document computed, and written back only if the row is still that version (a
 * compare-and-set on `xmin`, which every write of the row changes; PostgreSQL rechecks it on the
 * newest version when the row was written meanwhile). Two statements where a transaction takes
 * four (BEGIN, a locking read, the write, COMMIT), each a round trip to the database, and no row
 * lock is written for a document that does not change. When the document changed between the read
 * and the write, it reads again; after OPTIMISTIC_ATTEMPTS, and for an upsert that found nothing,
 * it answers undefined and the transaction of updateIn decides, taking locks.
 */
async function updateFirst(
  sql: Sql,
  c: CollectionRef,
  plan: UpdatePlan,
  regexes: RegexSession,
): Promise<UpdateOutcome | undefined> {
  const read = firstStatement(c, plan.filter, plan.sort ?? [], 'versioned');
  for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
    const row = await versionedFirst(sql, read);
    if (row === CITUS_CANNOT) return undefined;
    if (!row) {
      if (plan.upsert) return undefined;
      return { matchedCount: 0, modifiedCount: 0, ...(plan.returning ? { document: null } : {}) };
    }
    const before = row.doc;
    let after = await regexes.run(() => plan.apply(before));
    const modified = plan.modified(before, after);
    if (modified) after = prepareDocument(after);
    const outcome: UpdateOutcome = { matchedCount: 1, modifiedCount: modified ? 1 : 0 };
    // Before the write, so that an error there writes nothing.
    if (plan.returning) {
      const { which, project } = plan.returning;
      const returned = which === 'before' ? idFirst(before) : after;
      outcome.document = await regexes.run(() => project(returned));
    }
    if (!modified) return outcome;
    const params = new Params();
    const check = plan.checks?.update;
    // With an end user's rule, the new document comes from a function scan, which the check reads.
    const dml = check
      ? `update ${c.table} set doc = x.d from jsonb_array_elements(${params.jsonValue([after])}) as x (d)
           where ${atVersion(params, before, row.v)} and ${checked(check, 'x.d', params)}`
      : `update ${c.table} set doc = ${params.json(after)} where ${atVersion(params, before, row.v)}`;
    const write = shared(c, trackingMultikey(c, dml), params.values);
    const [written] = await sql.unsafe<{ n: string }[]>(write.text, write.values, write.options);
    if (Number(written?.n ?? 0) === 1) return outcome;
  }
  return undefined;
}

async function matching(tx: TransactionSql, c: CollectionRef, plan: UpdatePlan): Promise<JsonObject[]> {
  if (plan.single) {
    const doc = await lockFirst(tx, c, plan.filter, plan.sort ?? []);
    return doc ? [doc] : [];
  }
  const max = plan.maxMatches ?? MAX_UPDATE_MATCHES;
  const params = new Params();
  const planned = planFilter(c, plan.filter, params);
  // The guard on the first statement is enough: the lock it takes keeps index changes out until
  // the transaction ends.
  const s = shared(
    c,
    `select doc from ${c.table} where ${planned.where} order by id${planned.limit(params.int(max + 1), 'always')} for update`,
    params.values,
  );
  const rows = await tx.unsafe<{ doc: JsonObject }[]>(s.text, s.values, s.options);
  if (rows.length > max) {
    throw new QueryError(
      `The update matches more than ${max} documents; narrow the query and update in parts.`,
    );
  }
  return rows.map((r) => r.doc);
}

async function updateIn(
  tx: TransactionSql,
  c: CollectionRef,
  plan: UpdatePlan,
  regexes: RegexSession,
): Promise<UpdateOutcome> {
  let docs = await matching(tx, c, plan);
  if (docs.length === 0 && plan.upsert) {
    // Concurrent upserts of one query would each find nothing and each insert. A lock named after
    // the query (its text with keys sorted) makes them take turns; the one that waited then looks
    // again in a fresh snapshot (READ COMMITTED), finds what the first inserted, and updates it.
    // Different queries that match the same new document are not serialized: MongoDB's answer
    // for those too is a unique index, which turns the second insert into a retry (below).
    // A constant text: preparing it holds one statement per connection.
    await tx.unsafe(
      'select pg_advisory_xact_lock(hashtextextended($1, 0))',
      [`${c.table} ${canonicalJson(plan.upsert.query)}`],
      { prepare: true },
    );
    docs = await matching(tx, c, plan);
  }
  if (docs.length === 0 && plan.upsert) {
    const { upsert, returning } = plan;
    const doc = prepareDocument(await regexes.run(() => upsert.document()));
    const params = new Params();
    const key = params.key(doc._id as Json);
    const check = plan.checks?.create;
    // INSERT ... SELECT of one row, whose cast runs once: Citus refuses a sub-select (json()'s) in
    // VALUES. With an end user's rule, the document comes from a function scan the check reads.
    const dml = check
      ? `insert into ${c.table} (id, doc) select ${key}, x.d from jsonb_array_elements(${params.jsonValue([doc])}) as x (d)
           where ${checked(check, 'x.d', params)}`
      : `insert into ${c.table} (id, doc) select ${key}, ${params.jsonValue(doc)}`;
    const s = shared(c, trackingMultikey(c, dml), params.values);
    await tx.unsafe(s.text, s.values, s.options);
    return {
      matchedCount: 0,
      modifiedCount: 0,
      upsertedId: doc._id as DocumentId,
      ...(returning
        ? { document: returning.which === 'after' ? await regexes.run(() => returning.project(doc)) : null }
        : {}),
    };
  }
  const changed: JsonObject[] = [];
  let after: JsonObject | undefined;
  // All the documents in one session's map, so that their regex tests go to the worker together.
  const computed = await regexes.map(docs, (doc) => {
    // Only a changed document needs checking before it is stored; an unchanged one was stored as
    // it is (and applyUpdate already puts `_id` first).
    const next = plan.apply(doc);
    return plan.modified(doc, next) ? { next: prepareDocument(next), isChanged: true } : { next };
  });
  for (const { next, isChanged } of computed) {
    if (isChanged) changed.push(next);
    after ??= next;
  }
  for (let i = 0; i < changed.length; i += WRITE_BATCH) {
    const batch = changed.slice(i, i + WRITE_BATCH);
    const params = new Params();
    params.values.push(JSON.stringify(batch), idKeys(batch));
    const check = plan.checks?.update ? ` and ${checked(plan.checks.update, 'u.d', params)}` : '';
    const s = shared(
      c,
      trackingMultikey(
        c,
        `update ${c.table} as t set doc = u.d
             from (select coalesce(k, mdb.key(x -> '_id')) as k, x as d
                   from rows from (jsonb_array_elements($1::text::jsonb), unnest($2::bytea[])) as a (x, k)) as u
             where t.id = u.k${check}`,
      ),
      params.values,
    );
    await tx.unsafe(s.text, s.values, s.options);
  }
  const outcome: UpdateOutcome = { matchedCount: docs.length, modifiedCount: changed.length };
  if (plan.returning) {
    const { which, project } = plan.returning;
    const before = docs[0];
    const doc = which === 'before' ? before && idFirst(before) : after;
    outcome.document = doc ? await regexes.run(() => project(doc)) : null;
  }
  return outcome;
}

/**
 * Deletes the first document matching `filter` in `sort` order, and returns it as `project` makes
 * it, before it is deleted: an error there deletes nothing.
 */
export async function deleteOneDocument(
  sql: Sql,
  c: CollectionRef,
  filter: Filter,
  sort: SortKey[],
  project: (doc: JsonObject) => JsonObject = (doc) => doc,
): Promise<JsonObject | undefined> {
  // As updateFirst: the first match is deleted if its row is still the version read, in two
  // statements; after OPTIMISTIC_ATTEMPTS changes under it, in a transaction that locks it.
  const read = firstStatement(c, filter, sort, 'versioned');
  const regexes = new RegexSession();
  for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
    const row = await retryingConflicts(() => versionedFirst(sql, read));
    if (row === CITUS_CANNOT) break;
    if (!row) return undefined;
    const projected = await regexes.run(() => project(idFirst(row.doc)));
    const params = new Params();
    const s = shared(c, `delete from ${c.table} where ${atVersion(params, row.doc, row.v)}`, params.values);
    const deleted = await retryingConflicts(() => sql.unsafe(s.text, s.values, s.options));
    if (deleted.count === 1) return projected;
  }
  return retryingConflicts(() =>
    sql.begin(async (tx) => {
      const doc = await lockFirst(tx, c, filter, sort);
      if (!doc) return undefined;
      const params = new Params();
      const s = shared(c, `delete from ${c.table} where id = ${params.key(doc._id as Json)}`, params.values);
      await tx.unsafe(s.text, s.values, s.options);
      return regexes.run(() => project(idFirst(doc)));
    }),
  );
}
