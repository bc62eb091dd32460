/** The bulk create scenarios: 1,000 documents a request. */
import { newObjectId } from '../../../db/storage/documents.js';
import { type Bench, docsUrl } from '../context.js';
import { doc } from '../data.js';
import { compare, load } from '../measure.js';
import { selected } from '../options.js';
import { handTarget, ratioWithSpread } from '../report.js';

const BULK_WITHOUT_ID = 'bulk create without _id (1,000 docs/request)';
const BULK_MIXED = 'bulk create, mixed: half with _id (1,000 docs/request)';

/**
 * Bulk create, 1,000 documents a request, 4 requests at a time: documents without `_id`, as most
 * clients send them, so each server gives them ids; then half with `_id` and half without,
 * alternating. The baseline (our insert statement alone) is sent the first kind with the ids the
 * API would give already in them: giving ids is the API's work, not its SQL's.
 */
export async function runBulkCreate(bench: Bench): Promise<void> {
  const { results } = bench;
  const baseline = bench.baseline?.url ?? '';
  const handWritten = bench.handWritten?.url ?? '';
  // One sequence for every side and both scenarios: no id given in a request is ever given again.
  let seq = 0;
  const batch = (withId: (k: number) => boolean) => {
    const start = seq;
    seq += 1000;
    return Array.from({ length: 1000 }, (_, k) => {
      const { _id, ...rest } = doc(start + k, 1, 1);
      return withId(k) ? { _id: `m${start + k}`, ...rest } : rest;
    });
  };
  const scenarios = [
    { name: BULK_WITHOUT_ID, withId: () => false },
    { name: BULK_MIXED, withId: (k: number) => k % 2 === 0 },
  ].filter((x) => selected(bench.options, x.name));
  for (const { name, withId } of scenarios) {
    const bodies = () => JSON.stringify({ docs: batch(withId) });
    const options = { connections: 4 };
    const row = await compare(
      bench,
      name,
      (warmUp) => load(bench, docsUrl(bench, 'bulkapi', 'create'), bodies, { ...options, warmUp }),
      baseline && name === BULK_WITHOUT_ID
        ? (warmUp) =>
            load(
              bench,
              `${baseline}/q/bulk`,
              () =>
                JSON.stringify({
                  v: [JSON.stringify(batch(withId).map((d) => ({ _id: newObjectId(), ...d })))],
                }),
              { ...options, warmUp },
            )
        : undefined,
      handWritten
        ? (warmUp) => load(bench, `${handWritten}/bulk/create`, bodies, { ...options, warmUp })
        : undefined,
    );
    row.unit = 'docs/s';
    results.rows.push(row);
    if (row.base) {
      results.targets.push([
        `${name}: >= 0.7 x baseline multi-row insert`,
        (row.ratio as number) >= 0.7,
        `${ratioWithSpread(row)} x`,
      ]);
    }
    handTarget(results, row, 0.8, 'documents/s');
  }
}
