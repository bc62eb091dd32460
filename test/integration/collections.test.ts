import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const storages = (wp: string) => `/v1/workplaces/${wp}/storages`;

describe('collections', () => {
  it('are created, listed in bytewise order, and deleted', async () => {
    const wp = await t.createWorkplace();
    expect((await t.request({ method: 'GET', url: storages(wp) })).body).toEqual({ result: [] });
    for (const name of ['orders', 'Users', 'audit']) {
      const res = await t.request({ method: 'POST', url: storages(wp), body: { name } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ result: { name } });
    }
    const list = await t.request({ method: 'GET', url: storages(wp) });
    expect(list.body).toEqual({ result: [{ name: 'Users' }, { name: 'audit' }, { name: 'orders' }] });

    const del = await t.request({ method: 'DELETE', url: `${storages(wp)}/orders` });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const after = await t.request({ method: 'GET', url: storages(wp) });
    expect(after.body.result.map((c: { name: string }) => c.name)).toEqual(['Users', 'audit']);
  });

  it('answers 409 for an existing name, also one differing only in case', async () => {
    const wp = await t.createWorkplace();
    await t.request({ method: 'POST', url: storages(wp), body: { name: 'users' } });
    const dup = await t.request({ method: 'POST', url: storages(wp), body: { name: 'users' } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('COLLECTION_EXISTS');
    const upper = await t.request({ method: 'POST', url: storages(wp), body: { name: 'USERS' } });
    expect(upper.status).toBe(409);
    expect(upper.body.detail).toContain("'users'");
  });

  it('keeps workplaces apart: the same name in two workplaces holds different documents', async () => {
    const [a, b] = [await t.createWorkplace(), await t.createWorkplace()];
    for (const wp of [a, b]) await t.request({ method: 'POST', url: storages(wp), body: { name: 'items' } });
    await t.request({
      method: 'POST',
      url: `${storages(a)}/items/create`,
      body: { docs: [{ _id: 1, in: 'a' }] },
    });
    const inB = await t.request({ method: 'POST', url: `${storages(b)}/items/read`, body: {} });
    expect(inB.body.result).toEqual([]);
  });

  it('deletes documents and indexes with the collection, in one transaction', async () => {
    const wp = await t.createWorkplace();
    await t.request({ method: 'POST', url: storages(wp), body: { name: 'items' } });
    await t.request({
      method: 'POST',
      url: `${storages(wp)}/items/indexes`,
      body: { name: 'byA', key: ['a'] },
    });
    await t.request({
      method: 'POST',
      url: `${storages(wp)}/items/create`,
      body: { docs: [{ a: 1 }, { a: 2 }] },
    });
    const [row] = await t.sql<{ id: string; wid: string }[]>`
      select c.id, c.workplace_id as wid from collections c join workplaces w on w.id = c.workplace_id
      where w.name = ${wp} and c.name = 'items'`;
    expect((await t.request({ method: 'DELETE', url: `${storages(wp)}/items` })).status).toBe(204);
    const left = await t.sql`
      select (select count(*)::int from collections where id = ${row?.id ?? '0'}) as collections,
             (select count(*)::int from collection_indexes where collection_id = ${row?.id ?? '0'}) as indexes,
             (select count(*)::int from information_schema.tables
              where table_schema = ${`wp_${row?.wid}`} and table_name = ${`c_${row?.id}`}) as tables`;
    expect(left[0]).toEqual({ collections: 0, indexes: 0, tables: 0 });
    // A new collection of the same name starts empty, with only the _id_ index.
    await t.request({ method: 'POST', url: storages(wp), body: { name: 'items' } });
    expect(
      (await t.request({ method: 'POST', url: `${storages(wp)}/items/count`, body: { query: {} } })).body,
    ).toEqual({
      result: { count: 0 },
    });
    const indexes = await t.request({ method: 'GET', url: `${storages(wp)}/items/indexes` });
    expect(indexes.body.result.map((i: { name: string }) => i.name)).toEqual(['_id_']);
  });

  it('go away with their workplace', async () => {
    const wp = await t.createWorkplace();
    await t.request({ method: 'POST', url: storages(wp), body: { name: 'items' } });
    expect((await t.request({ method: 'DELETE', url: `/v1/workplaces/${wp}` })).status).toBe(204);
    const [n] = await t.sql<{ n: number }[]>`
      select count(*)::int as n from collections c where not exists (select 1 from workplaces w where w.id = c.workplace_id)`;
    expect(n?.n).toBe(0);
  });

  it.each([
    ['GET', (wp: string) => storages(wp), undefined, 'WORKPLACE_NOT_FOUND', true],
    ['POST', (wp: string) => storages(wp), { name: 'x' }, 'WORKPLACE_NOT_FOUND', true],
    ['DELETE', (wp: string) => `${storages(wp)}/nothere`, undefined, 'WORKPLACE_NOT_FOUND', true],
    ['DELETE', (wp: string) => `${storages(wp)}/nothere`, undefined, 'COLLECTION_NOT_FOUND', false],
    ['POST', (wp: string) => `${storages(wp)}/nothere/read`, {}, 'COLLECTION_NOT_FOUND', false],
    ['POST', (wp: string) => `${storages(wp)}/nothere/read`, {}, 'WORKPLACE_NOT_FOUND', true],
    ['GET', (wp: string) => `${storages(wp)}/nothere/indexes`, undefined, 'COLLECTION_NOT_FOUND', false],
  ] as const)('%s %s answers 404 %s', async (method, url, body, code, unknownWorkplace) => {
    const wp = unknownWorkplace ? 'nosuchworkplace' : await t.createWorkplace();
    const res = await t.request({ method, url: url(wp), ...(body ? { body } : {}) });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe(code);
  });

  it.each(['', 'my-items', 'items1', 'it ems', 'ítems', 'a'.repeat(65), "x'; drop table collections; --"])(
    'refuses the name %j',
    async (name) => {
      const wp = await t.createWorkplace();
      const res = await t.request({ method: 'POST', url: storages(wp), body: { name } });
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatchObject({ in: 'body', path: '/name' });
    },
  );

  it('refuses a bad collection name in the path', async () => {
    const wp = await t.createWorkplace();
    const res = await t.request({ method: 'POST', url: `${storages(wp)}/a%27b/read`, body: {} });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ in: 'path', path: '/storage_name' });
  });
});
