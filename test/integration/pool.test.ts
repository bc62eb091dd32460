import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DatabaseDeadlineError } from '../../db/connection/deadline.js';
import { openDatabase } from '../../db/connection/open.js';

const DATABASE_URL = process.env.DATABASE_URL;

/**
 * Background maintenance (db/storage/statistics.ts: VACUUM after bulk writes, minutes on a large table)
 * reserves a connection of the pool while it runs; requests must still have DB_POOL_MAX.
 */
describe.runIf(DATABASE_URL)('the PostgreSQL pool', () => {
  it('keeps DB_POOL_MAX connections for requests while maintenance holds one', async () => {
    const db = await openDatabase({ databaseUrl: DATABASE_URL as string, dataDir: '', dbPoolMax: 1 });
    try {
      const maintenance = await db.sql.reserve();
      try {
        const waited = new Promise<'starved'>((resolve) =>
          setTimeout(() => resolve('starved'), 3000).unref(),
        );
        const answer = await Promise.race([db.sql<{ x: number }[]>`select 1 as x`, waited]);
        expect(answer).not.toBe('starved');
      } finally {
        maintenance.release();
      }
    } finally {
      await db.close();
    }
  });
});

/** db/connection/deadline.ts on a live server: what waits for a connection is dropped, what runs is left to run. */
describe.runIf(DATABASE_URL)('the deadline of a statement', () => {
  const DEADLINE_MS = 300;
  const open = () =>
    openDatabase({
      databaseUrl: DATABASE_URL as string,
      dataDir: '',
      dbPoolMax: 1,
      dbDeadlineMs: DEADLINE_MS,
    });

  it('drops a statement still waiting for a connection at its deadline: never sent, and the pool goes on', async () => {
    const db = await open();
    const table = `deadline_${randomBytes(6).toString('hex')}`;
    try {
      await db.sql.unsafe(`create table ${table} (x int)`);
      // Both connections of the pool (DB_POOL_MAX + 1) busy.
      const held = [await db.sql.reserve(), await db.sql.reserve()];
      const started = Date.now();
      const err = await db.sql.unsafe(`insert into ${table} values (1)`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DatabaseDeadlineError);
      expect((err as DatabaseDeadlineError).sent).toBe(false);
      expect(Date.now() - started).toBeLessThan(DEADLINE_MS + 1_000);
      for (const conn of held) conn.release();
      expect(await db.sql.unsafe(`select count(*)::int as n from ${table}`)).toEqual([{ n: 0 }]);
    } finally {
      await db.sql.unsafe(`drop table if exists ${table}`);
      await db.close();
    }
  });

  it('lets a statement the server is busy with run past the deadline', async () => {
    const db = await open();
    try {
      const started = Date.now();
      const rows = await db.sql`select 1 as one from pg_sleep(${(DEADLINE_MS * 3) / 1000})`;
      expect(rows).toEqual([{ one: 1 }]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS * 3);
    } finally {
      await db.close();
    }
  });
});
