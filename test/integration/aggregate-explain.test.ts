import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregateStatement } from '../../db/storage/aggregate.js';
import { findCollection } from '../../db/storage/catalog.js';
import { explain } from '../../db/storage/documents.js';
import { Statistics } from '../../db/storage/statistics.js';
import { parsePipeline } from '../../mongo/pipeline/parse.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection, withoutShardSuffixes } from './storage-helpers.js';

const DOCS = 20_000;
let t: TestApp;
let workplace: string;

/** The plan of the statement the API runs for a pipeline over this collection. */
async function planOf(pipeline: unknown[]) {
  const lookup = await findCollection(t.sql, workplace, 'big');
  if (!lookup.workplace || !lookup.found) throw new Error('no collection');
  return withoutShardSuffixes(
    await explain(t.sql, aggregateStatement(lookup.found, parsePipeline(pipeline))),
  );
}

beforeAll(async () => {
  t = await startTestApp();
  const col = await freshCollection(t, 'big');
  workplace = col.workplace;
  await col.index(['n'], { name: 'byN' });
  for (let start = 0; start < DOCS; start += 1000) {
    await col.insert(
      Array.from({ length: 1000 }, (_, i) => ({
        _id: `d${start + i}`,
        n: start + i,
        city: `c${(start + i) % 50}`,
      })),
    );
  }
  const lookup = await findCollection(t.sql, workplace, 'big');
  if (!lookup.workplace || !lookup.found) throw new Error('no collection');
  await new Statistics(t.sql).noteWrites(lookup.found.table, DOCS);
}, 300_000);
afterAll(async () => {
  await t?.close();
});

describe(`the leading stages of a pipeline use the collection's indexes as read does (${DOCS} documents)`, () => {
  it.each([
    [
      '$match equality',
      [{ $match: { n: 12345 } }, { $group: { _id: '$city', n: { $sum: 1 } } }],
      /Index Cond: \(i\d+_0_a = /,
    ],
    [
      '$match range',
      [{ $match: { n: { $gte: 100, $lt: 120 } } }, { $project: { n: 1 } }],
      /Index Cond: \(\(i\d+_0_a >= /,
    ],
    [
      '$sort + $limit',
      [{ $sort: { n: -1 } }, { $limit: 5 }, { $project: { city: 1 } }],
      /Index Scan Backward using x\d+_d/,
    ],
    [
      '$match + $sort + $skip + $limit',
      [{ $match: { n: { $gt: 500 } } }, { $sort: { n: 1 } }, { $skip: 10 }, { $limit: 5 }],
      /Index Scan using x\d+_a [^\n]*\n\s+Index Cond: \(\(i\d+_0_a > /,
    ],
    ['$match on _id', [{ $match: { _id: 'd77' } }, { $unwind: '$city' }], /c_\d+_pkey/],
  ] as const)('%s', async (_label, pipeline, pattern) => {
    const plan = await planOf([...pipeline]);
    expect(plan, plan).toMatch(pattern);
    expect(plan, plan).not.toMatch(/Seq Scan/);
  });

  it('answers what the plan says', async () => {
    const col = {
      call: (body: unknown) =>
        t.request({ method: 'POST', url: `/v1/workplaces/${workplace}/storages/big/aggregate`, body }),
    };
    const res = await col.call({
      pipeline: [
        { $match: { n: { $gte: 100 } } },
        { $sort: { n: -1 } },
        { $limit: 2 },
        { $project: { _id: 0, n: 1 } },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual([{ n: DOCS - 1 }, { n: DOCS - 2 }]);
  });
});

describe('a leading $match uses the index kinds a read would', () => {
  beforeAll(async () => {
    const url = `/v1/workplaces/${workplace}/storages/big/indexes`;
    for (const body of [
      { name: 'lateCities', key: ['city'], partialFilterExpression: { n: { $gte: 10_000 } } },
      { name: 'cityWords', key: [{ city: 'text' }] },
    ]) {
      const res = await t.request({ method: 'POST', url, body });
      expect(res.status, res.text).toBe(201);
    }
  }, 120_000);

  it.each([
    [
      'a partial index, for a $match that implies its filter',
      [{ $match: { city: 'c7', n: { $gte: 15_000 } } }, { $count: 'k' }],
      /Index Cond: \(i\d+_0_a = /,
      100,
    ],
    [
      'the text index, for $text',
      [{ $match: { $text: { $search: 'c7' } } }, { $count: 'k' }],
      /Bitmap Index Scan on xt\d+/,
      400,
    ],
  ] as const)('%s', async (_label, pipeline, pattern, count) => {
    const plan = await planOf([...pipeline]);
    expect(plan, plan).toMatch(pattern);
    expect(plan, plan).not.toMatch(/Seq Scan/);
    const res = await t.request({
      method: 'POST',
      url: `/v1/workplaces/${workplace}/storages/big/aggregate`,
      body: { pipeline },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.result).toEqual([{ k: count }]);
  });
});
