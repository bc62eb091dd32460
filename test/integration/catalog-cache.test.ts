import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { hashSecret } from '../../secrets.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Reads use a per-process cache of the collection catalog, guarded in SQL. Here a second app on
 * the same database (another server process) changes what the first one has cached.
 */
let t: TestApp;
let other: Awaited<ReturnType<typeof buildApp>>;
beforeAll(async () => {
  t = await startTestApp();
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
