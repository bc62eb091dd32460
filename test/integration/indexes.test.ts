import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { citusShard, freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const columnsOf = async (wp: string) => {
  const rows = await t.sql<{ column_name: string }[]>`
    select column_name from information_schema.columns col
    join collections c on col.table_name = 'c_' || c.id
    join workplaces w on w.id = c.workplace_id and col.table_schema = 'wp_' || w.id
    where w.name = ${wp}`;
  return rows.map((r) => r.column_name).sort();
};

describe('indexes', () => {
  it('are listed with the built-in _id_ first, then by name, with keys normalised', async () => {
    const col = await freshCollection(t);
    const created = await t.request({
      method: 'POST',
      url: `${col.url}/indexes`,
      body: { name: 'byAgeName', key: [{ age: -1 }, 'profile.name'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      result: { name: 'byAgeName', key: [{ age: -1 }, { 'profile.name': 1 }], unique: false },
    });
    await col.index(['email'], { name: 'byEmail', unique: true });
    const list = await t.request({ method: 'GET', url: `${col.url}/indexes` });
    expect(list.body.result).toEqual([
      { name: '_id_', key: [{ _id: 1 }], unique: true },
      { name: 'byAgeName', key: [{ age: -1 }, { 'profile.name': 1 }], unique: false },
      { name: 'byEmail', key: [{ email: 1 }], unique: true },
    ]);
  });

  it('are deleted with their key columns; _id_ cannot be', async () => {
    const col = await freshCollection(t);
    const before = await columnsOf(col.workplace);
    await col.index(['a', 'b'], { name: 'ab' });
    expect((await columnsOf(col.workplace)).length).toBe(before.length + 8);
    const del = await t.request({ method: 'DELETE', url: `${col.url}/indexes/ab` });
    expect(del.status).toBe(204);
    expect(await columnsOf(col.workplace)).toEqual(before);
    const again = await t.request({ method: 'DELETE', url: `${col.url}/indexes/ab` });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('INDEX_NOT_FOUND');
    const builtIn = await t.request({ method: 'DELETE', url: `${col.url}/indexes/_id_` });
    expect(builtIn.status).toBe(400);
  });

  it.each([
    ['a taken name', { name: 'dup', key: ['x'] }, 409, 'INDEX_EXISTS'],
    ['the name _id_', { name: '_id_', key: ['x'] }, 409, 'INDEX_EXISTS'],
    ['_id as a field', { name: 'i', key: ['_id'] }, 400, 'INVALID_QUERY'],
    ['a field twice', { name: 'i', key: ['a', { a: -1 }] }, 400, 'INVALID_QUERY'],
    ['an empty key', { name: 'i', key: [] }, 400, 'VALIDATION_FAILED'],
    ['direction 2', { name: 'i', key: [{ a: 2 }] }, 400, 'VALIDATION_FAILED'],
    ['two fields in one entry', { name: 'i', key: [{ a: 1, b: 1 }] }, 400, 'VALIDATION_FAILED'],
    ['an empty segment', { name: 'i', key: ['a..b'] }, 400, 'INVALID_QUERY'],
    ['a $ segment', { name: 'i', key: ['a.$'] }, 400, 'INVALID_QUERY'],
    ['a bad name', { name: 'no spaces', key: ['a'] }, 400, 'VALIDATION_FAILED'],
    ['a missing key', { name: 'i' }, 400, 'VALIDATION_FAILED'],
  ])('refuses %s', async (_label, body, status, code) => {
    const col = await freshCollection(t);
    await col.index(['x'], { name: 'dup' });
    const res = await t.request({ method: 'POST', url: `${col.url}/indexes`, body });
    expect(res.status, res.text).toBe(status);
    expect(res.body.code).toBe(code);
  });

  it('a unique index refuses duplicates on insert and update, naming the index; nothing is written', async () => {
    const col = await freshCollection(t);
    await col.index(['email'], { name: 'byEmail', unique: true });
    await col.insert([{ _id: 1, email: 'a@x' }]);
    const dup = await col.call('create', {
      docs: [
        { _id: 2, email: 'b@x' },
        { _id: 3, email: 'a@x' },
      ],
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('DUPLICATE_KEY');
    expect(dup.body.detail).toContain('byEmail');
    expect((await col.call('count', { query: {} })).body.result.count).toBe(1);

    await col.insert([{ _id: 2, email: 'b@x' }]);
    const upd = await col.call('update', { query: { _id: 2 }, doc: { $set: { email: 'a@x' } } });
    expect(upd.status).toBe(409);
    expect(upd.body.detail).toContain('byEmail');
    expect(await col.ids({ query: { email: 'b@x' } })).toEqual([2]);

    // An upsert that inserts a duplicate of the unique key is refused at once, not taken for a race on _id.
    const ups = await col.call('update', {
      query: { _id: 3 },
      doc: { $set: { email: 'a@x' } },
      upsert: true,
    });
    expect(ups.status, ups.text).toBe(409);
    expect(ups.body.detail).toContain('byEmail');
    expect((await col.call('count', { query: {} })).body.result.count).toBe(2);
  });

  it('a unique index treats a missing field as null, as MongoDB does', async () => {
    const col = await freshCollection(t);
    await col.index(['email'], { name: 'byEmail', unique: true });
    await col.insert([{ _id: 1 }]);
    const second = await col.call('create', { docs: [{ _id: 2 }] });
    expect(second.status).toBe(409);
    const explicitNull = await col.call('create', { docs: [{ _id: 3, email: null }] });
    expect(explicitNull.status).toBe(409);
  });

  it('a compound unique index compares the combination', async () => {
    const col = await freshCollection(t);
    await col.index(['a', 'b'], { name: 'ab', unique: true });
    await col.insert([
      { a: 1, b: 1 },
      { a: 1, b: 2 },
      { a: 2, b: 1 },
    ]);
    expect((await col.call('create', { docs: [{ a: 1, b: 2 }] })).status).toBe(409);
  });

  it('creating a unique index over duplicates is a 409 that leaves nothing behind', async () => {
    const col = await freshCollection(t);
    await col.insert([{ email: 'a@x' }, { email: 'a@x' }]);
    const before = await columnsOf(col.workplace);
    const res = await t.request({
      method: 'POST',
      url: `${col.url}/indexes`,
      body: { name: 'byEmail', key: ['email'], unique: true },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('DUPLICATE_KEY');
    expect(res.body.detail).toContain('byEmail');
    const list = await t.request({ method: 'GET', url: `${col.url}/indexes` });
    expect(list.body.result.map((i: { name: string }) => i.name)).toEqual(['_id_']);
    expect(await columnsOf(col.workplace)).toEqual(before);
  });

  it('turns multikey when a write puts an array on its path, and keeps answering like MongoDB', async () => {
    const col = await freshCollection(t);
    await col.index(['a'], { name: 'byA' });
    await col.insert([
      { _id: 1, a: 1 },
      { _id: 2, a: 2 },
    ]);
    const multikey = async () => {
      const rows = await t.sql<{ multikey: boolean }[]>`
        select i.multikey from collection_indexes i join collections c on c.id = i.collection_id
        join workplaces w on w.id = c.workplace_id where w.name = ${col.workplace} and i.name = 'byA'`;
      return rows[0]?.multikey;
    };
    expect(await multikey()).toBe(false);
    const upd = await col.call('update', { query: { _id: 2 }, doc: { $set: { a: [5, 9] } } });
    expect(upd.status).toBe(200);
    expect(await multikey()).toBe(true);
    expect(await col.ids({ query: { a: 9 } })).toEqual([2]);
    expect(await col.ids({ query: { a: { $gt: 6 } } })).toEqual([2]);
    expect(await col.ids({ query: { a: [5, 9] } })).toEqual([2]);
    expect(await col.ids({ sort: { a: -1 } })).toEqual([2, 1]);

    const upsert = await col.call('update', { query: { _id: 3 }, doc: { $set: { b: [1] } }, upsert: true });
    expect(upsert.status).toBe(200);
    await col.index(['b'], { name: 'byB' });
    expect(await col.ids({ query: { b: 1 } })).toEqual([3]);
    expect(await col.ids({ query: { b: null } })).toEqual([1, 2]);
  });

  it('built over existing documents, it answers the same as without', async () => {
    const col = await freshCollection(t);
    const docs = Array.from({ length: 50 }, (_, i) => ({ _id: i, n: i % 10, tags: [i % 3, 'x'] }));
    await col.insert(docs);
    const queries = [{ n: 3 }, { n: { $gte: 7 } }, { tags: 2 }, { n: { $in: [1, 2] } }, { n: null }];
    const before = await Promise.all(queries.map((query) => col.ids({ query, sort: { n: -1 } })));
    await col.index(['n']);
    await col.index(['tags']);
    const after = await Promise.all(queries.map((query) => col.ids({ query, sort: { n: -1 } })));
    expect(after).toEqual(before);
    expect(before[0]).toHaveLength(5);
  });
});

describe('planner statistics', () => {
  it('are gathered after enough writes, without waiting for autovacuum (PGlite has none) or for Citus', async () => {
    const col = await freshCollection(t);
    await col.index(['n'], { name: 'byN' });
    const reltuples = async () => {
      const [row] = await t.sql<{ n: number }[]>`
        select cl.reltuples::float8 as n from pg_class cl
        join pg_namespace ns on ns.oid = cl.relnamespace
        join collections c on cl.relname = 'c_' || c.id
        join workplaces w on w.id = c.workplace_id and ns.nspname = 'wp_' || w.id
        where w.name = ${col.workplace}`;
      return row?.n ?? -1;
    };
    const shard = await citusShard(t.sql, col.workplace, col.name);
    // On Citus the rows, and the autovacuum that keeps their statistics, are on a worker, and the
    // coordinator's reltuples stays 0: the server must not read that as a table in need of a
    // VACUUM after every 1,000 rows. Its maintenance after the index build, and after the writes,
    // would have run within the pauses.
    const settle = () => new Promise((r) => setTimeout(r, 2_000));
    if (shard) await settle();
    const vacuumsBefore = shard ? await shard.manualVacuums() : 0;
    for (let i = 0; i < 3; i++) await col.insert(Array.from({ length: 600 }, (_, k) => ({ n: i * 600 + k })));
    if (shard) {
      await settle();
      expect(await shard.manualVacuums()).toBe(vacuumsBefore);
      return;
    }
    const deadline = Date.now() + 10_000;
    while ((await reltuples()) < 1000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await reltuples()).toBeGreaterThanOrEqual(1000);
  });
});
