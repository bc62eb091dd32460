import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CollectionRef, findCollection } from '../../db/storage/catalog.js';
import { citusInstalled } from '../../db/storage/citus-shapes.js';
import { countStatement, readStatement, type Statement } from '../../db/storage/documents.js';
import { catalogGuard } from '../../db/storage/plan.js';
import { SQLSTATE } from '../../errors.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { parseSort } from '../../mongo/sort.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection, PLANS_NOT_ON_CITUS } from './storage-helpers.js';

/**
 * Shared statement texts are prepared on PostgreSQL (db/storage/statement-texts.ts). A prepared statement
 * is planned once per connection: it must stay right when the collection's indexes change under
 * it, and its generic plan must still use the indexes.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('prepared reads', () => {
  it('answer right on every connection while their index is dropped and created under load', async () => {
    const c = await freshCollection(t);
    const docs = Array.from({ length: 300 }, (_, i) => ({ _id: i, k: i % 10, r: i }));
    await c.insert(docs);
    await c.index(['k'], { name: 'byK' });
    const expected = docs.filter((d) => d.k === 3).map((d) => d._id);
    const read = async () => {
      const res = await c.call('read', { query: { k: 3 }, sort: { k: 1 }, limit: 1000 });
      expect(res.status, res.text).toBe(200);
      return (res.body.result as { _id: number }[]).map((d) => d._id).sort((a, b) => a - b);
    };
    const count = async () => {
      const res = await c.call('count', { query: { k: { $gte: 3, $lt: 4 } } });
      expect(res.status, res.text).toBe(200);
      return res.body.result.count as number;
    };
    // Enough concurrent requests that every connection of the pool prepares the texts.
    for (let i = 0; i < 4; i++) {
      for (const ids of await Promise.all(Array.from({ length: 12 }, read))) expect(ids).toEqual(expected);
    }
    if (t.databaseKind === 'postgres') {
      // The reads did run prepared: some connections hold the text.
      const held = await Promise.all(
        Array.from({ length: 12 }, () =>
          t.sql.unsafe<{ n: number }[]>(
            `select count(*)::int as n from pg_prepared_statements where statement like '%order by%' and statement like $1`,
            [`%"wp_%"."c_%"%`],
          ),
        ),
      );
      expect(Math.max(...held.map(([r]) => r?.n ?? 0))).toBeGreaterThan(0);
    }
    let running = true;
    const answers: number[][] = [];
    const counts: number[] = [];
    const load = (async () => {
      while (running) {
        const [ids, n] = await Promise.all([read(), count()]);
        answers.push(ids);
        counts.push(n);
      }
    })();
    for (let i = 0; i < 4; i++) {
      expect((await t.request({ method: 'DELETE', url: `${c.url}/indexes/byK` })).status).toBe(204);
      // An array on the path while no index exists: the next index is born multikey.
      if (i === 2) await c.insert([{ _id: 1000, k: [3, 4] }]);
      await c.index(['k'], { name: 'byK' });
    }
    running = false;
    await load;
    expect(answers.length).toBeGreaterThan(0);
    const withArray = [...expected, 1000];
    for (const ids of answers) expect([expected, withArray]).toContainEqual(ids);
    for (const n of counts) expect([30, 31]).toContain(n);
    expect(await read()).toEqual(withArray);
    expect(await count()).toBe(31);
  });
});

describe.runIf(process.env.DATABASE_URL)('the catalog guard of a prepared statement', () => {
  it('reads the version a catalog change committed while the statement waited for its table', async () => {
    const c = await freshCollection(t);
    await c.insert([{ _id: 1, k: 1 }]);
    const c0 = await ref(c.workplace);
    const text = `select count(*) as n from ${c0.table} where ${catalogGuard(c0)}`;
    const waiter = await t.sql.reserve();
    const builder = await t.sql.reserve();
    try {
      // Past five executions: the generic plan, as a busy server runs it.
      for (let i = 0; i < 7; i++) await waiter.unsafe(text, [], { prepare: true });
      // What an index build does (db/storage/catalog.ts lockForIndexChange): the table, then the version.
      await builder.unsafe('begin');
      await builder.unsafe(`lock table ${c0.table} in access exclusive mode`);
      await builder.unsafe(
        `update collections set catalog_version = catalog_version + 1 where id = ${c0.id}`,
      );
      const waiting = waiter.unsafe(text, [], { prepare: true }).then(
        () => 'ran',
        (err: { code?: string }) => err.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      await builder.unsafe('commit');
      expect(await waiting).toBe(SQLSTATE.staleCatalog);
    } finally {
      waiter.release();
      builder.release();
    }
  });
});

describe.runIf(process.env.DATABASE_URL)('generic plans', () => {
  /** EXPLAIN of the statement's generic plan: what a prepared statement runs after five executions. */
  async function genericPlan(s: Statement): Promise<string> {
    const conn = await t.sql.reserve();
    try {
      await conn.unsafe(`prepare generic_plan_test as ${s.text}`);
      await conn.unsafe('set plan_cache_mode = force_generic_plan');
      const args = s.values
        .map((v) => `'${(typeof v === 'string' ? v : `\\x${v.toString('hex')}`).replaceAll("'", "''")}'`)
        .join(', ');
      const rows = await conn.unsafe<{ 'QUERY PLAN': string }[]>(
        `explain execute generic_plan_test${args ? `(${args})` : ''}`,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      // Only its own: postgres.js still counts on the statements it prepared on this connection.
      await conn.unsafe('deallocate generic_plan_test; reset plan_cache_mode').catch(() => {});
      conn.release();
    }
  }

  it('use the index for equality, $in, range with sort, and counts', async (ctx) => {
    if (await citusInstalled(t.sql)) ctx.skip(PLANS_NOT_ON_CITUS);
    const c = await freshCollection(t);
    for (let b = 0; b < 2; b++)
      await c.insert(Array.from({ length: 1000 }, (_, i) => ({ _id: b * 1000 + i, k: b * 1000 + i })));
    await c.index(['k'], { name: 'byK' });
    await t.sql.unsafe(`analyze ${(await ref(c.workplace)).table}`);
    const c0 = await ref(c.workplace);
    const plans = {
      equality: await genericPlan(guardedRead(c0, { k: 7 })),
      in: await genericPlan(guardedRead(c0, { k: { $in: [7, 8, 9] } })),
      range: await genericPlan(guardedRead(c0, { k: { $gte: 100, $lt: 500 } }, { k: 1 })),
      count: await genericPlan(countStatement(c0, parseFilter({ k: 7 }), true)),
      countRange: await genericPlan(countStatement(c0, parseFilter({ k: { $gt: 1500 } }), true)),
    };
    for (const [name, plan] of Object.entries(plans)) {
      expect(plan, name).toMatch(/Index (Only )?Scan|Bitmap Index Scan/);
      expect(plan, name).not.toMatch(/Seq Scan on c_/);
      // The catalog guard is evaluated once, by the LIMIT (an InitPlan), not on every row.
      expect(plan, name).toMatch(/InitPlan/);
      expect(plan, name).not.toMatch(/Filter: .*stale_catalog/);
    }
  });
});

describe.runIf(process.env.DATABASE_URL)('the plans PostgreSQL chooses for prepared texts', () => {
  // After five executions PostgreSQL runs a prepared statement's generic plan only when it is
  // costed no dearer than the custom plans it made so far; otherwise every execution is planned
  // again, which cost a read more than running it.
  it('are generic for the frequent reads and counts, so a request is not planned again', async (ctx) => {
    if (await citusInstalled(t.sql)) ctx.skip(PLANS_NOT_ON_CITUS);
    const c = await freshCollection(t);
    for (let b = 0; b < 2; b++)
      await c.insert(
        Array.from({ length: 1000 }, (_, i) => ({ _id: b * 1000 + i, k: i % 50, n: b * 1000 + i })),
      );
    await c.index(['k'], { name: 'byK' });
    await c.index(['n'], { name: 'byN' });
    const c0 = await ref(c.workplace);
    await t.sql.unsafe(`analyze ${c0.table}`);
    const cases: Record<string, (i: number) => Statement> = {
      equality: (i) => guardedRead(c0, { k: i % 50 }),
      'range with sort': (i) => guardedRead(c0, { n: { $gte: i * 10, $lt: i * 10 + 40 } }, { n: 1 }),
      count: (i) => countStatement(c0, parseFilter({ k: i % 50 }), true),
    };
    const conn = await t.sql.reserve();
    try {
      for (const [name, statement] of Object.entries(cases)) {
        for (let i = 0; i < 12; i++) {
          const s = statement(i);
          await conn.unsafe(s.text, s.values, { prepare: true });
        }
        const [plans] = await conn.unsafe<{ generic: number }[]>(
          'select generic_plans::int as generic from pg_prepared_statements where statement = $1',
          [statement(0).text],
        );
        expect(plans?.generic, name).toBeGreaterThan(0);
      }
    } finally {
      conn.release();
    }
  });
});

/** The read statement the API runs (guarded, as handlers run it), for a page of 20. */
function guardedRead(c: CollectionRef, query: object, sort?: Record<string, 1 | -1>): Statement {
  return readStatement(c, { filter: parseFilter(query), sort: parseSort(sort), skip: 0, limit: 20 }, true);
}

async function ref(workplace: string) {
  const lookup = await findCollection(t.sql, workplace, 'items');
  if (!lookup.workplace || !lookup.found) throw new Error('no collection');
  return lookup.found;
}
