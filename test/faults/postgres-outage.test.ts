import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETRY_AFTER_SECONDS } from '../../errors.js';
import { api, cleanUpServers, freePort, type Server, startServer } from '../helpers/server-process.js';

/**
 * The database goes away under a running server and comes back. The test starts a PostgreSQL
 * instance of its own (initdb + pg_ctl from the Debian packages, as the postgres user when run as
 * root), so that stopping it disturbs nothing else.
 */

function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(root, v, 'bin')).find((dir) => existsSync(join(dir, 'pg_ctl')));
}

const BIN = postgresBin();
const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL program, as the postgres user when this process is root (initdb refuses root). */
function pg(program: string, args: string[]): string {
  const path = join(BIN as string, program);
  return asRoot
    ? execFileSync('runuser', ['-u', 'postgres', '--', path, ...args], { encoding: 'utf8' })
    : execFileSync(path, args, { encoding: 'utf8' });
}

describe.runIf(BIN)('PostgreSQL stops under a running server and comes back', () => {
  let dir: string;
  let data: string;
  let port: number;
  let server: Server;
  const token = randomBytes(32).toString('base64url');

  const startPostgres = () =>
    pg('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'postgres.log'),
      '-w',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  const stopPostgres = () => pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wp-outage-'));
    data = join(dir, 'data');
    if (asRoot) execFileSync('chown', ['postgres', dir]);
    port = await freePort();
    pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    startPostgres();
    server = await startServer({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres`,
      ADMIN_TOKEN: token,
    });
  }, 120_000);

  afterAll(async () => {
    await cleanUpServers();
    if (data && existsSync(join(data, 'postmaster.pid'))) {
      try {
        pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already stopped.
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After while it is down, and recovers without a restart', async () => {
    const call = (method: string, path: string, body?: unknown) =>
      api(server, method, path, { token, ...(body !== undefined ? { body } : {}) });
    const w = `outage${randomBytes(4).toString('hex').replace(/\d/g, 'x')}`;
    const docs = `/v1/workplaces/${w}/storages/c`;
    expect((await call('POST', '/v1/workplaces', { name: w })).status).toBe(201);
    expect((await call('POST', `/v1/workplaces/${w}/storages`, { name: 'c' })).status).toBe(201);
    expect((await call('POST', `${docs}/create`, { docs: [{ _id: 1 }] })).status).toBe(201);
    expect((await call('GET', '/readyz')).status).toBe(200);

    stopPostgres();

    for (const [method, path, body] of [
      ['GET', '/readyz', undefined],
      ['POST', `${docs}/read`, {}],
      ['POST', `${docs}/create`, { docs: [{ _id: 2 }] }],
      ['GET', `/v1/workplaces/${w}`, undefined],
      ['POST', '/v1/workplaces', { name: `${w}b` }],
    ] as const) {
      const started = Date.now();
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { 'x-auth-token': token, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(503);
      expect(res.headers.get('retry-after'), `${method} ${path}`).toBe(String(RETRY_AFTER_SECONDS));
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(text).code).toBe('SERVICE_UNAVAILABLE');
      // Refused connections are reported at once, not after a timeout.
      expect(Date.now() - started, `${method} ${path}`).toBeLessThan(5_000);
    }
    // Nothing leaks about the cause beyond "unavailable".
    expect((await call('POST', `${docs}/read`, {})).text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/i);

    startPostgres();

    await expect
      .poll(async () => (await call('GET', '/readyz')).status, { timeout: 20_000, interval: 250 })
      .toBe(200);
    const read = await call('POST', `${docs}/read`, {});
    expect(read.status).toBe(200);
    expect((read.json as { result: unknown }).result).toEqual([{ _id: 1 }]);
    expect((await call('POST', `${docs}/create`, { docs: [{ _id: 2 }] })).status).toBe(201);
    // The write refused during the outage did not happen later either.
    expect(((await call('POST', `${docs}/count`, { query: {} })).json as { result: unknown }).result).toEqual(
      {
        count: 2,
      },
    );

    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 120_000);
});
