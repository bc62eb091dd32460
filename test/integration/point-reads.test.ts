import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { readStatement } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

/**
 * A read that pins every field of a unique index matches at most one document, and runs as the
 * lookup by `_id` does: no cursor keys, no extra row. That holds only while the index is unique for
 * every document, that is while no document holds an array on its paths.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

async function statementOf(workplace: string, query: Record<string, unknown>) {
  const found = await findCollection(t.sql, workplace, 'items');
  if (!found.workplace || !found.found) throw new Error('no collection');
  return readStatement(found.found, { filter: parseFilter(query), sort: [], skip: 0, limit: 100 }, true);
}

describe('point reads by a unique index', () => {
  it('read one document without cursor keys, and every match once the index turns multikey', async () => {
    const c = await freshCollection(t);
    await c.insert([
      { _id: 1, email: 'a@x', org: 'o1', n: 1 },
      { _id: 2, email: 'b@x', org: 'o1', n: 2 },
      { _id: 3, email: 'c@x', org: 'o2', n: 3 },
    ]);
    await c.index(['email'], { name: 'byEmail', unique: true });
    await c.index(['org', 'n'], { name: 'byOrgN', unique: true });
    await c.index(['n'], { name: 'byN' });

    const single = [{ email: 'a@x' }, { org: 'o1', n: 2 }, { email: 'c@x', n: 3 }];
    for (const query of single) {
      const s = await statementOf(c.workplace, query);
      expect(s.text, JSON.stringify(query)).not.toContain(' as k0');
      expect(s.text).toContain('stale_catalog');
    }
    // Not every field of a unique index, or not one exact key: a page of matches as usual.
    for (const query of [{ org: 'o1' }, { n: 2 }, { email: { $in: ['a@x'] } }, { email: null }])
      expect((await statementOf(c.workplace, query)).text, JSON.stringify(query)).toContain(' as k0');

    expect(await c.ids({ query: { email: 'a@x' } })).toEqual([1]);
    expect(await c.ids({ query: { org: 'o1', n: 2 } })).toEqual([2]);
    const page = await c.call('read', { query: { email: 'b@x' }, limit: 1 });
    expect(page.body.result.map((d: { _id: number }) => d._id)).toEqual([2]);
    expect(page.body.next).toBeUndefined();

    // An array on the path leaves the unique btree, so a second document may share the value.
    await c.insert([{ _id: 4, email: ['a@x', 'd@x'], org: 'o3', n: 4 }]);
    expect(await c.ids({ query: { email: 'a@x' } })).toEqual([1, 4]);
    expect((await statementOf(c.workplace, { email: 'a@x' })).text).toContain(' as k0');
  });
});
