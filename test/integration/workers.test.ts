// WORKERS > 1: server.ts as a node:cluster primary with its workers, as operators run it.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { randomName } from '../helpers/app.js';
import { sampleValue, scrape } from '../helpers/metrics.js';
import {
  api,
  cleanUpServers,
  freePort,
  logLines,
  runToExit,
  type Server,
  START_TIMEOUT,
  startServer,
  TEST_TIMEOUT,
  unusedPath,
} from '../helpers/server-process.js';

afterAll(cleanUpServers);

const pgUrl = process.env.DATABASE_URL;

/** One request on a connection of its own: the primary hands each connection to the next worker. */
function get(server: Server, path: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      { agent: false, headers: { 'x-auth-token': token } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Sends `count` requests, `concurrency` at a time; resolves with their statuses. */
async function burst(server: Server, path: string, token: string, count: number, concurrency = 10) {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const n = Math.min(concurrency, count - i);
    statuses.push(...(await Promise.all(Array.from({ length: n }, () => get(server, path, token)))));
  }
  return statuses;
}

/** The pids whose request log lines name `url`. */
function servedBy(server: Server, url: string): Set<number> {
  return new Set(
    logLines(server.stdout())
      .filter((l) => l.msg === 'request' && l.url === url)
      .map((l) => l.pid as number),
  );
}

function workerPids(server: Server, message: RegExp): number[] {
  return logLines(server.stdout())
    .filter((l) => typeof l.msg === 'string' && message.test(l.msg))
    .map((l) => l.worker as number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('WORKERS=2 on the embedded database', () => {
  it(
    'is refused before anything starts, saying why',
    async () => {
      const dataDir = unusedPath();
      const run = await runToExit({ WORKERS: '2', DATA_DIR: dataDir });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        'WORKERS=2: more than one process needs DATABASE_URL (PostgreSQL); the embedded database is opened by one process only',
      );
      expect(existsSync(dataDir)).toBe(false);
    },
    TEST_TIMEOUT,
  );
});

// The workers share a PostgreSQL database: there is nothing to test without one.
describe.runIf(pgUrl)('WORKERS on PostgreSQL (skipped without DATABASE_URL)', () => {
  const token = randomBytes(36).toString('base64url');
  let admin: postgres.Sql | undefined;
  let database: string | undefined;

  afterAll(async () => {
    if (admin && database) await admin.unsafe(`drop database if exists ${database} with (force)`);
    await admin?.end({ timeout: 5 });
  });

  /** max_connections less the reserved ones: what the budget is checked against. */
  async function usableConnections(): Promise<number> {
    admin ??= postgres(pgUrl as string, { max: 1, onnotice: () => {} });
    const [row] = await admin<{ n: number }[]>`
      select current_setting('max_connections')::int
        - current_setting('superuser_reserved_connections')::int
        - coalesce(current_setting('reserved_connections', true), '0')::int as n`;
    return row?.n as number;
  }

  it(
    'serves from both workers, replaces one killed, and stops both cleanly on SIGTERM',
    async () => {
      // A database of its own: the primary migrates it, and its connections can be counted.
      admin ??= postgres(pgUrl as string, { max: 1, onnotice: () => {} });
      database = `wp_workers_test_${randomBytes(6).toString('hex')}`;
      await admin.unsafe(`create database ${database}`);
      const url = new URL(pgUrl as string);
      url.pathname = `/${database}`;

      const metricsPort = await freePort();
      const server = await startServer({
        DATABASE_URL: url.href,
        ADMIN_TOKEN: token,
        WORKERS: '2',
        METRICS_PORT: String(metricsPort),
      });
      const primary = server.child.pid as number;
      let stopped = false;
      try {
        const lines = logLines(server.stdout());
        // The primary checked the budget and migrated, once; the workers did neither.
        expect(lines.filter((l) => /^connection budget: /.test(l.msg ?? ''))).toEqual([
          expect.objectContaining({
            pid: primary,
            // info, or a warning if other clients of this shared server hold many connections now
            level: expect.toSatisfy((level: number) => level === 30 || level === 40),
            msg: expect.stringMatching(/^connection budget: 2 processes x 12 = 24 of max_connections \d+/),
          }),
        ]);
        expect(lines.filter((l) => /^applied \d+ migration/.test(l.msg ?? '')).map((l) => l.pid)).toEqual([
          primary,
        ]);
        // One listening line, the primary's, naming the port the workers share (PORT=0).
        const listening = lines.filter((l) => /^Listening on /.test(l.msg ?? ''));
        expect(listening).toEqual([
          expect.objectContaining({
            pid: primary,
            msg: expect.stringMatching(
              new RegExp(
                `^Listening on ${server.url}; public URL ${server.url}, API docs at ${server.url}/docs \\(started in \\d+ ms with 2 workers\\)$`,
              ),
            ),
          }),
        ]);
        const workers = workerPids(server, /^worker \d+ started$/);
        expect(workers).toHaveLength(2);
        expect(workers).not.toContain(primary);

        const name = randomName();
        expect((await api(server, 'POST', '/v1/workplaces', { token, body: { name } })).status).toBe(201);
        const path = `/v1/workplaces/${name}`;
        expect(new Set(await burst(server, path, token, 100))).toEqual(new Set([200]));
        await expect.poll(() => servedBy(server, path), { timeout: 10_000 }).toEqual(new Set(workers));
        // The one metrics port reports both workers' figures added up.
        const metrics = await scrape(metricsPort);
        const requests = (operation: string) =>
          sampleValue(metrics, 'wpa_http_requests_total', { operation, status_class: '2xx' });
        expect([requests('createWorkplace'), requests('getWorkplace')]).toEqual([1, 100]);
        // Each worker's pool: DB_POOL_MAX (10) and one for maintenance.
        expect(sampleValue(metrics, 'wpa_db_pool_max_connections')).toBe(2 * (10 + 1));
        expect(metrics).not.toContain(name);

        // A worker killed outright is replaced; the other serves meanwhile.
        const [killed, survivor] = workers as [number, number];
        process.kill(killed, 'SIGKILL');
        await expect
          .poll(() => server.stdout(), { timeout: 10_000 })
          .toContain(`worker ${killed} exited with signal SIGKILL; starting another in`);
        expect(new Set(await burst(server, path, token, 20))).toEqual(new Set([200]));
        await expect
          .poll(() => workerPids(server, /^worker \d+ replaced the one that died$/), {
            timeout: START_TIMEOUT,
          })
          .toHaveLength(1);
        const [replacement] = workerPids(server, /^worker \d+ replaced the one that died$/) as [number];
        expect(workerPids(server, /^worker \d+ started$/)).toEqual([...workers, replacement]);
        const before = servedBy(server, path).size;
        expect(before).toBe(2);
        expect(new Set(await burst(server, path, token, 40))).toEqual(new Set([200]));
        await expect.poll(() => servedBy(server, path), { timeout: 10_000 }).toContain(replacement);
        expect(alive(killed)).toBe(false);

        const exit = await server.stop('SIGTERM');
        stopped = true;
        expect(exit).toEqual({ code: 0, signal: null });
        const end = logLines(server.stdout());
        const clean = end.filter((l) => l.msg === 'shut down cleanly').map((l) => l.pid);
        expect(new Set(clean)).toEqual(new Set([survivor, replacement]));
        expect(end.filter((l) => l.msg === 'all workers shut down cleanly').map((l) => l.pid)).toEqual([
          primary,
        ]);
        // No worker outlives the primary, and none left a connection behind.
        for (const pid of [primary, survivor, replacement]) expect(alive(pid)).toBe(false);
        await expect
          .poll(
            async () => {
              const [row] = await (admin as postgres.Sql)<{ n: number }[]>`
                select count(*)::int as n from pg_stat_activity where datname = ${database as string}`;
              return row?.n;
            },
            { timeout: 10_000 },
          )
          .toBe(0);
      } finally {
        if (!stopped) await server.stop('SIGKILL');
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'exits 1 when the workers cannot listen, instead of restarting them forever',
    async () => {
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const address = taken.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      try {
        const run = await runToExit({
          DATABASE_URL: pgUrl as string,
          ADMIN_TOKEN: token,
          WORKERS: '2',
          PORT: String(port),
        });
        expect(run.code).toBe(1);
        expect(run.stderr).toContain(`EADDRINUSE 127.0.0.1:${port}`);
        expect(run.stdout).toMatch(/worker \d+ exited with code 1 before listening; stopping/);
        expect(run.stdout).not.toMatch(/starting another|Listening on/);
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'refuses to start when (DB_POOL_MAX + 2) x WORKERS exceeds what max_connections allows',
    async () => {
      const usable = await usableConnections();
      const workers = Math.floor(usable / 102) + 1; // 102 connections each: together one too many
      const run = await runToExit({
        DATABASE_URL: pgUrl as string,
        ADMIN_TOKEN: token,
        WORKERS: String(workers),
        DB_POOL_MAX: '100',
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `connection budget: ${workers} process(es)? x 102 = ${workers * 102} of max_connections \\d+ .*` +
            `\\(DB_POOL_MAX 100 \\+ 2\\) x WORKERS ${workers} exceeds the ${usable} connections PostgreSQL accepts; ` +
            'lower DB_POOL_MAX or WORKERS, or raise max_connections',
        ),
      );
      expect(run.stdout).not.toMatch(/worker \d+ started|Listening on/);
    },
    TEST_TIMEOUT,
  );

  it(
    'warns when the budget fits max_connections but not what other clients leave free',
    async () => {
      const usable = await usableConnections();
      // The largest budget that still fits, and at least as many connections held here as it
      // leaves spare, so that it cannot fit in what is free.
      const workers = Math.ceil(usable / 102);
      const perProcess = Math.floor(usable / workers);
      const held = postgres(pgUrl as string, { max: workers + 1, onnotice: () => {} });
      try {
        const reserved = await Promise.all(Array.from({ length: workers + 1 }, () => held.reserve()));
        const server = await startServer({
          DATABASE_URL: pgUrl as string,
          ADMIN_TOKEN: token,
          WORKERS: String(workers),
          DB_POOL_MAX: String(perProcess - 2),
        });
        const budget = logLines(server.stdout()).filter((l) => /^connection budget: /.test(l.msg ?? ''));
        expect(budget).toEqual([
          expect.objectContaining({
            level: 40,
            msg: expect.stringMatching(
              new RegExp(
                `^connection budget: ${workers} process(es)? x ${perProcess} = ${workers * perProcess} of max_connections \\d+ .*: only -?\\d+ are free now`,
              ),
            ),
          }),
        ]);
        expect(await server.stop()).toEqual({ code: 0, signal: null });
        for (const r of reserved) r.release();
      } finally {
        await held.end({ timeout: 5 });
      }
    },
    TEST_TIMEOUT,
  );
});
