/** The aggregate scenario: `$group` against the SQL a developer would write for it. */
import type postgres from 'postgres';
import { findCollection } from '../../../db/storage/catalog.js';
import { type Bench, call, type Row } from '../context.js';
import { median, ms, peakRss, timeIt } from '../measure.js';

/**
 * `$group` over the large collection: the API's aggregate against the SQL a developer would write
 * by hand for it, run on a connection of this process, timed one request at a time in alternating
 * pairs. Both answers are checked to hold the same groups and counts.
 */
export async function runGroupAggregate(bench: Bench, sql: postgres.Sql | undefined): Promise<void> {
  const { options, results, workplace } = bench;
  const scenario = `$group over ${options.large} documents: aggregate vs hand-written SQL`;
  const url = `/v1/workplaces/${workplace}/storages/large/aggregate`;
  const pipeline = [{ $group: { _id: '$city', n: { $sum: 1 }, age: { $avg: '$age' } } }];
  const lookup = sql ? await findCollection(sql, workplace, 'large') : undefined;
  const table = lookup?.workplace ? lookup.found?.table : undefined;
  const handWritten = `select doc->>'city' as city, count(*) as n, avg((doc->>'age')::numeric) as age from ${table} group by 1`;
  const apiTimes: number[] = [];
  const baseTimes: number[] = [];
  let answer: { result: { _id: string; n: number }[] } = { result: [] };
  let rows: { city: string; n: string }[] = [];
  const measured = await peakRss(bench.api.pid, async () => {
    for (let i = 0; i < options.runs; i++) {
      apiTimes.push(
        await timeIt(async () => {
          answer = (await call(bench, 'POST', url, { pipeline })) as typeof answer;
        }),
      );
      if (sql && table)
        baseTimes.push(
          await timeIt(async () => {
            rows = await sql.unsafe(handWritten);
          }),
        );
    }
  });
  const row: Row = { scenario, api: ms(median(apiTimes)), rssPeak: measured.peak, unit: 'ms/request' };
  if (baseTimes.length) {
    row.base = ms(median(baseTimes));
    const byCity = new Map(rows.map((r) => [r.city, Number(r.n)]));
    const same =
      answer.result.length === byCity.size && answer.result.every((g) => byCity.get(g._id) === g.n);
    results.targets.push([
      'aggregate $group gives the groups and counts of the hand-written SQL',
      same,
      `${answer.result.length} groups (hand-written: ${byCity.size})`,
    ]);
  }
  results.rows.push(row);
  process.stderr.write(
    `  ${scenario}: ${row.api.mean?.toFixed(0)} ms${row.base ? ` (hand-written ${row.base.mean?.toFixed(0)} ms)` : ''}\n`,
  );
}
