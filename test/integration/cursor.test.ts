/**
 * Reading past the page limit with `cursor` (keyset paging): a walk page by page gives exactly what
 * one big read gives, for every kind of sort the read accepts (multi-key, mixed directions, dotted
 * paths, arrays on the path, missing and null, mixed types in BSON order), with and without
 * indexes on the sorted paths, with projections; tokens bound to their read; what a walk sees while
 * others write; and that a deep page is found through the index rather than by skipping rows.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { readStatement } from '../../db/storage/documents.js';
import { Statistics } from '../../db/storage/statistics.js';
import { cursorBinding, decodeCursor } from '../../mongo/cursor.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { orderKeyCount, parseSort } from '../../mongo/sort.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { propertyRuns } from '../helpers/property-runs.js';
import { freshCollection, withoutShardSuffixes } from './storage-helpers.js';

type Col = Awaited<ReturnType<typeof freshCollection>>;
type Body = Record<string, unknown>;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** Every page of a walk with `cursor`, `limit` documents at a time. */
async function walk(col: Col, body: Body, limit: number, maxPages = 10_000) {
  const pages: Body[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const res = await col.call('read', { ...body, limit, ...(cursor ? { cursor } : {}) });
    expect(res.status, res.text).toBe(200);
    pages.push(res.body.result);
    cursor = res.body.next;
    if (cursor === undefined) return pages;
    expect(res.body.result).toHaveLength(limit);
  }
  throw new Error('the walk did not end');
}

// Every type MongoDB orders, ties, arrays (sorted by their least element ascending and greatest
// descending), an empty array, null and missing fields, and paths through arrays of documents.
const DOCS = [
  { _id: 1, a: 3, b: 'x', c: { d: 2 } },
  { _id: 2, a: 3, b: 'y', c: { d: 1 } },
  { _id: 3, a: -1.5, b: 'x', c: [{ d: 9 }, { d: 0 }] },
  { _id: 4, a: 'str', b: null, c: { d: 'z' } },
  { _id: 5, a: [2, 10], b: 'x' },
  { _id: 6, a: [], b: 'z', c: [] },
  { _id: 7, a: null, b: 'y', c: { d: null } },
  { _id: 8, b: 'x', c: [{ d: 3 }, { e: 1 }] },
  { _id: 9, a: { k: 1 }, b: true, c: { d: [5, 1] } },
  { _id: 10, a: true, b: 'y', c: { d: { k: 1 } } },
  { _id: 11, a: false, b: 1, c: 7 },
  { _id: 'eleven', a: 3, b: 'x', c: { d: 2 } },
  { _id: 12, a: 3, b: 'x', c: { d: 2 } },
  { _id: { o: 1 }, a: 0, b: [1, 'x'] },
  { _id: 13, a: 1e300, b: 'y', c: { d: -0.5 } },
  { _id: 14, a: 'Str', b: 'y' },
  { _id: 15, a: [null, 4], b: 'x', c: { d: 2 } },
  { _id: 16, a: [[1], 0], b: 'z', c: { d: 2 } },
  // Keys are cut at 1,024 bytes: these two tie on their keys and go in _id order, in a walk too.
  { _id: 17, a: `${'x'.repeat(1100)}b`, b: 'y', c: { d: 'x'.repeat(2000) } },
  { _id: 18, a: `${'x'.repeat(1100)}a`, b: 'y', c: { d: `${'x'.repeat(2000)}a` } },
];

const SORTS: (Record<string, 1 | -1> | undefined)[] = [
  undefined,
  { _id: -1 },
  { a: 1 },
  { a: -1 },
  { a: 1, b: 1 },
  { a: -1, b: 1 },
  { b: 1, a: -1, 'c.d': 1 },
  { 'c.d': -1 },
  { 'c.d': 1, _id: -1 },
  { b: -1, _id: 1, a: 1 },
];

describe.each([false, true])('a walk with cursor is one big read, page by page (indexes: %s)', (indexed) => {
  let col: Col;
  beforeAll(async () => {
    col = await freshCollection(t);
    if (indexed) {
      await col.index(['a']);
      await col.index(['b']);
      await col.index(['c.d']);
      await col.index([{ b: 1 }, { a: -1 }, { 'c.d': 1 }]);
    }
    await col.insert(DOCS);
  });

  it.each(SORTS.map((s) => [JSON.stringify(s), s]))('sort %s', async (_label, sort) => {
    const body = sort ? { sort } : {};
    const all = await col.read({ ...body, limit: 1000 });
    expect(all).toHaveLength(DOCS.length);
    for (const limit of [1, 2, 5, 17, 18]) {
      const pages = await walk(col, body, limit);
      expect(pages.flat()).toEqual(all);
      expect(pages.length).toBe(Math.max(1, Math.ceil(DOCS.length / limit)));
    }
  });

  it('with a query, and a projection that leaves out the sorted fields', async () => {
    const body = { query: { b: { $in: ['x', 'y', null] } }, sort: { a: -1, 'c.d': 1 } };
    const all = await col.read({ ...body, fields: { _id: 1 }, limit: 1000 });
    expect(all.length).toBeGreaterThan(5);
    for (const fields of [{ _id: 1 }, { a: 0, c: 0 }, { b: 1 }]) {
      const pages = await walk(col, { ...body, fields }, 3);
      expect(pages.flat().map((d) => d._id)).toEqual(all.map((d) => d._id));
      expect(pages.flat().every((d) => !('c' in d))).toBe(true);
    }
  });

  it('fields and limit may change from page to page', async () => {
    const body = { sort: { b: 1, a: -1 } };
    const all = await col.ids(body);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    for (let i = 0; ; i++) {
      const res = await col.call('read', {
        ...body,
        limit: (i % 3) + 1,
        ...(i % 2 ? { fields: { a: 1 } } : {}),
        ...(cursor ? { cursor } : {}),
      });
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.result.map((d: Body) => d._id));
      cursor = res.body.next;
      if (!cursor) break;
    }
    expect(seen).toEqual(all);
  });
});

describe('responses', () => {
  it('carry next exactly when more documents match, also after skip', async () => {
    const col = await freshCollection(t);
    await col.insert([1, 2, 3, 4, 5].map((n) => ({ _id: n })));
    const full = await col.call('read', { limit: 5 });
    expect(full.body).toEqual({ result: [1, 2, 3, 4, 5].map((n) => ({ _id: n })) });
    const empty = await col.call('read', { query: { _id: 99 } });
    expect(empty.body).toEqual({ result: [] });
    const skipped = await col.call('read', { skip: 1, limit: 2 });
    expect(skipped.body.result).toEqual([{ _id: 2 }, { _id: 3 }]);
    const rest = await col.call('read', { cursor: skipped.body.next, limit: 2 });
    expect(rest.body.result).toEqual([{ _id: 4 }, { _id: 5 }]);
    expect(rest.body.next).toBeUndefined();
    // skip 0, which many clients send by default, goes with a cursor.
    const zero = await col.call('read', { cursor: skipped.body.next, limit: 2, skip: 0 });
    expect(zero.body).toEqual(rest.body);
    const projected = await col.call('read', { fields: { _id: 1 }, limit: 4 });
    expect(projected.body.next).toEqual(expect.any(String));
    // A filter pinning _id matches one document at most: its page is the whole answer.
    for (const query of [{ _id: 2 }, { _id: { $eq: 2 } }, { $and: [{ _id: 2 }, { _id: { $gte: 1 } }] }])
      expect((await col.call('read', { query, limit: 1 })).body).toEqual({ result: [{ _id: 2 }] });
    // Several _id values can match several documents: the page has a next.
    const two = await col.call('read', { query: { _id: { $in: [2, 3] } }, limit: 1 });
    expect(two.body.result).toEqual([{ _id: 2 }]);
    expect(two.body.next).toEqual(expect.any(String));
  });
});

describe('a token outlives index changes', () => {
  it('an index created or dropped mid-walk keeps the sequence (its key columns hold the same keys)', async () => {
    const col = await freshCollection(t);
    await col.insert(DOCS);
    const body = { sort: { a: -1, 'c.d': 1 } };
    const all = await col.ids(body);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    for (let i = 0; ; i++) {
      if (i === 2) await col.index(['a'], { name: 'byA' });
      if (i === 3) await col.index([{ a: -1 }, { 'c.d': 1 }], { name: 'byAC' });
      if (i === 5) {
        const res = await t.request({ method: 'DELETE', url: `${col.url}/indexes/byAC` });
        expect(res.status, res.text).toBe(204);
      }
      const res = await col.call('read', { ...body, limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.result.map((d: Body) => d._id));
      cursor = res.body.next;
      if (!cursor) break;
    }
    expect(seen).toEqual(all);
  });
});

describe('a cursor that does not fit the read is a 400 naming cursor', () => {
  let col: Col;
  let next: string;
  const body = { query: { n: { $gte: 0 } }, sort: { n: -1 } };
  beforeAll(async () => {
    col = await freshCollection(t);
    await col.insert([1, 2, 3, 4].map((n) => ({ n })));
    const res = await col.call('read', { ...body, limit: 2 });
    next = res.body.next;
    expect(next).toEqual(expect.any(String));
  });
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);

  it.each([
    ['with skip', () => ({ ...body, cursor: next, skip: 1 }), /cursor and skip/],
    [
      'another query',
      () => ({ ...body, query: { n: { $gte: 1 } }, cursor: next }),
      /different query or sort/,
    ],
    ['another sort', () => ({ ...body, sort: { n: 1 }, cursor: next }), /different query or sort/],
    ['no sort', () => ({ query: body.query, cursor: next }), /different query or sort/],
    ['no query', () => ({ sort: body.sort, cursor: next }), /different query or sort/],
    ['a character changed', () => ({ ...body, cursor: flip(next, 12) }), /altered/],
    ['the last character changed', () => ({ ...body, cursor: flip(next, next.length - 1) }), /altered/],
    ['cut short', () => ({ ...body, cursor: next.slice(0, -4) }), /altered/],
    ['not base64url', () => ({ ...body, cursor: `${next.slice(0, -1)}=` }), /altered/],
    ['garbage', () => ({ ...body, cursor: 'hello world' }), /altered/],
    ['padding', () => ({ ...body, cursor: 'AAAA' }), /altered/],
  ] as const)('%s', async (_label, make, message) => {
    const res = await col.call('read', make());
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(/cursor/);
    expect(res.body.detail).toMatch(message);
  });

  it('any string, and any change to a real token, is a 400, never a page or a 500', async () => {
    const changed = fc
      .tuple(fc.nat(), fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'))
      .map(([i, c]) => next.slice(0, i % next.length) + c + next.slice((i % next.length) + 1))
      .filter((s) => s !== next);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ minLength: 1 }), fc.base64String({ minLength: 1 }), changed),
        async (cursor) => {
          const res = await col.call('read', { ...body, cursor });
          expect(res.status, res.text).toBe(400);
          expect(res.body.code).toBe('INVALID_QUERY');
        },
      ),
      { numRuns: propertyRuns(150) },
    );
  });

  it('a token longer than any issued is refused by the schema', async () => {
    const res = await col.call('read', { ...body, cursor: 'A'.repeat(131_073) });
    expect(res.status, res.text).toBe(400);
    expect(res.text).toMatch(/cursor/);
  });

  it('the same query sent again continues, whatever the server process', async () => {
    const res = await col.call('read', { ...body, cursor: next, limit: 5 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result.map((d: Body) => d.n)).toEqual([2, 1]);
  });
});

describe('what a walk sees while documents change (documented in docs/storage.md)', () => {
  it('a document moved past the cursor is seen again; one moved behind it, or deleted ahead, is not', async () => {
    const col = await freshCollection(t);
    await col.insert([1, 2, 3, 4, 5, 6].map((n) => ({ _id: n, n })));
    const sort = { n: 1 };
    const first = await col.call('read', { sort, limit: 2 });
    expect(first.body.result.map((d: Body) => d._id)).toEqual([1, 2]);
    const moved = async (id: number, n: number) =>
      expect((await col.call('update', { query: { _id: id }, doc: { $set: { n } } })).status).toBe(200);
    await moved(1, 10); // seen, now ahead: seen again
    await moved(5, 0); // not yet seen, now behind: missed
    await col.call('delete', { query: { _id: 6 } });
    await col.insert([
      { _id: 7, n: -1 },
      { _id: 8, n: 3.5 },
    ]);
    const rest: unknown[] = [];
    let cursor = first.body.next;
    while (cursor) {
      const res = await col.call('read', { sort, limit: 2, cursor });
      rest.push(...res.body.result.map((d: Body) => d._id));
      cursor = res.body.next;
    }
    expect(rest).toEqual([3, 8, 4, 1]);
  });

  it.each([false, true])(
    'a walk while others insert and delete misses and repeats none of the documents there all along (index: %s)',
    async (indexed) => {
      const col = await freshCollection(t);
      if (indexed) await col.index(['n']);
      const stable = Array.from({ length: 300 }, (_, i) => ({
        _id: `s${String(i).padStart(3, '0')}`,
        n: (i * 37) % 41,
      }));
      await col.insert(stable);
      let done = false;
      let writes = 0;
      const writer = (async () => {
        for (let k = 0; !done; k++) {
          const batch = Array.from({ length: 5 }, (_, i) => ({
            _id: `w${k}_${i}`,
            n: (k * 7 + i * 13) % 43,
          }));
          await col.insert(batch);
          if (k > 0) {
            const res = await col.call('delete', { query: { _id: { $regex: `^w${k - 1}_` } } });
            expect(res.status).toBe(200);
          }
          writes++;
        }
      })();
      const seen: Body[] = [];
      let cursor: string | undefined;
      try {
        do {
          const res = await col.call('read', { sort: { n: 1 }, limit: 7, ...(cursor ? { cursor } : {}) });
          expect(res.status, res.text).toBe(200);
          seen.push(...res.body.result);
          cursor = res.body.next;
          // Give the writer its turn between pages (PGlite has one connection).
          await new Promise((r) => setTimeout(r, 1));
        } while (cursor);
      } finally {
        done = true;
        await writer;
      }
      expect(writes).toBeGreaterThan(3);
      const ids = seen.map((d) => d._id as string);
      expect(new Set(ids).size).toBe(ids.length);
      const stableIds = ids.filter((id) => id.startsWith('s'));
      const expected = [...stable].sort((x, y) => x.n - y.n || (x._id < y._id ? -1 : 1)).map((d) => d._id);
      expect(stableIds).toEqual(expected);
      // The whole walk, written documents included, is in the sort's order.
      for (let i = 1; i < seen.length; i++) {
        const [p, q] = [seen[i - 1] as Body, seen[i] as Body];
        expect(
          (p.n as number) < (q.n as number) || (p.n === q.n && (p._id as string) < (q._id as string)),
        ).toBe(true);
      }
    },
    60_000,
  );
});

// ---- The property: random documents, sorts, queries, projections and page sizes -----------------

const scalarArb = fc.oneof(
  fc.constantFrom(0, 1, -1, 2.5, -0, 1e20, 'a', 'b', 'B', '', 'ab', true, false, null),
  fc.integer({ min: -5, max: 5 }),
);
const valueArb = fc.oneof(
  { weight: 4, arbitrary: scalarArb },
  { weight: 1, arbitrary: fc.array(scalarArb, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.record({ k: scalarArb }) },
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 4 });
const docArb = fc
  .record({
    a: maybe(valueArb),
    b: maybe(scalarArb),
    c: maybe(
      fc.oneof(
        fc.record({ d: maybe(valueArb) }),
        fc.array(fc.record({ d: maybe(scalarArb) }), { maxLength: 2 }),
      ),
    ),
  })
  .map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)));
const PATHS = ['a', 'b', 'c.d', '_id'] as const;
const sortArb = fc
  .uniqueArray(fc.constantFrom(...PATHS), { minLength: 0, maxLength: 3 })
  .chain((paths) =>
    fc
      .tuple(...paths.map(() => fc.constantFrom(1 as const, -1 as const)))
      .map((dirs) => (paths.length ? Object.fromEntries(paths.map((p, i) => [p, dirs[i]])) : undefined)),
  );
const queryArb = fc.constantFrom(
  undefined,
  { b: { $ne: null } },
  { a: { $exists: true } },
  { $or: [{ b: 'a' }, { 'c.d': { $gte: 0 } }] },
);
const fieldsArb = fc.constantFrom(undefined, { a: 0 }, { b: 1 }, { 'c.d': 0, a: 0 });

describe('property: a walk with any page size gives exactly the sequence of one big read', () => {
  const DATASETS = 4;
  const cols: Col[] = [];
  beforeAll(async () => {
    const sets = fc.sample(fc.array(docArb, { minLength: 0, maxLength: 40 }), {
      numRuns: DATASETS,
      seed: 30,
    });
    for (let i = 0; i < DATASETS; i++) {
      const col = await freshCollection(t);
      // Half the datasets with an index on every path, so both kinds of ORDER BY are walked.
      if (i % 2) {
        await col.index(['a']);
        await col.index(['b']);
        await col.index(['c.d']);
      }
      const docs = sets[i] ?? [];
      if (docs.length) await col.insert(docs.map((d, j) => ({ _id: j % 5 === 0 ? `id${j}` : j, ...d })));
      cols.push(col);
    }
  });

  it('holds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: DATASETS - 1 }),
        sortArb,
        queryArb,
        fieldsArb,
        fc.integer({ min: 1, max: 9 }),
        async (di, sort, query, fields, limit) => {
          const col = cols[di] as Col;
          const body = {
            ...(sort ? { sort } : {}),
            ...(query ? { query } : {}),
            ...(fields ? { fields } : {}),
          };
          const all = await col.read({ ...body, limit: 1000 });
          const pages = await walk(col, body, limit);
          expect(pages.flat()).toEqual(all);
        },
      ),
      { numRuns: propertyRuns(60) },
    );
  }, 120_000);
});

// ---- Cost: a deep page is found through the index --------------------------------------------------

describe('with an index on the sort path, a deep page reads only its own rows', () => {
  const N = 10_000;
  let col: Col;
  beforeAll(async () => {
    col = await freshCollection(t, 'deep');
    await col.index(['n']);
    await col.index([{ g: 1 }, { n: -1 }]);
    for (let start = 0; start < N; start += 1000)
      await col.insert(
        Array.from({ length: 1000 }, (_, i) => ({
          _id: start + i,
          n: (start + i) % 5000,
          g: (start + i) % 3,
        })),
      );
    const lookup = await findCollection(t.sql, col.workplace, 'deep');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    await new Statistics(t.sql).noteWrites(lookup.found.table, N);
  }, 120_000);

  /** EXPLAIN ANALYZE of the statement the API runs for the page after `cursor`. */
  async function planAfter(
    body: { query?: Body; sort: Record<string, 1 | -1> },
    cursor: string,
    limit: number,
  ) {
    const lookup = await findCollection(t.sql, col.workplace, 'deep');
    if (!lookup.workplace || !lookup.found) throw new Error('no collection');
    const sort = parseSort(body.sort);
    const after = decodeCursor(cursor, cursorBinding(body.query, body.sort), orderKeyCount(sort));
    const s = readStatement(lookup.found, {
      filter: parseFilter(body.query ?? {}),
      sort,
      skip: 0,
      limit,
      after,
    });
    const rows = await t.sql.unsafe<{ 'QUERY PLAN': string }[]>(
      `explain (analyze, costs off, timing off, summary off) ${s.text}`,
      s.values,
    );
    return withoutShardSuffixes(rows.map((r) => r['QUERY PLAN']).join('\n'));
  }

  /** The cursor after `depth` documents, from a read with skip (what a walk would have reached). */
  async function cursorAt(body: Body, depth: number) {
    const res = await col.call('read', { ...body, skip: depth - 1, limit: 1 });
    expect(res.status, res.text).toBe(200);
    return res.body.next as string;
  }

  it.each([
    [
      'ascending',
      { sort: { n: 1 } },
      /Index Scan using x\d+_a .*\n.*Index Cond: \(ROW\(i\d+_0_a, id\) > ROW\(/,
    ],
    [
      'descending',
      { sort: { n: -1 } },
      /Index Scan Backward using x\d+_d .*\n.*Index Cond: \(ROW\(i\d+_0_d, id\) < ROW\(/,
    ],
    [
      'mixed directions on a compound index',
      { sort: { g: 1, n: -1 } },
      // Each key its own index's column, in two directions: no btree gives this order, but the
      // first key's bound and the chain's branches still narrow the rows through the indexes.
      /Index Cond: .*i\d+_0_a >= /,
    ],
  ] as const)('%s', async (_label, body, pattern) => {
    const depth = N - 50;
    const cursor = await cursorAt(body, depth);
    const plan = await planAfter(body, cursor, 20);
    expect(plan, plan).toMatch(pattern);
    expect(plan, plan).not.toMatch(/Seq Scan/);
    if (!('g' in body.sort)) {
      // The index scan gives the order and stops after the page (and the one row that says more follow).
      expect(plan, plan).not.toMatch(/Sort/);
      const scanned = Number(/Index Scan.*actual rows=(\d+)/.exec(plan)?.[1]);
      expect(scanned, plan).toBeLessThanOrEqual(21);
    }
    // And the page is the one skip gives.
    const viaSkip = await col.ids({ ...body, skip: depth, limit: 20 });
    const viaCursor = (await col.read({ ...body, cursor, limit: 20 })).map((d) => d._id);
    expect(viaCursor).toEqual(viaSkip);
  });
});
