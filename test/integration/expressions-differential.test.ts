/**
 * Differential tests of the expression language: random expressions over random documents,
 * 1. compiled to SQL and run on the database against the same expressions evaluated in TypeScript
 *    (expr/evaluate.ts, which filter/match.ts uses): the same values, or the same error message
 *    for the first document that fails. Every operator, every kind of operand, null and missing.
 * 2. `$expr` on the read route against mingo's `$expr` on the same documents, on what mingo
 *    computes as MongoDB does: numbers that are present and not null (so no types compared across,
 *    no errors of types), arithmetic that stays exact, comparisons, booleans and conditionals.
 *    mingo differs from MongoDB elsewhere, and the API follows MongoDB (expression-cases.ts has
 *    each): across types it compares by JavaScript's rules (`{$gt: ["x", 5]}` is false; MongoDB
 *    orders strings after numbers), it takes a missing value for null (`{$eq: ["$nope", null]}`
 *    is true; MongoDB: false), it raises none of MongoDB's errors of types (`{$size: "$nope"}`
 *    is no error), and its truthiness is JavaScript's (`""` is false; MongoDB: true).
 *
 * `$exp`, `$ln`, `$log10` and `$pow` run on each side's math library, which may round the last
 * bit differently (docs/storage.md, Deviations): numbers are equal within 4 ulps.
 *
 * Reproducing a failure: fast-check prints the counterexample and its seed (FC_SEED=<n>).
 */

import fc from 'fast-check';
import { Query } from 'mingo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLSTATE } from '../../errors.js';
import { evaluateExpression, truthy } from '../../mongo/expr/evaluate.js';
import { parseExpression } from '../../mongo/expr/parse.js';
import { compileExpression } from '../../mongo/expr/sql.js';
import type { Json, JsonObject } from '../../mongo/value/json.js';
import { Params } from '../../mongo/value/params.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { propertyRuns } from '../helpers/property-runs.js';
import { freshCollection } from './storage-helpers.js';

const RUNS = propertyRuns(400);
const MINGO_RUNS = propertyRuns(200);
const FC_SEED = process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

// ---- Documents and expressions ----------------------------------------------------------------

const NUMBERS = [-3, -2, -1, 0, 1, 2, 3, 1.5, -0.5, 0.1, 0.2, 2.5, 10, 100, 0.125, 1e-300, 1e300, 709];
const STRINGS = ['', 'a', 'Ab', 'héllo', '😀x', 'a-b-', ' x ', 'ABC', '-'];
const numberArb = fc.constantFrom(...NUMBERS);
const scalarArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: numberArb },
  { weight: 3, arbitrary: fc.constantFrom(...STRINGS) },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, true, false) },
);
const valueArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: scalarArb },
  { weight: 1, arbitrary: fc.array(scalarArb, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('k', 'j'), scalarArb, { maxKeys: 2 }) },
);

const docArb = fc.record(
  {
    a: valueArb,
    b: valueArb,
    n: numberArb,
    s: fc.constantFrom(...STRINGS),
    arr: fc.array(scalarArb, { maxLength: 4 }),
    docs: fc.array(fc.record({ k: scalarArb }, { requiredKeys: [] }), { maxLength: 3 }),
  },
  { requiredKeys: [], noNullPrototype: true },
);
const docsArb = fc.array(docArb, { minLength: 1, maxLength: 4 });

/** Positions in strings: mostly valid ones, which reach the code points beyond one UTF-16 unit. */
const indexArb = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(0, 1, 2, 3) },
  fc.constantFrom(-1, 1.5, 100),
);

const PATHS = ['$a', '$b', '$n', '$s', '$arr', '$docs', '$docs.k', '$a.k', '$missing', '$$ROOT'];

const UNARY = [
  '$abs',
  '$ceil',
  '$floor',
  '$sqrt',
  '$exp',
  '$ln',
  '$log10',
  '$not',
  '$toLower',
  '$toUpper',
  '$strLenCP',
  '$size',
  '$isArray',
  '$type',
  '$round',
  '$trunc',
];
const BINARY = [
  '$subtract',
  '$divide',
  '$mod',
  '$pow',
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$cmp',
  '$split',
  '$arrayElemAt',
  '$in',
  '$round',
  '$trunc',
  '$indexOfCP',
];
const VARIADIC = ['$add', '$multiply', '$and', '$or', '$concat', '$concatArrays', '$ifNull'];

const exprArb: fc.Arbitrary<Json> = fc.letrec<{ expr: Json; op: Json }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...PATHS),
    scalarArb.filter((v) => typeof v !== 'string' || !v.startsWith('$')),
    fc.array(scalarArb, { maxLength: 3 }).map((v) => ({ $literal: v })),
    tie('op'),
  ),
  op: fc.oneof(
    fc.tuple(fc.constantFrom(...UNARY), tie('expr')).map(([op, a]) => ({ [op]: [a] })),
    fc.tuple(fc.constantFrom(...BINARY), tie('expr'), tie('expr')).map(([op, a, b]) => ({ [op]: [a, b] })),
    fc
      .tuple(fc.constantFrom(...VARIADIC), fc.array(tie('expr'), { minLength: 2, maxLength: 3 }))
      .map(([op, args]) => ({ [op]: args })),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map((args) => ({ $cond: args })),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([c, x, d]) => ({
      // biome-ignore lint/suspicious/noThenProperty: $switch's branches name an argument `then`.
      $switch: { branches: [{ case: c, then: x }], default: d },
    })),
    fc.tuple(tie('expr'), indexArb, indexArb).map(([s, i, n]) => ({ $substrCP: [s, i, n] })),
    fc
      .tuple(tie('expr'), fc.constantFrom('a', '-', '', 'x'), indexArb)
      .map(([s, x, i]) => ({ $indexOfCP: [s, x, i] })),
    fc
      .tuple(fc.constantFrom('$trim', '$ltrim', '$rtrim'), tie('expr'), fc.option(tie('expr')))
      .map(([op, input, chars]) => ({
        [op]: (chars === null ? { input } : { input, chars }) as Json,
      })),
    fc.tuple(tie('expr'), tie('expr')).map(([x, y]) => ({ sum: x, other: y })),
  ),
})).expr;

// ---- Evaluation -------------------------------------------------------------------------------

type Outcome = { values: Json[] } | { error: string };

const MISSING = '<missing>';

function inTypeScript(expr: Json, docs: JsonObject[]): Outcome {
  const e = parseExpression(expr, 'the test');
  const values: Json[] = [];
  for (const doc of docs) {
    try {
      const v = evaluateExpression(e, doc);
      values.push(v === undefined ? MISSING : (JSON.parse(JSON.stringify(v)) as Json));
    } catch (err) {
      return { error: (err as Error).message };
    }
  }
  return { values };
}

/** One statement over every document, in order: the first error stops it, as in TypeScript. */
async function inSql(expr: Json, docs: JsonObject[]): Promise<Outcome> {
  const params = new Params();
  const docsRef = params.json(docs);
  const value = compileExpression(parseExpression(expr, 'the test'), { params, current: 'd.doc' });
  // One row: the values in the documents' order, each as [value], or [] where it is missing.
  const text = `select jsonb_agg(case when x.v is null then '[]'::jsonb else jsonb_build_array(x.v) end order by d.i)::text as vs
    from jsonb_array_elements(${docsRef}) with ordinality as d(doc, i) cross join lateral (select ${value} as v) as x`;
  try {
    const [row] = await t.sql.unsafe(text, params.values);
    const vs = JSON.parse(row?.vs as string) as Json[][];
    return { values: vs.map((v) => (v.length === 0 ? MISSING : (v[0] as Json))) };
  } catch (err) {
    const e = err as { code?: string; message: string };
    if (e.code !== SQLSTATE.queryRejected) throw err;
    return { error: e.message };
  }
}

/** Equal JSON, numbers within 4 ulps (the math libraries' last bit). */
function close(a: Json, b: Json): boolean {
  if (typeof a === 'number' && typeof b === 'number')
    return a === b || Math.abs(a - b) <= 4 * Number.EPSILON * Math.max(Math.abs(a), Math.abs(b));
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => close(x, b[i] as Json));
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(b)) {
    const keys = Object.keys(a).sort();
    return (
      JSON.stringify(keys) === JSON.stringify(Object.keys(b).sort()) &&
      keys.every((k) => close(a[k] as Json, b[k] as Json))
    );
  }
  return a === b;
}

describe('SQL and TypeScript evaluation agree', () => {
  it('on random expressions over random documents', async () => {
    let errors = 0;
    await fc.assert(
      fc.asyncProperty(exprArb, docsArb, async (expr, docs) => {
        const ts = inTypeScript(expr, docs);
        const sql = await inSql(expr, docs);
        if ('error' in ts) {
          errors++;
          expect(sql).toEqual(ts);
        } else {
          expect(sql).toHaveProperty('values');
          const ok = close((sql as { values: Json[] }).values, ts.values);
          if (!ok) expect(sql).toEqual(ts);
        }
      }),
      { numRuns: RUNS, ...FC_SEED },
    );
    // The generators reach MongoDB's errors, and mostly values.
    expect(errors).toBeGreaterThan(RUNS / 20);
    expect(errors).toBeLessThan(RUNS * 0.8);
  }, 300_000);
});

// ---- Against mingo ----------------------------------------------------------------------------

const EXACT_NUMBERS = [-3, -2, -1, 0, 1, 2, 3, 1.5, -0.5, 0.25, 10];
const mingoNumberArb = fc.constantFrom(...EXACT_NUMBERS);
const mingoDocsArb = fc.array(
  fc.record({ a: mingoNumberArb, b: mingoNumberArb, c: mingoNumberArb }, { noNullPrototype: true }),
  {
    minLength: 1,
    maxLength: 6,
  },
);
/** Numbers and booleans apart: mingo compares across types as JavaScript does, not as MongoDB. */
const mingoArbs = fc.letrec<{ num: Json; bool: Json }>((tie) => ({
  num: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('$a', '$b', '$c'),
    mingoNumberArb,
    fc
      .tuple(fc.constantFrom('$add', '$subtract', '$multiply'), tie('num'), tie('num'))
      .map(([op, x, y]) => ({ [op]: [x, y] })),
    fc.tuple(fc.constantFrom('$abs', '$ceil', '$floor'), tie('num')).map(([op, x]) => ({ [op]: x })),
    fc.tuple(tie('num'), tie('num')).map(([x, y]) => ({ $cmp: [x, y] })),
    fc.tuple(tie('bool'), tie('num'), tie('num')).map((args) => ({ $cond: args })),
  ),
  bool: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.boolean(),
    fc
      .tuple(fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte'), tie('num'), tie('num'))
      .map(([op, x, y]) => ({ [op]: [x, y] })),
    fc
      .tuple(fc.constantFrom('$and', '$or'), tie('bool'), tie('bool'))
      .map(([op, x, y]) => ({ [op]: [x, y] })),
    tie('bool').map((x) => ({ $not: [x] })),
    fc.tuple(tie('num'), mingoNumberArb).map(([x, y]) => ({ $in: [x, [y, 2]] })),
  ),
}));
/** Numbers are truthy unless 0, as in MongoDB. */
const mingoExprArb: fc.Arbitrary<Json> = fc.oneof(mingoArbs.bool, mingoArbs.num);

describe('$expr on the read route agrees with mingo where mingo follows MongoDB', () => {
  it('on random numeric expressions', async () => {
    const col = await freshCollection(t);
    await fc.assert(
      fc.asyncProperty(mingoExprArb, mingoDocsArb, async (expr, bodies) => {
        const docs = bodies.map((body, i) => ({ _id: i + 1, ...body }));
        await col.call('delete', { query: {} });
        await col.insert(docs);
        const query = new Query({ $expr: expr });
        let expected: number[];
        try {
          expected = docs.filter((d) => query.test(d)).map((d) => d._id);
        } catch {
          // mingo raises MongoDB's errors of types on numbers and booleans ($add of a boolean).
          const res = await col.call('read', { query: { $expr: expr } });
          expect(res.status, res.text).toBe(400);
          return;
        }
        expect(await col.ids({ query: { $expr: expr } })).toEqual(expected);
        // And the TypeScript evaluation, which the API uses for the positional $.
        const parsed = parseExpression(expr, 'the test');
        expect(docs.filter((d) => truthy(evaluateExpression(parsed, d))).map((d) => d._id)).toEqual(expected);
      }),
      { numRuns: MINGO_RUNS, ...FC_SEED },
    );
  }, 300_000);

  it.each([
    ['compares across types by JavaScript', { $gt: ['x', 5] }, true],
    ['takes missing for null', { $eq: ['$nope', null] }, false],
    ['raises no error of types', { $size: '$nope' }, 'error'],
  ] as const)('mingo deviation: %s (the API follows MongoDB)', async (_, expr, ours) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1 }]);
    const mingo = new Query({ $expr: expr }).test({ _id: 1 });
    const res = await col.call('read', { query: { $expr: expr } });
    if (ours === 'error') {
      expect(mingo).toBe(false);
      expect(res.status).toBe(400);
    } else {
      expect(mingo).toBe(!ours);
      expect(res.body.result.length === 1).toBe(ours);
    }
  });
});
