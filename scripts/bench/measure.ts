/**
 * Measuring: HTTP load with autocannon, requests timed one by one, the CPU time and RSS of the
 * processes meanwhile (from /proc), the CPU profiles of `--cpu-prof`, and compare(), which
 * alternates the sides' runs and takes medians.
 */
import type { ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import autocannon from 'autocannon';
import { type Bench, type Figures, jsonHeaders, type Row } from './context.js';
import { handRatioWithSpread, ratioWithSpread } from './report.js';

/**
 * Requests per database connection before a scenario is measured: PostgreSQL plans a prepared
 * statement for its values for five executions, then may keep its generic plan, and a measured run
 * must see only the plan the server will run from then on.
 */
const WARM_UP_PER_CONNECTION = 30;
/**
 * Each server's pool (DB_POOL_MAX, poolMax). postgres.js hands a query to its idle connections in
 * turn, so a run at fewer HTTP connections still spreads its requests over the whole pool.
 */
const DB_POOL = 10;

// ---------------------------------------------------------------------------------------------
// Processes' CPU time and memory

/** User + system CPU time of a process so far, in milliseconds. */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) || 0) + (Number(fields[12]) || 0)) * 10;
}

/**
 * A process and its children (the workers of a server started with WORKERS > 1 are children of
 * its primary), whose CPU times and RSS the figures sum.
 */
async function processTree(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const children: number[] = [];
  for (const task of tasks) {
    const text = await readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => '');
    for (const child of text.split(' ').filter(Boolean)) children.push(Number(child));
  }
  return [pid, ...children];
}

/** CPU time of a process and its children (processTree), in milliseconds. */
async function treeCpuMs(pid: number): Promise<number> {
  let total = 0;
  for (const p of await processTree(pid)) total += await cpuMs(p);
  return total;
}

export async function rssMb(pid: number): Promise<number> {
  let kb = 0;
  for (const p of await processTree(pid)) {
    const status = await readFile(`/proc/${p}/status`, 'utf8').catch(() => '');
    kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  return kb / 1024;
}

/** Samples a process's RSS every 200 ms while `work` runs; returns the peak. */
export async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = await rssMb(pid);
  const timer = setInterval(async () => {
    peak = Math.max(peak, await rssMb(pid));
  }, 200);
  try {
    const result = await work();
    peak = Math.max(peak, await rssMb(pid));
    return { result, peak };
  } finally {
    clearInterval(timer);
  }
}

/** CPU time of every process whose command is `postgres` (the server and its backends), in ms. */
async function postgresCpuMs(): Promise<number> {
  let total = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === 'postgres') total += await cpuMs(Number(pid));
  }
  return total;
}

/** Busy CPU time of the whole machine so far (all cores), in ms. */
async function machineBusyMs(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  // user nice system idle iowait irq softirq, in 1/100 s; steal (other guests' time) is not ours.
  const ticks = line.split(/\s+/).slice(1, 8).map(Number);
  return [0, 1, 2, 5, 6].reduce((sum, i) => sum + (ticks[i] ?? 0), 0) * 10;
}

// ---------------------------------------------------------------------------------------------
// Figures

export async function timeIt(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** Figures of a scenario timed per request, in ms. */
export const ms = (x: number): Figures => ({
  rps: 1000 / x,
  p50: Math.round(x),
  p99: Math.round(x),
  mean: x,
});

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

// ---------------------------------------------------------------------------------------------
// Load

/**
 * The fewest requests of a warm-up: WARM_UP_PER_CONNECTION on each connection of every pool that
 * serves them (one per API process with WORKERS > 1).
 */
export const warmUpRequests = (bench: Bench, connections: number) =>
  WARM_UP_PER_CONNECTION * Math.max(connections, DB_POOL) * bench.options.workers;

/**
 * `duration` seconds of load. A warm-up (`warmUp`, compare()'s untimed first run) also goes on
 * until warmUpRequests have been answered: a slow scenario, such as a bulk create, answers fewer
 * than that in the duration, and would be measured before its statements reach their generic plans.
 */
export async function load(
  bench: Bench,
  url: string,
  bodies: () => string,
  {
    connections = bench.options.connections,
    duration = bench.options.duration,
    headers = jsonHeaders(bench),
    warmUp = false,
  } = {},
): Promise<Figures> {
  const run = async (until: { duration: number } | { amount: number }) => {
    const result = await autocannon({
      url,
      connections,
      ...until,
      method: 'POST',
      headers,
      requests: [{ setupRequest: (req) => ({ ...req, body: bodies() }) }],
    });
    if (result.non2xx > 0 || result.errors > 0) {
      throw new Error(`${url}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
    }
    return result;
  };
  const result = await run({ duration });
  const missing = warmUp ? warmUpRequests(bench, connections) - result.requests.total : 0;
  if (missing > 0) await run({ amount: Math.max(missing, connections) });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.mean,
    requests: result.requests.total,
  };
}

/**
 * Runs `work` (a load) and adds the CPU time per request that the process `pid`, PostgreSQL and the
 * whole machine spent meanwhile. On 2 shared cores requests/s follow the machine's figure: the
 * server, PostgreSQL and this load generator compete for the same CPU.
 */
async function withCpu(
  bench: Bench,
  pid: number | undefined,
  work: () => Promise<Figures>,
): Promise<Figures> {
  if (pid === undefined) return work();
  const before = [await treeCpuMs(pid), await postgresCpuMs(), await machineBusyMs()] as const;
  const figures = await work();
  const after = [await treeCpuMs(pid), await postgresCpuMs(), await machineBusyMs()] as const;
  const n = figures.requests;
  const per = (i: 0 | 1 | 2) => (n ? ((after[i] - before[i]) * 1000) / n : undefined);
  return { ...figures, cpu: per(0), ...(bench.options.embedded ? {} : { pg: per(1) }), machine: per(2) };
}

// ---------------------------------------------------------------------------------------------
// CPU profiles

/** Gives a server's profiler hook an order and waits until it is carried out (cpu-profiler.ts). */
function profiler(child: ChildProcess | undefined, message: object): Promise<void> {
  if (!child) return Promise.resolve();
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve());
    child.send(message, (err) => err && reject(err));
  });
}

/**
 * With `--cpu-prof`, profiles both servers over `work` (a scenario's measured runs) into
 * `DIR/<server|baseline>/<scenario>.cpuprofile`, and says how many requests each profile holds:
 * self time divided by that is a figure per request.
 */
export async function profiled(
  bench: Bench,
  scenario: string,
  work: () => Promise<void>,
  requests: () => number[],
) {
  const cpuProf = bench.options.cpuProf;
  if (!cpuProf) return work();
  const name = `${scenario
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}.cpuprofile`;
  const sides = [
    ['server', bench.api.child],
    ['baseline', bench.baseline?.child],
  ] as const;
  for (const [, child] of sides) await profiler(child, { profile: 'start' });
  await work();
  const counts = requests();
  const written: string[] = [];
  for (const [i, [side, child]] of sides.entries()) {
    if (!child) continue;
    const file = path.join(cpuProf, side, name);
    await profiler(child, { profile: 'stop', file });
    written.push(`${path.relative(cpuProf, file)} (${counts[i] ?? 0} requests)`);
  }
  process.stderr.write(`    profiles: ${written.join(', ')}\n`);
}

// ---------------------------------------------------------------------------------------------
// Comparing the sides

/** One side's run of a scenario; `warmUp` for compare()'s untimed first run (see load). */
type Run = (warmUp: boolean) => Promise<Figures>;

/**
 * Alternates API, baseline and hand-written runs (API, baseline, hand-written, repeat), so all
 * see the same noise; medians of each.
 */
export async function compare(
  bench: Bench,
  scenario: string,
  apiRun: Run,
  baseRun: Run | undefined,
  handRun?: Run,
): Promise<Row> {
  const a: Figures[] = [];
  const b: Figures[] = [];
  const h: Figures[] = [];
  let rssPeak = 0;
  // Untimed first runs, so that no side is measured while it compiles its hot paths or before its
  // prepared statements have settled on their plans.
  await apiRun(true);
  if (baseRun) await baseRun(true);
  if (handRun) await handRun(true);
  const total = (xs: Figures[]) => xs.reduce((sum, x) => sum + (x.requests ?? 0), 0);
  await profiled(
    bench,
    scenario,
    async () => {
      for (let i = 0; i < bench.options.runs; i++) {
        const serverPid = bench.api.pid;
        const { result, peak } = await peakRss(serverPid, () =>
          withCpu(bench, serverPid, () => apiRun(false)),
        );
        a.push(result);
        rssPeak = Math.max(rssPeak, peak);
        if (baseRun) b.push(await withCpu(bench, bench.baseline?.pid, () => baseRun(false)));
        if (handRun) h.push(await withCpu(bench, bench.handWritten?.pid, () => handRun(false)));
      }
    },
    () => [total(a), total(b)],
  );
  const med = (xs: Figures[]): Figures => {
    const of = (k: 'cpu' | 'pg' | 'machine') => {
      const v = xs.flatMap((x) => (x[k] === undefined ? [] : [x[k]]));
      return v.length ? { [k]: median(v) } : {};
    };
    return {
      rps: median(xs.map((x) => x.rps)),
      p50: median(xs.map((x) => x.p50)),
      p99: median(xs.map((x) => x.p99)),
      mean: median(xs.map((x) => x.mean ?? 0)),
      ...of('cpu'),
      ...of('pg'),
      ...of('machine'),
    };
  };
  const row: Row = { scenario, api: med(a), rssPeak, ...(baseRun ? { base: med(b) } : {}) };
  if (baseRun) {
    // Each API run is compared with the baseline run right after it, under the same noise: on a
    // shared machine a slow spell of some seconds moves both runs of a pair, not their ratio.
    row.pairRatios = a.map((x, i) => x.rps / (b[i] as Figures).rps);
    row.ratio = median(row.pairRatios);
    row.p99Ratio = median(a.map((x, i) => x.p99 / Math.max((b[i] as Figures).p99, 1)));
  }
  if (handRun) {
    row.hand = med(h);
    row.handPairRatios = a.map((x, i) => x.rps / (h[i] as Figures).rps);
    row.handRatio = median(row.handPairRatios);
    row.handP99Ratio = median(a.map((x, i) => x.p99 / Math.max((h[i] as Figures).p99, 1)));
  }
  process.stderr.write(
    `  ${scenario}: ${row.api.rps.toFixed(0)} req/s${row.base ? ` (baseline ${row.base.rps.toFixed(0)}; ratio ${ratioWithSpread(row)})` : ''}${row.hand ? ` (hand-written ${row.hand.rps.toFixed(0)}; ratio ${handRatioWithSpread(row)})` : ''}\n`,
  );
  return row;
}
