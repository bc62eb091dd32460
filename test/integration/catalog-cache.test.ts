import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { findCollection } from '../../db/storage/catalog.js';
import { CatalogCache } from '../../db/storage/catalog-cache.js';
import { countStatement, readStatement } from '../../db/storage/documents.js';
import { catalogGuard } from '../../db/storage/plan.js';
import { SQLSTATE } from '../../errors.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { parseSort } from '../../mongo/sort.js';
import { hashSecret } from '../../secrets.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Reads use a per-process cache of the collection catalog, guarded in SQL. Here a second app on
 * the same database (another server process) changes what the first one has cached. The first is
 * deaf to catalog changes, as a process whose notifications were lost: the guard alone keeps its
 * reads right (catalog-changes.test.ts has the processes that hear them).
 */
let t: TestApp;
let other: Awaited<ReturnType<typeof buildApp>>;
beforeAll(async () => {
  t = await startTestApp({ catalogChanges: false });
  other = await buildApp({ sql: t.sql, adminTokenHash: hashSecret(t.adminToken) });
  await other.ready();
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

async function viaOther(method: 'POST' | 'DELETE', url: string, body?: unknown) {
  const res = await other.inject({
    method,
    url,
    headers: { 'x-auth-token': t.adminToken, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  expect(res.statusCode, res.body).toBeLessThan(300);
}

const read = async (base: string, query: unknown) => {
  const res = await t.request({ method: 'POST', url: `${base}/read`, body: { query, sort: { _id: 1 } } });
  expect(res.status, res.text).toBe(200);
  return res.body.result.map((d: { _id: string }) => d._id);
};

describe('the catalog cache, when another process changes the catalog', () => {
  it('sees an index turn multikey, be dropped, and be created', async () => {
    const wp = await t.createWorkplace();
    const base = `/v1/workplaces/${wp}/storages/people`;
    await t.request({ method: 'POST', url: `/v1/workplaces/${wp}/storages`, body: { name: 'people' } });
    await t.request({ method: 'POST', url: `${base}/indexes`, body: { name: 'byTag', key: ['tag'] } });
    await t.request({
      method: 'POST',
      url: `${base}/create`,
      body: {
        docs: [
          { _id: 'a', tag: 'x' },
          { _id: 'b', tag: 'y' },
        ],
      },
    });
    expect(await read(base, { tag: 'y' })).toEqual(['b']);
    expect(await read(base, { tag: { $in: ['x', 'y'] } })).toEqual(['a', 'b']);

    // The other process makes the index multikey: exact index conditions must now be rechecked.
    await viaOther('POST', `${base}/create`, {
      docs: [
        { _id: 'c', tag: ['x', 'y'] },
        { _id: 'd', tag: [['y']] },
      ],
    });
    expect(await read(base, { tag: 'y' })).toEqual(['b', 'c']);
    expect(await read(base, { tag: ['y'] })).toEqual(['d']);

    await viaOther('DELETE', `${base}/indexes/byTag`);
    expect(await read(base, { tag: 'x' })).toEqual(['a', 'c']);
    const count = await t.request({ method: 'POST', url: `${base}/count`, body: { query: { tag: 'x' } } });
    expect(count.body.result.count).toBe(2);

    await viaOther('POST', `${base}/indexes`, { name: 'byTagAgain', key: ['tag'] });
    expect(await read(base, { tag: 'x' })).toEqual(['a', 'c']);
  });

  it('sees a collection deleted, and one created again under the same name', async () => {
    const wp = await t.createWorkplace();
    const base = `/v1/workplaces/${wp}/storages/things`;
    await t.request({ method: 'POST', url: `/v1/workplaces/${wp}/storages`, body: { name: 'things' } });
    await t.request({ method: 'POST', url: `${base}/create`, body: { docs: [{ _id: 'old' }] } });
    expect(await read(base, {})).toEqual(['old']);

    await viaOther('DELETE', `/v1/workplaces/${wp}/storages/things`);
    const gone = await t.request({ method: 'POST', url: `${base}/read`, body: { query: {} } });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('COLLECTION_NOT_FOUND');

    await viaOther('POST', `/v1/workplaces/${wp}/storages`, { name: 'things' });
    await viaOther('POST', `${base}/create`, { docs: [{ _id: 'new' }] });
    expect(await read(base, {})).toEqual(['new']);

    await viaOther('DELETE', `/v1/workplaces/${wp}`);
    const noWorkplace = await t.request({ method: 'POST', url: `${base}/count`, body: { query: {} } });
    expect(noWorkplace.status).toBe(404);
  });
});

describe('which reads are guarded', () => {
  async function collectionWithIndex() {
    const wp = await t.createWorkplace();
    const base = `/v1/workplaces/${wp}/storages/people`;
    await t.request({ method: 'POST', url: `/v1/workplaces/${wp}/storages`, body: { name: 'people' } });
    await t.request({ method: 'POST', url: `${base}/indexes`, body: { name: 'byTag', key: ['tag'] } });
    await t.request({ method: 'POST', url: `${base}/create`, body: { docs: [{ _id: 'a', tag: 'x' }] } });
    return { wp, base };
  }
  const ref = async (wp: string) => {
    const lookup = await findCollection(t.sql, wp, 'people');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    return lookup.found;
  };
  const guarded = (text: string) => text.includes('mdb.stale_catalog(');

  it('guards exactly the statements that a stale entry could make wrong', async () => {
    const { wp, base } = await collectionWithIndex();
    const before = await ref(wp);
    const read = (query: object, sort?: object) =>
      readStatement(before, { filter: parseFilter(query), sort: parseSort(sort), skip: 0, limit: 10 }, true);
    // Index key conditions assume no document has an array on the path: they must be checked.
    expect(guarded(read({ tag: 'x' }).text)).toBe(true);
    expect(guarded(read({}, { tag: 1 }).text)).toBe(true);
    expect(guarded(countStatement(before, parseFilter({ tag: { $gt: 'a' } }), true).text)).toBe(true);
    // Nothing that depends on the catalog: _id is the primary key, other paths read the document.
    expect(guarded(read({ _id: 'a' }).text)).toBe(false);
    expect(guarded(read({ other: 1 }, { other: -1 }).text)).toBe(false);
    expect(guarded(countStatement(before, parseFilter({ _id: { $in: ['a'] } }), true).text)).toBe(false);
    // Unguarded callers (writes, which read the catalog afresh) never are.
    expect(
      guarded(readStatement(before, { filter: parseFilter({ tag: 'x' }), sort: [], skip: 0, limit: 1 }).text),
    ).toBe(false);

    // Once multikey, the index's conditions are rechecked on every document: right with any entry.
    await t.request({ method: 'POST', url: `${base}/create`, body: { docs: [{ _id: 'b', tag: ['x'] }] } });
    const after = await ref(wp);
    expect(
      guarded(
        readStatement(after, { filter: parseFilter({ tag: 'x' }), sort: [], skip: 0, limit: 1 }, true).text,
      ),
    ).toBe(false);
  });

  it('lets an unguarded read see an index created elsewhere once its entry expires', async () => {
    const { wp, base } = await collectionWithIndex();
    let clock = 0;
    const cache = new CatalogCache(t.sql, { ttlMs: 1000, now: () => clock });
    const indexes = async () => {
      const lookup = await cache.withCollection(wp, 'people', async (c) => c.indexes.map((i) => i.name));
      return lookup.workplace ? lookup.found : undefined;
    };
    expect(await indexes()).toEqual(['byTag']);
    await viaOther('POST', `${base}/indexes`, { name: 'byName', key: ['name'] });
    clock = 999;
    expect(await indexes()).toEqual(['byTag']);
    clock = 1000;
    expect((await indexes())?.sort()).toEqual(['byName', 'byTag']);
  });
});

describe('the catalog guard', () => {
  /** Types in schema mdb: the markers of migration 0008 were some. */
  const types = async () =>
    (
      await t.sql.unsafe<{ n: number }[]>(
        `select count(*)::int as n from pg_type where typnamespace = 'mdb'::regnamespace and typname like 'catalog\\_%'`,
      )
    )[0]?.n;

  it('creates no type when a catalog version changes, and fails a statement from a stale version', async () => {
    const wp = await t.createWorkplace();
    const base = `/v1/workplaces/${wp}/storages`;
    const before = await types();
    await t.request({ method: 'POST', url: base, body: { name: 'a' } });
    const ref = async () => {
      const lookup = await findCollection(t.sql, wp, 'a');
      if (!lookup.workplace || !lookup.found) throw new Error('no collection');
      return lookup.found;
    };
    const a = await ref();
    await t.request({ method: 'POST', url: `${base}/a/indexes`, body: { name: 'byTag', key: ['tag'] } });
    await t.request({ method: 'POST', url: `${base}/a/create`, body: { docs: [{ tag: ['multikey'] }] } });
    const changed = await ref();
    expect(Number(changed.version)).toBeGreaterThan(Number(a.version));
    expect(await types()).toBe(before);
    const count = (c: typeof a) => t.sql.unsafe(`select count(*) from ${c.table} where ${catalogGuard(c)}`);
    await expect(count(changed)).resolves.toHaveLength(1);
    await expect(count(a)).rejects.toMatchObject({ code: SQLSTATE.staleCatalog });
    // Prepared, on every connection of the pool: the version is read at each execution.
    const prepared = () =>
      t.sql.unsafe(`select count(*) from ${changed.table} where ${catalogGuard(changed)}`, [], {
        prepare: true,
      });
    for (let i = 0; i < 12; i++) await prepared();
    await t.request({ method: 'POST', url: `${base}/a/indexes`, body: { name: 'byName', key: ['name'] } });
    await expect(prepared()).rejects.toMatchObject({ code: SQLSTATE.staleCatalog });
  });
});
