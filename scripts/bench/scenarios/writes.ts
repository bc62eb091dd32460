/**
 * The write scenarios on the large collection: updateMany over 10,000 documents, and the writes of
 * one document users send most (findOneAndUpdate, create one, updateOne by `_id`).
 */
import { type Bench, type Captured, call, docsUrl, type Row } from '../context.js';
import { cycle, doc, GROUP_SIZE, partitions, UPDATE_MATCHES, VARIANTS } from '../data.js';
import { compare, load, median, ms, peakRss, profiled, timeIt } from '../measure.js';
import { handTarget } from '../report.js';

/** The least share of the hand-written server's requests/s for a write of one document. */
export const SINGLE_WRITE_TARGET = 0.7;
export const CREATE_ONE = 'create one document without _id';
export const UPDATE_ONE = 'updateOne by _id ($inc)';

/** updateMany with $inc over 10,000 documents: time per request, sequentially. */
export async function runUpdateMany(bench: Bench, values: Captured['values']): Promise<void> {
  const { options, results, workplace } = bench;
  const baseline = bench.baseline?.url ?? '';
  const handWritten = bench.handWritten?.url ?? '';
  const buckets = partitions(options.large, UPDATE_MATCHES);
  const apiTimes: number[] = [];
  const baseTimes: number[] = [];
  const handTimes: number[] = [];
  let peakUpdate = 0;
  const updateScenario = `updateMany $inc (${Math.min(UPDATE_MATCHES, options.large)} docs matched)`;
  await profiled(
    bench,
    updateScenario,
    async () => {
      for (let k = 0; k < options.runs * 2; k++) {
        const { result, peak } = await peakRss(bench.api.pid, () =>
          timeIt(() =>
            call(bench, 'POST', `/v1/workplaces/${workplace}/storages/large/update`, {
              query: { bucket: k % buckets },
              doc: { $inc: { n: 1 } },
            }),
          ),
        );
        apiTimes.push(result);
        peakUpdate = Math.max(peakUpdate, peak);
        const v = values.get('update')?.[k % VARIANTS];
        if (baseline && v) {
          baseTimes.push(
            await timeIt(async () => {
              const res = await fetch(`${baseline}/q/update`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ v }),
              });
              await res.text();
            }),
          );
        }
        if (handWritten) {
          handTimes.push(
            await timeIt(async () => {
              const res = await fetch(`${handWritten}/large/update`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ query: { bucket: k % buckets }, doc: { $inc: { n: 1 } } }),
              });
              await res.text();
            }),
          );
        }
      }
    },
    () => [apiTimes.length, baseTimes.length],
  );
  const upd: Row = {
    scenario: updateScenario,
    api: ms(median(apiTimes)),
    rssPeak: peakUpdate,
    unit: 'ms/request',
  };
  if (baseTimes.length) upd.base = ms(median(baseTimes));
  if (handTimes.length) upd.hand = ms(median(handTimes));
  results.rows.push(upd);
  if (upd.base) {
    const r = upd.api.p50 / Math.max(upd.base.p50, 1);
    results.targets.push([
      'updateMany of 10,000 <= 3 x one SQL UPDATE',
      r <= 3,
      `${r.toFixed(2)} x (${upd.api.p50} vs ${upd.base.p50} ms)`,
    ]);
  }
}

/**
 * findOneAndUpdate: each request takes the least-used document of one group of 100 (sort on an
 * unindexed counter, the group indexed), adds one to its counter and returns it after the change,
 * as a lease or work queue does; 200 groups in turn, so concurrent requests rarely want one row.
 */
export function findOneAndUpdateBody(i: number, size: number) {
  return {
    query: { group: (i * 7919) % partitions(size, GROUP_SIZE) },
    sort: { n: 1 } as Record<string, 1 | -1>,
    doc: { $inc: { n: 1 } },
    fields: { n: 1 },
    returnDocument: 'after',
  };
}

export async function runFindOneAndUpdate(bench: Bench, values: Captured['values']): Promise<void> {
  const baseline = bench.baseline?.url ?? '';
  const handWritten = bench.handWritten?.url ?? '';
  const apiBodies = cycle(
    Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(findOneAndUpdateBody(i, bench.options.large))),
  );
  const vs = values.get('findOneAndUpdate');
  const baseBodies = vs ? cycle(vs.map((v) => JSON.stringify({ v }))) : undefined;
  const row = await compare(
    bench,
    `findOneAndUpdate, least-used of ${GROUP_SIZE} ($inc, returnDocument after)`,
    (warmUp) => load(bench, docsUrl(bench, 'large', 'find-one-and-update'), apiBodies, { warmUp }),
    baseBodies
      ? (warmUp) => load(bench, `${baseline}/q/findOneAndUpdate`, baseBodies, { warmUp })
      : undefined,
    handWritten
      ? (warmUp) => load(bench, `${handWritten}/large/find-one-and-update`, apiBodies, { warmUp })
      : undefined,
  );
  bench.results.rows.push(row);
  handTarget(bench.results, row, SINGLE_WRITE_TARGET);
}

/**
 * One document without `_id` a request, into the large collection with all its indexes (the unique
 * email among them): an insert costs what the table it goes into makes it cost. Each side numbers
 * its documents on from the seeded ones, so that their emails stay unique. It adds documents to the
 * large collection: main() runs it after every scenario that counts them.
 */
export async function runCreateOne(bench: Bench): Promise<void> {
  const LARGE = bench.options.large;
  const handWritten = bench.handWritten?.url ?? '';
  const buckets = partitions(LARGE, UPDATE_MATCHES);
  const groups = partitions(LARGE, GROUP_SIZE);
  const numbered = () => {
    let i = LARGE;
    return () => {
      const { _id, ...rest } = doc(i++, buckets, groups);
      return JSON.stringify({ docs: [rest] });
    };
  };
  const apiBodies = numbered();
  const handBodies = numbered();
  const row = await compare(
    bench,
    CREATE_ONE,
    (warmUp) => load(bench, docsUrl(bench, 'large', 'create'), apiBodies, { warmUp }),
    undefined,
    handWritten ? (warmUp) => load(bench, `${handWritten}/large/create`, handBodies, { warmUp }) : undefined,
  );
  bench.results.rows.push(row);
  handTarget(bench.results, row, SINGLE_WRITE_TARGET);
}

/** updateOne by `_id` with $inc on one field: a change to a document the client already knows. */
export function updateOneBody(i: number, large: number) {
  return { query: { _id: `u${(i * 7919) % large}` }, doc: { $inc: { n: 1 } } };
}

export async function runUpdateOne(bench: Bench): Promise<void> {
  const handWritten = bench.handWritten?.url ?? '';
  const bodies = cycle(
    Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(updateOneBody(i, bench.options.large))),
  );
  const row = await compare(
    bench,
    UPDATE_ONE,
    (warmUp) => load(bench, docsUrl(bench, 'large', 'update-one'), bodies, { warmUp }),
    undefined,
    handWritten ? (warmUp) => load(bench, `${handWritten}/large/update-one`, bodies, { warmUp }) : undefined,
  );
  bench.results.rows.push(row);
  handTarget(bench.results, row, SINGLE_WRITE_TARGET);
}
