import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_LOCK_KEY, migrate } from '../../db/connection/migrate.js';
import { findCollection } from '../../db/storage/catalog.js';
import { Statistics } from '../../db/storage/statistics.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const DATABASE_URL = process.env.DATABASE_URL;
const TIMEOUT_MS = 300;

/**
 * STATEMENT_TIMEOUT_MS on PostgreSQL (PGlite cannot interrupt a running statement, so the embedded
 * database has no timeout). A statement is made slow for certain by another session holding a lock
 * it must wait for.
 */
describe.runIf(DATABASE_URL)('the statement timeout', () => {
  let t: TestApp;
  let other: postgres.Sql;
  beforeAll(async () => {
    t = await startTestApp({ statementTimeoutMs: TIMEOUT_MS });
    other = postgres(DATABASE_URL as string, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await t?.close();
    await other?.end({ timeout: 5 });
  });

  async function collection() {
    const w = await t.createWorkplace();
    const url = `/v1/workplaces/${w}/storages/c`;
    expect(
      (await t.request({ method: 'POST', url: `/v1/workplaces/${w}/storages`, body: { name: 'c' } })).status,
    ).toBe(201);
    const created = await t.request({
      method: 'POST',
      url: `${url}/create`,
      body: { docs: [{ _id: 1, a: 1 }] },
    });
    expect(created.status).toBe(201);
    const lookup = await findCollection(t.sql, w, 'c');
    if (!lookup.workplace || !lookup.found) throw new Error('the collection was not created');
    return { url, table: lookup.found.table };
  }

  /** Runs `during` while another session holds an exclusive lock on `table`, released after `holdMs`. */
  async function whileLocked<T>(table: string, holdMs: number, during: () => Promise<T>): Promise<T> {
    let result: Promise<T> | undefined;
    await other.begin(async (tx) => {
      await tx.unsafe(`lock table ${table} in access exclusive mode`);
      result = during();
      await new Promise((r) => setTimeout(r, holdMs));
    });
    return result as Promise<T>;
  }

  it('cancels a statement that runs longer: 503 with Retry-After, and the next request is served', async () => {
    const { url, table } = await collection();
    const started = Date.now();
    const res = await whileLocked(table, 3 * TIMEOUT_MS, () =>
      t.request({ method: 'POST', url: `${url}/read`, body: { query: { a: 1 } } }),
    );
    expect(res.status, res.text).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body.code).toBe('SERVICE_UNAVAILABLE');
    expect(res.body.detail).toMatch(/statement timeout/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS);

    const after = await t.request({ method: 'POST', url: `${url}/read`, body: { query: { a: 1 } } });
    expect(after.status).toBe(200);
    expect(after.body.result).toEqual([{ _id: 1, a: 1 }]);
  });

  it('cancels writes as a whole: nothing of a cancelled update is written', async () => {
    const { url, table } = await collection();
    const res = await whileLocked(table, 3 * TIMEOUT_MS, () =>
      t.request({ method: 'POST', url: `${url}/update`, body: { query: {}, doc: { $inc: { a: 1 } } } }),
    );
    expect(res.status, res.text).toBe(503);
    const after = await t.request({ method: 'POST', url: `${url}/read`, body: {} });
    expect(after.body.result).toEqual([{ _id: 1, a: 1 }]);
  });

  it('does not apply to migrations, which wait for another server migrating the same database', async () => {
    let applied: Promise<string[]> | undefined;
    await other.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY}::bigint)`;
      applied = migrate(t.sql);
      await new Promise((r) => setTimeout(r, 3 * TIMEOUT_MS));
    });
    expect(await applied).toEqual([]);
  });

  it('does not apply to index builds, which take as long as the collection needs', async () => {
    const { url, table } = await collection();
    const res = await whileLocked(table, 3 * TIMEOUT_MS, () =>
      t.request({ method: 'POST', url: `${url}/indexes`, body: { name: 'byA', key: ['a'] } }),
    );
    expect(res.status, res.text).toBe(201);
  });

  it("does not apply to the server's own ANALYZE and VACUUM", async () => {
    const { table } = await collection();
    const failures: unknown[] = [];
    const statistics = new Statistics(t.sql, (err) => failures.push(err));
    await whileLocked(table, 3 * TIMEOUT_MS, () => statistics.analyze(table));
    expect(failures).toEqual([]);
  });
});
