import { execFileSync } from 'node:child_process';
import * as oidc from 'openid-client';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  Browser,
  discover,
  type LiveServer,
  signIn,
  startLiveServer,
  type Tenant,
  type TenantKit,
  tenantKit,
} from '../helpers/oidc-flow.js';

/**
 * A Citus cluster loses a worker under a running server, gets it back, and moves a tenant between
 * workers while it is written to. `npm run test:citus` runs this file alone, after the Citus pass of
 * the suite, since stopping a worker would fail the other files' workplaces on it. It needs the
 * cluster of ../shared/citus/setup-cluster.sh (CITUS_CLUSTER_DIR says one runs).
 */
const clusterDir = process.env.CITUS_CLUSTER_DIR;
const PG_BIN = '/usr/lib/postgresql/15/bin';
/** A request for a workplace on a stopped worker must end within this, as a 503. */
const ANSWER_WITHIN_MS = 10_000;
/** More requests at once than the server's pool has connections. */
const CONCURRENT = 12;

interface Node {
  host: string;
  port: number;
}

let server: LiveServer;
let api: TenantKit['api'];
let newTenant: TenantKit['newTenant'];

beforeAll(async () => {
  server = await startLiveServer();
  ({ api, newTenant } = tenantKit(server));
});
afterAll(async () => {
  await server?.close();
});

/** The worker that holds a workplace's schema (Citus schema-based sharding). */
async function workerOf(workplace: string): Promise<Node> {
  const [row] = await server.sql<Node[]>`
    select s.nodename as host, s.nodeport as port
    from workplaces w join citus_shards s on s.table_name::text like 'wp_' || w.id || '.%'
    where w.name = ${workplace} limit 1`;
  if (!row) throw new Error(`${workplace} has no shard`);
  return { host: row.host, port: row.port };
}

async function schemaOf(workplace: string): Promise<string> {
  const [row] = await server.sql<{ schema: string }[]>`
    select 'wp_' || id as schema from workplaces where name = ${workplace}`;
  if (!row) throw new Error(`no workplace ${workplace}`);
  return row.schema;
}

/** The data directory of a node, as the node itself says. */
async function dataDirectory(node: Node): Promise<string> {
  const url = new URL(process.env.DATABASE_URL as string);
  url.hostname = node.host;
  url.port = String(node.port);
  const sql = postgres(url.href, { max: 1 });
  try {
    const [row] = await sql<{ data_directory: string }[]>`show data_directory`;
    if (!row) throw new Error('no data_directory');
    return row.data_directory;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** pg_ctl on a node's data directory, as the postgres user when run as root. */
function pgCtl(dir: string, action: 'stop' | 'start'): void {
  const args =
    action === 'stop'
      ? ['-D', dir, 'stop', '-m', 'fast', '-w']
      : ['-D', dir, '-l', `${dir}.log`, 'start', '-w', '-t', '60'];
  const asRoot = process.getuid?.() === 0;
  execFileSync(
    asRoot ? 'runuser' : `${PG_BIN}/pg_ctl`,
    asRoot ? ['-u', 'postgres', '--', `${PG_BIN}/pg_ctl`, ...args] : args,
    { stdio: 'ignore' },
  );
}

/** A code flow with PKCE through the workplace's provider, ending in tokens. */
async function signsIn(t: Tenant): Promise<void> {
  const config = await discover(t);
  const { url, verifier, state } = await authorizationRequest(config);
  const callback = await signIn(new Browser(), url);
  const tokens = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  expect(tokens.access_token).toBeTruthy();
}

/** Tenants until two of them live on different workers. */
async function tenantsOnTwoWorkers(): Promise<[{ t: Tenant; node: Node }, { t: Tenant; node: Node }]> {
  const seen: { t: Tenant; node: Node }[] = [];
  for (let i = 0; i < 8; i++) {
    const t = await newTenant();
    const node = await workerOf(t.workplace);
    const other = seen.find((s) => s.node.port !== node.port);
    if (other) return [other, { t, node }];
    seen.push({ t, node });
  }
  throw new Error('every new workplace went to the same worker');
}

const docs = (t: Tenant) => `/v1/workplaces/${t.workplace}/storages/c`;

async function call(t: Tenant, op: string, body: unknown) {
  const res = await fetch(`${server.base}${docs(t)}/${op}`, {
    method: 'POST',
    headers: { 'x-auth-token': server.adminToken, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    retryAfter: res.headers.get('retry-after'),
    body: text ? JSON.parse(text) : undefined,
  };
}

describe.runIf(clusterDir)('on Citus', () => {
  it('a stopped worker fails only its tenants, with bounded 503s, and they are served again when it returns', async () => {
    const [healthy, doomed] = await tenantsOnTwoWorkers();
    for (const { t } of [healthy, doomed]) {
      expect((await api('POST', `/v1/workplaces/${t.workplace}/storages`, { name: 'c' })).status).toBe(201);
      expect((await api('POST', `${docs(t)}/indexes`, { name: 'byTags', key: ['tags'] })).status).toBe(201);
      expect((await call(t, 'create', { docs: [{ _id: 1, tags: 'a' }] })).status).toBe(201);
    }
    // Every connection of the pool then holds a connection of its own to the worker, as a busy
    // server's do: those fail differently from new ones when the worker goes (errors.ts).
    const warm = await Promise.all(Array.from({ length: CONCURRENT }, () => call(doomed.t, 'read', {})));
    expect(warm.map((res) => res.status)).toEqual(warm.map(() => 200));
    const dir = await dataDirectory(doomed.node);
    pgCtl(dir, 'stop');
    try {
      // The other worker's tenant: reads, writes, a write that turns its index multikey, sign-in.
      const read = await call(healthy.t, 'read', { query: { tags: 'a' } });
      expect(read.status, read.text).toBe(200);
      expect(read.body.result).toEqual([{ _id: 1, tags: 'a' }]);
      const write = await call(healthy.t, 'create', { docs: [{ _id: 2, tags: ['a', 'b'] }] });
      expect(write.status, write.text).toBe(201);
      const [flag] = await server.sql<{ multikey: boolean }[]>`
        select i.multikey from collection_indexes i join collections c on c.id = i.collection_id
        join workplaces w on w.id = c.workplace_id
        where w.name = ${healthy.t.workplace} and c.name = 'c' and i.name = 'byTags'`;
      expect(flag?.multikey).toBe(true);
      const both = await call(healthy.t, 'read', { query: { tags: 'a' } });
      expect(both.body.result.map((d: { _id: number }) => d._id)).toEqual([1, 2]);
      await signsIn(healthy.t);

      // The stopped worker's tenant: a 503 that says when to retry, soon, for reads and writes
      // alike, from every connection of the pool at once (each holds its own connection to the worker).
      for (const [op, body] of [
        ['read', {}],
        ['create', { docs: [{ tags: 'c' }] }],
        ['update', { query: { _id: 1 }, doc: { $set: { x: 1 } } }],
        ['count', { query: {} }],
      ] as const) {
        await Promise.all(
          Array.from({ length: CONCURRENT }, async () => {
            const started = Date.now();
            const res = await call(doomed.t, op, body);
            expect(res.status, `${op}: ${res.text}`).toBe(503);
            expect(res.retryAfter, op).toMatch(/^\d+$/);
            expect(Date.now() - started, op).toBeLessThan(ANSWER_WITHIN_MS);
          }),
        );
      }
    } finally {
      pgCtl(dir, 'start');
    }
    // Back without a restart of the server: a few 503s while connections find the worker again.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const answers = await Promise.all(
        Array.from({ length: CONCURRENT }, (_, i) =>
          i % 2
            ? call(doomed.t, 'read', { query: { tags: 'a' } })
            : call(doomed.t, 'create', { docs: [{ tags: 'x' }] }),
        ),
      );
      for (const res of answers) expect([200, 201, 503], res.text).toContain(res.status);
      if (answers.every((res) => res.status !== 503)) break;
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 250));
    }
    const after = await call(doomed.t, 'read', { query: { tags: 'a' } });
    expect(after.status, after.text).toBe(200);
    expect(after.body.result).toEqual([{ _id: 1, tags: 'a' }]);
    await signsIn(doomed.t);
  }, 120_000);

  it('a workplace moves to the other worker while it is written to, losing no acknowledged write', async () => {
    const t = await newTenant();
    expect((await api('POST', `/v1/workplaces/${t.workplace}/storages`, { name: 'c' })).status).toBe(201);
    expect((await api('POST', `${docs(t)}/indexes`, { name: 'byN', key: ['n'] })).status).toBe(201);
    const from = await workerOf(t.workplace);
    const [to] = await server.sql<Node[]>`
      select nodename as host, nodeport as port from pg_dist_node
      where groupid <> 0 and noderole = 'primary' and nodeport <> ${from.port} limit 1`;
    if (!to) throw new Error('no other worker');

    const acknowledged: number[] = [];
    const refused: string[] = [];
    let writing = true;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; writing; i++) {
        const n = i * 4 + w;
        const res = await call(t, 'create', { docs: [{ _id: n, n }] });
        if (res.status === 201) acknowledged.push(n);
        else refused.push(`${res.status} ${res.text}`);
      }
    });
    await new Promise((r) => setTimeout(r, 500));
    const schema = await schemaOf(t.workplace);
    await server.sql`select citus_schema_move(${schema}::regnamespace, ${to.host}::text, ${to.port}::int)`;
    const movedAt = acknowledged.length;
    await new Promise((r) => setTimeout(r, 500));
    writing = false;
    await Promise.all(writers);

    expect(await workerOf(t.workplace)).toEqual(to);
    // Writes went on through the move and after it; none failed for it.
    expect(refused).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(movedAt);
    // Every acknowledged write is there, and nothing else.
    const count = async (query: unknown) => (await call(t, 'count', { query })).body?.result?.count;
    expect(await count({})).toBe(acknowledged.length);
    expect(await count({ n: { $nin: acknowledged } })).toBe(0);
    // Reading through an index, writing and indexing, on the new worker, without a restart.
    const one = await call(t, 'read', { query: { n: acknowledged[0] } });
    expect(one.body.result).toHaveLength(1);
    const unique = await api('POST', `${docs(t)}/indexes`, { name: 'uniqueN', key: ['n'], unique: true });
    expect(unique.status, unique.text).toBe(201);
    expect((await call(t, 'create', { docs: [{ n: -1 }] })).status).toBe(201);
    const dup = await call(t, 'create', { docs: [{ n: -1 }] });
    expect(dup.status, dup.text).toBe(409);
    expect(dup.text).toContain('uniqueN');
  }, 120_000);
});
