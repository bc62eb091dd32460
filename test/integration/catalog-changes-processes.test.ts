// Two server processes on one PostgreSQL, as operators run them behind a balancer: an index created
// through one reaches the other's next read at once. catalog-changes.test.ts checks, within one
// test process, that the entry read anew plans with the index (EXPLAIN); here the other process's
// metrics show it read the entry anew instead of using the one it held, which it would use for
// CATALOG_ENTRY_TTL_MS without the announcement.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { CATALOG_ENTRY_TTL_MS } from '../../db/storage/catalog-cache.js';
import { randomName } from '../helpers/app.js';
import { sampleValue, scrape } from '../helpers/metrics.js';
import { api, cleanUpServers, freePort, START_TIMEOUT, startServer } from '../helpers/server-process.js';

afterAll(cleanUpServers);

const databaseUrl = process.env.DATABASE_URL;

describe.runIf(databaseUrl)('catalog changes between server processes (PostgreSQL)', () => {
  it(
    'the other process reads the collection anew on its next request, well within 2 s',
    async () => {
      const token = randomBytes(32).toString('base64url');
      const metricsPort = await freePort();
      const env = { DATABASE_URL: databaseUrl as string, ADMIN_TOKEN: token };
      const [one, other] = await Promise.all([
        startServer(env),
        startServer({ ...env, METRICS_PORT: String(metricsPort) }),
      ]);
      const w = randomName();
      const base = `/v1/workplaces/${w}/storages`;
      expect((await api(one, 'POST', '/v1/workplaces', { token, body: { name: w } })).status).toBe(201);
      expect((await api(one, 'POST', base, { token, body: { name: 'c' } })).status).toBe(201);
      const read = async () =>
        expect(
          (await api(other, 'POST', `${base}/c/read`, { token, body: { query: { k: 1 } } })).status,
        ).toBe(200);
      const lookups = async (result: string) =>
        sampleValue(await scrape(metricsPort), 'wpa_catalog_cache_lookups_total', { result });

      // The other process holds the entry: its reads are hits.
      await read();
      const hits = await lookups('hit');
      await read();
      expect(await lookups('hit')).toBe(hits + 1);

      const created = Date.now();
      expect(
        (await api(one, 'POST', `${base}/c/indexes`, { token, body: { name: 'byK', key: ['k'] } })).status,
      ).toBe(201);
      // Heard: the next read is a miss, long before the entry would have expired.
      await expect
        .poll(
          async () => {
            const misses = await lookups('miss');
            await read();
            return (await lookups('miss')) - misses;
          },
          { timeout: 2000, interval: 100 },
        )
        .toBe(1);
      expect(Date.now() - created).toBeLessThan(CATALOG_ENTRY_TTL_MS);
    },
    2 * START_TIMEOUT,
  );
});
