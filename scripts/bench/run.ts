/**
 * The benchmark suite (`npm run bench`). It starts the real server (`server.ts`), the baseline
 * (scripts/bench/baseline.ts, our SQL without our layers) and the hand-written server
 * (scripts/bench/hand-written.ts, the simplest SQL for the data, on copies of the collections) as
 * separate processes on the same database, seeds two collections of realistic documents (a small
 * one and a large one), and drives HTTP load at all three with autocannon from this process. Every figure is a median of several alternating runs, and every ratio is the
 * median of the ratios of adjacent API and baseline runs: absolute numbers on a shared 2-core
 * machine mean little.
 *
 *   npm run bench                               # 1,000,000 + 10,000 documents on PostgreSQL
 *   npm run bench -- --docs 200000 --runs 9     # smaller, more runs
 *   npm run bench -- --embedded                 # embedded PGlite (100,000 documents, no baseline)
 *   npm run bench -- --soak 60                  # RSS over 60 s of sustained reads (the default)
 *   npm run bench -- --docs 100000 --only 'cursor walk'   # every page of a walk with `cursor`, timed
 *   npm run bench -- --docs 200000 --only '$group'        # aggregate's $group against hand-written SQL
 *   npm run bench -- --workers 2                # the API as 2 processes (WORKERS=2), then its reads with 1
 *   npm run bench -- --cpu-prof DIR             # also a CPU profile of each scenario's measured runs, per server
 *   BENCH_NODE_FLAGS=--trace-gc-nvp npm run bench -- --only lookup   # Node options for both servers
 *
 * The servers' logs go to files in a temporary directory (named at the end), not through a pipe
 * to this process: reading them here would take CPU from the load generator for the API only.
 *
 * This file runs the steps in order; options.ts reads the command line, context.ts holds what the
 * steps share, processes.ts starts and stops the servers, data.ts seeds, measure.ts measures,
 * report.ts prints, and scenarios/ holds the scenarios, a file per family.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { captureStatements } from './baseline-statements.js';
import type { Bench, Captured, Processes, Results } from './context.js';
import { randomWorkplaceName, seedWorkplace, settle } from './data.js';
import { checkHandWritten, checkHandWrittenWrites, seedHandWritten } from './hand-written-setup.js';
import { parseOptions, selected } from './options.js';
import { cleanUp, prepareDirectories, startBaseline, startHandWritten, startServer } from './processes.js';
import { report } from './report.js';
import { runGroupAggregate } from './scenarios/aggregate.js';
import { runBulkCreate } from './scenarios/bulk-create.js';
import { runCursorWalk } from './scenarios/cursor-walk.js';
import { DELETE_MANY, runDeleteMany, seedDeletes } from './scenarios/deletes.js';
import { OWNER_RULE, runOwnerRuleRead } from './scenarios/end-users.js';
import { runOidcTokenEndpoint } from './scenarios/oidc.js';
import { runReads } from './scenarios/reads.js';
import { runSustainedReads } from './scenarios/soak.js';
import { runTtlExpiry } from './scenarios/ttl.js';
import { runOneProcessReads } from './scenarios/workers.js';
import { runWorkplaceCycle } from './scenarios/workplaces.js';
import {
  CREATE_ONE,
  runCreateOne,
  runFindOneAndUpdate,
  runUpdateMany,
  runUpdateOne,
  UPDATE_ONE,
} from './scenarios/writes.js';

const options = parseOptions();

/** Start the server, seed, capture the baseline's SQL, then each scenario in turn. */
async function main() {
  const admin = `wpa_${randomBytes(32).toString('base64url')}`;
  const workplace = randomWorkplaceName();
  const only = (scenario: string) => selected(options, scenario);
  const procs: Processes = { logDir: '', children: [] };
  let started: Bench | undefined;
  let sql: postgres.Sql | undefined;
  try {
    await prepareDirectories(procs, options);
    const api = await startServer(procs, options, admin);
    const results: Results = { rows: [], scaling: [], targets: [], workers: [] };
    const bench: Bench = { options, admin, procs, api, workplace, results };
    started = bench;
    await seedWorkplace(bench);
    if (only(DELETE_MANY)) await seedDeletes(bench);
    let captured: Captured = { statements: {}, values: new Map() };
    // PGlite is one process: the baseline cannot have a connection of its own to it.
    // The hand-written server has no PGlite variant: it too needs a connection of its own.
    if (!options.embedded) {
      sql = postgres(options.databaseUrl, { max: 2, onnotice: () => {} });
      await seedHandWritten(sql, workplace);
      await settle(sql);
      captured = await captureStatements(sql, bench);
      bench.baseline = await startBaseline(procs, options, captured.statements);
      bench.handWritten = await startHandWritten(procs, options, workplace);
      await checkHandWritten(bench);
      await checkHandWrittenWrites(bench);
    }
    await runReads(bench, captured.values);
    await runBulkCreate(bench);
    if (only('updateMany')) await runUpdateMany(bench, captured.values);
    if (only('findOneAndUpdate')) await runFindOneAndUpdate(bench, captured.values);
    if (only(UPDATE_ONE)) await runUpdateOne(bench);
    if (only('workplace + collection')) await runWorkplaceCycle(bench);
    if (only('cursor walk')) await runCursorWalk(bench);
    if (only('$group')) await runGroupAggregate(bench, sql);
    if (sql && only('TTL expiry')) await runTtlExpiry(bench, sql);
    // After the cursor walk and the TTL pass, which count on the large collection's size.
    if (only(CREATE_ONE)) await runCreateOne(bench);
    if (only(DELETE_MANY)) await runDeleteMany(bench);
    if (only('OIDC token endpoint')) await runOidcTokenEndpoint(bench);
    if (only(OWNER_RULE)) await runOwnerRuleRead(bench);
    if (options.soak > 0 && only('sustained reads')) await runSustainedReads(bench);
    if (options.workers > 1) await runOneProcessReads(bench);
    report(bench);
  } finally {
    await cleanUp(procs, started, workplace, sql);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
