/**
 * Differential test of rules (issue 45): generated (rule, filter, claims) over generated documents;
 * the production path (bindRule, restrict, the read statement on the database) against an
 * independent evaluation of "rule AND filter" by mingo, with the rule's variables written in as
 * the interface defines them: `$$AUTH.x` is the claim's value, and an `$expr` naming a claim the
 * caller lacks is false.
 *
 * The generators stay inside what mingo evaluates as MongoDB does (see
 * documents-differential.test.ts for where it does not): scalars of one type per field, `$expr`
 * comparisons of a field with a claim of the same type.
 *
 * Reproducing a failure: fast-check prints the counterexample and its seed (FC_SEED=<n>).
 */
import fc from 'fast-check';
import { Query } from 'mingo';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CollectionRef } from '../../db/storage/catalog.js';
import { findCollection } from '../../db/storage/catalog.js';
import { readDocuments } from '../../db/storage/documents.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { bindRule, parseRules, restrict } from '../../mongo/rules.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { propertyRuns } from '../helpers/property-runs.js';
import { freshCollection } from './storage-helpers.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

/** At least 2,000 cases at CI's scale (PROPERTY_SCALE=1). */
const RUNS = propertyRuns(2000);
const FC_SEED = process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) };

const SUBS = ['u1', 'u2', 'u3'];
const GROUPS = ['g1', 'g2', 'g3'];

/** Documents: owner (a string or an array of them) and group strings (or absent), n an integer, tags an array of groups. */
const docArb = fc.record(
  {
    // Sometimes an array: `{owner: "u1"}` matches ["u1", "u2"] where `$eq` of the field does not.
    owner: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...SUBS) },
      { weight: 1, arbitrary: fc.subarray(SUBS) },
    ),
    group: fc.constantFrom(...GROUPS),
    n: fc.integer({ min: -2, max: 5 }),
    tags: fc.subarray(GROUPS),
    public: fc.boolean(),
  },
  // n and tags always: mingo compares a missing field in $expr unlike MongoDB (which orders it
  // before numbers), and MongoDB's $in raises on a missing array.
  { requiredKeys: ['n', 'tags'], noNullPrototype: true },
);

/** Claims: sub always; groups, level and team sometimes. */
const claimsArb = fc.record(
  {
    sub: fc.constantFrom(...SUBS),
    groups: fc.subarray(GROUPS),
    level: fc.integer({ min: -1, max: 4 }),
    team: fc.constantFrom(...GROUPS),
  },
  { requiredKeys: ['sub'], noNullPrototype: true },
);

const ruleLeafArb = fc.oneof(
  fc.constant({ $expr: { $eq: ['$owner', '$$AUTH.sub'] } }),
  fc.constant({ $expr: { $eq: ['$$AUTH.sub', '$owner'] } }),
  fc.constant({ $expr: { $in: ['$$AUTH.team', '$tags'] } }),
  fc.constant({ $expr: { $eq: ['$group', '$$AUTH.team'] } }),
  fc.constant({ $expr: { $lte: ['$n', '$$AUTH.level'] } }),
  fc.constant({ $expr: { $gt: [{ $size: '$$AUTH.groups' }, 1] } }),
  fc.constant({}),
  fc.constant({ public: true }),
  fc.constantFrom(...GROUPS).map((g) => ({ group: g })),
  fc.integer({ min: -1, max: 4 }).map((k) => ({ n: { $gte: k } })),
) as fc.Arbitrary<JsonObject>;
const ruleArb: fc.Arbitrary<JsonObject> = fc.oneof(
  { weight: 3, arbitrary: ruleLeafArb },
  { weight: 1, arbitrary: fc.tuple(ruleLeafArb, ruleLeafArb).map(([a, b]) => ({ $or: [a, b] })) },
  { weight: 1, arbitrary: fc.tuple(ruleLeafArb, ruleLeafArb).map(([a, b]) => ({ $and: [a, b] })) },
);

const filterArb = fc.oneof(
  fc.constant({}),
  fc.integer({ min: -2, max: 5 }).map((k) => ({ n: { $gt: k } })),
  fc.constantFrom(...GROUPS).map((g) => ({ group: g })),
  fc.constantFrom(...GROUPS).map((g) => ({ tags: g })),
  fc.constantFrom(...SUBS).map((s) => ({ owner: { $ne: s } })),
  fc.integer({ min: -2, max: 5 }).map((k) => ({ $expr: { $gte: ['$n', k] } })),
  fc
    .tuple(fc.constantFrom(...GROUPS), fc.integer({ min: -2, max: 5 }))
    .map(([g, k]) => ({ $or: [{ group: g }, { n: { $lt: k } }] })),
) as fc.Arbitrary<JsonObject>;

/**
 * The rule as the interface defines it for these claims, written for mingo: each `$$AUTH.x` its
 * value, and each `$expr` that names a claim the caller lacks false.
 */
function ruleFor(rule: Json, claims: JsonObject): Json {
  if (Array.isArray(rule)) return rule.map((r) => ruleFor(r, claims));
  if (typeof rule !== 'object' || rule === null) return rule;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(rule)) {
    if (k === '$expr') {
      const missing = JSON.stringify(v)
        .match(/\$\$AUTH\.(\w+)/g)
        ?.some((m) => !(m.slice(7) in claims));
      out.$expr = missing ? false : substitute(v, claims);
    } else out[k] = ruleFor(v, claims);
  }
  return out;
}

function substitute(e: Json, claims: JsonObject): Json {
  if (typeof e === 'string' && e.startsWith('$$AUTH.')) return { $literal: claims[e.slice(7)] as Json };
  if (Array.isArray(e)) return e.map((x) => substitute(x, claims));
  if (typeof e === 'object' && e !== null) {
    const out = Object.fromEntries(Object.entries(e).map(([k, v]) => [k, substitute(v, claims)]));
    return withoutMingoArrayEquality(out);
  }
  return e;
}

/**
 * mingo's aggregation `$eq` is true for an array that holds the value (`{$eq: ["$owner", "u3"]}`
 * of `{owner: ["u3"]}`); MongoDB's compares the array whole, and answers false. Written for mingo
 * as MongoDB means it: also not an array.
 */
function withoutMingoArrayEquality(e: JsonObject): Json {
  const args = e.$eq;
  if (!Array.isArray(args)) return e;
  const field = args.find((a) => typeof a === 'string' && a.startsWith('$') && !a.startsWith('$$'));
  return field === undefined ? e : { $and: [e, { $not: [{ $isArray: field }] }] };
}

let t: TestApp;
let c: CollectionRef;
let docs: (JsonObject & { _id: number })[];

beforeAll(async () => {
  t = await startTestApp();
  const col = await freshCollection(t, 'ruled');
  // Indexes on the fields rules compare, so that the compiler's use of them (an implied equality,
  // an expression it leaves out where the index is exact: mongo/rules.ts) is what is tested.
  for (const field of ['owner', 'group']) {
    const ix = await t.request({
      method: 'POST',
      url: `${col.url}/indexes`,
      body: { name: field, key: [field] },
    });
    expect(ix.status, ix.text).toBe(201);
  }
  docs = fc.sample(docArb, { numRuns: 60, seed: 45 }).map((d, i) => ({ _id: i, ...(d as JsonObject) }));
  await col.insert(docs);
  const found = await findCollection(t.sql, col.workplace, 'ruled');
  c = (found.workplace ? found.found : undefined) as CollectionRef;
}, 120_000);
afterAll(async () => {
  await t?.close();
});

it(`the SQL answer of rule AND filter equals an independent evaluation (${RUNS} cases)`, async () => {
  await fc.assert(
    fc.asyncProperty(ruleArb, filterArb, claimsArb, async (rule, filter, claims) => {
      const rules = parseRules({ read: rule });
      const bound = bindRule(rules, 'read', {
        AUTH: claims as JsonObject,
        USER: undefined,
        NOW: '2026-01-01T00:00:00.000Z',
      });
      if (!bound) throw new Error('a read rule was given');
      const found = await readDocuments(t.sql, c, {
        filter: restrict(parseFilter(filter), bound),
        sort: [],
        skip: 0,
        limit: 1000,
      });
      const query = new Query({ $and: [ruleFor(rule, claims as JsonObject), filter] } as never);
      const expected = docs.filter((d) => query.test(d as never)).map((d) => d._id);
      expect(found.map((d) => d._id)).toEqual(expected);
    }),
    { numRuns: RUNS, ...FC_SEED },
  );
}, 300_000);
