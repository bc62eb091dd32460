import { QueryError } from '../../errors.js';
import type { Stage } from '../../mongo/pipeline/parse.js';
import { compilePipeline, MAX_PIPELINE_RESULTS } from '../../mongo/pipeline/sql.js';
import { idFirst, type JsonObject } from '../../mongo/value/json.js';
import { Params } from '../../mongo/value/params.js';
import type { Sql } from '../connection/sql.js';
import { type CollectionRef, findCollection } from './catalog.js';
import type { Statement } from './documents.js';
import { type FilterPlan, planFilter } from './plan.js';

/**
 * The one statement an aggregation runs (exported so tests can EXPLAIN it). `foreign` gives the
 * table of each collection a $lookup names, or undefined for one that does not exist. The head of
 * the pipeline carries the catalog guard when its SQL used a catalog-dependent index column, as a
 * guarded read does.
 */
export function aggregateStatement(
  c: CollectionRef,
  stages: Stage[],
  foreign: ReadonlyMap<string, string | undefined> = new Map(),
): Statement {
  const params = new Params();
  // The head of the pipeline reads the collection once (compilePipeline asks `plan` once, then
  // `limit`): the guard goes with the columns that read used.
  let head: FilterPlan | undefined;
  const text = compilePipeline(
    stages,
    {
      table: c.table,
      plan: (filter) => {
        head = planFilter(c, filter, params);
        return head;
      },
      limit: (count) => head?.limit(count, 'if-catalog-dependent') ?? '',
      foreign: (name) => foreign.get(name),
    },
    params,
  );
  return { text, values: params.values };
}

/** The collections a pipeline's $lookup stages name, $facet's included. */
export function lookedUp(stages: Stage[], into = new Set<string>()): Set<string> {
  for (const s of stages) {
    if (s.kind === 'lookup') into.add(s.from);
    else if (s.kind === 'facet') for (const [, sub] of s.facets) lookedUp(sub, into);
  }
  return into;
}

/**
 * Runs a pipeline over a collection of `workplace`. The $lookup collections are looked up in the
 * catalog here, inside the catalog cache's retry: a collection dropped meanwhile fails the
 * statement (42P01) and the whole request runs again with what exists then.
 */
export async function aggregateDocuments(
  sql: Sql,
  workplace: string,
  c: CollectionRef,
  stages: Stage[],
): Promise<JsonObject[]> {
  const foreign = new Map<string, string | undefined>();
  for (const name of lookedUp(stages)) {
    const found = await findCollection(sql, workplace, name);
    foreign.set(name, found.workplace ? found.found?.table : undefined);
  }
  const { text, values } = aggregateStatement(c, stages, foreign);
  const rows = await sql.unsafe<{ doc: JsonObject }[]>(text, values);
  if (rows.length > MAX_PIPELINE_RESULTS)
    throw new QueryError(
      `The pipeline gives more than ${MAX_PIPELINE_RESULTS} documents; add a $limit, or $match fewer documents and ask in parts.`,
    );
  return rows.map((r) => idFirst(r.doc));
}
