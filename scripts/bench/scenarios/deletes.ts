/** The delete scenario: deleteMany by an indexed field, on a collection of its own. */
import { type Bench, call, docsUrl } from '../context.js';
import { doc, fill } from '../data.js';
import { compare, load, warmUpRequests } from '../measure.js';
import type { Options } from '../options.js';
import { handTarget } from '../report.js';
import { SINGLE_WRITE_TARGET } from './writes.js';

/** Documents one deleteMany request deletes: the `batch` of the delete scenario's collection. */
const DELETE_BATCH = 3;
export const DELETE_MANY = `deleteMany on an indexed field (${DELETE_BATCH} documents/request)`;

/**
 * The most deleteMany requests per second a side is expected to answer: on PostgreSQL about twice
 * what the hand-written server (the faster side) answers on the 2-core machine, so that a quieter
 * machine does not exhaust it; embedded, the API runs alone, and slower. The delete scenario's
 * collection holds enough batches for this rate over every run and the warm-up: set too low, the
 * scenario runs dry (its last requests match nothing and cost less than a delete), and its row and
 * a target say so.
 */
const deleteRateCeiling = (options: Options) => (options.embedded ? 1500 : 6000);

/**
 * The batches the delete scenario's collection holds: its highest expected rate over the warm-up
 * and every measured run. A warm-up lasts --duration or warmUpRequests, whichever takes longer.
 */
const deleteBatches = (bench: Bench) => {
  const { options } = bench;
  return (
    Math.ceil(deleteRateCeiling(options) * options.duration) * (options.runs + 1) +
    warmUpRequests(bench, options.connections) +
    1
  );
};

/**
 * The delete scenario's own collection, `deletes`: documents of the large kind, DELETE_BATCH of
 * them in each `batch` (indexed), deleteBatches of those. The hand-written server copies it.
 */
export async function seedDeletes(bench: Bench): Promise<void> {
  const count = deleteBatches(bench) * DELETE_BATCH;
  const started = Date.now();
  await fill(bench, 'deletes', count, (i) => ({ ...doc(i, 1, 1), batch: Math.floor(i / DELETE_BATCH) }));
  await call(bench, 'POST', `/v1/workplaces/${bench.workplace}/storages/deletes/indexes`, {
    name: 'byBatch',
    key: ['batch'],
  });
  process.stderr.write(
    `seeded deletes: ${count} documents in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

/**
 * deleteMany with a filter on an indexed field, each request the next batch of its side's copy of
 * `deletes` (batch 0 went to checkHandWrittenWrites). Should a side take more batches than there
 * are, its last requests delete nothing and cost less: the row and a target say so, and
 * deleteRateCeiling must grow.
 */
export async function runDeleteMany(bench: Bench): Promise<void> {
  const { results } = bench;
  const handWritten = bench.handWritten?.url ?? '';
  const batches = deleteBatches(bench);
  const side = () => {
    let batch = 1;
    return { bodies: () => JSON.stringify({ query: { batch: batch++ } }), taken: () => batch - 1 };
  };
  const apiSide = side();
  const handSide = side();
  const row = await compare(
    bench,
    DELETE_MANY,
    (warmUp) => load(bench, docsUrl(bench, 'deletes', 'delete'), apiSide.bodies, { warmUp }),
    undefined,
    handWritten
      ? (warmUp) => load(bench, `${handWritten}/deletes/delete`, handSide.bodies, { warmUp })
      : undefined,
  );
  const dry = Math.max(apiSide.taken(), handSide.taken()) >= batches;
  if (dry) row.scenario += ' (RAN DRY: its last requests deleted nothing)';
  results.rows.push(row);
  handTarget(results, row, SINGLE_WRITE_TARGET);
  results.targets.push([
    `${DELETE_MANY}: every request had a batch to delete`,
    !dry,
    `batches 1 to ${apiSide.taken()} taken by the API${handWritten ? `, to ${handSide.taken()} by the hand-written server` : ''}, of ${batches - 1}`,
  ]);
}
