import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import type { Sql } from '../../db/connection/sql.js';
import { CatalogCache } from '../../db/storage/catalog-cache.js';
import { readCatalogChange } from '../../db/storage/catalog-changes.js';
import { citusInstalled } from '../../db/storage/citus-shapes.js';
import { explain, readStatement } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { ProviderRegistry } from '../../oidc/provider.js';
import { hashSecret } from '../../secrets.js';
import { openTestDatabase, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Two server processes on one database: changes go through `t`, and `other` must hear of them
 * (migration 0024, db/storage/catalog-changes.ts). On PostgreSQL `other` has a pool of its own, as
 * another process would, and hears through its own LISTEN connection; on PGlite, which one process
 * holds, both apps share its one session, which hears its own notifications. `other`'s catalog
 * cache keeps entries for the usual 10 s: what it drops sooner, it dropped on hearing of a change.
 */
const HEARD_WITHIN = { timeout: 2000, interval: 20 };
/** Names `other`'s connections, so that its listener can be found in pg_stat_activity. */
const OTHER_APP = `wpa_catalog_changes_${randomBytes(4).toString('hex')}`;

let t: TestApp;
let otherDb: { sql: Sql; close(): Promise<void> };
let other: FastifyInstance;
let catalog: CatalogCache;
let providers: ProviderRegistry;
let citus = false;

beforeAll(async () => {
  t = await startTestApp();
  if (t.databaseKind === 'postgres') {
    const url = new URL(process.env.DATABASE_URL as string);
    url.searchParams.set('application_name', OTHER_APP);
    otherDb = await openTestDatabase({ databaseUrl: url.href });
  } else {
    otherDb = { sql: t.sql, close: async () => {} };
  }
  catalog = new CatalogCache(otherDb.sql);
  providers = new ProviderRegistry(otherDb.sql, () => 'http://127.0.0.1:3000', undefined);
  other = await buildApp({ sql: otherDb.sql, adminTokenHash: hashSecret(t.adminToken), catalog, providers });
  await other.ready();
  citus = await citusInstalled(t.sql);
});
afterAll(async () => {
  await other?.close();
  await otherDb?.close();
  await t?.close();
});

async function viaOther(method: 'GET' | 'POST', url: string, body?: unknown) {
  const res = await other.inject({
    method,
    url,
    headers: { 'x-auth-token': t.adminToken, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

/** `_id`s of what `other` reads. */
async function readOnOther(wp: string, collection: string, query: unknown): Promise<unknown[]> {
  const res = await viaOther('POST', `/v1/workplaces/${wp}/storages/${collection}/read`, {
    query,
    sort: { _id: 1 },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.result.map((d: { _id: unknown }) => d._id);
}

/** A workplace with collections of documents {_id: 'd<n>', n} for n < 50. */
async function workplaceWith(...collections: string[]): Promise<string> {
  const wp = await t.createWorkplace();
  for (const name of collections) {
    const base = `/v1/workplaces/${wp}/storages`;
    expect((await t.request({ method: 'POST', url: base, body: { name } })).status).toBe(201);
    const docs = Array.from({ length: 50 }, (_, n) => ({ _id: `d${n}`, n }));
    const res = await t.request({ method: 'POST', url: `${base}/${name}/create`, body: { docs } });
    expect(res.status, res.text).toBe(201);
  }
  return wp;
}

async function createIndex(wp: string, collection: string, name: string, key: string[]) {
  const res = await t.request({
    method: 'POST',
    url: `/v1/workplaces/${wp}/storages/${collection}/indexes`,
    body: { name, key },
  });
  expect(res.status, res.text).toBe(201);
}

/** The indexes `other`'s next request on the collection works with: its cached entry, or a fresh one. */
async function indexesOnOther(wp: string, collection: string): Promise<string[] | undefined> {
  const lookup = await catalog.withCollection(wp, collection, async (c) => c.indexes.map((ix) => ix.name));
  return lookup.workplace ? lookup.found : undefined;
}

/**
 * The plan of the statement `other` runs for a read of `{n}`, built from its catalog entry. Sequential
 * scans are discouraged: on 50 documents the planner would rather read them all than use the index.
 */
async function planOnOther(wp: string, collection: string, n: number): Promise<string> {
  const lookup = await catalog.withCollection(wp, collection, (c) =>
    otherDb.sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const statement = readStatement(c, { filter: parseFilter({ n }), sort: [], skip: 0, limit: 10 }, true);
      return explain(tx as unknown as Sql, statement);
    }),
  );
  return (lookup.workplace && lookup.found) || '';
}

describe('a catalog change through one process reaches the others', () => {
  it('uses an index created through another process within 2 s, and forgets one dropped', async () => {
    const wp = await workplaceWith('people');
    expect(await readOnOther(wp, 'people', { n: 7 })).toEqual(['d7']);
    expect(catalog.holds(wp, 'people')).toBe(true);

    await createIndex(wp, 'people', 'byN', ['n']);
    const created = performance.now();
    await expect.poll(() => indexesOnOther(wp, 'people'), HEARD_WITHIN).toEqual(['byN']);
    expect(performance.now() - created).toBeLessThan(2000);
    // Citus wraps the worker's plan in its own, and does not carry the SET to the worker.
    if (!citus) expect(await planOnOther(wp, 'people', 7)).toMatch(/Index Cond: \(i\d+_0_a = /);
    expect(await readOnOther(wp, 'people', { n: 7 })).toEqual(['d7']);

    const dropped = await t.request({
      method: 'DELETE',
      url: `/v1/workplaces/${wp}/storages/people/indexes/byN`,
    });
    expect(dropped.status, dropped.text).toBe(204);
    await expect.poll(() => indexesOnOther(wp, 'people'), HEARD_WITHIN).toEqual([]);
    expect(await readOnOther(wp, 'people', { n: 7 })).toEqual(['d7']);
  });

  it('hears of an index turned multikey by a write through another process', async () => {
    const wp = await workplaceWith('people');
    await createIndex(wp, 'people', 'byN', ['n']);
    const multikey = async () => {
      const lookup = await catalog.withCollection(wp, 'people', async (c) =>
        c.indexes.map((ix) => ix.multikey),
      );
      return lookup.workplace ? lookup.found : undefined;
    };
    expect(await multikey()).toEqual([false]);
    // The flag is set inside the write's own statement (trackingMultikey).
    const res = await t.request({
      method: 'POST',
      url: `/v1/workplaces/${wp}/storages/people/create`,
      body: { docs: [{ _id: 'many', n: [7, 8] }] },
    });
    expect(res.status, res.text).toBe(201);
    await expect.poll(multikey, HEARD_WITHIN).toEqual([true]);
    expect(await readOnOther(wp, 'people', { n: 7 })).toEqual(['d7', 'many']);
  });

  it('drops the provider built on OIDC settings or keys changed through another process', async () => {
    const wp = await t.createWorkplace();
    const discovery = `/oidc/${wp}/.well-known/openid-configuration`;
    const jwks = async () =>
      (await viaOther('GET', `/oidc/${wp}/jwks`)).body.keys.map((k: { kid: string }) => k.kid);
    expect((await viaOther('GET', discovery)).status).toBe(200);
    const built = providers.size;
    const [first] = await jwks();

    const rotated = await t.request({ method: 'POST', url: `/v1/workplaces/${wp}/oidc/keys` });
    expect(rotated.status, rotated.text).toBe(200);
    await expect.poll(() => providers.size, HEARD_WITHIN).toBe(built - 1);
    // Built again on the next request, with the key rotated through the other process.
    const keys = await jwks();
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(first);
    expect(providers.size).toBe(built);

    const updated = await t.request({
      method: 'POST',
      url: `/v1/workplaces/${wp}/oidc`,
      body: { token_timeout: 900 },
    });
    expect(updated.status, updated.text).toBe(200);
    await expect.poll(() => providers.size, HEARD_WITHIN).toBe(built - 1);
    expect((await viaOther('GET', discovery)).status).toBe(200);
  });

  it('forgets a workplace deleted through another process: its collections and its provider', async () => {
    const wp = await workplaceWith('people', 'pets');
    expect(await readOnOther(wp, 'people', { n: 1 })).toEqual(['d1']);
    expect(await readOnOther(wp, 'pets', { n: 2 })).toEqual(['d2']);
    expect((await viaOther('GET', `/oidc/${wp}/.well-known/openid-configuration`)).status).toBe(200);
    const built = providers.size;

    expect((await t.request({ method: 'DELETE', url: `/v1/workplaces/${wp}` })).status).toBe(204);
    await expect
      .poll(() => [catalog.holds(wp, 'people'), catalog.holds(wp, 'pets'), providers.size], HEARD_WITHIN)
      .toEqual([false, false, built - 1]);
    const gone = await viaOther('POST', `/v1/workplaces/${wp}/storages/people/read`, { query: {} });
    expect(gone.status).toBe(404);
  });

  it('forgets a collection deleted through another process', async () => {
    const wp = await workplaceWith('people', 'pets');
    expect(await readOnOther(wp, 'people', { n: 1 })).toEqual(['d1']);
    expect(await readOnOther(wp, 'pets', { n: 1 })).toEqual(['d1']);
    const res = await t.request({ method: 'DELETE', url: `/v1/workplaces/${wp}/storages/people` });
    expect(res.status, res.text).toBe(204);
    await expect.poll(() => catalog.holds(wp, 'people'), HEARD_WITHIN).toBe(false);
    // Only the collection that changed.
    expect(catalog.holds(wp, 'pets')).toBe(true);
  });
});

describe.runIf(process.env.DATABASE_URL)('a lost notification (PostgreSQL)', () => {
  /** `other`'s LISTEN connections: its application_name, its last statement. */
  const listeners = async () =>
    (
      await t.sql<{ pid: number }[]>`
        select pid from pg_stat_activity where application_name = ${OTHER_APP} and query like 'listen %'`
    ).map((r) => r.pid);

  it('drops every entry when the listener is back, and reads stay right throughout', async () => {
    const wp = await workplaceWith('people', 'late', 'busy');
    await createIndex(wp, 'busy', 'byN', ['n']);
    expect(await readOnOther(wp, 'people', { n: 3 })).toEqual(['d3']);
    expect(await readOnOther(wp, 'late', { n: 3 })).toEqual(['d3']);
    const [pid] = await listeners();
    expect(pid).toBeDefined();

    // Reads through `other` all along, on a collection whose indexes change meanwhile.
    let reading = true;
    const wrong: unknown[] = [];
    const reads = (async () => {
      for (let n = 0; reading; n = (n + 1) % 50) {
        const ids = await readOnOther(wp, 'busy', { n });
        if (ids.length !== 1 || ids[0] !== `d${n}`) wrong.push({ n, ids });
      }
    })();
    try {
      // Typed: Citus adds a pg_terminate_backend(bigint, ...) of its own.
      await t.sql`select pg_terminate_backend(${pid as number}::int)`;
      // Made while the listener may be away: its notification may be lost.
      await createIndex(wp, 'late', 'byN', ['n']);
      await createIndex(wp, 'busy', 'byBoth', ['n', 'x']);
      await expect
        .poll(async () => (await listeners()).filter((p) => p !== pid), HEARD_WITHIN)
        .toHaveLength(1);
      // Nothing changed `people`: only the reconnection dropped its entry.
      await expect.poll(() => catalog.holds(wp, 'people'), HEARD_WITHIN).toBe(false);
      await expect.poll(() => indexesOnOther(wp, 'late'), HEARD_WITHIN).toEqual(['byN']);

      // Heard again.
      expect(await readOnOther(wp, 'people', { n: 3 })).toEqual(['d3']);
      await createIndex(wp, 'people', 'byN', ['n']);
      await expect.poll(() => indexesOnOther(wp, 'people'), HEARD_WITHIN).toEqual(['byN']);
    } finally {
      reading = false;
      await reads;
    }
    expect(wrong).toEqual([]);
  });
});

describe('readCatalogChange', () => {
  it('reads what migration 0024 sends, and nothing else', () => {
    expect(readCatalogChange('{"kind": "collection", "workplace": "acme", "collection": "users"}')).toEqual({
      kind: 'collection',
      workplace: 'acme',
      collection: 'users',
    });
    expect(readCatalogChange('{"kind": "oidc", "workplace": "acme"}')).toEqual({
      kind: 'oidc',
      workplace: 'acme',
    });
    expect(readCatalogChange('{"kind": "workplace", "workplace": "acme"}')).toEqual({
      kind: 'workplace',
      workplace: 'acme',
    });
    for (const payload of ['', 'null', '[]', '{"kind": "collection", "workplace": "acme"}', '{"kind": "x"}'])
      expect(readCatalogChange(payload)).toBeUndefined();
  });
});
