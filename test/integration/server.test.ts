// End-to-end tests of server.ts as operators run it: a real child process, real HTTP, real signals.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_LOCK_KEY } from '../../db/connection/migrate.js';
import { randomName } from '../helpers/app.js';
import {
  ADMIN_TOKEN_PATTERN,
  api,
  cleanUpServers,
  freePort,
  LISTENING,
  logLines,
  runToExit,
  type Server,
  START_TIMEOUT,
  startServer,
  TEST_TIMEOUT,
  tempDir,
  unusedPath,
} from '../helpers/server-process.js';

afterAll(cleanUpServers);

describe('server.ts on the embedded database', () => {
  // Started in parallel: a fresh PGlite directory takes seconds to initialise.
  let generated: Server; // first start, admin token generated; started by `npm start`
  let generatedDir: string;
  let adminToken: string;
  let configured: Server; // ADMIN_TOKEN set
  let configuredDir: string;
  let configuredPort: number;
  const envToken = randomBytes(36).toString('base64url'); // 48 URL-safe characters

  beforeAll(async () => {
    generatedDir = tempDir();
    configuredDir = tempDir();
    configuredPort = await freePort();
    [generated, configured] = await Promise.all([
      startServer({ DATA_DIR: generatedDir }, { npmStart: true }),
      startServer({ DATA_DIR: configuredDir, ADMIN_TOKEN: envToken, PORT: String(configuredPort) }),
    ]);
    adminToken = generated.stdout().match(ADMIN_TOKEN_PATTERN)?.[0] ?? '(no token printed)';
  }, TEST_TIMEOUT);

  it(
    'prints a generated admin token once on first start, and serves the API with it',
    async () => {
      const tokens = generated.stdout().match(ADMIN_TOKEN_PATTERN) ?? [];
      expect(tokens).toEqual([adminToken]);
      expect(generated.stdout()).toContain(`\n    ${adminToken}\n`);
      expect(generated.stderr()).not.toContain(adminToken);
      // Only in the block shown to the operator, never in the structured log.
      expect(logLines(generated.stdout()).some((l) => JSON.stringify(l).includes(adminToken))).toBe(false);
      // Started with PORT=0: the URLs in the log name the port actually bound.
      expect(generated.stdout()).toContain(`API docs at http://127.0.0.1:${generated.port}/docs`);

      const name = randomName();
      const created = await api(generated, 'POST', '/v1/workplaces', { token: adminToken, body: { name } });
      expect(created.status).toBe(201);
      expect(created.json).toMatchObject({ result: { name } });
      const read = await api(generated, 'GET', `/v1/workplaces/${name}`, { token: adminToken });
      expect(read.status).toBe(200);
      expect(read.json).toMatchObject({ result: { name } });

      const anonymous = await api(generated, 'GET', `/v1/workplaces/${name}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.contentType).toMatch(/^application\/problem\+json/);
      const anonymousCreate = await api(generated, 'POST', '/v1/workplaces', {
        body: { name: randomName() },
      });
      expect(anonymousCreate.status).toBe(401);

      expect((await api(generated, 'DELETE', `/v1/workplaces/${name}`, { token: adminToken })).status).toBe(
        204,
      );
      const gone = await api(generated, 'GET', `/v1/workplaces/${name}`, { token: adminToken });
      expect(gone.status).toBe(404);
      expect(gone.contentType).toMatch(/^application\/problem\+json/);
      expect(gone.json).toMatchObject({ status: 404 });

      // The token, sent with every request above, must not reach the request log.
      expect(generated.stdout().match(ADMIN_TOKEN_PATTERN)).toHaveLength(1);
    },
    TEST_TIMEOUT,
  );

  it('runs, under `npm start`, the compiled server with plain node: no TypeScript loader, its start-up time printed', () => {
    const [starting] = logLines(generated.stdout()).filter((l) => l.msg === 'starting');
    expect(starting?.main).toMatch(/[/\\]dist[/\\]server\.js$/);
    expect(starting?.execArgv).toEqual([]);
    expect(JSON.stringify(starting)).not.toMatch(/tsx/);
    expect(generated.stdout()).toMatch(/Listening on .*\(started in \d+ ms\)/);
  });

  it('serves health probes and the API documentation without authentication', async () => {
    const health = await api(generated, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.json).toEqual({ result: { status: 'ok' } });
    const ready = await api(generated, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({ result: { status: 'ok' } });

    const docs = await fetch(`${generated.url}/docs`, { redirect: 'follow' });
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await docs.text()).toMatch(/swagger-ui/i);

    const json = await fetch(`${generated.url}/openapi.json`);
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await json.json()).toMatchObject({ openapi: '3.1.0' });

    const yaml = await fetch(`${generated.url}/openapi.yaml`);
    expect(yaml.status).toBe(200);
    expect(await yaml.text()).toMatch(/^openapi: 3\.1\.0$/m);
  });

  it(
    'shuts down cleanly on SIGTERM and, restarted on the same directory, keeps its data and token without printing it again',
    async () => {
      const name = randomName();
      expect(
        (await api(generated, 'POST', '/v1/workplaces', { token: adminToken, body: { name } })).status,
      ).toBe(201);

      const stopping = Date.now();
      const exit = await generated.stop('SIGTERM');
      expect(exit).toEqual({ code: 0, signal: null });
      expect(Date.now() - stopping).toBeLessThan(10_000);
      const messages = logLines(generated.stdout()).map((l) => l.msg);
      expect(messages).toContain('SIGTERM received; finishing in-flight requests');
      expect(messages).toContain('shut down cleanly');
      // oidc-provider 9 warns once at import on Node releases before 22 (documented in the README).
      expect(generated.stderr().replace(/^oidc-provider WARNING: Unsupported runtime\..*\n/m, '')).toBe('');
      expect(existsSync(join(generatedDir, '.lock'))).toBe(false);

      const restarted = await startServer({ DATA_DIR: generatedDir });
      try {
        expect(restarted.stdout()).not.toContain('wpa_');
        expect(restarted.stdout()).not.toContain('Admin token');
        expect(restarted.stdout()).not.toMatch(/applied \d+ migration/);
        const read = await api(restarted, 'GET', `/v1/workplaces/${name}`, { token: adminToken });
        expect(read.status).toBe(200);
        expect(read.json).toMatchObject({ result: { name } });
        expect((await api(restarted, 'GET', `/v1/workplaces/${name}`, { token: 'wpa_wrong' })).status).toBe(
          401,
        );
        expect(restarted.stdout()).not.toContain('wpa_');
      } finally {
        expect(await restarted.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    TEST_TIMEOUT,
  );

  it(
    'refuses a second process on the same data directory, naming the holder, and the first keeps serving',
    async () => {
      const holder = configured.child.pid as number;
      expect(readFileSync(join(configuredDir, '.lock'), 'utf8').trim()).toBe(String(holder));

      const second = await runToExit({ DATA_DIR: configuredDir, ADMIN_TOKEN: envToken });
      expect(second.code).not.toBe(0);
      expect(second.code).not.toBeNull();
      expect(second.ms).toBeLessThan(15_000);
      const output = `${second.stderr}\n${second.stdout}`;
      expect(output).toContain(`already in use by process ${holder}`);
      expect(output).toContain(configuredDir);
      expect(second.stdout).not.toMatch(LISTENING);

      // The loser must leave the winner's lock alone.
      expect(readFileSync(join(configuredDir, '.lock'), 'utf8').trim()).toBe(String(holder));
      expect((await api(configured, 'GET', '/readyz')).status).toBe(200);
      const name = randomName();
      expect(
        (await api(configured, 'POST', '/v1/workplaces', { token: envToken, body: { name } })).status,
      ).toBe(201);
      expect((await api(configured, 'GET', `/v1/workplaces/${name}`, { token: envToken })).status).toBe(200);
    },
    TEST_TIMEOUT,
  );

  it('uses ADMIN_TOKEN when it is set: nothing is generated or printed, other tokens are refused', async () => {
    expect(configured.stdout()).not.toContain('wpa_');
    expect(configured.stdout()).not.toContain('Admin token');

    const unknown = randomName();
    const found = await api(configured, 'GET', `/v1/workplaces/${unknown}`, { token: envToken });
    expect(found.status).toBe(404);
    expect(found.contentType).toMatch(/^application\/problem\+json/);
    const wrong = await api(configured, 'GET', `/v1/workplaces/${unknown}`, {
      token: randomBytes(36).toString('base64url'),
    });
    expect(wrong.status).toBe(401);
    expect((await api(configured, 'GET', `/v1/workplaces/${unknown}`)).status).toBe(401);

    // The public URL follows the configured port, and the token never reaches the log.
    expect(configured.port).toBe(configuredPort);
    expect(configured.stdout()).toContain(`API docs at http://127.0.0.1:${configuredPort}/docs`);
    expect(configured.stdout()).not.toContain(envToken);
    expect(configured.stderr()).not.toContain(envToken);
  });

  it(
    'finishes a request that is in flight when SIGTERM arrives, then exits 0',
    async () => {
      const name = randomName();
      const body = JSON.stringify({ name });
      const socket = connect(configured.port, '127.0.0.1');
      let response = '';
      socket.setEncoding('utf8').on('data', (d: string) => {
        response += d;
      });
      const closed = new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.once('close', () => resolve());
      });
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      // Headers and half of the body: the request has started but cannot complete yet.
      socket.write(
        `POST /v1/workplaces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: ${envToken}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
          body.slice(0, 5),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));

      configured.child.kill('SIGTERM');
      await expect
        .poll(() => configured.stdout(), { timeout: 5_000 })
        .toContain('SIGTERM received; finishing in-flight requests');
      expect(configured.child.exitCode).toBeNull();
      // Meanwhile new requests are refused: a new connection finds nothing listening, one kept
      // alive from before gets 503.
      const late = await fetch(`${configured.url}/healthz`).then(
        (r) => r.status,
        () => 'refused',
      );
      expect([503, 'refused']).toContain(late);
      expect(configured.child.exitCode).toBeNull();

      socket.write(body.slice(5));
      await expect.poll(() => response, { timeout: 10_000 }).toContain(`"name":"${name}"`);
      expect(response).toMatch(/^HTTP\/1\.1 201 /);
      socket.end();
      await closed;
      expect(await configured.exited).toEqual({ code: 0, signal: null });
      expect(logLines(configured.stdout()).map((l) => l.msg)).toContain('shut down cleanly');

      // It was committed, not just answered.
      const again = await startServer({ DATA_DIR: configuredDir, ADMIN_TOKEN: envToken });
      try {
        expect((await api(again, 'GET', `/v1/workplaces/${name}`, { token: envToken })).status).toBe(200);
      } finally {
        expect(await again.stop()).toEqual({ code: 0, signal: null });
      }
    },
    TEST_TIMEOUT,
  );
});

describe('server.ts with a bad configuration', () => {
  it(
    'exits 1 before touching anything, listing every bad variable in one message',
    async () => {
      const dataDir = unusedPath();
      const run = await runToExit({
        PORT: 'abc',
        LOG_LEVEL: 'loud',
        DATABASE_URL: 'mysql://x',
        DATA_DIR: dataDir,
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr.match(/Invalid configuration/g)).toHaveLength(1);
      for (const name of ['PORT', 'LOG_LEVEL', 'DATABASE_URL']) {
        expect(run.stderr).toMatch(new RegExp(`^\\s+- ${name}=`, 'm'));
      }
      expect(run.stderr).toContain('"abc"');
      expect(run.stderr).toContain('"loud"');
      expect(run.stderr).toContain('"mysql://x"');
      expect(run.stderr).toMatch(/ADMIN_TOKEN: is required when DATABASE_URL is set/);
      expect(run.stderr).not.toContain('Failed to start');
      expect(existsSync(dataDir)).toBe(false);
    },
    TEST_TIMEOUT,
  );

  it(
    'reports an ADMIN_TOKEN that is too short without echoing it',
    async () => {
      const secret = `tooShort${randomBytes(6).toString('hex')}`;
      const dataDir = unusedPath();
      const run = await runToExit({ ADMIN_TOKEN: secret, DATA_DIR: dataDir });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('Invalid configuration');
      expect(run.stderr).toMatch(/ADMIN_TOKEN.*at least 32/);
      expect(run.stderr).not.toContain(secret);
      expect(run.stdout).not.toContain(secret);
      expect(existsSync(dataDir)).toBe(false);
    },
    TEST_TIMEOUT,
  );
});

const pgUrl = process.env.DATABASE_URL;

describe('server.ts on PostgreSQL', () => {
  let admin: postgres.Sql | undefined;
  let database: string | undefined;

  afterAll(async () => {
    if (admin && database) await admin.unsafe(`drop database if exists ${database} with (force)`);
    await admin?.end({ timeout: 5 });
  });

  it.skipIf(!pgUrl)(
    'migrates a fresh database once when two servers start at the same time, and both serve it',
    async () => {
      // A database of its own, so that the migrations really run.
      admin = postgres(pgUrl as string, { max: 1, onnotice: () => {} });
      database = `wp_server_test_${randomBytes(6).toString('hex')}`;
      await admin.unsafe(`create database ${database}`);
      const url = new URL(pgUrl as string);
      url.pathname = `/${database}`;
      const token = randomBytes(36).toString('base64url');
      const dataDir = unusedPath();
      const vars = { DATABASE_URL: url.href, ADMIN_TOKEN: token, DATA_DIR: dataDir };

      // Hold the migrations' advisory lock so that both servers queue behind it, then let them
      // race for it at the same moment. Without the lock they would not wait here at all.
      const holder = postgres(url.href, { max: 1, onnotice: () => {} });
      let a: Server;
      let b: Server;
      try {
        await holder`select pg_advisory_lock(${MIGRATION_LOCK_KEY}::bigint)`;
        const starting = Promise.all([startServer(vars), startServer(vars)]);
        starting.catch(() => {}); // awaited below; a failure while polling must not go unhandled
        await expect
          .poll(
            async () => {
              const [row] = await holder<{ n: number }[]>`
                select count(*)::int as n from pg_locks l join pg_database d on d.oid = l.database
                where l.locktype = 'advisory' and not l.granted and d.datname = ${database as string}`;
              return row?.n;
            },
            { timeout: START_TIMEOUT, interval: 50 },
          )
          .toBe(2);
        await holder`select pg_advisory_unlock(${MIGRATION_LOCK_KEY}::bigint)`;
        [a, b] = await starting;
      } finally {
        await holder.end({ timeout: 5 });
      }
      try {
        for (const s of [a, b]) {
          expect(s.stdout()).toContain('database: PostgreSQL');
          expect(s.stdout()).not.toContain('wpa_');
          expect(s.stdout()).not.toContain(token);
        }
        const appliedBy = [a, b].filter((s) => /applied \d+ migration/.test(s.stdout()));
        expect(appliedBy).toHaveLength(1);
        // The embedded database is not used: its directory is never created.
        expect(existsSync(dataDir)).toBe(false);

        const name = randomName();
        const created = await api(a, 'POST', '/v1/workplaces', { token, body: { name } });
        expect(created.status).toBe(201);
        expect(created.json).toMatchObject({ result: { name } });
        expect((await api(b, 'GET', `/v1/workplaces/${name}`, { token })).status).toBe(200);
        expect((await api(b, 'GET', '/readyz')).status).toBe(200);
        expect((await api(a, 'GET', `/v1/workplaces/${name}`, { token: 'wpa_wrong' })).status).toBe(401);
        expect((await api(b, 'DELETE', `/v1/workplaces/${name}`, { token })).status).toBe(204);
        expect((await api(a, 'GET', `/v1/workplaces/${name}`, { token })).status).toBe(404);
      } finally {
        const exits = await Promise.all([a.stop(), b.stop()]);
        expect(exits).toEqual([
          { code: 0, signal: null },
          { code: 0, signal: null },
        ]);
      }

      // Restarting against the migrated database applies nothing.
      const again = await startServer(vars);
      try {
        expect(again.stdout()).not.toMatch(/applied \d+ migration/);
      } finally {
        expect(await again.stop()).toEqual({ code: 0, signal: null });
      }
    },
    TEST_TIMEOUT,
  );
});

describe('secrets in what the server writes and answers', () => {
  it(
    'never writes a token, secret or password to its log, nor echoes one in an error',
    async () => {
      const admin = randomBytes(36).toString('base64url');
      const server = await startServer({ DATA_DIR: unusedPath(), ADMIN_TOKEN: admin, LOG_LEVEL: 'trace' });
      const secrets: Record<string, string> = { 'the admin token': admin };
      const answers: string[] = [];
      const call = async (method: string, path: string, opts: { token?: string; body?: unknown } = {}) => {
        const res = await api(server, method, path, { token: admin, ...opts });
        answers.push(res.text);
        return res;
      };
      const w = randomName();
      expect((await call('POST', '/v1/workplaces', { body: { name: w } })).status).toBe(201);

      // Every kind of secret the server issues or takes, each used once.
      const scoped = await call('POST', '/v1/tokens', { body: { workplaces: [w], access: 'read_write' } });
      secrets['a scoped token'] = (scoped.json as { result: { token: string } }).result.token;
      expect((await call('GET', `/v1/workplaces/${w}`, { token: secrets['a scoped token'] })).status).toBe(
        200,
      );
      const settings = await call('GET', `/v1/workplaces/${w}/oidc`);
      const oidcToken = (settings.json as { result: { token: string } }).result.token;
      const registration = await fetch(`${server.url}/oidc/${w}/oidc/registration`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorizarion: `Bearer ${oidcToken}` },
        body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }),
      });
      const registered = await registration.text();
      answers.push(registered);
      const client = (JSON.parse(registered) as { result: { client_id: string; client_secret: string } })
        .result;
      secrets['a client secret'] = client.client_secret;
      await call('POST', `/v1/workplaces/${w}/storages`, { body: { name: 'users' } });
      await call('POST', `/v1/workplaces/${w}/storages/users/create`, {
        body: { docs: [{ _id: 'ada', email: 'ada@acme.example' }] },
      });
      secrets['a password'] = `pw-${randomBytes(12).toString('base64url')}`;
      const set = await call('POST', `/v1/workplaces/${w}/oidc/password`, {
        body: { login: 'ada@acme.example', password: secrets['a password'] },
      });
      expect(set.status).toBe(204);

      // The same secrets where they do not belong, and wrong ones, in requests that fail.
      secrets['a wrong admin-looking token'] = `wpa_${randomBytes(32).toString('base64url')}`;
      expect(
        (await call('GET', `/v1/workplaces/${w}`, { token: secrets['a wrong admin-looking token'] })).status,
      ).toBe(401);
      expect(
        (await call('GET', '/v1/workplaces/nosuchplace', { token: secrets['a scoped token'] })).status,
      ).toBe(404);
      const wrongPassword = `pw-${randomBytes(12).toString('base64url')}`;
      secrets['a password that is too long'] = `${wrongPassword}${'x'.repeat(1100)}`;
      expect(
        (
          await call('POST', `/v1/workplaces/${w}/oidc/password`, {
            body: { login: 'ada@acme.example', password: secrets['a password that is too long'] },
          })
        ).status,
      ).toBe(400);
      const grant = await fetch(`${server.url}/oidc/${w}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token' }).toString(),
      });
      expect(grant.status).toBe(400);
      answers.push(await grant.text());

      expect(await server.stop()).toEqual({ code: 0, signal: null });
      const log = `${server.stdout()}\n${server.stderr()}`;
      expect(logLines(server.stdout()).length).toBeGreaterThan(10);
      for (const [what, secret] of Object.entries(secrets)) {
        expect(log.includes(secret), `${what} is in the log`).toBe(false);
      }
      // Answers carry a secret only where the interface says so: the scoped token and client
      // secret once, when issued, and the OIDC token from GET .../oidc.
      const issued = new Set([secrets['a scoped token'], secrets['a client secret']]);
      for (const [what, secret] of Object.entries(secrets)) {
        const carrying = answers.filter((a) => a.includes(secret));
        expect(carrying.length, `${what} is echoed in ${carrying.length} answers`).toBe(
          issued.has(secret) ? 1 : 0,
        );
      }
    },
    TEST_TIMEOUT,
  );
});
