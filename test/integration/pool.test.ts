import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.js';

const DATABASE_URL = process.env.DATABASE_URL;

/**
 * Background maintenance (db/statistics.ts: VACUUM after bulk writes, minutes on a large table)
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
