import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { deleteExpiredStatement, startTtlSweeper, sweepExpired } from '../../db/storage/ttl.js';
import { openTestDatabase, startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const HOUR = 3600_000;
const iso = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString();

async function ttlCollection(seconds: number, extra: Record<string, unknown> = {}, path = 'at') {
  const col = await freshCollection(t);
  const res = await t.request({
    method: 'POST',
    url: `${col.url}/indexes`,
    body: { name: 'expire', key: [path], expireAfterSeconds: seconds, ...extra },
  });
  expect(res.status, res.text).toBe(201);
  return col;
}

async function remaining(col: Awaited<ReturnType<typeof ttlCollection>>) {
  return col.ids({ query: {}, sort: { _id: 1 } });
}

describe('TTL indexes', () => {
  it('expire the documents whose date is old enough; other values never expire', async () => {
    const col = await ttlCollection(60);
    await col.insert([
      { _id: 1, at: iso(-2 * HOUR) },
      { _id: 2, at: iso(-30_000) }, // 30 s old: not yet
      { _id: 3, at: iso(HOUR) },
      { _id: 4, at: '2020-01-01T00:00:00+02:00' },
      { _id: 5, at: '2020-01-01T00:00:00.123456789-05:30' },
      { _id: 6, at: '2020-01-01 00:00:00' }, // no time zone
      { _id: 7, at: '2020-01-01T00:00:00' }, // no time zone
      { _id: 8, at: '2020-02-30T00:00:00Z' }, // no such day
      { _id: 9, at: '2020-01-01T24:00:00Z' },
      { _id: 10, at: Date.now() - 2 * HOUR }, // epoch ms: a number, not a date
      { _id: 11, at: null },
      { _id: 12 },
      { _id: 13, at: [iso(HOUR), iso(-2 * HOUR)] }, // an array: its earliest date
      { _id: 14, at: [iso(HOUR), 'x', 5] },
      { _id: 15, at: { d: iso(-2 * HOUR) } },
      { _id: 16, at: '2020-01-01' },
      { _id: 17, at: 'yesterday' },
      { _id: 18, at: '2024-02-29T23:59:59z' },
      { _id: 19, at: '0000-01-01T00:00:00Z' },
    ]);
    const { deleted } = await sweepExpired(t.sql);
    expect(deleted).toBeGreaterThanOrEqual(5);
    expect(await remaining(col)).toEqual([2, 3, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 19]);
    // Nothing of this collection is left to expire while the next tests count deletions.
    await col.call('delete', { query: {} });
  });

  it('look through arrays of documents on a dotted path', async () => {
    const col = await ttlCollection(0, {}, 'log.at');
    await col.insert([
      { _id: 1, log: [{ at: iso(HOUR) }, { at: iso(-HOUR) }] },
      { _id: 2, log: [{ at: iso(HOUR) }] },
      { _id: 3, log: { at: iso(-HOUR) } },
    ]);
    await sweepExpired(t.sql);
    expect(await remaining(col)).toEqual([2]);
  });

  it('a partial TTL index expires only the documents it holds', async () => {
    const col = await ttlCollection(0, { partialFilterExpression: { temp: true } });
    await col.insert([
      { _id: 1, at: iso(-HOUR), temp: true },
      { _id: 2, at: iso(-HOUR), temp: false },
      { _id: 3, at: iso(-HOUR) },
    ]);
    await sweepExpired(t.sql);
    expect(await remaining(col)).toEqual([2, 3]);
  });

  it('deletes in batches until every expired document is gone', async () => {
    const col = await ttlCollection(0);
    await col.insert(Array.from({ length: 50 }, (_, i) => ({ _id: i, at: iso(i < 43 ? -HOUR - i : HOUR) })));
    const noted: [string, number][] = [];
    const { deleted } = await sweepExpired(t.sql, 7, (table, rows) => noted.push([table, rows]));
    expect(deleted).toBe(43);
    // Reported once per table, for the vacuum that reclaims the space (db/storage/statistics.ts).
    expect(noted).toEqual([[expect.stringMatching(/^"wp_\d+"\."c_\d+"$/), 43]]);
    expect(await remaining(col)).toEqual([43, 44, 45, 46, 47, 48, 49]);
  });

  it('finds the expired documents through the btree on the date, not by scanning', async () => {
    const col = await ttlCollection(60);
    for (const start of [0, 1000])
      await col.insert(
        Array.from({ length: 1000 }, (_, i) => ({ _id: start + i, at: iso((start + i) * 1000) })),
      );
    const lookup = await findCollection(t.sql, col.workplace, 'items');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    const c = lookup.found;
    const [ix] = c.indexes;
    if (!ix) throw new Error('no index');
    await t.sql.unsafe(`analyze ${c.table}`);
    const plan = (
      await t.sql.unsafe<{ 'QUERY PLAN': string }[]>(
        `explain ${deleteExpiredStatement(c.table, ix.id, false)}`,
        ['60', '1000'],
      )
    )
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan, plan).toMatch(/Index Scan using x\d+_t/);
    expect(plan, plan).toMatch(/Tid Scan/);
    expect(plan, plan).not.toMatch(/Seq Scan/);
  });

  it('a sweeper deletes past documents within its interval and keeps the others; stop ends it', async () => {
    const col = await ttlCollection(1);
    const warnings: unknown[] = [];
    const log = { info: () => {}, warn: (o: unknown) => warnings.push(o) };
    const sweeper = startTtlSweeper(t.sql, log, 200);
    try {
      await col.insert([
        { _id: 1, at: iso(-HOUR) },
        { _id: 2, at: iso(HOUR) },
        { _id: 3, at: 'not a date' },
        { _id: 4, at: iso(0) },
      ]);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && (await remaining(col)).length > 2)
        await new Promise((r) => setTimeout(r, 100));
      expect(await remaining(col)).toEqual([2, 3]);
    } finally {
      await sweeper.stop();
    }
    // Stopped: a document that expires now stays.
    await col.insert([{ _id: 5, at: iso(-HOUR) }]);
    await new Promise((r) => setTimeout(r, 600));
    expect(await remaining(col)).toEqual([2, 3, 5]);
    expect(warnings).toEqual([]);
    await col.call('delete', { query: {} });
  });

  it('a sweeper survives a database that is down: it logs and tries again next interval', async () => {
    const db = await openTestDatabase();
    await db.close();
    const warnings: unknown[] = [];
    const sweeper = startTtlSweeper(db.sql, { info: () => {}, warn: (o) => warnings.push(o) }, 50);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && warnings.length < 2) await new Promise((r) => setTimeout(r, 50));
    await sweeper.stop();
    expect(warnings.length).toBeGreaterThanOrEqual(2);
  });

  it('concurrent sweepers (separate connection pools, as separate processes) delete each document once', async () => {
    await sweepExpired(t.sql);
    const col = await ttlCollection(0);
    const N = 600;
    for (let start = 0; start < N; start += 200)
      await col.insert(Array.from({ length: 200 }, (_, i) => ({ _id: start + i, at: iso(-HOUR - i) })));
    await col.insert([{ _id: 'future', at: iso(HOUR) }]);
    const others =
      t.databaseKind === 'postgres' ? await Promise.all([openTestDatabase(), openTestDatabase()]) : [];
    try {
      const sqls = others.length > 0 ? others.map((o) => o.sql) : [t.sql, t.sql];
      const results = await Promise.all([...sqls, ...sqls].map((sql) => sweepExpired(sql, 25)));
      expect(results.reduce((n, r) => n + r.deleted, 0)).toBe(N);
      expect(await remaining(col)).toEqual(['future']);
    } finally {
      await Promise.all(others.map((o) => o.close()));
    }
  });

  it('a document refreshed while a pass runs is never deleted after its refresh', async () => {
    await sweepExpired(t.sql);
    const col = await ttlCollection(0);
    const N = 400;
    await col.insert(Array.from({ length: N }, (_, i) => ({ _id: i, at: iso(-HOUR - i) })));
    const refreshed = new Set<number>();
    const touch = async (id: number) => {
      const res = await col.call('update', { query: { _id: id }, doc: { $set: { at: iso(HOUR) } } });
      expect(res.status, res.text).toBe(200);
      if (res.body.result.matchedCount === 1) refreshed.add(id);
    };
    const sweeping = (async () => {
      while ((await sweepExpired(t.sql, 10)).deleted > 0);
    })();
    // Refreshes in the order the pass deletes (oldest first is the highest _id), 8 at a time.
    const order = Array.from({ length: N }, (_, i) => N - 1 - i);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let id = order.shift(); id !== undefined; id = order.shift()) await touch(id);
      }),
    );
    await sweeping;
    await sweepExpired(t.sql);
    // Every document whose refresh found it survives; every other one has expired.
    expect(await remaining(col)).toEqual([...refreshed].sort((x, y) => x - y));
  });

  it('an index dropped or a collection deleted meanwhile is no error', async () => {
    const col = await ttlCollection(0);
    await col.insert([{ _id: 1, at: iso(-HOUR) }]);
    const del = await t.request({ method: 'DELETE', url: `${col.url}/indexes/expire` });
    expect(del.status).toBe(204);
    await sweepExpired(t.sql);
    expect(await remaining(col)).toEqual([1]);
  });
});
