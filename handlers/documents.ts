import { aggregateDocuments as aggregateRows, lookedUp } from '../db/storage/aggregate.js';
import type { CollectionRef } from '../db/storage/catalog.js';
import {
  countDocuments as countRows,
  DuplicateKeyError,
  deleteOneDocument as deleteOneRow,
  deleteDocuments as deleteRows,
  distinctValues as distinctRows,
  insertDocuments,
  readPage,
  readPageJson,
  type UpdateOutcome,
  type UpdatePlan,
  updateDocuments as updateRows,
} from '../db/storage/documents.js';
import { errors, QueryError } from '../errors.js';
import { cursorBinding, decodeCursor, encodeCursor } from '../mongo/cursor.js';
import { type Filter, parseFilter, textSearchOf } from '../mongo/filter/parse.js';
import type { HiddenFields } from '../mongo/hidden-fields.js';
import { parsePipeline } from '../mongo/pipeline/parse.js';
import {
  applyProjection,
  type Projection,
  parseProjection,
  projectsEverything,
} from '../mongo/projection.js';
import { RegexSession } from '../mongo/regex/run.js';
import { bindRule, type RuleKind, restrict, withPresets } from '../mongo/rules.js';
import { orderKeyCount, parseSort } from '../mongo/sort.js';
import { applyUpdate, jsonEqual, parseUpdate, upsertSeed } from '../mongo/update/update.js';
import type { JsonObject } from '../mongo/value/json.js';
import { parsePath } from '../mongo/value/path.js';
import { EncodedJson } from './encoded-json.js';
import { type RuleScope, ruleOf, ruleScopeOf, withinUpdateRules } from './rule-scope.js';
import type { Caller, Handler, HandlerDeps } from './types.js';

export const DEFAULT_LIMIT = 100;

/** The sort of a request, whose `$meta: "textScore"` keys need a `$text` in its query. */
function sortOf(sort: unknown, filter: Filter) {
  return parseSort(sort, textSearchOf(filter) !== undefined);
}

/**
 * The single-document routes read their document without its score: `$meta` is for `read`'s
 * `fields` (sorting these routes by the score works).
 */
function withoutTextScore(projection: Projection): Projection {
  if (projection.textScores)
    throw new QueryError(
      `{"$meta": "textScore"} in fields is supported on the read route only (at '${projection.textScores[0]}').`,
    );
  return projection;
}

interface StoragePath {
  name: string;
  storage_name: string;
}

/**
 * The update part of a request body (`query`, `doc`, `upsert`) as the plan every update route
 * runs, so an option of updates is added in one place. `expect` is what a single-document route
 * requires of `doc`, refused with the words of MongoDB's drivers.
 */
export function updatePlan(
  body: { query: unknown; doc: unknown; upsert?: boolean; arrayFilters?: unknown; sort?: unknown },
  expect?: 'operators' | 'replacement',
): (scope: RuleScope | undefined) => UpdatePlan {
  const query = body.query as JsonObject;
  const filter = parseFilter(query);
  const update = parseUpdate(body.doc, { arrayFilters: body.arrayFilters });
  if (expect === 'operators' && update.kind === 'replacement')
    throw new QueryError(
      'Update document requires atomic operators: use update operators such as {"$set": {...}}, or replace-one to replace the document.',
    );
  if (expect === 'replacement' && update.kind === 'operators')
    throw new QueryError(
      'Replacement document must not contain atomic operators: send the whole new document, or use update-one.',
    );
  const seed = body.upsert ? upsertSeed(query, update) : undefined;
  const now = new Date();
  const replacement = update.kind === 'replacement';
  const plan: UpdatePlan = {
    filter,
    apply: (doc: JsonObject) => applyUpdate(doc, update, { now, isInsert: false, filter }),
    modified: (before: JsonObject, after: JsonObject) => !jsonEqual(before, after),
    single: replacement,
    ...(seed
      ? { upsert: { query, document: () => applyUpdate(seed, update, { now, isInsert: true }) } }
      : {}),
  };
  // An end user's update runs within the collection's rules, which the request's collection holds.
  return (scope) => (scope ? withinUpdateRules(plan, scope, body, replacement) : plan);
}

async function orConflict<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw errors.duplicateKey(err.message);
    throw err;
  }
}

export function documentHandlers({ sql, statistics, catalog }: HandlerDeps) {
  /** Every operation goes through the catalog cache with guarded statements; a 404 says what is missing. */
  async function inCollection<T>(
    workplace: string,
    name: string,
    work: (c: CollectionRef) => Promise<T>,
  ): Promise<T> {
    const lookup = await catalog.withCollection(workplace, name, work);
    if (!lookup.workplace) throw errors.workplaceNotFound(workplace);
    if (lookup.found === undefined) throw errors.collectionNotFound(name);
    return lookup.found;
  }

  /** inCollection, with the rules the caller is held to (none for administrators and X-Auth-Tokens). */
  function underRules<T>(
    caller: Caller,
    workplace: string,
    name: string,
    work: (c: CollectionRef, scope: RuleScope | undefined) => Promise<T>,
    alwaysUser = false,
  ): Promise<T> {
    return inCollection(workplace, name, async (c) => work(c, await ruleScopeOf(sql, caller, c, alwaysUser)));
  }

  /**
   * The collection's hidden fields when the caller is an end user and it hides some, after checking
   * that no part of the request (`[raw JSON, how to name it]`) names one.
   */
  function hiddenIn(scope: RuleScope | undefined, parts: [unknown, string][]): HiddenFields | undefined {
    const hidden = scope?.rules?.hidden;
    if (!hidden?.any) return undefined;
    for (const [raw, where] of parts) hidden.check(raw, where);
    return hidden;
  }

  /** The filter a request may match: as sent, or within the end user's rules of `kinds`. */
  const within = (filter: Filter, scope: RuleScope | undefined, ...kinds: RuleKind[]): Filter =>
    scope ? restrict(filter, ruleOf(scope, ...kinds)) : filter;

  const readDocuments: Handler<'readDocuments'> = async ({ params, body, caller }) => {
    // Parse everything before touching the database, so a bad request costs no query.
    const filter = parseFilter(body.query ?? {});
    const sort = sortOf(body.sort, filter);
    const projection = parseProjection(body.fields, filter);
    // skip 0 is what many clients send by default; any other skip would fight the cursor.
    if (body.cursor !== undefined && (body.skip ?? 0) !== 0)
      throw new QueryError(
        'cursor and skip cannot be combined: the cursor already says where the page starts.',
      );
    // Hashed only when a token is read or written: most reads have neither.
    const binding = () => cursorBinding(body.query, body.sort);
    const after =
      body.cursor === undefined ? undefined : decodeCursor(body.cursor, binding(), orderKeyCount(sort));
    const options = {
      filter,
      sort,
      skip: body.skip ?? 0,
      limit: body.limit ?? DEFAULT_LIMIT,
      ...(after ? { after } : {}),
      ...(projection.textScores ? { textScore: true } : {}),
    };
    const next = (keys: Buffer[] | undefined) => (keys ? { next: encodeCursor(binding(), keys) } : {});
    const read = await underRules(caller, params.name, params.storage_name, async (c, scope) => {
      const hidden = hiddenIn(scope, [
        [body.query, 'The query'],
        [body.sort, 'The sort'],
        [body.fields, 'The projection (fields)'],
      ]);
      const o = { ...options, filter: within(filter, scope, 'read') };
      // Without a projection the documents go out as the database wrote them, never parsed.
      if (projectsEverything(projection) && !hidden)
        return { kind: 'json' as const, json: await readPageJson(sql, c, o, true) };
      return { kind: 'parsed' as const, page: await readPage(sql, c, o, true), hidden };
    });
    if (read.kind === 'json')
      return { status: 200, body: EncodedJson.member('result', read.json.result, next(read.json.next)) };
    const { page, hidden } = read;
    // The page's projections share the request's regex budget.
    const result = await new RegexSession().map(page.result, (d, i) => {
      const textScore = page.scores?.[i];
      const projected = applyProjection(d, projection, textScore === undefined ? {} : { textScore });
      return hidden ? hidden.strip(projected) : projected;
    });
    return { status: 200, body: { result, ...next(page.next) } };
  };

  const createDocuments: Handler<'createDocuments'> = async ({ params, body, verbatimBody, caller }) => {
    const sent = body.docs as JsonObject[];
    const { table, ids } = await underRules(caller, params.name, params.storage_name, async (c, scope) => {
      if (!scope) {
        const verbatim = verbatimBody === undefined ? undefined : { text: verbatimBody, member: 'docs' };
        return { table: c.table, ids: await orConflict(insertDocuments(sql, c, sent, verbatim)) };
      }
      // An end user's documents get the presets, and must each satisfy `create` as written.
      const rule = ruleOf(scope, 'create');
      const docs = sent.map((d) => withPresets(d, scope.rules, scope.vars));
      const check = { kind: 'create' as const, rule };
      return { table: c.table, ids: await orConflict(insertDocuments(sql, c, docs, undefined, check)) };
    });
    statistics.noteWrites(table, ids.length);
    return { status: 201, body: { result: { insertedCount: ids.length, insertedIds: ids } } };
  };

  /** Runs an update plan in the collection, counting what it wrote. */
  async function runUpdate(
    caller: Caller,
    params: StoragePath,
    plan: (scope: RuleScope | undefined) => UpdatePlan,
  ): Promise<UpdateOutcome> {
    const { table, outcome } = await underRules(
      caller,
      params.name,
      params.storage_name,
      async (c, scope) => ({
        table: c.table,
        outcome: await orConflict(updateRows(sql, c, plan(scope))),
      }),
    );
    statistics.noteWrites(table, outcome.modifiedCount + (outcome.upsertedId === undefined ? 0 : 1));
    return outcome;
  }

  const updateDocuments: Handler<'updateDocuments'> = async ({ params, body, caller }) => {
    const { document: _, ...result } = await runUpdate(caller, params, updatePlan(body));
    return { status: 200, body: { result } };
  };

  const updateOneDocument: Handler<'updateOneDocument'> = async ({ params, body, caller }) => {
    const update = updatePlan(body, 'operators');
    const sort = sortOf(body.sort, parseFilter(body.query));
    const plan = (scope: RuleScope | undefined) => ({ ...update(scope), single: true, sort });
    const { document: _, ...result } = await runUpdate(caller, params, plan);
    return { status: 200, body: { result } };
  };

  const replaceOneDocument: Handler<'replaceOneDocument'> = async ({ params, body, caller }) => {
    const update = updatePlan(body, 'replacement');
    const sort = sortOf(body.sort, parseFilter(body.query));
    const plan = (scope: RuleScope | undefined) => ({ ...update(scope), single: true, sort });
    const { document: _, ...result } = await runUpdate(caller, params, plan);
    return { status: 200, body: { result } };
  };

  async function findOneAndModify(
    caller: Caller,
    params: StoragePath,
    body: { query: unknown; sort?: unknown; fields?: unknown; returnDocument?: 'before' | 'after' },
    update: (scope: RuleScope | undefined) => UpdatePlan,
  ) {
    const filter = parseFilter(body.query);
    const projection = withoutTextScore(parseProjection(body.fields, filter));
    const sort = sortOf(body.sort, filter);
    const plan = (scope: RuleScope | undefined): UpdatePlan => {
      const hidden = hiddenIn(scope, [[body.fields, 'The projection (fields)']]);
      return {
        ...update(scope),
        single: true,
        sort,
        returning: {
          which: body.returnDocument ?? 'before',
          project: (doc) =>
            hidden ? hidden.strip(applyProjection(doc, projection)) : applyProjection(doc, projection),
        },
      };
    };
    const { document } = await runUpdate(caller, params, plan);
    return { status: 200 as const, body: { result: { value: document ?? null } } };
  }

  const findOneAndUpdate: Handler<'findOneAndUpdate'> = ({ params, body, caller }) =>
    findOneAndModify(caller, params, body, updatePlan(body, 'operators'));

  const findOneAndReplace: Handler<'findOneAndReplace'> = ({ params, body, caller }) =>
    findOneAndModify(caller, params, body, updatePlan(body, 'replacement'));

  /** Deletes the first match, and returns it as `fields` projects it. */
  async function deleteOne(
    caller: Caller,
    params: StoragePath,
    body: { query: unknown; sort?: unknown; fields?: unknown },
  ) {
    const filter = parseFilter(body.query);
    const sort = sortOf(body.sort, filter);
    const projection = withoutTextScore(parseProjection(body.fields, filter));
    const { table, doc } = await underRules(caller, params.name, params.storage_name, async (c, scope) => {
      const hidden = hiddenIn(scope, [
        [body.query, 'The query'],
        [body.sort, 'The sort'],
        [body.fields, 'The projection (fields)'],
      ]);
      const project = (d: JsonObject) =>
        hidden ? hidden.strip(applyProjection(d, projection)) : applyProjection(d, projection);
      return {
        table: c.table,
        doc: await deleteOneRow(sql, c, within(filter, scope, 'read', 'delete'), sort, project),
      };
    });
    statistics.noteWrites(table, doc ? 1 : 0);
    return doc ?? null;
  }

  const deleteOneDocument: Handler<'deleteOneDocument'> = async ({ params, body, caller }) => {
    const doc = await deleteOne(caller, params, body);
    return { status: 200, body: { result: { deletedCount: doc ? 1 : 0 } } };
  };

  const findOneAndDelete: Handler<'findOneAndDelete'> = async ({ params, body, caller }) => ({
    status: 200,
    body: { result: { value: await deleteOne(caller, params, body) } },
  });

  const countDocuments: Handler<'countDocuments'> = async ({ params, body, caller }) => {
    const filter = parseFilter(body.query);
    const count = await underRules(caller, params.name, params.storage_name, (c, scope) => {
      hiddenIn(scope, [[body.query, 'The query']]);
      return countRows(sql, c, within(filter, scope, 'read'), true);
    });
    return { status: 200, body: { result: { count } } };
  };

  const distinctValues: Handler<'distinctValues'> = async ({ params, body, caller }) => {
    const key = parsePath(body.key, 'distinct key');
    const filter = parseFilter(body.query ?? {});
    const values = await underRules(caller, params.name, params.storage_name, (c, scope) => {
      hiddenIn(scope, [[body.query, 'The query']])?.checkPath(body.key, 'The distinct key');
      return distinctRows(sql, c, key, within(filter, scope, 'read'), true);
    });
    return { status: 200, body: { result: values } };
  };

  const aggregateDocuments: Handler<'aggregateDocuments'> = async ({ params, body, caller }) => {
    const stages = parsePipeline(body.pipeline);
    // The rules of a collection a $lookup joins may name $$USER where this one's do not.
    const joins = lookedUp(stages).size > 0;
    const result = await underRules(
      caller,
      params.name,
      params.storage_name,
      (c, scope) => {
        const hidden = hiddenIn(scope, [[body.pipeline, 'The pipeline']]);
        return aggregateRows(
          sql,
          params.name,
          c,
          stages,
          // $lookup joins what the caller may read of the other collection, and nothing where it may not.
          scope && {
            rule: ruleOf(scope, 'read'),
            hidden: hidden?.paths.map((p) => p.text) ?? [],
            foreignRule: (ref) => {
              if (ref.rules?.hidden.any)
                throw new QueryError(
                  `$lookup into '${ref.name}', which hides fields, is not available to end users.`,
                );
              return bindRule(ref.rules, 'read', scope.vars) ?? null;
            },
          },
        );
      },
      joins,
    );
    return { status: 200, body: { result } };
  };

  const deleteDocuments: Handler<'deleteDocuments'> = async ({ params, body, caller }) => {
    const filter = parseFilter(body.query);
    const { table, deletedCount } = await underRules(
      caller,
      params.name,
      params.storage_name,
      async (c, scope) => {
        hiddenIn(scope, [[body.query, 'The query']]);
        return {
          table: c.table,
          deletedCount: await deleteRows(sql, c, within(filter, scope, 'read', 'delete')),
        };
      },
    );
    statistics.noteWrites(table, deletedCount);
    return { status: 200, body: { result: { deletedCount } } };
  };

  return {
    readDocuments,
    createDocuments,
    updateDocuments,
    updateOneDocument,
    replaceOneDocument,
    findOneAndUpdate,
    findOneAndReplace,
    countDocuments,
    distinctValues,
    aggregateDocuments,
    deleteDocuments,
    deleteOneDocument,
    findOneAndDelete,
  };
}
