import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETRY_AFTER_SECONDS } from '../../errors.js';
import { sampleValue, scrape } from '../helpers/metrics.js';
import {
  cleanUpPostgresInstances,
  createPostgresInstance,
  POSTGRES_BIN,
  type PostgresInstance,
} from '../helpers/postgres-instance.js';
import {
  api,
  cleanUpServers,
  freePort,
  type Server,
  START_TIMEOUT,
  startServer,
} from '../helpers/server-process.js';

/**
 * The database goes away under a running server and comes back: stopped, or frozen (SIGSTOP of
 * every PostgreSQL process, where connections stay open and nothing answers). During the outage
 * every request answers 503 with Retry-After within the deadline (plus the second it takes to find
 * a frozen server silent) and writes nothing; once the database is back, requests are served again
 * within about a second.
 */
const DEADLINE_MS = 2_000;
/** The deadline, the sign-of-life probe of a frozen server (db/connection/deadline.ts) and a loaded machine. */
const ANSWER_WITHIN_MS = DEADLINE_MS + 1_000 + 1_500;
/** postgres.js's own back-off held requests for 10-30 s; the patched pool reconnects within 0.5 s. */
const SERVED_AGAIN_WITHIN_MS = 3_000;

afterAll(async () => {
  await cleanUpServers();
  cleanUpPostgresInstances();
});

describe.runIf(POSTGRES_BIN)('PostgreSQL goes away under a running server and comes back', () => {
  let db: PostgresInstance;
  let server: Server;
  let metricsPort: number;
  const token = randomBytes(32).toString('base64url');
  const w = `outage${randomBytes(4).toString('hex').replace(/\d/g, 'x')}`;
  const docs = `/v1/workplaces/${w}/storages/c`;
  const call = (method: string, path: string, body?: unknown) =>
    api(server, method, path, { token, ...(body !== undefined ? { body } : {}) });

  beforeAll(async () => {
    db = await createPostgresInstance();
    metricsPort = await freePort();
    server = await startServer({
      METRICS_PORT: String(metricsPort),
      DATABASE_URL: db.url,
      ADMIN_TOKEN: token,
      DB_DEADLINE_MS: String(DEADLINE_MS),
      // Short, so that the OIDC test can make one of the provider's own statements fail in time.
      STATEMENT_TIMEOUT_MS: '1000',
    });
    expect((await call('POST', '/v1/workplaces', { name: w })).status).toBe(201);
    expect((await call('POST', `/v1/workplaces/${w}/storages`, { name: 'c' })).status).toBe(201);
    expect((await call('POST', `${docs}/create`, { docs: [{ _id: 1 }] })).status).toBe(201);
    // A PostgreSQL instance to initialise and a server to start, each slow on a busy machine.
  }, 2 * START_TIMEOUT);

  /** Requests of every kind at once, more than the pool has connections; each must be a bounded 503. */
  /** Returns the answers' details. */
  async function expectBounded503s(id: number): Promise<string[]> {
    const requests: Array<[string, string, unknown]> = [
      ['GET', '/readyz', undefined],
      ['GET', `/v1/workplaces/${w}`, undefined],
      ['POST', '/v1/workplaces', { name: `${w}b` }],
    ];
    for (let i = 0; i < 12; i++) {
      requests.push(
        i % 2 === 0
          ? ['POST', `${docs}/read`, {}]
          : ['POST', `${docs}/create`, { docs: [{ _id: `${id}-${i}` }] }],
      );
    }
    return Promise.all(
      requests.map(async ([method, path, body]) => {
        const started = Date.now();
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { 'x-auth-token': token, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        const ms = Date.now() - started;
        expect(res.status, `${method} ${path} after ${ms} ms: ${text}`).toBe(503);
        expect(res.headers.get('retry-after'), `${method} ${path}`).toBe(String(RETRY_AFTER_SECONDS));
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(text).code).toBe('SERVICE_UNAVAILABLE');
        // Nothing leaks about the cause beyond "unavailable".
        expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/i);
        expect(ms, `${method} ${path}`).toBeLessThan(ANSWER_WITHIN_MS);
        return JSON.parse(text).detail as string;
      }),
    );
  }

  /** Once the database is back: how long until a read is served, polled from the moment it is. */
  async function msUntilServed(): Promise<number> {
    const started = Date.now();
    for (;;) {
      const res = await call('POST', `${docs}/read`, {});
      if (res.status === 200) return Date.now() - started;
      expect(res.status, res.text).toBe(503);
      expect(Date.now() - started).toBeLessThan(30_000);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function count(): Promise<unknown> {
    return ((await call('POST', `${docs}/count`, { query: {} })).json as { result: unknown }).result;
  }

  it('stopped: bounded 503s with Retry-After, nothing written, served again within a second', async () => {
    expect((await call('GET', '/readyz')).status).toBe(200);
    const before = await scrape(metricsPort);
    db.stop();
    // Twice: the second round meets a pool whose reconnection attempts have been failing.
    await expectBounded503s(1);
    await expectBounded503s(2);
    // The metrics count every 503, by a cause from a closed set.
    const after = await scrape(metricsPort);
    const unavailable = 'wpa_http_unavailable_total';
    expect(sampleValue(after, unavailable) - sampleValue(before, unavailable)).toBe(2 * 15);
    const causes = [...after.matchAll(/^wpa_http_unavailable_total\{cause="([^"]+)"\}/gm)].map((m) => m[1]);
    expect(causes.length).toBeGreaterThan(0);
    for (const cause of causes) expect(['database_deadline', 'database_unavailable']).toContain(cause);
    db.start();
    expect(await msUntilServed()).toBeLessThan(SERVED_AGAIN_WITHIN_MS);
    expect((await call('GET', '/readyz')).status).toBe(200);
    // The writes refused during the outage did not happen later either.
    expect(await count()).toEqual({ count: 1 });
    expect((await call('POST', `${docs}/create`, { docs: [{ _id: 2 }] })).status).toBe(201);
    expect(await count()).toEqual({ count: 2 });
  }, 120_000);

  it('frozen (SIGSTOP): bounded 503s with Retry-After; served again after SIGCONT', async () => {
    // Every connection of the pool open and idle, so that statements are sent into the silence.
    await Promise.all(Array.from({ length: 12 }, () => call('POST', `${docs}/read`, {})));
    db.freeze();
    try {
      const details = await expectBounded503s(3);
      // Statements sent into the silence may yet run when the server wakes: the answer says so.
      expect(
        details.some((d) => /may still be applied/.test(d)),
        details.join('\n'),
      ).toBe(true);
    } finally {
      db.thaw();
    }
    expect(await msUntilServed()).toBeLessThan(SERVED_AGAIN_WITHIN_MS);
    expect((await call('POST', `${docs}/create`, { docs: [{ _id: 4 }] })).status).toBe(201);
  }, 120_000);

  it('the OIDC token endpoint answers 503 temporarily_unavailable while the database is down', async () => {
    const settings = await call('GET', `/v1/workplaces/${w}/oidc`);
    const oidcToken = (settings.json as { result: { token: string } }).result.token;
    const registered = await fetch(`${server.url}/oidc/${w}/oidc/registration`, {
      method: 'POST',
      headers: { authorization: `Bearer ${oidcToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }),
    });
    expect(registered.status).toBe(201);
    const client = ((await registered.json()) as { result: { client_id: string; client_secret: string } })
      .result;
    const tokenRequest = () =>
      fetch(`${server.url}/oidc/${w}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'x',
          redirect_uri: 'https://app.example/cb',
        }),
        signal: AbortSignal.timeout(30_000),
      });
    // The provider is built and cached while the database is up; an unknown code is its own 400.
    expect((await tokenRequest()).status).toBe(400);

    // A failure inside the provider: its own read of the client (the request's lookups before it
    // succeed) waits for a lock until the statement timeout cancels it.
    const other = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      await other.begin(async (tx) => {
        await tx`lock table oidc_clients in access exclusive mode`;
        const res = await tokenRequest();
        const text = await res.text();
        expect(res.status, text).toBe(503);
        expect(res.headers.get('retry-after')).toBe(String(RETRY_AFTER_SECONDS));
        expect(JSON.parse(text)).toEqual({
          error: 'temporarily_unavailable',
          error_description: expect.any(String),
        });
      });
    } finally {
      await other.end({ timeout: 5 });
    }
    expect((await tokenRequest()).status).toBe(400);

    db.stop();
    try {
      for (const path of ['/token', '/.well-known/openid-configuration', '/me', '/jwks']) {
        const res =
          path === '/token'
            ? await tokenRequest()
            : await fetch(`${server.url}/oidc/${w}${path}`, { signal: AbortSignal.timeout(30_000) });
        const text = await res.text();
        expect(res.status, `${path}: ${text}`).toBe(503);
        expect(res.headers.get('retry-after'), path).toBe(String(RETRY_AFTER_SECONDS));
        expect(JSON.parse(text)).toMatchObject({ error: 'temporarily_unavailable' });
        expect(JSON.parse(text).error_description).toEqual(expect.any(String));
      }
    } finally {
      db.start();
    }
    await msUntilServed();
    expect((await tokenRequest()).status).toBe(400);
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 120_000);
});
