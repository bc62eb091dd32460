import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName, startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';

/**
 * Requests racing for the same thing. Each test fires its requests at once and checks the one
 * outcome that serial execution would also give: exact totals, exactly one winner, and only the
 * documented statuses (no 500, no deadlock or serialization error reaching the client).
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const storage = (w: string, c: string) => `/v1/workplaces/${w}/storages/${c}`;

async function collection(docs: object[] = []): Promise<{ w: string; url: string }> {
  const w = await t.createWorkplace();
  const res = await t.request({ method: 'POST', url: `/v1/workplaces/${w}/storages`, body: { name: 'c' } });
  expect(res.status, res.text).toBe(201);
  for (let i = 0; i < docs.length; i += 1000) {
    const body = { docs: docs.slice(i, i + 1000) };
    const created = await t.request({ method: 'POST', url: `${storage(w, 'c')}/create`, body });
    expect(created.status, created.text).toBe(201);
  }
  return { w, url: storage(w, 'c') };
}

async function uniqueEmailIndex(url: string): Promise<void> {
  const res = await t.request({
    method: 'POST',
    url: `${url}/indexes`,
    body: { name: 'byEmail', key: ['email'], unique: true },
  });
  expect(res.status, res.text).toBe(201);
}

function parallel(n: number, send: (i: number) => Promise<TestResponse>): Promise<TestResponse[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => send(i)));
}

function statuses(responses: TestResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

const readAll = async (url: string) => {
  const res = await t.request({ method: 'POST', url: `${url}/read`, body: { limit: 1000 } });
  expect(res.status, res.text).toBe(200);
  return res.body.result as Record<string, unknown>[];
};

describe('concurrent writes to one document', () => {
  it('50 parallel $inc on one document add up exactly', async () => {
    const { url } = await collection([{ _id: 'counter', n: 0 }]);
    const responses = await parallel(50, () =>
      t.request({
        method: 'POST',
        url: `${url}/update`,
        body: { query: { _id: 'counter' }, doc: { $inc: { n: 1 } } },
      }),
    );
    expect(statuses(responses)).toEqual({ 200: 50 });
    for (const r of responses) expect(r.body.result).toEqual({ matchedCount: 1, modifiedCount: 1 });
    expect(await readAll(url)).toEqual([{ _id: 'counter', n: 50 }]);
  });

  it('20 parallel upserts of one missing document insert it once and update it 19 times', async () => {
    const { url } = await collection();
    const responses = await parallel(20, () =>
      t.request({
        method: 'POST',
        url: `${url}/update`,
        body: { query: { _id: 'k' }, doc: { $inc: { n: 1 } }, upsert: true },
      }),
    );
    expect(statuses(responses)).toEqual({ 200: 20 });
    expect(responses.filter((r) => r.body.result.upsertedId === 'k')).toHaveLength(1);
    expect(await readAll(url)).toEqual([{ _id: 'k', n: 20 }]);
  });

  it('parallel updateMany and deleteMany over the same documents never deadlock', async () => {
    // Inserted in reverse, so a sequential scan (the deletes) meets them in descending _id order
    // while updates lock what they match in ascending _id order: the two lock in opposite orders.
    // Enough documents on PostgreSQL for the lock phases to overlap (without retries, most runs
    // end with a deadlock reaching the client); PGlite runs one statement at a time.
    const size = t.databaseKind === 'postgres' ? 2000 : 200;
    const docs = Array.from({ length: size }, (_, i) => ({
      _id: `d${String(i).padStart(4, '0')}`,
      g: i % 4,
      n: 0,
    }));
    const { url } = await collection(docs.reverse());
    const responses = await parallel(20, (i) =>
      i % 5 === 4
        ? t.request({ method: 'POST', url: `${url}/delete`, body: { query: { g: 3 } } })
        : t.request({ method: 'POST', url: `${url}/update`, body: { query: {}, doc: { $inc: { n: 1 } } } }),
    );
    expect(statuses(responses)).toEqual({ 200: 20 });
    const count = async (query: object) =>
      (await t.request({ method: 'POST', url: `${url}/count`, body: { query } })).body.result.count;
    expect(await count({})).toBe(size * 0.75);
    expect(await count({ n: 16 })).toBe(size * 0.75);
  });
});

describe('concurrent creates of one name', () => {
  it('20 parallel creates of one workplace: one 201, nineteen 409', async () => {
    const name = randomName();
    const responses = await parallel(20, () =>
      t.request({ method: 'POST', url: '/v1/workplaces', body: { name } }),
    );
    expect(statuses(responses)).toEqual({ 201: 1, 409: 19 });
    for (const r of responses.filter((x) => x.status === 409)) expect(r.body.code).toBe('WORKPLACE_EXISTS');
    const deleted = await t.request({ method: 'DELETE', url: `/v1/workplaces/${name}` });
    expect(deleted.status).toBe(204);
  });

  it('20 parallel creates of one collection: one 201, nineteen 409', async () => {
    const w = await t.createWorkplace();
    const responses = await parallel(20, (i) =>
      // Names differing only in case are the same collection.
      t.request({
        method: 'POST',
        url: `/v1/workplaces/${w}/storages`,
        body: { name: i % 2 ? 'Items' : 'items' },
      }),
    );
    expect(statuses(responses)).toEqual({ 201: 1, 409: 19 });
    for (const r of responses.filter((x) => x.status === 409)) expect(r.body.code).toBe('COLLECTION_EXISTS');
  });

  it('20 parallel creates of one index: one 201, nineteen 409', async () => {
    const { url } = await collection([{ _id: 1, a: 1 }]);
    const responses = await parallel(20, () =>
      t.request({ method: 'POST', url: `${url}/indexes`, body: { name: 'byA', key: ['a'] } }),
    );
    expect(statuses(responses)).toEqual({ 201: 1, 409: 19 });
    for (const r of responses.filter((x) => x.status === 409)) expect(r.body.code).toBe('INDEX_EXISTS');
  });
});

describe('concurrent inserts of one key', () => {
  it('20 parallel inserts of one _id: one 201, nineteen 409, one document', async () => {
    const { url } = await collection();
    const responses = await parallel(20, (i) =>
      t.request({ method: 'POST', url: `${url}/create`, body: { docs: [{ _id: 'same', i }] } }),
    );
    expect(statuses(responses)).toEqual({ 201: 1, 409: 19 });
    for (const r of responses.filter((x) => x.status === 409)) expect(r.body.code).toBe('DUPLICATE_KEY');
    expect(await readAll(url)).toHaveLength(1);
  });

  it('20 parallel inserts of one value under a unique index: one 201, nineteen 409', async () => {
    const { url } = await collection();
    await uniqueEmailIndex(url);
    const responses = await parallel(20, (i) =>
      t.request({
        method: 'POST',
        url: `${url}/create`,
        body: { docs: [{ _id: i, email: 'ada@example.com' }] },
      }),
    );
    expect(statuses(responses)).toEqual({ 201: 1, 409: 19 });
    for (const r of responses.filter((x) => x.status === 409)) expect(r.body.code).toBe('DUPLICATE_KEY');
    expect(await readAll(url)).toHaveLength(1);
  });

  it('20 parallel updates moving different documents to one unique value: one succeeds', async () => {
    const { url } = await collection(
      Array.from({ length: 20 }, (_, i) => ({ _id: i, email: `u${i}@example.com` })),
    );
    await uniqueEmailIndex(url);
    const responses = await parallel(20, (i) =>
      t.request({
        method: 'POST',
        url: `${url}/update`,
        body: { query: { _id: i }, doc: { $set: { email: 'taken@example.com' } } },
      }),
    );
    expect(statuses(responses)).toEqual({ 200: 1, 409: 19 });
    const docs = await readAll(url);
    expect(docs.filter((d) => d.email === 'taken@example.com')).toHaveLength(1);
  });
});
