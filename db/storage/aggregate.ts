import { QueryError } from '../../errors.js';
import type { Filter } from '../../mongo/filter/parse.js';
import { compileFilter } from '../../mongo/filter/sql.js';
import { parsePipeline, type Stage } from '../../mongo/pipeline/parse.js';
import { compilePipeline, MAX_PIPELINE_RESULTS } from '../../mongo/pipeline/sql.js';
import { restrict } from '../../mongo/rules.js';
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
  foreign: ReadonlyMap<string, Foreign | undefined> = new Map(),
  access?: { rule: Filter; hidden: string[] },
): Statement {
  const params = new Params();
  const lookupSource = (name: string): string | undefined => {
    const f = foreign.get(name);
    if (!f || f.rule === null) return undefined;
    if (!f.rule) return f.table;
    // Aliased: PostgreSQL before 16 wants a name for every sub-select in FROM.
    return `(select id, doc from ${f.table} where ${compileFilter(f.rule, { params, indexed: () => undefined })}) as ruled`;
  };
  // The head of the pipeline reads the collection once (compilePipeline asks `plan` once, then
  // `limit`): the guard goes with the columns that read used.
  let head: FilterPlan | undefined;
  const text = compilePipeline(
    access ? withinRule(stages, access.rule, access.hidden) : stages,
    {
      fenced: access !== undefined,
      table: c.table,
      plan: (filter) => {
        head = planFilter(c, filter, params);
        return head;
      },
      limit: (count) => head?.limit(count, 'if-catalog-dependent') ?? '',
      foreign: lookupSource,
    },
    params,
  );
  return { text, values: params.values };
}

/** A collection a $lookup reads: its table, and the caller's read rule (null: it admits nothing). */
export interface Foreign {
  table: string;
  rule?: Filter | null;
}

/**
 * The pipeline an end user runs: the rule goes into the head's $match (which is then fenced off:
 * PipelineSource.fenced), the leading $match stages' expressions are guarded by it, and the
 * hidden fields are unset right after them, before any stage could show them.
 */
function withinRule(stages: Stage[], rule: Filter, hidden: string[]): Stage[] {
  const out = [...stages];
  let i = 0;
  for (; out[i]?.kind === 'match'; i++) {
    const s = out[i] as Stage & { kind: 'match' };
    out[i] = { kind: 'match', filter: restrict(s.filter, rule) };
  }
  const unset = hidden.length ? parsePipeline([{ $unset: hidden }]) : [];
  if (i === 0) return [{ kind: 'match', filter: rule }, ...unset, ...out];
  return [...out.slice(0, i), ...unset, ...out.slice(i)];
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
  access?: { rule: Filter; hidden: string[]; foreignRule(c: CollectionRef): Filter | null },
): Promise<JsonObject[]> {
  const foreign = new Map<string, Foreign | undefined>();
  for (const name of lookedUp(stages)) {
    const found = await findCollection(sql, workplace, name);
    const ref = found.workplace ? found.found : undefined;
    foreign.set(
      name,
      ref ? { table: ref.table, ...(access ? { rule: access.foreignRule(ref) } : {}) } : undefined,
    );
  }
  const { text, values } = aggregateStatement(c, stages, foreign, access);
  const rows = await sql.unsafe<{ doc: JsonObject }[]>(text, values);
  if (rows.length > MAX_PIPELINE_RESULTS)
    throw new QueryError(
      `The pipeline gives more than ${MAX_PIPELINE_RESULTS} documents; add a $limit, or $match fewer documents and ask in parts.`,
    );
  return rows.map((r) => idFirst(r.doc));
}
