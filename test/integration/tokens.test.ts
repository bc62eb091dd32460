import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { openEmbedded } from '../../db/connection/embedded.js';
import { migrate } from '../../db/connection/migrate.js';
import { createWorkplace } from '../../db/platform/workplaces.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { randomName, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const SECRET_FORMAT = /^wpt_[A-Za-z0-9_-]{43}$/;

async function issue(body: Record<string, unknown>) {
  const res = await t.request({ method: 'POST', url: '/v1/tokens', body });
  expect(res.status, res.text).toBe(201);
  return res.body.result as { id: string; token: string; [k: string]: unknown };
}

const getWorkplace = (name: string, token: string) =>
  t.request({ method: 'GET', url: `/v1/workplaces/${name}`, token });

describe('issuing a token', () => {
  it('answers 201 with the secret once, and lists it without', async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    const before = Date.now();
    const res = await t.request({
      method: 'POST',
      url: '/v1/tokens',
      body: { label: 'storefront', workplaces: [b, a], access: 'read' },
    });
    expect(res.status, res.text).toBe(201);
    const created = res.body.result;
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      token: expect.stringMatching(SECRET_FORMAT),
      prefix: created.token.slice(0, 12),
      label: 'storefront',
      workplaces: [a, b].sort(),
      access: 'read',
      created_at: expect.any(String),
      expires_at: null,
      last_used_at: null,
      revoked_at: null,
    });
    expect(Date.parse(created.created_at)).toBeGreaterThanOrEqual(before - 1000);

    const list = await t.request({ method: 'GET', url: '/v1/tokens' });
    expect(list.status).toBe(200);
    const { token: secret, ...listed } = created;
    expect(list.body.result).toContainEqual(listed);
    expect(list.text).not.toContain(secret);
  });

  it('stores only a SHA-256 of the secret', async () => {
    const wp = await t.createWorkplace();
    const { id, token } = await issue({ workplaces: [wp], access: 'read' });
    const [row] = await t.sql<{ secret_hash: Buffer; all: string }[]>`
      select secret_hash, row_to_json(t)::text as all from api_tokens t where id = ${id}`;
    expect(row?.secret_hash.equals(hashSecret(token))).toBe(true);
    expect(row?.all).not.toContain(token.slice(12));
  });

  it('lists the newest first', async () => {
    const wp = await t.createWorkplace();
    const first = await issue({ workplaces: [wp], access: 'read' });
    const second = await issue({ workplaces: [wp], access: 'read' });
    const ids = (await t.request({ method: 'GET', url: '/v1/tokens' })).body.result.map(
      (r: { id: string }) => r.id,
    );
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
  });

  it.each([
    [
      'a workplace that does not exist',
      (wp: string) => ({ workplaces: [wp, 'nosuchworkplacehere'], access: 'read' }),
      '/workplaces/1',
    ],
    ['no workplaces', () => ({ workplaces: [], access: 'read' }), '/workplaces'],
    ['the same workplace twice', (wp: string) => ({ workplaces: [wp, wp], access: 'read' }), '/workplaces'],
    ['an invalid workplace name', () => ({ workplaces: ['no-dashes'], access: 'read' }), '/workplaces/0'],
    ['no access', (wp: string) => ({ workplaces: [wp] }), '/access'],
    ['an unknown access', (wp: string) => ({ workplaces: [wp], access: 'admin' }), '/access'],
    [
      'an expiry in the past',
      (wp: string) => ({ workplaces: [wp], access: 'read', expires_at: '2020-01-01T00:00:00Z' }),
      '/expires_at',
    ],
    [
      'an expiry that is not a date',
      (wp: string) => ({ workplaces: [wp], access: 'read', expires_at: 'tomorrow' }),
      '/expires_at',
    ],
    [
      'a label too long',
      (wp: string) => ({ workplaces: [wp], access: 'read', label: 'x'.repeat(129) }),
      '/label',
    ],
    ['an unknown field', (wp: string) => ({ workplaces: [wp], access: 'read', scopes: ['all'] }), '/scopes'],
  ])('refuses %s with 400 naming the field, issuing nothing', async (_label, body, path) => {
    const wp = await t.createWorkplace();
    const [before] = await t.sql<{ n: number }[]>`select count(*)::int as n from api_tokens`;
    const res = await t.request({ method: 'POST', url: '/v1/tokens', body: body(wp) });
    expect(res.status, res.text).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ in: 'body', path }));
    const [after] = await t.sql<{ n: number }[]>`select count(*)::int as n from api_tokens`;
    expect(after?.n).toBe(before?.n);
  });
});

describe('the admin token', () => {
  // The server remembers the admin token once its hash matched (http/security.ts); what it remembers
  // must admit that token only, not anything close to it.
  it('keeps admitting the admin token, and nothing that differs from it in one character or in length', async () => {
    const w = await t.createWorkplace();
    const admin = t.adminToken;
    const last = admin.at(-1) === 'A' ? 'B' : 'A';
    for (let round = 0; round < 2; round++) {
      expect((await getWorkplace(w, admin)).status).toBe(200);
      for (const other of [
        `${admin.slice(0, -1)}${last}`,
        admin.slice(0, -1),
        `${admin}A`,
        admin.toLowerCase(),
      ]) {
        if (other === admin) continue;
        const res = await getWorkplace(w, other);
        expect(res.status, other).toBe(401);
        expect(res.body.detail).toBe('The X-Auth-Token is not valid.');
      }
    }
  });
});

describe('using a scoped token', () => {
  it('reaches each workplace in its scope and nothing else, without revealing what exists', async () => {
    const a = await t.createWorkplace();
    const b = await t.createWorkplace();
    const outside = await t.createWorkplace();
    const { token } = await issue({ workplaces: [a, b], access: 'read' });
    expect((await getWorkplace(a, token)).status).toBe(200);
    expect((await getWorkplace(b, token)).status).toBe(200);
    const existing = await getWorkplace(outside, token);
    const missing = await getWorkplace('nosuchworkplacehere', token);
    for (const res of [existing, missing]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('WORKPLACE_NOT_FOUND');
    }
    expect(existing.body.detail.replace(outside, 'X')).toBe(
      missing.body.detail.replace('nosuchworkplacehere', 'X'),
    );
  });

  it('stops working at once when revoked; revoking again is 204, an unknown id 404', async () => {
    const wp = await t.createWorkplace();
    const { id, token } = await issue({ workplaces: [wp], access: 'read_write' });
    expect((await getWorkplace(wp, token)).status).toBe(200);
    expect((await t.request({ method: 'DELETE', url: `/v1/tokens/${id}` })).status).toBe(204);
    const res = await getWorkplace(wp, token);
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/revoked/);
    expect((await t.request({ method: 'DELETE', url: `/v1/tokens/${id}` })).status).toBe(204);
    const listed = (await t.request({ method: 'GET', url: '/v1/tokens' })).body.result.find(
      (r: { id: string }) => r.id === id,
    );
    expect(listed.revoked_at).not.toBeNull();
    const unknown = await t.request({
      method: 'DELETE',
      url: '/v1/tokens/00000000-0000-4000-8000-000000000000',
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('TOKEN_NOT_FOUND');
  });

  it('works until it expires, then gets 401', async () => {
    const wp = await t.createWorkplace();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const { id, token, expires_at } = await issue({
      workplaces: [wp],
      access: 'read',
      expires_at: expiresAt,
    });
    expect(expires_at).toBe(expiresAt);
    expect((await getWorkplace(wp, token)).status).toBe(200);
    await t.sql`update api_tokens set expires_at = now() - interval '1 second' where id = ${id}`;
    const res = await getWorkplace(wp, token);
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/expired/);
  });

  it('records its last use, without a write per request', async () => {
    const wp = await t.createWorkplace();
    const { id, token } = await issue({ workplaces: [wp], access: 'read' });
    const lastUsed = async () =>
      (await t.sql<{ at: Date | null }[]>`select last_used_at as at from api_tokens where id = ${id}`)[0]?.at;
    expect(await lastUsed()).toBeNull();
    await getWorkplace(wp, token);
    await expect.poll(lastUsed).not.toBeNull();
    const first = (await lastUsed())?.getTime();
    for (let i = 0; i < 5; i++) await getWorkplace(wp, token);
    await new Promise((r) => setTimeout(r, 50));
    expect((await lastUsed())?.getTime()).toBe(first);
  });

  it('loses a workplace that is deleted, and does not reach one re-created under the same name', async () => {
    const wp = await t.createWorkplace();
    const keep = await t.createWorkplace();
    const { id, token } = await issue({ workplaces: [wp, keep], access: 'read_write' });
    expect((await t.request({ method: 'DELETE', url: `/v1/workplaces/${wp}` })).status).toBe(204);
    expect((await t.request({ method: 'POST', url: '/v1/workplaces', body: { name: wp } })).status).toBe(201);
    expect((await getWorkplace(wp, token)).status).toBe(404);
    expect((await getWorkplace(keep, token)).status).toBe(200);
    const listed = (await t.request({ method: 'GET', url: '/v1/tokens' })).body.result.find(
      (r: { id: string }) => r.id === id,
    );
    expect(listed.workplaces).toEqual([keep]);
  });

  it('owns the connectors it creates, as token:<id>', async () => {
    const wp = await t.createWorkplace();
    const { id, token } = await issue({ workplaces: [wp], access: 'read_write' });
    const res = await t.request({
      method: 'POST',
      url: `/v1/workplaces/${wp}/connectors`,
      token,
      body: { name: 'C', version: '1', methods: [], dataMapping: { input: {}, output: {} } },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.result.owner).toBe(`token:${id}`);
  });

  it('is not accepted on the /oidc routes', async () => {
    const wp = await t.createWorkplace();
    const { token } = await issue({ workplaces: [wp], access: 'read_write' });
    const attempts: Record<string, string>[] = [
      { 'x-auth-token': token },
      { authorizarion: `Bearer ${token}` },
    ];
    for (const headers of attempts) {
      const res = await t.request({ method: 'GET', url: `/oidc/${wp}/registration`, token: null, headers });
      expect(res.status).toBe(401);
    }
  });
});

const execFileAsync = promisify(execFile);

/** Runs the operator CLI as an operator would, against the database the environment names. */
async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await execFileAsync('npx', ['tsx', 'scripts/token.ts', ...args], {
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the operator CLI (npm run token)', () => {
  it('creates, lists and revokes tokens that the server then honours', async () => {
    let env: Record<string, string>;
    let workplace: string;
    let dataDir: string | undefined;
    if (t.databaseKind === 'postgres') {
      env = { DATABASE_URL: process.env.DATABASE_URL as string };
      workplace = await t.createWorkplace();
    } else {
      // The embedded database belongs to one process: prepare it, close it, then hand it over.
      dataDir = await mkdtemp(join(tmpdir(), 'token-cli-'));
      env = { DATA_DIR: dataDir, DATABASE_URL: '' };
      workplace = randomName();
      const db = await openEmbedded({ dataDir });
      await migrate(db.sql);
      await createWorkplace(db.sql, workplace, generateSecret(TOKEN_PREFIX.oidc));
      await db.close();
    }
    try {
      const created = await cli(
        ['create', '--workplace', workplace, '--read-only', '--label', 'cli', '--expires-in', '30d'],
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      const secret = created.stdout.trim();
      expect(secret).toMatch(SECRET_FORMAT);

      const listed = await cli(['list'], env);
      expect(listed.code, listed.stderr).toBe(0);
      const row = JSON.parse(listed.stdout).find((r: { prefix: string }) => r.prefix === secret.slice(0, 12));
      expect(row).toMatchObject({ label: 'cli', access: 'read', workplaces: [workplace], revoked_at: null });
      const days = (Date.parse(row.expires_at) - Date.parse(row.created_at)) / 86_400_000;
      expect(days).toBeCloseTo(30, 1);
      expect(listed.stdout).not.toContain(secret);

      const check = async () => {
        if (!dataDir) return (await getWorkplace(workplace, secret)).status;
        const db = await openEmbedded({ dataDir });
        try {
          const app = await buildApp({ sql: db.sql, adminTokenHash: hashSecret(generateSecret('x')) });
          const res = await app.inject({
            method: 'GET',
            url: `/v1/workplaces/${workplace}`,
            headers: { 'x-auth-token': secret },
          });
          await app.close();
          return res.statusCode;
        } finally {
          await db.close();
        }
      };
      expect(await check()).toBe(200);

      const revoked = await cli(['revoke', row.id], env);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(await check()).toBe(401);

      const bad = await cli(['create', '--workplace', 'nosuchworkplacehere'], env);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("workplace 'nosuchworkplacehere', which does not exist");
      const none = await cli(['create'], env);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('--workplace');
    } finally {
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
