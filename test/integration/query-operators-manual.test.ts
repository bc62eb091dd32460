/**
 * Comparisons with an array or a document, `$all` of `$elemMatch` conditions, `$type` and `$mod`,
 * through the API, with the documents and answers of MongoDB's manual pages ($gt, $lt, $all, $type,
 * $mod, "Comparison/Sort Order"), of jstests/core/query/array/array_comparison_correctness.js (its
 * documents without MinKey and MaxKey, which JSON lacks; its answers are ours, worked out by the
 * manual's rules, as the test checks none: its generateExpectedResults overwrites the result it
 * compares with the expectation) and of mongosh runs FerretDB published ("How MongoDB Compares
 * Arrays in Filtering"). Each case runs three ways:
 * - as a query, on a plain collection and with an index on every queried path (the SQL differs);
 * - as the query of an `$elemMatch` on an array holding each document (the SQL again, with the
 *   element as the document), and as the condition of an `$elemMatch` projection, which
 *   filter/match.ts evaluates in TypeScript: the two evaluators must agree.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { OPERATOR_CASES, OPERATOR_ERRORS } from './query-operators-cases.js';
import { freshCollection, queriedPaths } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const sorted = (ids: unknown[]) => [...ids].map((id) => JSON.stringify(id)).sort();

describe.each([false, true])('query (indexed: %s)', (indexed) => {
  it.each(OPERATOR_CASES.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    const col = await freshCollection(t);
    if (indexed) for (const path of queriedPaths(c.query)) await col.index([path]);
    await col.insert(c.docs);
    expect(sorted(await col.ids({ query: c.query }))).toEqual(sorted(c.ids));
    const count = await col.call('count', { query: c.query });
    expect(count.status, count.text).toBe(200);
    expect(count.body.result.count).toBe(c.ids.length);
  });
});

describe('the same condition on array elements: SQL ($elemMatch query) and filter/match.ts ($elemMatch projection)', () => {
  it.each(OPERATOR_CASES.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    const col = await freshCollection(t);
    await col.insert(c.docs.map(({ _id, ...rest }) => ({ _id, w: [rest] })));
    const elemMatch = { w: { $elemMatch: c.query } };
    expect(sorted(await col.ids({ query: elemMatch }))).toEqual(sorted(c.ids));
    const projected = await col.read({ fields: { w: elemMatch.w }, limit: 1000 });
    expect(sorted(projected.filter((d) => 'w' in d).map((d) => d._id))).toEqual(sorted(c.ids));
  });
});

describe("MongoDB's errors are a 400 INVALID_QUERY naming the operator and the path", () => {
  it.each(OPERATOR_ERRORS.map(([q, d]) => [JSON.stringify(q), q, d] as const))(
    '%s',
    async (_, query, detail) => {
      const col = await freshCollection(t);
      await col.insert([{ _id: 1, qty: [{ num: 100 }], a: 1, val: [[1]] }]);
      for (const op of ['read', 'count']) {
        const res = await col.call(op, { query });
        expect(res.status, res.text).toBe(400);
        expect(res.body.code).toBe('INVALID_QUERY');
        expect(res.body.detail).toMatch(detail);
      }
    },
  );
});
