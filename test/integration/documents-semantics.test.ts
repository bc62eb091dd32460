import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { filterCases, sortCases } from './storage-cases.js';
import { freshCollection, queriedPaths } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** Ids in a canonical order (numbers before strings), to compare unordered results. */
const sortIds = (ids: unknown[]) => [...ids].map((id) => JSON.stringify(id)).sort();

describe('filters give MongoDB results', () => {
  it.each(filterCases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const col = await freshCollection(t);
    await col.insert(c.docs);
    expect(sortIds(await col.ids({ query: c.query }))).toEqual(sortIds(c.ids));
    const count = await col.call('count', { query: c.query });
    expect(count.body.result.count).toBe(c.ids.length);
  });
});

describe('the same filters with an index on every queried path (index conditions must not change results)', () => {
  it.each(filterCases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const col = await freshCollection(t);
    for (const path of queriedPaths(c.query).filter((p) => p !== '_id')) await col.index([path]);
    await col.insert(c.docs);
    expect(sortIds(await col.ids({ query: c.query }))).toEqual(sortIds(c.ids));
  });
});

describe('sorts give MongoDB order', () => {
  for (const indexed of [false, true]) {
    it.each(sortCases.map((c) => [c.name, c] as const))(
      `%s${indexed ? ' (indexed)' : ''}`,
      async (_name, c) => {
        const col = await freshCollection(t);
        if (indexed) {
          const paths = Object.keys(c.sort).filter((p) => p !== '_id');
          if (paths.length > 0) await col.index(paths.map((p) => ({ [p]: c.sort[p] })));
        }
        await col.insert(c.docs);
        expect(await col.ids({ sort: c.sort })).toEqual(c.ids);
      },
    );
  }
});
