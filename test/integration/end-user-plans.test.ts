import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CollectionRef } from '../../db/storage/catalog.js';
import { findCollection } from '../../db/storage/catalog.js';
import { readStatement } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { bindRule, restrict } from '../../mongo/rules.js';
import { randomName, startTestApp, type TestApp } from '../helpers/app.js';
import { genericPlan, type PlanNode, perRowParameterWork, uniqueIndexes } from '../helpers/generic-plan.js';

/**
 * A rule is a filter compiled into the request's one statement (issue 45): an owner rule is served
 * by an index on `owner`, and its generic plan (a prepared statement's, from its sixth execution)
 * evaluates nothing of the caller's claims per row.
 */

let t: TestApp;
let workplace: string;
let c: CollectionRef;
const name = randomName('notes');

beforeAll(async () => {
  t = await startTestApp();
  workplace = await t.createWorkplace();
  const base = `/v1/workplaces/${workplace}/storages`;
  expect((await t.request({ method: 'POST', url: base, body: { name } })).status).toBe(201);
  const index = { name: 'byOwner', key: ['owner'] };
  expect((await t.request({ method: 'POST', url: `${base}/${name}/indexes`, body: index })).status).toBe(201);
  const rules = { read: { $expr: { $eq: ['$owner', '$$AUTH.sub'] } } };
  expect((await t.request({ method: 'PUT', url: `${base}/${name}/rules`, body: rules })).status).toBe(200);
  for (let batch = 0; batch < 3; batch++) {
    const docs = Array.from({ length: 1000 }, (_, i) => ({ owner: `user${i % 300}`, n: batch * 1000 + i }));
    expect((await t.request({ method: 'POST', url: `${base}/${name}/create`, body: { docs } })).status).toBe(
      201,
    );
  }
  const found = await findCollection(t.sql, workplace, name);
  c = (found.workplace ? found.found : undefined) as CollectionRef;
  await t.sql.unsafe(`analyze ${c.table}`);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The statement a read by `sub` runs, as the handler builds it. */
function ownerRead(sub: string, query: unknown = {}) {
  const rule = bindRule(c.rules, 'read', { AUTH: { sub }, USER: undefined, NOW: new Date().toISOString() });
  if (!rule) throw new Error('no read rule');
  return readStatement(
    c,
    { filter: restrict(parseFilter(query), rule), sort: [], skip: 0, limit: 100 },
    true,
  );
}

it('an owner rule is served by the owner index, under the generic plan too', async () => {
  const conn = await t.sql.reserve();
  try {
    const unique = await uniqueIndexes(conn);
    for (const query of [{}, { n: { $gte: 10 } }]) {
      const s = ownerRead('user7', query);
      const plan = await genericPlan(conn, s.text, s.values);
      const ownerIndex = c.indexes.find((ix) => ix.name === 'byOwner')?.id;
      const used = nodes(plan).map((n) => `${n['Node Type']} ${String(n['Index Name'] ?? '')}`);
      // The owner index's btrees are "x<id>_a" and "x<id>_d" (db/storage/catalog.ts).
      expect(
        used.some((u) => u.includes(`x${ownerIndex}_`)),
        used.join('; '),
      ).toBe(true);
      expect(used.some((u) => u.startsWith('Seq Scan'))).toBe(false);
      expect(perRowParameterWork(plan, unique)).toEqual([]);
    }
  } finally {
    conn.release();
  }
});

it('two callers share one statement text: their claims are bound values', () => {
  const a = ownerRead('user1');
  const b = ownerRead('user2');
  expect(a.text).toBe(b.text);
  expect(a.values).not.toEqual(b.values);
});
