/**
 * Many clients racing on the single-document operations, as a work queue uses them: each claims
 * "the first document still new" until there is none. Every document must go to exactly one
 * client, and no client may be told there is none while one remains: a claim that starts after a
 * client was answered "none" and still succeeds proves that client was wrongly answered. The same
 * for concurrent upserts of one query: exactly one insert. On the embedded database requests are
 * serialized, and the same tests still run there.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCollection } from '../../db/storage/catalog.js';
import { startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const DOCS = 200;
const CLIENTS = 20;
const ROUNDS = 2;

type Collection = Awaited<ReturnType<typeof freshCollection>>;

async function queue(indexed: boolean): Promise<Collection> {
  const col = await freshCollection(t);
  if (indexed) {
    await col.index(['state']);
    await col.index(['priority']);
  }
  // Priorities repeat, so ties are broken by _id as well.
  await col.insert(
    Array.from({ length: DOCS }, (_, i) => ({ _id: i, state: 'new', priority: (i * 7) % 13 })),
  );
  return col;
}

interface Claim {
  client: number;
  started: number;
  answered: number;
  res: TestResponse;
}

/**
 * CLIENTS clients each send `body` until `done` says the answer was "none". Every answer is
 * returned with when its request started and when it was answered.
 */
async function drain(
  col: Collection,
  op: string,
  body: (client: number) => unknown,
  done: (res: TestResponse) => boolean,
): Promise<Claim[]> {
  const claims: Claim[] = [];
  let clock = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (;;) {
        const started = clock++;
        const res = await col.call(op, body(client));
        claims.push({ client, started, answered: clock++, res });
        if (res.status !== 200 || done(res)) return;
      }
    }),
  );
  return claims;
}

/** The answers "none" given while a document was still there: a claim started later succeeded. */
function wrongNones(claims: Claim[], isNone: (res: TestResponse) => boolean): Claim[] {
  const successes = claims.filter((c) => !isNone(c.res));
  return claims.filter((c) => isNone(c.res) && successes.some((s) => s.started > c.answered));
}

for (const indexed of [false, true]) {
  describe(`a work queue of ${DOCS} documents and ${CLIENTS} clients${indexed ? ', state and priority indexed' : ''}`, () => {
    for (let round = 1; round <= ROUNDS; round++) {
      it(`find-one-and-update hands each document to exactly one client (round ${round})`, async () => {
        const col = await queue(indexed);
        const isNone = (res: TestResponse) => res.body.result.value === null;
        const claims = await drain(
          col,
          'find-one-and-update',
          (client) => ({
            query: { state: 'new' },
            sort: { priority: -1 },
            doc: { $set: { state: 'taken', by: client } },
            fields: { _id: 1 },
          }),
          isNone,
        );
        expect(claims.filter((c) => c.res.status !== 200).map((c) => c.res.text)).toEqual([]);
        const ids = claims.filter((c) => !isNone(c.res)).map((c) => c.res.body.result.value._id as number);
        expect(ids.length).toBe(DOCS);
        expect(new Set(ids).size).toBe(DOCS);
        expect(wrongNones(claims, isNone)).toEqual([]);
        const docs = await col.read({ limit: 1000 });
        expect(docs.filter((d) => d.state !== 'taken')).toEqual([]);
      });
    }

    it('find-one-and-delete hands each document to exactly one client', async () => {
      const col = await queue(indexed);
      const isNone = (res: TestResponse) => res.body.result.value === null;
      const claims = await drain(
        col,
        'find-one-and-delete',
        () => ({ query: { state: 'new' }, sort: { priority: 1 } }),
        isNone,
      );
      expect(claims.filter((c) => c.res.status !== 200).map((c) => c.res.text)).toEqual([]);
      const ids = claims.filter((c) => !isNone(c.res)).map((c) => c.res.body.result.value._id as number);
      expect(new Set(ids).size).toBe(DOCS);
      expect(ids.length).toBe(DOCS);
      expect(wrongNones(claims, isNone)).toEqual([]);
      expect(await col.read({})).toEqual([]);
    });

    it('update-one and the update route with a replacement each take one document per call', async () => {
      for (const [op, doc] of [
        ['update-one', { $set: { state: 'taken' } }],
        ['update', { state: 'taken' }],
      ] as const) {
        const col = await queue(indexed);
        const isNone = (res: TestResponse) => res.body.result.matchedCount === 0;
        const claims = await drain(col, op, () => ({ query: { state: 'new' }, doc }), isNone);
        expect(claims.filter((c) => c.res.status !== 200).map((c) => c.res.text)).toEqual([]);
        expect(claims.filter((c) => !isNone(c.res)).length, op).toBe(DOCS);
        expect(wrongNones(claims, isNone), op).toEqual([]);
        const docs = await col.read({ limit: 1000 });
        expect(
          docs.filter((d) => d.state !== 'taken'),
          op,
        ).toEqual([]);
      }
    });
  });
}

describe(`${CLIENTS} concurrent upserts of one query`, () => {
  for (let round = 1; round <= ROUNDS; round++) {
    it(`find-one-and-update inserts once and updates ${CLIENTS - 1} times (round ${round})`, async () => {
      const col = await freshCollection(t);
      const responses = await Promise.all(
        Array.from({ length: CLIENTS }, () =>
          col.call('find-one-and-update', {
            query: { key: 'k' },
            doc: { $inc: { n: 1 }, $setOnInsert: { created: true } },
            upsert: true,
            returnDocument: 'after',
          }),
        ),
      );
      expect(responses.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
      const counts = responses.map((r) => r.body.result.value.n as number).sort((a, b) => a - b);
      expect(counts).toEqual(Array.from({ length: CLIENTS }, (_, i) => i + 1));
      const docs = await col.read({});
      expect(docs).toEqual([{ _id: expect.any(String), key: 'k', n: CLIENTS, created: true }]);
    });
  }

  it('update-one reports one upsertedId', async () => {
    const col = await freshCollection(t);
    const responses = await Promise.all(
      Array.from({ length: CLIENTS }, () =>
        col.call('update-one', { query: { key: 'k' }, doc: { $inc: { n: 1 } }, upsert: true }),
      ),
    );
    expect(responses.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
    expect(responses.filter((r) => r.body.result.upsertedId !== undefined)).toHaveLength(1);
    expect(await col.read({})).toEqual([{ _id: expect.any(String), key: 'k', n: CLIENTS }]);
  });

  it('replace-one without an _id in the query inserts once', async () => {
    const col = await freshCollection(t);
    const responses = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) =>
        col.call('replace-one', { query: { key: 'k' }, doc: { key: 'k', by: i }, upsert: true }),
      ),
    );
    expect(responses.filter((r) => r.status !== 200).map((r) => r.text)).toEqual([]);
    expect(responses.filter((r) => r.body.result.upsertedId !== undefined)).toHaveLength(1);
    expect(await col.read({})).toHaveLength(1);
  });
});

/**
 * The race made certain, on PostgreSQL: another session holds the only matching document, the
 * claim waits for it, and that session makes it stop matching and commits a new matching
 * document. The claim's statement cannot see the new document (its snapshot is older); the
 * operation must look again rather than answer "none".
 */
describe.runIf(process.env.DATABASE_URL)('a claim that waited for a document which stopped matching', () => {
  let other: postgres.Sql;
  beforeAll(() => {
    other = postgres(process.env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await other?.end({ timeout: 5 });
  });

  it.each([
    ['find-one-and-update', { doc: { $set: { state: 'taken' } } }, { value: { _id: 2, state: 'new' } }],
    ['update-one', { doc: { $set: { state: 'taken' } } }, { matchedCount: 1, modifiedCount: 1 }],
    ['update', { doc: { state: 'taken' } }, { matchedCount: 1, modifiedCount: 1 }],
    ['find-one-and-delete', {}, { value: { _id: 2, state: 'new' } }],
    ['delete-one', {}, { deletedCount: 1 }],
  ])('%s finds the document committed meanwhile', async (op, body, result) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, state: 'new' }]);
    const lookup = await findCollection(t.sql, col.workplace, 'items');
    if (!lookup.workplace || !lookup.found) throw new Error('the collection was not created');
    const { table } = lookup.found;
    let answer: Promise<TestResponse> | undefined;
    await other.begin(async (tx) => {
      await tx.unsafe(`select 1 from ${table} where id = mdb.key('1'::jsonb) for update`);
      answer = col.call(op, { query: { state: 'new' }, ...body });
      await new Promise((r) => setTimeout(r, 300));
      await tx.unsafe(`update ${table} set doc = doc || '{"state": "taken"}' where id = mdb.key('1'::jsonb)`);
      await tx.unsafe(
        `insert into ${table} (id, doc) values (mdb.key('2'::jsonb), '{"_id": 2, "state": "new"}'::jsonb)`,
      );
    });
    const res = await (answer as Promise<TestResponse>);
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual(result);
  });
});
