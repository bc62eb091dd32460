/** With `--workers N`: the API's reads with N processes against one. */
import { type Bench, docsUrl } from '../context.js';
import { cycle, VARIANTS } from '../data.js';
import { compare, load } from '../measure.js';
import { selected } from '../options.js';
import { startServer, stopServer } from '../processes.js';
import { READS } from './reads.js';

/**
 * With `--workers N` (N > 1): the large collection's read scenarios again with one API process,
 * for the scaling table. The server is restarted with WORKERS=1 on the same database, and the
 * reads run as before (an untimed warm-up, then medians of --runs runs), API alone.
 */
export async function runOneProcessReads(bench: Bench): Promise<void> {
  const { options, results } = bench;
  process.stderr.write(`restarting the server with WORKERS=1 (was ${options.workers})\n`);
  await stopServer(bench.api);
  bench.api = await startServer(bench.procs, options, bench.admin, 1, 'server-1');
  for (const s of READS.filter((r) => selected(options, r.name))) {
    const row = results.rows.find((r) => r.scenario === `${s.name} (${options.large} docs)`);
    if (!row) continue;
    const bodies = cycle(
      Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(s.body(i, options.large))),
    );
    const one = await compare(
      bench,
      `${s.name} (${options.large} docs, 1 process)`,
      (warmUp) => load(bench, docsUrl(bench, 'large', s.op), bodies, { warmUp }),
      undefined,
    );
    results.workers.push({ name: s.name, one: one.api, many: row.api });
  }
}
