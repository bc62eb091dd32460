/**
 * The expression operators (mongo/expr/, migration 0016): every case of expression-cases.ts
 * three ways, which must agree: compiled to SQL and run on the database, evaluated in TypeScript
 * (what filter/match.ts runs for positional updates and projections), and as `$expr` on the read
 * route. Then `$expr` on every route that takes a query, where MongoDB refuses it, and hostile
 * expressions.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLSTATE } from '../../errors.js';
import { evaluateExpression } from '../../mongo/expr/evaluate.js';
import { parseExpression } from '../../mongo/expr/parse.js';
import { compileExpression } from '../../mongo/expr/sql.js';
import type { Json } from '../../mongo/value/json.js';
import { Params } from '../../mongo/value/params.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { CASES, DOC, type Expected, MISSING } from './expression-cases.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

type Outcome = { value: Json | typeof MISSING } | { error: string };

/** JSON's view of a value: what the database stores and returns (no -0, no undefined). */
const normal = (v: Json | undefined): Json | typeof MISSING =>
  v === undefined ? MISSING : (JSON.parse(JSON.stringify(v)) as Json);

function expectOutcome(outcome: Outcome, expected: Expected) {
  if (typeof expected === 'object' && expected !== null && !Array.isArray(expected) && 'error' in expected) {
    expect(outcome).toHaveProperty('error');
    expect((outcome as { error: string }).error).toContain(expected.error);
  } else {
    expect(outcome).toEqual({ value: expected });
  }
}

/** The expression compiled to SQL over DOC, run on the database. */
async function inSql(expr: Json, doc: Json = DOC): Promise<Outcome> {
  let text: string;
  const params = new Params();
  try {
    const e = parseExpression(expr, 'the test');
    const row = params.json(doc);
    text = `select (${compileExpression(e, { params, current: 'd.doc' })})::text as v from (select ${row} as doc) as d`;
  } catch (err) {
    return { error: (err as Error).message };
  }
  try {
    const [row] = await t.sql.unsafe(text, params.values);
    const v = row?.v as string | null;
    return { value: v === null ? MISSING : (JSON.parse(v) as Json) };
  } catch (err) {
    const e = err as { code?: string; message: string };
    expect(e.code, e.message).toBe(SQLSTATE.queryRejected);
    return { error: e.message };
  }
}

function inTypeScript(expr: Json, doc: Json = DOC): Outcome {
  try {
    return { value: normal(evaluateExpression(parseExpression(expr, 'the test'), doc)) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('each case from the manual, three ways', () => {
  let col: Awaited<ReturnType<typeof freshCollection>>;
  beforeAll(async () => {
    col = await freshCollection(t);
    await col.insert([DOC]);
  });

  it.each(CASES)('%s', async (_, expr, expected) => {
    expectOutcome(await inSql(expr), expected);
    expectOutcome(inTypeScript(expr), expected);
    // Through $expr: the document matches exactly when the expression equals the expected value.
    if (
      typeof expected === 'object' &&
      expected !== null &&
      !Array.isArray(expected) &&
      'error' in expected
    ) {
      const res = await col.call('read', { query: { $expr: expr } });
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail ?? res.body.message ?? res.text).toContain(expected.error);
    } else {
      const value = expected === MISSING ? '$notAField' : { $literal: expected };
      expect(await col.ids({ query: { $expr: { $eq: [expr, value] } } })).toEqual([1]);
      expect(await col.ids({ query: { $expr: { $ne: [expr, value] } } })).toEqual([]);
    }
  });
});

describe('$expr equality with a constant string, number or boolean (compiled as jsonb =)', () => {
  // MongoDB's $eq compares whole values: an array holding the value, a document, null and a
  // missing field are not equal to it; numbers are equal by value whatever their spelling.
  const DOCS = [
    { _id: 1, a: 'x' },
    { _id: 2, a: ['x'] },
    { _id: 3, a: { x: 1 } },
    { _id: 4, a: null },
    { _id: 5 },
    { _id: 6, a: 1 },
    { _id: 7, a: 1.0 },
    { _id: 8, a: '1' },
    { _id: 9, a: true },
    { _id: 10, a: 'X' },
  ];
  it.each([
    [{ $eq: ['$a', 'x'] }, [1]],
    [{ $eq: ['x', '$a'] }, [1]],
    [{ $eq: ['$a', 1] }, [6, 7]],
    [{ $eq: [1.0, '$a'] }, [6, 7]],
    [{ $eq: ['$a', true] }, [9]],
    [{ $eq: ['$a', false] }, []],
    [{ $eq: [{ $add: [1, 1] }, 2] }, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
  ])('%j matches %j', async (expr, ids) => {
    const col = await freshCollection(t);
    await col.insert(DOCS);
    expect(await col.ids({ query: { $expr: expr } })).toEqual(ids);
  });
});

// The manual's $expr page: monthly budgets, where spent exceeds the budget.
const BUDGETS = [
  { _id: 1, category: 'food', budget: 400, spent: 450 },
  { _id: 2, category: 'drinks', budget: 100, spent: 150 },
  { _id: 3, category: 'clothes', budget: 100, spent: 50 },
  { _id: 4, category: 'misc', budget: 500, spent: 300 },
  { _id: 5, category: 'travel', budget: 200, spent: 650 },
];
const OVERSPENT = { $expr: { $gt: ['$spent', '$budget'] } };

describe('$expr on every route that takes a query', () => {
  async function budgets() {
    const col = await freshCollection(t);
    await col.insert(BUDGETS);
    return col;
  }

  it('read and count: the manual example, also inside $and, $or and $nor, and beside fields', async () => {
    const col = await budgets();
    expect(await col.ids({ query: OVERSPENT })).toEqual([1, 2, 5]);
    expect(await col.ids({ query: { $and: [OVERSPENT, { budget: { $lt: 300 } }] } })).toEqual([2, 5]);
    expect(await col.ids({ query: { $or: [OVERSPENT, { category: 'misc' }] } })).toEqual([1, 2, 4, 5]);
    expect(await col.ids({ query: { $nor: [OVERSPENT] } })).toEqual([3, 4]);
    expect(await col.ids({ query: { category: 'food', ...OVERSPENT } })).toEqual([1]);
    // The manual's $cond example: a discounted price compared with 5.
    const discounted = {
      $expr: {
        $lt: [
          // biome-ignore lint/suspicious/noThenProperty: $cond's argument is named `then`.
          { $cond: { if: { $gte: ['$budget', 200] }, then: { $multiply: ['$budget', 0.01] }, else: 9 } },
          5,
        ],
      },
    };
    expect(await col.ids({ query: discounted })).toEqual([1, 5]);
    const count = await col.call('count', { query: OVERSPENT });
    expect(count.status, count.text).toBe(200);
    expect(count.body.result.count).toBe(3);
  });

  it('distinct', async () => {
    const col = await budgets();
    const res = await col.call('distinct', { key: 'budget', query: OVERSPENT });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual([100, 200, 400]);
  });

  it('update, delete and the single-document operations', async () => {
    const col = await budgets();
    const updated = await col.call('update', { query: OVERSPENT, doc: { $set: { over: true } } });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.result).toMatchObject({ matchedCount: 3, modifiedCount: 3 });
    expect(await col.ids({ query: { over: true } })).toEqual([1, 2, 5]);
    const one = await col.call('find-one-and-update', {
      query: OVERSPENT,
      sort: { spent: -1 },
      doc: { $inc: { budget: 1000 } },
    });
    expect(one.status, one.text).toBe(200);
    expect(one.body.result.value).toMatchObject({ _id: 5, budget: 200 });
    const deleted = await col.call('delete', { query: OVERSPENT });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.result.deletedCount).toBe(2);
    expect(await col.ids({})).toEqual([3, 4, 5]);
  });

  it('an upsert takes no field from $expr', async () => {
    const col = await budgets();
    const res = await col.call('update', {
      query: { category: 'gifts', $expr: { $eq: ['$budget', 70] } },
      doc: { $set: { spent: 0 } },
      upsert: true,
    });
    expect(res.status, res.text).toBe(200);
    const [inserted] = await col.read({ query: { category: 'gifts' } });
    expect(inserted).toMatchObject({ category: 'gifts', spent: 0 });
    expect(inserted).not.toHaveProperty('budget');
  });

  it('the positional $ of updates and projections evaluates $expr in TypeScript', async () => {
    const col = await freshCollection(t);
    await col.insert([
      { _id: 1, limit: 85, grades: [80, 90, 95] },
      { _id: 2, limit: 99, grades: [80, 90, 95] },
    ]);
    const query = { grades: { $gt: 85 }, $expr: { $lt: ['$limit', { $arrayElemAt: ['$grades', -1] }] } };
    const projected = await col.read({ query, fields: { 'grades.$': 1 } });
    expect(projected).toEqual([{ _id: 1, grades: [90] }]);
    const res = await col.call('update', { query, doc: { $set: { 'grades.$': 0 } } });
    expect(res.status, res.text).toBe(200);
    expect(await col.read({})).toEqual([
      { _id: 1, limit: 85, grades: [80, 0, 95] },
      { _id: 2, limit: 99, grades: [80, 90, 95] },
    ]);
  });

  it('an error of the expression on some document is a 400 and changes nothing', async () => {
    const col = await budgets();
    await col.insert([{ _id: 6, budget: 'n/a', spent: 1 }]);
    const ratio = { $expr: { $gt: [{ $divide: ['$spent', '$budget'] }, 1] } };
    for (const [op, body] of [
      ['read', { query: ratio }],
      ['count', { query: ratio }],
      ['update', { query: ratio, doc: { $set: { x: 1 } } }],
      ['delete', { query: ratio }],
    ] as const) {
      const res = await col.call(op, body);
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail).toContain('$divide only supports numeric types, not int and string');
    }
    expect(await col.ids({ query: { x: 1 } })).toEqual([]);
    expect(await col.ids({})).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it.each([
    [
      'inside $elemMatch',
      'read',
      { query: { a: { $elemMatch: { b: 1, $expr: true } } } },
      /\$expr is not allowed inside \$elemMatch/,
    ],
    [
      'in $pull',
      'update',
      { query: {}, doc: { $pull: { a: { b: 1, $expr: true } } } },
      /\$expr is not allowed in \$pull/,
    ],
    [
      'in arrayFilters',
      'update',
      { query: {}, doc: { $set: { 'a.$[e]': 1 } }, arrayFilters: [{ 'e.b': 1, $expr: true }] },
      /\$expr is not allowed in arrayFilters/,
    ],
  ] as const)('MongoDB refuses $expr %s', async (_, op, body, message) => {
    const col = await budgets();
    const res = await col.call(op, body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(message);
  });
});
