import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('aggregate while the catalog changes', () => {
  it('a $lookup whose collection is dropped and created meanwhile joins all of it or nothing, never fails', async () => {
    const col = await freshCollection(t);
    await col.insert(Array.from({ length: 20 }, (_, i) => ({ _id: i, k: i % 4 })));
    const others = `/v1/workplaces/${col.workplace}/storages`;
    const pipeline = [{ $lookup: { from: 'other', localField: 'k', foreignField: 'k', as: 'j' } }];
    const fill = async () => {
      const created = await t.request({ method: 'POST', url: others, body: { name: 'other' } });
      expect(created.status, created.text).toBe(201);
      const filled = await t.request({
        method: 'POST',
        url: `${others}/other/create`,
        body: { docs: [{ k: 0 }, { k: 1 }, { k: 2 }, { k: 3 }] },
      });
      // The churn below may drop it between the two requests.
      expect([201, 404]).toContain(filled.status);
    };
    const joined = async () => {
      const res = await col.call('aggregate', { pipeline });
      expect(res.status, res.text).toBe(200);
      return (res.body.result as { j: unknown[] }[]).map((d) => d.j.length);
    };
    await fill();
    expect(await joined()).toEqual(Array(20).fill(1));
    let churning = true;
    const churn = (async () => {
      for (let round = 0; churning && round < 30; round++) {
        const dropped = await t.request({ method: 'DELETE', url: `${others}/other` });
        expect(dropped.status, dropped.text).toBe(204);
        await fill();
      }
    })();
    const readers = Array.from({ length: 4 }, async () => {
      const seen = new Set<number>();
      for (let i = 0; i < 15; i++) {
        const res = await col.call('aggregate', { pipeline });
        expect(res.status, res.text).toBe(200);
        const docs = res.body.result as { j: unknown[] }[];
        expect(docs).toHaveLength(20);
        // One statement sees the foreign collection at one moment: every document joined the same way.
        const sizes = new Set(docs.map((d) => d.j.length));
        expect(sizes.size, JSON.stringify([...sizes])).toBe(1);
        for (const s of sizes) seen.add(s);
      }
      return seen;
    });
    const seen = await Promise.all(readers);
    churning = false;
    await churn;
    // The collection of the last round, a table of its own, is joined.
    expect(await joined()).toEqual(Array(20).fill(1));
    for (const s of seen) for (const n of s) expect([0, 1]).toContain(n);
  }, 120_000);

  it('a pipeline whose leading $match uses an index gives every matching document while indexes come and go', async () => {
    const col = await freshCollection(t);
    await col.insert(Array.from({ length: 50 }, (_, i) => ({ _id: i, a: i % 2 === 0 ? i : [i, i + 1] })));
    let churning = true;
    const churn = (async () => {
      for (let round = 0; churning && round < 10; round++) {
        const created = await t.request({
          method: 'POST',
          url: `${col.url}/indexes`,
          body: { name: 'byA', key: ['a'] },
        });
        expect(created.status, created.text).toBe(201);
        const dropped = await t.request({ method: 'DELETE', url: `${col.url}/indexes/byA` });
        expect(dropped.status, dropped.text).toBe(204);
      }
    })();
    const expected = Array.from({ length: 50 }, (_, i) => i).filter(
      (i) => i >= 10 || (i % 2 === 1 && i + 1 >= 10),
    );
    const readers = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 10; i++) {
        const res = await col.call('aggregate', {
          pipeline: [{ $match: { a: { $gte: 10 } } }, { $sort: { a: 1 } }, { $project: { _id: 1 } }],
        });
        expect(res.status, res.text).toBe(200);
        expect((res.body.result as { _id: number }[]).map((d) => d._id).sort((x, y) => x - y)).toEqual(
          expected,
        );
      }
    });
    await Promise.all(readers);
    churning = false;
    await churn;
  }, 120_000);
});
