import { expect } from 'vitest';
import type { Sql } from '../../db/connection/sql.js';
import { findCollection } from '../../db/storage/catalog.js';
import { citusInstalled } from '../../db/storage/citus-shapes.js';
import { countStatement, explain, readStatement } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { parseSort } from '../../mongo/sort.js';
import type { TestApp } from '../helpers/app.js';

/** A fresh workplace with one collection, and shortcuts to its document operations. */
export async function freshCollection(t: TestApp, name = 'items') {
  const workplace = await t.createWorkplace();
  const base = `/v1/workplaces/${workplace}/storages`;
  const created = await t.request({ method: 'POST', url: base, body: { name } });
  expect(created.status, created.text).toBe(201);
  const url = `${base}/${name}`;
  const call = (op: string, body: unknown) => t.request({ method: 'POST', url: `${url}/${op}`, body });
  return {
    workplace,
    name,
    url,
    call,
    async insert(docs: unknown[]) {
      const res = await call('create', { docs });
      expect(res.status, res.text).toBe(201);
      return res.body.result.insertedIds as unknown[];
    },
    async read(body: Record<string, unknown>) {
      const res = await call('read', body);
      expect(res.status, res.text).toBe(200);
      return res.body.result as Record<string, unknown>[];
    },
    async ids(body: Record<string, unknown>) {
      const docs = await this.read({ limit: 1000, ...body });
      return docs.map((doc) => doc._id);
    },
    async index(key: unknown[], options: { name?: string; unique?: boolean } = {}) {
      const res = await t.request({
        method: 'POST',
        url: `${url}/indexes`,
        body: {
          name: options.name ?? `ix${Math.random().toString(36).slice(2, 8)}`,
          key,
          ...(options.unique ? { unique: true } : {}),
        },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.result;
    },
  };
}

/** The top-level field paths a query filters on (for indexing them). */
export function queriedPaths(query: Record<string, unknown>): string[] {
  const out = new Set<string>();
  const walk = (q: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(q)) {
      if (k === '$and' || k === '$or' || k === '$nor')
        for (const sub of v as Record<string, unknown>[]) walk(sub);
      else if (!k.startsWith('$')) out.add(k);
    }
  };
  walk(query);
  return [...out];
}

/*
 * Citus plans a workplace's statement on its shard, whose tables and indexes carry the shard id
 * after our names (`x12_a_102009`, `c_7_pkey_102008`, `c_7_102008`). Plans are compared with
 * that suffix dropped, so that the EXPLAIN tests say the same on a Citus worker as on PostgreSQL.
 */
const SHARD_SUFFIX = /(?<![\w$])((?:x|xt)\d+(?:_[a-z][a-z0-9]*)?|c_\d+(?:_pkey)?)_\d+(?![\w$])/g;

/**
 * What the tests of PostgreSQL's own plans say when they skip on Citus: its coordinator wraps the
 * worker's plan in its custom scan and does not PREPARE a statement on a distributed table the way
 * PostgreSQL does ("could not create distributed plan"). They run on PostgreSQL and PGlite.
 */
export const PLANS_NOT_ON_CITUS = "a test of PostgreSQL's own plans; Citus plans distributed tables itself";

/**
 * The Citus shard of a collection's table, when the database is a Citus coordinator: how many
 * times it was VACUUMed other than by the worker's autovacuum. Undefined on PostgreSQL and PGlite.
 */
export async function citusShard(
  sql: Sql,
  workplace: string,
  collection: string,
): Promise<{ manualVacuums: () => Promise<number> } | undefined> {
  if (!(await citusInstalled(sql))) return undefined;
  const lookup = await findCollection(sql, workplace, collection);
  if (!lookup.workplace || !lookup.found) throw new Error(`no collection ${collection}`);
  const table = lookup.found.table;
  return {
    manualVacuums: async () => {
      const rows = await sql<{ result: string; success: boolean }[]>`
        select result, success from run_command_on_placements(${table}::regclass,
          'select vacuum_count from pg_stat_user_tables where relid = ''%s''::regclass')`;
      if (rows.length !== 1 || !rows[0]?.success)
        throw new Error(`no placement of ${table}: ${JSON.stringify(rows)}`);
      return Number(rows[0].result);
    },
  };
}

/** An EXPLAIN text with Citus shard ids dropped from our table and index names. */
export function withoutShardSuffixes(plan: string): string {
  return plan.replace(SHARD_SUFFIX, '$1');
}

/** The plan of the statement the API runs for a read or a count, as the catalog now describes the collection. */
export async function planOfQuery(
  t: TestApp,
  workplace: string,
  collection: string,
  query: Record<string, unknown>,
  sort?: Record<string, 1 | -1>,
  op: 'read' | 'count' = 'read',
): Promise<string> {
  const lookup = await findCollection(t.sql, workplace, collection);
  if (!lookup.workplace || !lookup.found) throw new Error(`no collection ${collection}`);
  const filter = parseFilter(query);
  const statement =
    op === 'read'
      ? readStatement(lookup.found, { filter, sort: parseSort(sort), skip: 0, limit: 20 })
      : countStatement(lookup.found, filter);
  return withoutShardSuffixes(await explain(t.sql, statement));
}
