import type { CollectionRef } from '../db/collections.js';
import {
  countDocuments as countRows,
  DuplicateKeyError,
  deleteDocuments as deleteRows,
  distinctValues as distinctRows,
  insertDocuments,
  readDocumentsJson,
  readDocuments as readRows,
  updateDocuments as updateRows,
} from '../db/documents.js';
import type { JsonObject } from '../db/query/errors.js';
import { parseFilter } from '../db/query/filter-ast.js';
import { parsePath } from '../db/query/path.js';
import { applyProjection, parseProjection, projectsEverything } from '../db/query/projection.js';
import { parseSort } from '../db/query/sort.js';
import { applyUpdate, jsonEqual, parseUpdate, upsertSeed } from '../db/query/update.js';
import { errors } from '../errors.js';
import { EncodedJson } from '../http/encoded-json.js';
import type { Handler, HandlerDeps } from './types.js';

export const DEFAULT_LIMIT = 100;

/** The update part of a request body, for every route that updates: the update and its array filters. */
export function parseUpdateRequest(body: { doc: unknown; arrayFilters?: unknown }) {
  return parseUpdate(body.doc, { arrayFilters: body.arrayFilters });
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

  const readDocuments: Handler<'readDocuments'> = async ({ params, body }) => {
    // Parse everything before touching the database, so a bad request costs no query.
    const filter = parseFilter(body.query ?? {});
    const sort = parseSort(body.sort);
    const projection = parseProjection(body.fields, filter);
    const options = { filter, sort, skip: body.skip ?? 0, limit: body.limit ?? DEFAULT_LIMIT };
    // Without a projection the documents go out as the database wrote them, never parsed.
    if (projectsEverything(projection)) {
      const result = await inCollection(params.name, params.storage_name, (c) =>
        readDocumentsJson(sql, c, options, true),
      );
      return { status: 200, body: EncodedJson.member('result', result) };
    }
    const docs = await inCollection(params.name, params.storage_name, (c) => readRows(sql, c, options, true));
    return { status: 200, body: { result: docs.map((d) => applyProjection(d, projection)) } };
  };

  const createDocuments: Handler<'createDocuments'> = async ({ params, body }) => {
    const { table, ids } = await inCollection(params.name, params.storage_name, async (c) => ({
      table: c.table,
      ids: await orConflict(insertDocuments(sql, c, body.docs as JsonObject[])),
    }));
    statistics.noteWrites(table, ids.length);
    return { status: 201, body: { result: { insertedCount: ids.length, insertedIds: ids } } };
  };

  const updateDocuments: Handler<'updateDocuments'> = async ({ params, body }) => {
    const query = body.query as JsonObject;
    const filter = parseFilter(query);
    const update = parseUpdateRequest(body);
    const seed = body.upsert ? upsertSeed(query, update) : undefined;
    const now = new Date();
    const plan = {
      filter,
      apply: (doc: JsonObject) => applyUpdate(doc, update, { now, isInsert: false, filter }),
      modified: (before: JsonObject, after: JsonObject) => !jsonEqual(before, after),
      single: update.kind === 'replacement',
      ...(seed ? { upsert: () => applyUpdate(seed, update, { now, isInsert: true }) } : {}),
    };
    const { table, outcome } = await inCollection(params.name, params.storage_name, async (c) => ({
      table: c.table,
      outcome: await orConflict(updateRows(sql, c, plan)),
    }));
    statistics.noteWrites(table, outcome.modifiedCount + (outcome.upsertedId === undefined ? 0 : 1));
    return { status: 200, body: { result: outcome } };
  };

  const countDocuments: Handler<'countDocuments'> = async ({ params, body }) => {
    const filter = parseFilter(body.query);
    const count = await inCollection(params.name, params.storage_name, (c) =>
      countRows(sql, c, filter, true),
    );
    return { status: 200, body: { result: { count } } };
  };

  const distinctValues: Handler<'distinctValues'> = async ({ params, body }) => {
    const key = parsePath(body.key, 'distinct key');
    const filter = parseFilter(body.query ?? {});
    const values = await inCollection(params.name, params.storage_name, (c) =>
      distinctRows(sql, c, key, filter, true),
    );
    return { status: 200, body: { result: values } };
  };

  const deleteDocuments: Handler<'deleteDocuments'> = async ({ params, body }) => {
    const filter = parseFilter(body.query);
    const { table, deletedCount } = await inCollection(params.name, params.storage_name, async (c) => ({
      table: c.table,
      deletedCount: await deleteRows(sql, c, filter),
    }));
    statistics.noteWrites(table, deletedCount);
    return { status: 200, body: { result: { deletedCount } } };
  };

  return {
    readDocuments,
    createDocuments,
    updateDocuments,
    countDocuments,
    distinctValues,
    deleteDocuments,
  };
}
