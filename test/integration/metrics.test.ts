// The metrics port (METRICS_PORT) of a server run as operators run it. With WORKERS on
// PostgreSQL, workers.test.ts checks that one port reports every worker; oidc-lockout.test.ts
// counts sign-in outcomes; the fault tests, a 503 from a stopped database.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName } from '../helpers/app.js';
import { sampleValue, scrape } from '../helpers/metrics.js';
import {
  api,
  cleanUpServers,
  freePort,
  logLines,
  type Server,
  START_TIMEOUT,
  startServer,
  tempDir,
} from '../helpers/server-process.js';

afterAll(cleanUpServers);

describe('GET /metrics on METRICS_PORT', () => {
  const token = randomBytes(32).toString('base64url');
  let server: Server;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    const database: Record<string, string> = process.env.DATABASE_URL
      ? { DATABASE_URL: process.env.DATABASE_URL }
      : { DATA_DIR: tempDir() };
    server = await startServer({
      ...database,
      ADMIN_TOKEN: token,
      METRICS_PORT: String(metricsPort),
      DB_POOL_MAX: '3',
    });
  }, START_TIMEOUT);

  it('counts requests by operation and status class, never by URL, with the pool and the process', async () => {
    const before = await scrape(metricsPort);
    const names = [randomName(), randomName(), randomName()];
    for (const name of names)
      expect((await api(server, 'POST', '/v1/workplaces', { token, body: { name } })).status).toBe(201);
    for (const name of names.slice(0, 2))
      expect((await api(server, 'GET', `/v1/workplaces/${name}x`, { token })).status).toBe(404);
    expect((await api(server, 'GET', `/v1/workplaces/${names[0]}`, { token: 'wpa_wrong' })).status).toBe(401);
    expect((await api(server, 'GET', '/no/such/route', { token })).status).toBe(404);
    const after = await scrape(metricsPort);

    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    const requests = 'wpa_http_requests_total';
    expect({
      created: delta(requests, { operation: 'createWorkplace', status_class: '2xx' }),
      missing: delta(requests, { operation: 'getWorkplace', status_class: '4xx' }),
      unmatched: delta(requests, { operation: 'none', status_class: '4xx' }),
      timed: delta('wpa_http_request_duration_seconds_count', {
        operation: 'createWorkplace',
        status_class: '2xx',
      }),
    }).toEqual({ created: 3, missing: 3, unmatched: 1, timed: 3 });
    // Workplace names are never label values.
    for (const name of names) expect(after).not.toContain(name);

    if (process.env.DATABASE_URL) {
      // DB_POOL_MAX, plus the one kept for maintenance (db/connection/open.ts).
      expect(sampleValue(after, 'wpa_db_pool_max_connections')).toBe(3 + 1);
      const active = sampleValue(after, 'wpa_db_pool_active_statements');
      expect(active).toBeGreaterThanOrEqual(0);
      expect(active).toBeLessThanOrEqual(3 + 1);
      expect(sampleValue(after, 'wpa_db_pool_waiting_statements')).toBeGreaterThanOrEqual(0);
    }
    expect(delta('wpa_catalog_cache_lookups_total', {})).toBeGreaterThanOrEqual(0);
    // Node's own, from prom-client's defaults.
    expect(sampleValue(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(after).toMatch(/^# TYPE wpa_http_request_duration_seconds histogram$/m);
    expect(logLines(server.stdout()).map((l) => l.msg)).toContain(
      `Metrics on http://127.0.0.1:${metricsPort}/metrics`,
    );
  });

  it('counts collection lookups: a miss, then hits from the catalog cache', async () => {
    const w = randomName();
    expect((await api(server, 'POST', '/v1/workplaces', { token, body: { name: w } })).status).toBe(201);
    const base = `/v1/workplaces/${w}/storages`;
    expect((await api(server, 'POST', base, { token, body: { name: 'c' } })).status).toBe(201);
    const before = await scrape(metricsPort);
    for (let i = 0; i < 5; i++)
      expect((await api(server, 'POST', `${base}/c/read`, { token, body: {} })).status).toBe(200);
    const after = await scrape(metricsPort);
    const delta = (result: string) =>
      sampleValue(after, 'wpa_catalog_cache_lookups_total', { result }) -
      sampleValue(before, 'wpa_catalog_cache_lookups_total', { result });
    expect(delta('miss') + delta('hit')).toBe(5);
    expect(delta('hit')).toBeGreaterThanOrEqual(4);
  });

  it('serves nothing else on that port, and no metrics on the API port', async () => {
    expect((await fetch(`http://127.0.0.1:${metricsPort}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { method: 'POST' })).status).toBe(405);
    expect((await api(server, 'GET', '/metrics')).status).toBe(404);
  });
});
