/** The soak: the server's memory over sustained reads. */
import { type Bench, docsUrl } from '../context.js';
import { cycle, VARIANTS } from '../data.js';
import { load, rssMb } from '../measure.js';
import { EQUALITY_READ } from './reads.js';

/** Sustained reads: RSS after warm-up against RSS after SOAK seconds. */
export async function runSustainedReads(bench: Bench): Promise<void> {
  const { large, soak } = bench.options;
  const bodies = cycle(
    Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(EQUALITY_READ.body(i, large))),
  );
  await load(bench, docsUrl(bench, 'large', 'read'), bodies, { duration: 5 });
  const warm = await rssMb(bench.api.pid);
  await load(bench, docsUrl(bench, 'large', 'read'), bodies, { duration: soak });
  const after = await rssMb(bench.api.pid);
  bench.results.targets.push([
    `RSS after ${soak} s of reads within 50 MB of warm-up`,
    after - warm <= 50,
    `${warm.toFixed(0)} -> ${after.toFixed(0)} MB`,
  ]);
}
