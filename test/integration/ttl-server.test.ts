// The TTL sweeper as server.ts runs it: started with the server, in every process, stopped on SIGTERM.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, expect, it } from 'vitest';
import { randomName } from '../helpers/app.js';
import {
  api,
  cleanUpServers,
  logLines,
  type Server,
  START_TIMEOUT,
  startServer,
  TEST_TIMEOUT,
  unusedPath,
} from '../helpers/server-process.js';

const pgUrl = process.env.DATABASE_URL;
let admin: postgres.Sql | undefined;
let database: string | undefined;

afterAll(async () => {
  await cleanUpServers();
  if (admin && database) await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin?.end({ timeout: 5 });
});

/** The servers' environment: PostgreSQL in a database of the test's own, else embedded PGlite. */
async function serverVars(): Promise<Record<string, string>> {
  const token = randomBytes(36).toString('base64url');
  const vars = { ADMIN_TOKEN: token, TTL_INTERVAL_SECONDS: '1', DATA_DIR: unusedPath() };
  if (!pgUrl) return vars;
  // Its own database: other test files' TTL collections are not this test's servers' business.
  admin = postgres(pgUrl, { max: 1, onnotice: () => {} });
  database = `wp_ttl_test_${randomBytes(6).toString('hex')}`;
  await admin.unsafe(`create database ${database}`);
  const url = new URL(pgUrl);
  url.pathname = `/${database}`;
  return { ...vars, DATABASE_URL: url.href };
}

it(
  pgUrl
    ? 'two server processes on one database sweep expired documents within the interval, each deleted once'
    : 'the server sweeps expired documents within the interval and stops cleanly',
  async () => {
    const vars = await serverVars();
    const token = vars.ADMIN_TOKEN as string;
    // PGlite is one process's: a second server on its directory is refused.
    const servers: Server[] = await Promise.all(
      pgUrl ? [startServer(vars), startServer(vars)] : [startServer(vars)],
    );
    const [a] = servers as [Server];
    const wp = randomName();
    const base = `/v1/workplaces/${wp}/storages/sessions`;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await api(a, method, path, { token, ...(body !== undefined ? { body } : {}) });
      expect(res.status, res.text).toBeLessThan(300);
      return res.json as { result: unknown };
    };
    const N = 3000;
    try {
      await call('POST', '/v1/workplaces', { name: wp });
      await call('POST', `/v1/workplaces/${wp}/storages`, { name: 'sessions' });
      await call('POST', `${base}/indexes`, { name: 'expire', key: ['at'], expireAfterSeconds: 0 });
      const past = new Date(Date.now() - 3600_000).toISOString();
      for (let start = 0; start < N; start += 1000)
        await call('POST', `${base}/create`, {
          docs: Array.from({ length: 1000 }, (_, i) => ({ _id: start + i, at: past })),
        });
      await call('POST', `${base}/create`, {
        docs: [
          { _id: 'future', at: new Date(Date.now() + 3600_000).toISOString() },
          { _id: 'number', at: Date.now() - 3600_000 },
        ],
      });
      const count = async () =>
        ((await call('POST', `${base}/count`, { query: {} })).result as { count: number }).count;
      // Within the interval (1 s) and a pass; a loaded machine gets more.
      await expect.poll(count, { timeout: 30_000, interval: 250 }).toBe(2);
      expect(
        ((await call('POST', `${base}/read`, { query: {}, sort: { _id: 1 } })).result as unknown[]).length,
      ).toBe(2);
    } finally {
      const exits = await Promise.all(servers.map((s) => s.stop()));
      expect(exits.every((e) => e.code === 0 && e.signal === null)).toBe(true);
    }
    const deleted = servers
      .flatMap((s) => logLines(s.stdout()))
      .filter((l) => l.msg === 'TTL pass deleted expired documents')
      .reduce((n, l) => n + (l.deleted as number), 0);
    expect(deleted).toBe(N);
    for (const s of servers) expect(s.stdout()).not.toContain('TTL pass failed');
  },
  TEST_TIMEOUT + START_TIMEOUT,
);
