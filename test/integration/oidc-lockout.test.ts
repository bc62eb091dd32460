import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { purgeExpiredLoginAttempts } from '../../db/platform/login-attempts.js';
import { oidcSignIns, registry } from '../../metrics.js';
import { hashSecret } from '../../secrets.js';
import { openTestDatabase } from '../helpers/app.js';
import {
  Browser,
  formAction,
  type LiveServer,
  PASSWORD,
  REDIRECT,
  startLiveServer,
  type Tenant,
  type TenantKit,
  tenantKit,
} from '../helpers/oidc-flow.js';
import {
  cleanUpServers,
  freePort,
  type Server,
  START_TIMEOUT,
  startServer,
  TEST_TIMEOUT,
} from '../helpers/server-process.js';

/**
 * The sign-in lockout of issue 28: counted per account (e-mail and username alike) in the
 * database, so that neither a second login string, nor a second process, nor guesses sent at the
 * same moment get more than five tries.
 */
const onPostgres = Boolean(process.env.DATABASE_URL);
const EMAIL = 'ada@acme.example';
const USERNAME = 'ada';
const LOCKED = 'Too many failed attempts. Try again in 15 minutes.';

let server: LiveServer;
let kit: TenantKit;
const tenants: Tenant[] = [];
beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
});
afterAll(async () => {
  for (const t of tenants) await kit.api('DELETE', `/v1/workplaces/${t.workplace}`);
  await server?.close();
});

async function newTenant(k: TenantKit = kit): Promise<Tenant> {
  const t = await k.newTenant();
  tenants.push(t);
  return t;
}

interface SignInPage {
  browser: Browser;
  /** The path the form posts to: the same on every process serving the issuer. */
  path: string;
  base: string;
}

/** Starts an authorization request and opens the sign-in page it leads to. */
async function signInPage(t: Tenant, base = server.base): Promise<SignInPage> {
  const config = await oidc.discovery(new URL(t.issuer), t.clientId, t.clientSecret, undefined, {
    execute: [oidc.allowInsecureRequests],
  });
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid',
    code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
    code_challenge_method: 'S256',
    state: oidc.randomState(),
  });
  const browser = new Browser();
  const login = await browser.follow(url.href, base);
  const html = await (login.page as Response).text();
  expect(html).toContain('Sign in');
  return { browser, path: new URL(formAction(html, login.url)).pathname, base };
}

interface Answer {
  status: number;
  retryAfter: number | undefined;
  message: string | undefined;
}

/** Posts the sign-in form, to the page's own server or to another one (`base`). */
async function attempt(page: SignInPage, login: string, password: string, base = page.base): Promise<Answer> {
  const res = await page.browser.request(`${base}${page.path}`, { form: { login, password } });
  const retryAfter = res.headers.get('retry-after');
  return {
    status: res.status,
    retryAfter: retryAfter === null ? undefined : Number(retryAfter),
    message: /role="alert">([^<]*)</.exec(await res.text())?.[1],
  };
}

async function workplaceId(t: Tenant): Promise<string> {
  const [row] = await server.sql<
    { id: string }[]
  >`select id::text from workplaces where name = ${t.workplace}`;
  if (!row) throw new Error(`no workplace ${t.workplace}`);
  return row.id;
}

/** The process's sign-in counter (metrics.ts), by outcome. */
async function signInOutcomes(): Promise<Record<'success' | 'wrong_credentials' | 'locked_out', number>> {
  const counts = { success: 0, wrong_credentials: 0, locked_out: 0 };
  for (const { labels, value } of (await oidcSignIns.get()).values)
    counts[labels.outcome as keyof typeof counts] = value;
  return counts;
}

function expectLocked(a: Answer) {
  expect(a.status).toBe(429);
  expect(a.message).toBe(LOCKED);
  expect(a.retryAfter).toBeGreaterThan(0);
  expect(a.retryAfter).toBeLessThanOrEqual(15 * 60);
}

describe('the sign-in lockout', () => {
  it('counts e-mail and username as one account: 3 + 2 failures lock both', async () => {
    const t = await newTenant();
    const page = await signInPage(t);
    for (let i = 0; i < 3; i++) expect((await attempt(page, EMAIL, 'not the password')).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await attempt(page, USERNAME, 'not the password')).status).toBe(401);
    // Even the right password waits out the lock, by either login.
    expectLocked(await attempt(page, EMAIL, PASSWORD));
    expectLocked(await attempt(page, USERNAME, PASSWORD));
  });

  it('forgets the failures once either login signs in', async () => {
    const t = await newTenant();
    const before = await signInOutcomes();
    const first = await signInPage(t);
    for (let i = 0; i < 4; i++) expect((await attempt(first, EMAIL, 'not the password')).status).toBe(401);
    expect((await attempt(first, USERNAME, PASSWORD)).status).toBe(303);
    const second = await signInPage(t);
    for (let i = 0; i < 5; i++) expect((await attempt(second, EMAIL, 'not the password')).status).toBe(401);
    expectLocked(await attempt(second, EMAIL, PASSWORD));
    // The sign-in metrics count each outcome, and name no account.
    const after = await signInOutcomes();
    expect({
      success: after.success - before.success,
      wrong_credentials: after.wrong_credentials - before.wrong_credentials,
      locked_out: after.locked_out - before.locked_out,
    }).toEqual({ success: 1, wrong_credentials: 9, locked_out: 1 });
    expect(await registry.metrics()).not.toMatch(/acme\.example|\bada\b/);
  });

  it('locks an unknown login after five failures exactly as a real one, whichever server answers', async () => {
    const t = await newTenant();
    const other = await server.startAnother();
    try {
      const tries = async (login: string) => {
        const page = await signInPage(t);
        const answers: Answer[] = [];
        for (let i = 0; i < 7; i++) {
          answers.push(await attempt(page, login, 'not the password', i % 2 ? other.base : server.base));
        }
        return answers;
      };
      const real = await tries(EMAIL);
      const unknown = await tries('nobody@acme.example');
      const statuses = [401, 401, 401, 401, 401, 429, 429];
      expect(real.map((a) => a.status)).toEqual(statuses);
      expect(unknown.map((a) => a.status)).toEqual(statuses);
      expect(unknown.map((a) => a.message)).toEqual(real.map((a) => a.message));
      for (const a of [...real, ...unknown].filter((a) => a.status === 429)) expectLocked(a);
      // The login is counted whatever its case, as a real one would be by its subject.
      expectLocked(await attempt(await signInPage(t), 'NoBody@ACME.example', 'not the password'));
    } finally {
      await other.close();
    }
  });

  it('checks at most five passwords of twenty sent at once to two servers', async () => {
    const t = await newTenant();
    const other = await server.startAnother();
    try {
      const page = await signInPage(t);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          attempt(page, i % 2 ? USERNAME : EMAIL, 'not the password', i % 2 ? other.base : server.base),
        ),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      for (const a of answers.filter((a) => a.status === 429)) expectLocked(a);
      expectLocked(await attempt(page, EMAIL, PASSWORD));
    } finally {
      await other.close();
    }
  });

  it('gives five tries again once the window or the lock is over, and purges what has expired', async () => {
    const t = await newTenant();
    const id = await workplaceId(t);
    const page = await signInPage(t);
    const age = (minutes: number) => server.sql`
      update login_attempts
      set window_start = window_start - make_interval(mins => ${minutes}),
        locked_until = locked_until - make_interval(mins => ${minutes})
      where workplace_id = ${id}`;

    for (let i = 0; i < 4; i++) expect((await attempt(page, EMAIL, 'not the password')).status).toBe(401);
    await age(16);
    for (let i = 0; i < 5; i++) expect((await attempt(page, EMAIL, 'not the password')).status).toBe(401);
    expectLocked(await attempt(page, EMAIL, PASSWORD));

    await age(16);
    const [stale] = await server.sql<{ n: number }[]>`
      select count(*)::int as n from login_attempts where workplace_id = ${id}`;
    expect(stale?.n).toBe(1);
    await purgeExpiredLoginAttempts(server.sql, 15 * 60);
    const [purged] = await server.sql<{ n: number }[]>`
      select count(*)::int as n from login_attempts where workplace_id = ${id}`;
    expect(purged?.n).toBe(0);
    expect((await attempt(page, EMAIL, PASSWORD)).status).toBe(303);
  });

  it('leaves nothing behind when the workplace is deleted', async () => {
    const t = await newTenant();
    const id = await workplaceId(t);
    await attempt(await signInPage(t), EMAIL, 'not the password');
    const count = async () =>
      (
        await server.sql<{ n: number }[]>`
          select count(*)::int as n from login_attempts where workplace_id = ${id}`
      )[0]?.n;
    expect(await count()).toBe(1);
    expect((await kit.api('DELETE', `/v1/workplaces/${t.workplace}`)).status).toBe(204);
    expect(await count()).toBe(0);
  });
});

describe.runIf(onPostgres)('the sign-in lockout on PostgreSQL', () => {
  afterAll(cleanUpServers);

  it(
    'is shared by two server processes: five failures in all, then both refuse',
    async () => {
      const token = randomBytes(36).toString('base64url');
      // Both processes are one issuer, as behind a balancer: the interaction cookie works on either.
      const port = await freePort();
      const publicUrl = `http://127.0.0.1:${port}`;
      const vars = {
        DATABASE_URL: process.env.DATABASE_URL as string,
        ADMIN_TOKEN: token,
        PUBLIC_URL: publicUrl,
      };
      let a: Server | undefined;
      let b: Server | undefined;
      try {
        [a, b] = await Promise.all([startServer({ ...vars, PORT: String(port) }), startServer(vars)]);
        const processKit = tenantKit({ base: a.url, adminToken: token } as LiveServer);
        const t = await newTenant(processKit);
        const page = await signInPage(t, a.url);
        const bases = [a.url, b.url];
        for (let i = 0; i < 5; i++) {
          const login = i % 2 ? USERNAME : EMAIL;
          expect((await attempt(page, login, 'not the password', bases[i % 2])).status).toBe(401);
        }
        for (const base of bases) {
          expectLocked(await attempt(page, EMAIL, 'not the password', base));
          expectLocked(await attempt(page, USERNAME, PASSWORD, base));
        }
      } finally {
        await Promise.all([a?.stop(), b?.stop()]);
      }
    },
    TEST_TIMEOUT + START_TIMEOUT,
  );

  it('answers 503 with Retry-After, not 500, when the database cannot count the attempt', async () => {
    const t = await newTenant();
    const id = await workplaceId(t);
    // A process of its own whose statements are cancelled quickly; the same issuer and database.
    const db = await openTestDatabase({ statementTimeoutMs: 300 });
    const app = await buildApp({
      sql: db.sql,
      adminTokenHash: hashSecret(server.adminToken),
      issuerBase: () => server.base,
    });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const slow = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const page = await signInPage(t);
      expect((await attempt(page, EMAIL, 'not the password')).status).toBe(401);
      // Another session holds the account's row, so the count cannot be taken in time.
      let answer: Answer | undefined;
      await server.sql.begin(async (tx) => {
        await tx`select 1 from login_attempts where workplace_id = ${id} for update`;
        answer = await attempt(page, EMAIL, 'not the password', slow);
      });
      expect(answer?.status).toBe(503);
      expect(Number(answer?.retryAfter)).toBeGreaterThan(0);
      expect((await attempt(page, EMAIL, 'not the password', slow)).status).toBe(401);
    } finally {
      await app.close();
      await db.close();
    }
  });
});
