import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyArrayLiteral, scalarKey } from '../../mongo/value/bson-key.js';
import type { Json } from '../../mongo/value/json.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * The keys the compiler binds (mongo/value/bson-key.ts) are the keys the key columns hold: mdb.key()
 * of migration 0002, computed by the database for the same values.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** mdb.key of each value, in one statement. */
async function databaseKeys(values: Json[]): Promise<Buffer[]> {
  const rows = await t.sql.unsafe<{ k: Buffer }[]>(
    'select mdb.key(v) as k from jsonb_array_elements($1::text::jsonb) with ordinality as a (v, n) order by n',
    [JSON.stringify(values)],
  );
  return rows.map((r) => r.k);
}

const EDGES: Json[] = [
  null,
  true,
  false,
  0,
  -0,
  1,
  -1,
  1.5,
  -1.5,
  0.1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 60),
  1152921504606847000,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
  -Number.MIN_VALUE,
  2 ** -1022,
  -(2 ** -1022),
  2 ** -1022 - 2 ** -1074,
  1e-300,
  123456789.12345679,
  '',
  'a',
  'B',
  'ключ',
  '🙂',
  'é',
  'x'.repeat(2000),
  "'; drop table t; --",
];

describe('keys computed in TypeScript', () => {
  it('equal mdb.key() for numbers, strings, booleans and null at their edges', async () => {
    const keys = await databaseKeys(EDGES);
    EDGES.forEach((v, i) => {
      expect(scalarKey(v)?.toString('hex'), JSON.stringify(v)).toBe(keys[i]?.toString('hex'));
    });
  });

  it('equal mdb.key() for any double and any string', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ unit: 'grapheme' })),
          {
            minLength: 1,
            maxLength: 50,
          },
        ),
        async (values) => {
          const keys = await databaseKeys(values);
          values.forEach((v, i) => {
            expect(scalarKey(v)?.toString('hex'), JSON.stringify(v)).toBe(keys[i]?.toString('hex'));
          });
        },
      ),
      { numRuns: 40 },
    );
  });

  it('reach the database as one bytea[] parameter, NULL where the database computes the key', async () => {
    const values: Json[] = [...EDGES, { a: 1 }, [1, 2]];
    const rows = await t.sql.unsafe<{ k: Buffer | null }[]>(
      'select k from unnest($1::bytea[]) with ordinality as a (k, n) order by n',
      [keyArrayLiteral(values)],
    );
    expect(rows.map((r) => r.k?.toString('hex') ?? null)).toEqual(
      values.map((v) => scalarKey(v)?.toString('hex') ?? null),
    );
    expect(rows.at(-1)?.k).toBeNull();
  });

  it('leave objects, arrays and strings jsonb refuses to the database', () => {
    for (const v of [{ a: 1 }, [1], 'a\u0000b', '\ud800x']) expect(scalarKey(v as Json)).toBeUndefined();
  });
});
