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
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { findCollection } from '../../db/storage/catalog.js';
import { countStatement, newObjectId, readStatement } from '../../db/storage/documents.js';
import { sweepExpired } from '../../db/storage/ttl.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { compileFilter } from '../../mongo/filter/sql.js';
import { compileOrderKeys, orderByText, parseSort } from '../../mongo/sort.js';
import { Params } from '../../mongo/value/params.js';
import { Browser, formAction } from '../browser.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const CITIES = Array.from({ length: 50 }, (_, i) => `City${String.fromCharCode(65 + (i % 26))}${i}`);
const VARIANTS = 200;
/** Documents matched by one updateMany. */
const UPDATE_MATCHES = 10_000;
/** Documents in one `group`: the count scenario that does the same work at every size. */
const GROUP_SIZE = 100;
/** How many values a field takes so that each holds `per` of `size` documents (`bucket`, `group`). */
const partitions = (size: number, per: number) => Math.max(1, Math.floor(size / per));
/** Documents one deleteMany request deletes: the `batch` of the delete scenario's collection. */
const DELETE_BATCH = 3;
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
// Options

const { values: opts } = parseArgs({
  options: {
    docs: { type: 'string' },
    small: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '5' },
    runs: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
    soak: { type: 'string', default: '60' },
    embedded: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    workers: { type: 'string', default: '1' },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: npm run bench -- [--docs N] [--small N] [--duration s] [--runs n] [--connections n] [--soak s] [--embedded] [--cpu-prof DIR] [--workers N] [--only TEXT[,TEXT...]]',
  );
  process.exit(0);
}
const int = (v: string | undefined, name: string, min: number) => {
  const n = Number(String(v).replaceAll('_', ''));
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return n;
};
const embedded = opts.embedded === true;
const LARGE = int(opts.docs ?? (embedded ? '100000' : '1000000'), 'docs', 1000);
const SMALL = int(opts.small, 'small', 1000);
const DURATION = int(opts.duration, 'duration', 1);
const RUNS = int(opts.runs, 'runs', 1);
const CONNECTIONS = int(opts.connections, 'connections', 1);
const SOAK = int(opts.soak, 'soak', 0);
/** API processes (the server's WORKERS): PostgreSQL only, the embedded database is one process. */
const WORKERS = int(opts.workers, 'workers', 1);
if (embedded && WORKERS > 1)
  throw new Error('--workers > 1 needs PostgreSQL; the embedded database is one process');
const ONLY = opts.only
  ?.toLowerCase()
  .split(',')
  .map((part) => part.trim());
/** Whether `--only` (parts of scenario names, comma-separated) selects the scenario; all run without it. */
const selected = (scenario: string) =>
  ONLY === undefined || ONLY.some((part) => scenario.toLowerCase().includes(part));
const CPU_PROF = opts['cpu-prof'] ? path.resolve(opts['cpu-prof']) : undefined;
const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
/** Node options both servers run with (BENCH_NODE_FLAGS, space-separated): the same for each, so the ratio stays ours. */
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);

// ---------------------------------------------------------------------------------------------
// Processes

const children: ChildProcess[] = [];
let dataDir: string | undefined;
let logDir = '';

/**
 * Starts one of the two servers (a TypeScript entry point) in its own process with NODE_FLAGS, its
 * output going to `<logDir>/<name>.log`, and resolves once that output matches `ready`.
 */
async function start(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const logFile = path.join(logDir, `${name}.log`);
  const out = openSync(logFile, 'w');
  // The profiler hook is TypeScript: it is loaded after tsx.
  const hook = CPU_PROF ? ['--import', path.join(ROOT, 'scripts/bench/cpu-profiler.ts')] : [];
  const child = spawn(process.execPath, [...NODE_FLAGS, '--import', 'tsx', ...hook, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    // The profiler hook takes its orders over an IPC channel.
    stdio: CPU_PROF ? ['ignore', out, out, 'ipc'] : ['ignore', out, out],
  });
  children.push(child);
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });
  for (;;) {
    const text = await readFile(logFile, 'utf8');
    const m = ready.exec(text);
    if (m) return { child, match: m };
    if (exited !== undefined) throw new Error(`${name} exited with ${exited} before it was ready:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

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

async function rssMb(pid: number): Promise<number> {
  let kb = 0;
  for (const p of await processTree(pid)) {
    const status = await readFile(`/proc/${p}/status`, 'utf8').catch(() => '');
    kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  return kb / 1024;
}

/** Samples a process's RSS every 200 ms while `work` runs; returns the peak. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
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

// ---------------------------------------------------------------------------------------------
// Data

function doc(i: number, buckets: number, groups: number) {
  return {
    _id: `u${i}`,
    email: `user${i}@example.com`,
    name: `User ${i}`,
    age: 18 + (i % 80),
    city: CITIES[i % CITIES.length],
    bucket: i % buckets,
    group: i % groups,
    n: 0,
    joined: new Date(Date.UTC(2020, 0, 1) + (i % 1500) * 86_400_000).toISOString(),
    profile: { score: (i * 7919) % 1000, tags: [`t${i % 7}`, `t${i % 11}`], verified: i % 3 === 0 },
    orders: [
      { sku: `SKU-${i % 997}`, qty: 1 + (i % 5), price: (i % 100) + 0.99 },
      { sku: `SKU-${(i * 31) % 997}`, qty: 1, price: 9.5 },
    ],
  };
}

const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;

// ---------------------------------------------------------------------------------------------
// HTTP helpers

const ADMIN = `wpa_${randomBytes(32).toString('base64url')}`;
let api = '';
let baseline = '';
let handWritten = '';

async function call(method: string, url: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${api}${url}`, {
    method,
    headers: { 'x-auth-token': ADMIN, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** Creates the collection and fills it through the API, 1,000 documents a request, 4 at a time. */
async function fill(
  workplace: string,
  collection: string,
  count: number,
  make: (i: number) => Record<string, unknown>,
) {
  await call('POST', `/v1/workplaces/${workplace}/storages`, { name: collection });
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const from = next;
      next += 1000;
      const docs = [];
      for (let i = from; i < Math.min(from + 1000, count); i++) docs.push(make(i));
      await call('POST', `/v1/workplaces/${workplace}/storages/${collection}/create`, { docs });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

async function seed(workplace: string, collection: string, count: number) {
  const buckets = partitions(count, UPDATE_MATCHES);
  const groups = partitions(count, GROUP_SIZE);
  const started = Date.now();
  await fill(workplace, collection, count, (i) => doc(i, buckets, groups));
  for (const index of [
    { name: 'byCity', key: ['city'] },
    { name: 'byAge', key: ['age'] },
    { name: 'byBucket', key: ['bucket'] },
    { name: 'byGroup', key: ['group'] },
    // Users look one another up by a unique field more often than by anything else but `_id`.
    { name: 'byEmail', key: ['email'], unique: true },
  ]) {
    await call('POST', `/v1/workplaces/${workplace}/storages/${collection}/indexes`, index);
  }
  process.stderr.write(
    `seeded ${collection}: ${count} documents in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

/**
 * Makes the workplace an OpenID Provider with one user and one client, signs the user in with the
 * code flow (PKCE) as a browser would, and returns a refresh_token grant request to replay.
 */
async function signInOnce(
  workplace: string,
): Promise<{ url: string; body: string; headers: Record<string, string> }> {
  const login = 'ada@example.com';
  const password = randomBytes(12).toString('base64url');
  const redirect = 'http://127.0.0.1:9/callback';
  await call('POST', `/v1/workplaces/${workplace}/storages`, { name: 'users' });
  await call('POST', `/v1/workplaces/${workplace}/storages/users/create`, {
    docs: [{ _id: 'u-ada', email: login, email_verified: true, name: 'Ada Lovelace' }],
  });
  await call('POST', `/v1/workplaces/${workplace}/oidc/password`, { login, password });
  const settings = (await call('GET', `/v1/workplaces/${workplace}/oidc`)) as { result: { token: string } };
  const reg = await fetch(`${api}/oidc/${workplace}/oidc/registration`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorizarion: `Bearer ${settings.result.token}` },
    body: JSON.stringify({
      client_name: 'bench',
      redirect_uris: [redirect],
      scope: ['email', 'offline_access'],
    }),
  });
  if (reg.status !== 201) throw new Error(`client registration: ${reg.status} ${await reg.text()}`);
  const client = ((await reg.json()) as { result: { client_id: string; client_secret: string } }).result;
  const basic = `Basic ${Buffer.from(
    `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`,
  ).toString('base64')}`;

  const issuer = `${api}/oidc/${workplace}`;
  const verifier = randomBytes(32).toString('base64url');
  const auth = new URL(`${issuer}/auth`);
  for (const [k, v] of Object.entries({
    client_id: client.client_id,
    response_type: 'code',
    scope: 'openid email offline_access',
    redirect_uri: redirect,
    state: randomBytes(8).toString('hex'),
    prompt: 'consent',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }))
    auth.searchParams.set(k, v);
  const browser = new Browser();
  const html = async (r: { page?: Response; url: string }) => {
    if (!r.page) throw new Error(`expected a page at ${r.url}`);
    return r.page.text();
  };
  const loginPage = await browser.follow(auth.href, api);
  const afterLogin = await browser.request(formAction(await html(loginPage), loginPage.url), {
    form: { login, password },
  });
  const consent = await browser.follow(
    new URL(afterLogin.headers.get('location') ?? '', loginPage.url).href,
    api,
  );
  const afterConsent = await browser.request(formAction(await html(consent), consent.url), {
    form: { decision: 'allow' },
  });
  const end = await browser.follow(
    new URL(afterConsent.headers.get('location') ?? '', consent.url).href,
    api,
  );
  const code = end.left?.searchParams.get('code');
  if (!code) throw new Error(`sign-in did not come back with a code: ${end.url}`);

  const tokenUrl = `${issuer}/token`;
  const headers = { 'content-type': 'application/x-www-form-urlencoded', authorization: basic };
  const tokens = await fetch(tokenUrl, {
    method: 'POST',
    headers,
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirect,
      code_verifier: verifier,
    }).toString(),
  });
  const grant = (await tokens.json()) as { refresh_token?: string };
  if (!grant.refresh_token) throw new Error(`no refresh token: ${JSON.stringify(grant)}`);
  return {
    url: tokenUrl,
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: grant.refresh_token }).toString(),
    headers,
  };
}

/**
 * Waits until the database has settled after the seed, as pgbench vacuums before it measures: the
 * server's background VACUUM of the freshly loaded tables has ended (after a large seed it may
 * still be running, and would share the 2 cores with the first read scenarios, tilting them by
 * whichever side it happened to overlap), and the seed's writes are checkpointed (skipped where
 * the role may not run CHECKPOINT). Maintenance must be absent twice, a second apart: the server
 * starts its VACUUM just after answering the request that triggered it.
 */
async function settle(sql: postgres.Sql) {
  const started = Date.now();
  for (let quiet = 0; quiet < 2; ) {
    await new Promise((r) => setTimeout(r, 1000));
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state = 'active'
        and query ~* '^\\s*(vacuum|analyze)'`;
    quiet = row?.n ? 0 : quiet + 1;
  }
  const checkpoint = await sql`checkpoint`.then(
    () => 'checkpointed',
    () => 'no CHECKPOINT privilege',
  );
  process.stderr.write(
    `database settled in ${((Date.now() - started) / 1000).toFixed(0)} s (${checkpoint})\n`,
  );
}

// ---------------------------------------------------------------------------------------------
// Load

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** Mean latency in ms (p50 and p99 are whole milliseconds). */
  mean?: number;
  /** The server's CPU time (user + system) per request, in microseconds. */
  cpu?: number;
  /** PostgreSQL's (all its processes), in microseconds per request. */
  pg?: number;
  /** The whole machine's busy CPU time (every process, every core), in microseconds per request. */
  machine?: number;
  requests?: number;
}

/** How much slower the large collection answers: mean latency, which p50's whole ms would blur. */
function latencyRatio(small: Figures, large: Figures): number {
  return (large.mean ?? large.p50) / Math.max(small.mean ?? small.p50, 0.01);
}

async function timeIt(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** Figures of a scenario timed per request, in ms. */
const ms = (x: number): Figures => ({ rps: 1000 / x, p50: Math.round(x), p99: Math.round(x), mean: x });

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

const JSON_HEADERS = (): Record<string, string> => ({
  'content-type': 'application/json',
  'x-auth-token': ADMIN,
});

/**
 * The fewest requests of a warm-up: WARM_UP_PER_CONNECTION on each connection of every pool that
 * serves them (one per API process with WORKERS > 1).
 */
const warmUpRequests = (connections: number) =>
  WARM_UP_PER_CONNECTION * Math.max(connections, DB_POOL) * WORKERS;

/**
 * `duration` seconds of load. A warm-up (`warmUp`, compare()'s untimed first run) also goes on
 * until warmUpRequests have been answered: a slow scenario, such as a bulk create, answers fewer
 * than that in the duration, and would be measured before its statements reach their generic plans.
 */
async function load(
  url: string,
  bodies: () => string,
  { connections = CONNECTIONS, duration = DURATION, headers = JSON_HEADERS(), warmUp = false } = {},
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
  const missing = warmUp ? warmUpRequests(connections) - result.requests.total : 0;
  if (missing > 0) await run({ amount: Math.max(missing, connections) });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.mean,
    requests: result.requests.total,
  };
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

/**
 * Runs `work` (a load) and adds the CPU time per request that the process `pid`, PostgreSQL and the
 * whole machine spent meanwhile. On 2 shared cores requests/s follow the machine's figure: the
 * server, PostgreSQL and this load generator compete for the same CPU.
 */
async function withCpu(pid: number | undefined, work: () => Promise<Figures>): Promise<Figures> {
  if (pid === undefined) return work();
  const before = [await treeCpuMs(pid), await postgresCpuMs(), await machineBusyMs()] as const;
  const figures = await work();
  const after = [await treeCpuMs(pid), await postgresCpuMs(), await machineBusyMs()] as const;
  const n = figures.requests;
  const per = (i: 0 | 1 | 2) => (n ? ((after[i] - before[i]) * 1000) / n : undefined);
  return { ...figures, cpu: per(0), ...(embedded ? {} : { pg: per(1) }), machine: per(2) };
}

interface Row {
  scenario: string;
  api: Figures;
  base?: Figures;
  rssPeak: number;
  unit?: string;
  /** The median of API / baseline over the alternating pairs of runs (requests/s, and p99). */
  ratio?: number;
  p99Ratio?: number;
  /** The requests/s ratio of each pair: how far a median near a target is from it, run to run. */
  pairRatios?: number[];
  /** The hand-written server (hand-written.ts), with the API / hand-written ratios as above. */
  hand?: Figures;
  handRatio?: number;
  handP99Ratio?: number;
  handPairRatios?: number[];
}

/** `0.80 (0.74-0.86)`: the median ratio and the lowest and highest pair. */
function withSpread(ratio: number | undefined, pairs: number[] = []): string {
  const spread =
    pairs.length > 1 ? ` (${Math.min(...pairs).toFixed(2)}-${Math.max(...pairs).toFixed(2)})` : '';
  return `${ratio?.toFixed(2)}${spread}`;
}
const ratioWithSpread = (r: Row) => withSpread(r.ratio, r.pairRatios);
const handRatioWithSpread = (r: Row) => withSpread(r.handRatio, r.handPairRatios);

let serverPid = 0;
let baselinePid: number | undefined;
let serverChild: ChildProcess | undefined;
let baselineChild: ChildProcess | undefined;
let handPid: number | undefined;

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
async function profiled(scenario: string, work: () => Promise<void>, requests: () => number[]) {
  if (!CPU_PROF) return work();
  const name = `${scenario
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}.cpuprofile`;
  const sides = [
    ['server', serverChild],
    ['baseline', baselineChild],
  ] as const;
  for (const [, child] of sides) await profiler(child, { profile: 'start' });
  await work();
  const counts = requests();
  const written: string[] = [];
  for (const [i, [side, child]] of sides.entries()) {
    if (!child) continue;
    const file = path.join(CPU_PROF, side, name);
    await profiler(child, { profile: 'stop', file });
    written.push(`${path.relative(CPU_PROF, file)} (${counts[i] ?? 0} requests)`);
  }
  process.stderr.write(`    profiles: ${written.join(', ')}\n`);
}

/** One side's run of a scenario; `warmUp` for compare()'s untimed first run (see load). */
type Run = (warmUp: boolean) => Promise<Figures>;

/**
 * Alternates API, baseline and hand-written runs (API, baseline, hand-written, repeat), so all
 * see the same noise; medians of each.
 */
async function compare(scenario: string, apiRun: Run, baseRun: Run | undefined, handRun?: Run): Promise<Row> {
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
    scenario,
    async () => {
      for (let i = 0; i < RUNS; i++) {
        const { result, peak } = await peakRss(serverPid, () => withCpu(serverPid, () => apiRun(false)));
        a.push(result);
        rssPeak = Math.max(rssPeak, peak);
        if (baseRun) b.push(await withCpu(baselinePid, () => baseRun(false)));
        if (handRun) h.push(await withCpu(handPid, () => handRun(false)));
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

// ---------------------------------------------------------------------------------------------
// Scenarios

interface ReadScenario {
  name: string;
  /** The hand-written server's route for it (hand-written.ts). */
  hand: string;
  indexed: boolean;
  /**
   * Whether the scenario does the same work at both sizes, so its latency must not grow with the
   * collection; a count of 2% of the documents counts a hundred times more at 100 times the size.
   */
  sameWork: boolean;
  op: 'read' | 'count';
  body: (
    i: number,
    size: number,
  ) => { query: Record<string, unknown>; sort?: Record<string, 1 | -1>; limit?: number };
}

const READS: ReadScenario[] = [
  {
    name: '_id lookup',
    hand: 'lookup',
    indexed: true,
    sameWork: true,
    op: 'read',
    body: (i, size) => ({ query: { _id: `u${(i * 7919) % size}` } }),
  },
  {
    // As users send it: no limit (the API's default applies), one document comes back.
    name: 'point read by unique email (1 document)',
    hand: 'email',
    indexed: true,
    sameWork: true,
    op: 'read',
    body: (i, size) => ({ query: { email: `user${(i * 7919) % size}@example.com` } }),
  },
  {
    name: 'indexed equality, limit 10',
    hand: 'equality',
    indexed: true,
    sameWork: true,
    op: 'read',
    body: (i) => ({ query: { city: pick(CITIES, i) }, limit: 10 }),
  },
  {
    name: 'indexed range + sort, limit 20',
    hand: 'range',
    indexed: true,
    sameWork: true,
    op: 'read',
    body: (i) => ({
      query: { age: { $gte: 18 + (i % 70), $lt: 28 + (i % 70) } },
      sort: { age: 1 },
      limit: 20,
    }),
  },
  {
    name: '$in on an indexed field',
    hand: 'in',
    indexed: true,
    sameWork: true,
    op: 'read',
    body: (i) => ({
      query: { city: { $in: [pick(CITIES, i), pick(CITIES, i + 17), pick(CITIES, i + 31)] } },
      limit: 20,
    }),
  },
  {
    name: 'unindexed filter, limit 10',
    hand: 'unindexed',
    indexed: false,
    sameWork: false,
    op: 'read',
    body: (i) => ({ query: { 'profile.score': 990 + (i % 10), 'profile.verified': true }, limit: 10 }),
  },
  {
    name: `count, indexed filter (${GROUP_SIZE} matches)`,
    hand: 'count-group',
    indexed: true,
    sameWork: true,
    op: 'count',
    body: (i, size) => ({ query: { group: (i * 7919) % partitions(size, GROUP_SIZE) } }),
  },
  {
    name: 'count, indexed filter (2% of the documents)',
    hand: 'count-city',
    indexed: true,
    sameWork: false,
    op: 'count',
    body: (i) => ({ query: { city: pick(CITIES, i) } }),
  },
];
/** The read the soak repeats: a page of ten documents through an index. */
const EQUALITY_READ = READS.find((r) => r.hand === 'equality') as ReadScenario;

// ---------------------------------------------------------------------------------------------
// The run: start the server, seed, capture the baseline's SQL, then each scenario in turn

/** What the scenarios measured, for the report. */
interface Results {
  rows: Row[];
  scaling: { name: string; sameWork: boolean; small: Figures; large: Figures }[];
  targets: [string, boolean, string][];
  /** With --workers N > 1: each large read scenario's figures with one API process and with N. */
  workers: { name: string; one: Figures; many: Figures }[];
}

/** A statement's bound value: text, or key bytes (mongo/value/params.ts binds keys as bytea). */
type Bound = string | Buffer;
/** A bound value as JSON carries it to the baseline server (baseline.ts turns `bytea` back into bytes). */
type Wire = string | { bytea: string };
const wire = (values: Bound[]): Wire[] =>
  values.map((v) => (typeof v === 'string' ? v : { bytea: v.toString('hex') }));

/** The SQL our compiler produces for each scenario, and each variant's bound values: what the baseline runs. */
interface Captured {
  statements: Record<string, string>;
  values: Map<string, Wire[][]>;
}

/** A workplace name of letters only, unlikely to meet one that exists. */
function randomWorkplaceName(): string {
  return `bench${randomBytes(6)
    .toString('hex')
    .replace(/\d/g, (d) => String.fromCharCode(97 + Number(d)))}`;
}

const docsUrl = (workplace: string, collection: string, op: string) =>
  `${api}/v1/workplaces/${workplace}/storages/${collection}/${op}`;

/** The elements of `xs` one after the other, round and round. */
function cycle<T>(xs: T[]): () => T {
  let i = 0;
  return () => xs[i++ % xs.length] as T;
}

/** The directories the run writes to: the servers' logs, and with `--cpu-prof` the profiles. */
async function prepareDirectories(): Promise<void> {
  logDir = await mkdtemp(path.join(os.tmpdir(), 'bench-logs-'));
  if (CPU_PROF)
    for (const side of ['server', 'baseline']) await mkdir(path.join(CPU_PROF, side), { recursive: true });
}

/** The server under test, in its own process, as `npm start` runs it. */
async function startServer(workers = WORKERS, logName = 'server'): Promise<void> {
  const serverEnv: Record<string, string> = {
    ADMIN_TOKEN: ADMIN,
    PORT: '0',
    LOG_LEVEL: 'info',
    DB_POOL_MAX: '10',
    // The TTL scenario times one pass of its own; the server's sweeper must not take its documents.
    TTL_INTERVAL_SECONDS: '86400',
  };
  if (embedded) {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-'));
    Object.assign(serverEnv, { DATA_DIR: dataDir, DATABASE_URL: '' });
  } else {
    Object.assign(serverEnv, { DATABASE_URL: databaseUrl, WORKERS: String(workers) });
  }
  const server = await start(logName, ['server.ts'], serverEnv, /Listening on (http:\/\/[^;\s"]+)/);
  api = (server.match[1] as string).replace(/\/$/, '');
  serverPid = server.child.pid as number;
  serverChild = server.child;
}

/**
 * The workplace with its small and large collections seeded, two empty ones for bulk create, and
 * when the delete scenario runs, its own collection.
 */
async function seedWorkplace(workplace: string): Promise<void> {
  await call('POST', '/v1/workplaces', { name: workplace });
  process.stderr.write(`workplace ${workplace}; seeding (${SMALL} + ${LARGE} documents)\n`);
  await seed(workplace, 'small', SMALL);
  await seed(workplace, 'large', LARGE);
  await call('POST', `/v1/workplaces/${workplace}/storages`, { name: 'bulkapi' });
  await call('POST', `/v1/workplaces/${workplace}/storages`, { name: 'bulkbase' });
  if (selected(DELETE_MANY)) await seedDeletes(workplace);
}

/**
 * The API's read statement as a hand-written server would run it: the page alone, without the
 * ORDER BY keys the API selects for its cursor and the row past the limit that says whether more
 * remain.
 */
function handWrittenRead(st: { text: string; values: Bound[] }): { text: string; values: Bound[] } {
  // A read that pins `_id` already runs as a hand-written server would.
  if (st.text.startsWith('select doc from ')) return st;
  const limit = /limit \$(\d+)(::bigint)?$/.exec(st.text);
  if (!limit || !st.text.startsWith('select doc, ')) throw new Error(`unexpected read statement: ${st.text}`);
  const values = [...st.values];
  const i = Number(limit[1]) - 1;
  values[i] = String(Number(values[i] as string) - 1);
  return { text: st.text.replace(/^select doc, .*? from /, 'select doc from '), values };
}

/**
 * The statements our compiler produces for every scenario the baseline runs, captured once: each
 * read scenario's SQL must be the same for all its variants, which differ only in bound values.
 */
async function captureStatements(sql: postgres.Sql, workplace: string): Promise<Captured> {
  const statements: Record<string, string> = {};
  const values = new Map<string, Wire[][]>();
  for (const size of ['small', 'large'] as const) {
    const lookup = await findCollection(sql, workplace, size);
    if (!lookup.workplace || !lookup.found) throw new Error(`no collection ${size}`);
    const c = lookup.found;
    const n = size === 'small' ? SMALL : LARGE;
    for (const s of READS) {
      const vs: Wire[][] = [];
      for (let i = 0; i < VARIANTS; i++) {
        const b = s.body(i, n);
        const filter = parseFilter(b.query);
        const st =
          s.op === 'count'
            ? countStatement(c, filter)
            : handWrittenRead(
                readStatement(c, { filter, sort: parseSort(b.sort), skip: 0, limit: b.limit ?? 100 }),
              );
        const key = `${size}:${s.name}`;
        if (statements[key] !== undefined && statements[key] !== st.text)
          throw new Error(`${key}: the SQL varies`);
        statements[key] = st.text;
        vs.push(wire(st.values));
      }
      values.set(`${size}:${s.name}`, vs);
    }
    if (size === 'large') {
      // updateMany: the compiler's WHERE, and the change as one SQL UPDATE.
      const vs: Wire[][] = [];
      for (let k = 0; k < VARIANTS; k++) {
        const st = countStatement(c, parseFilter({ bucket: k % partitions(LARGE, UPDATE_MATCHES) }));
        const where = st.text.slice(st.text.indexOf(' where ') + 7);
        statements.update = `update ${c.table} set doc = jsonb_set(doc, '{n}', to_jsonb(coalesce((doc->>'n')::numeric, 0) + 1)) where ${where}`;
        vs.push(wire(st.values));
      }
      values.set('update', vs);
    }
  }
  const large = await findCollection(sql, workplace, 'large');
  if (!large.workplace || !large.found) throw new Error('no collection large');
  // findOneAndUpdate as one hand-written statement: lock the first match, change it, return it.
  const vs: Wire[][] = [];
  for (let i = 0; i < VARIANTS; i++) {
    const b = findOneAndUpdateBody(i, LARGE);
    // The compiler's WHERE and ORDER BY, as the API's locked read of the first match uses them.
    const params = new Params();
    const where = compileFilter(parseFilter(b.query), { params, indexed: large.found.paths });
    const orderBy = orderByText(compileOrderKeys(parseSort(b.sort), { indexed: large.found.paths }, params));
    const first = `select id from ${large.found.table} where ${where} order by ${orderBy} limit 1`;
    statements.findOneAndUpdate = `update ${large.found.table} set doc = jsonb_set(doc, '{n}', to_jsonb(coalesce((doc->>'n')::numeric, 0) + 1)) where id = (${first} for update) returning jsonb_build_object('_id', doc->'_id', 'n', doc->'n') as doc`;
    vs.push(wire(params.values));
  }
  values.set('findOneAndUpdate', vs);
  const bulk = await findCollection(sql, workplace, 'bulkbase');
  if (!bulk.workplace || !bulk.found) throw new Error('no bulk collection');
  statements.bulk = `insert into ${bulk.found.table} (id, doc) select mdb.key(d -> '_id'), d from jsonb_array_elements($1::text::jsonb) as d`;
  return { statements, values };
}

/** The baseline, in its own process, running `statements`. */
async function startBaseline(statements: Record<string, string>): Promise<void> {
  const base = await start(
    'baseline',
    ['scripts/bench/baseline.ts'],
    { BENCH_BASELINE: JSON.stringify({ databaseUrl, poolMax: 10, statements }) },
    /listening (\d+)/,
  );
  baseline = `http://127.0.0.1:${base.match[1]}`;
  baselinePid = base.child.pid;
  baselineChild = base.child;
}

/** The hand-written server's schema: its own tables in the bench's database, dropped at the end. */
const handSchema = (workplace: string) => `hw_${workplace}`;

/**
 * The hand-written server's tables, `id text primary key, doc jsonb` (ids in byte order, as the
 * API orders `_id`), filled with copies of the API's collections once they are seeded, with the
 * plain expression indexes a developer would add for the scenarios: each equality index ends
 * with `id`, since both servers return a page in `_id` order.
 */
async function seedHandWritten(sql: postgres.Sql, workplace: string): Promise<void> {
  const schema = handSchema(workplace);
  const started = Date.now();
  await sql.unsafe(`create schema ${schema}`);
  for (const name of ['small', 'large', 'bulk']) {
    const t = `${schema}.${name}`;
    await sql.unsafe(`create table ${t} (id text collate "C" primary key, doc jsonb not null)`);
    if (name === 'bulk') continue;
    const lookup = await findCollection(sql, workplace, name);
    if (!lookup.workplace || !lookup.found) throw new Error(`no collection ${name}`);
    await sql.unsafe(`insert into ${t} (id, doc) select doc->>'_id', doc from ${lookup.found.table}`);
    await sql.unsafe(`create index on ${t} ((doc->>'city'), id)`);
    await sql.unsafe(`create index on ${t} (((doc->>'age')::int), id)`);
    await sql.unsafe(`create index on ${t} (((doc->>'group')::int))`);
    await sql.unsafe(`create index on ${t} (((doc->>'bucket')::int))`);
    // Unique, as the API's: a match is one document, so no page order to end with `id`.
    await sql.unsafe(`create unique index on ${t} ((doc->>'email'))`);
    // VACUUM as well as ANALYZE: the API's tables have been vacuumed by the server's maintenance.
    await sql.unsafe(`vacuum analyze ${t}`);
  }
  const deletes = await findCollection(sql, workplace, 'deletes');
  if (deletes.workplace && deletes.found) {
    const t = `${schema}.deletes`;
    await sql.unsafe(`create table ${t} (id text collate "C" primary key, doc jsonb not null)`);
    await sql.unsafe(`insert into ${t} (id, doc) select doc->>'_id', doc from ${deletes.found.table}`);
    await sql.unsafe(`create index on ${t} (((doc->>'batch')::int))`);
    await sql.unsafe(`vacuum analyze ${t}`);
  }
  process.stderr.write(`hand-written tables copied in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

/** JSON with every object's keys sorted: the API puts `_id` first, jsonb orders keys its own way. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The hand-written server, in its own process, on the tables of seedHandWritten. */
async function startHandWritten(workplace: string): Promise<void> {
  const hand = await start(
    'hand-written',
    ['scripts/bench/hand-written.ts'],
    {
      BENCH_HAND_WRITTEN: JSON.stringify({ databaseUrl, poolMax: 10, schema: handSchema(workplace) }),
    },
    /listening (\d+)/,
  );
  handWritten = `http://127.0.0.1:${hand.match[1]}`;
  handPid = hand.child.pid;
}

/**
 * Fails the run unless the hand-written server answers a few variants of every read scenario,
 * at both sizes, with the API's documents in the API's order (or its count): a faster answer to
 * another question would measure nothing.
 */
async function checkHandWritten(workplace: string): Promise<void> {
  for (const s of READS) {
    for (const size of ['small', 'large'] as const) {
      const n = size === 'small' ? SMALL : LARGE;
      for (const i of [0, 1, 7, 31, 113]) {
        const body = s.body(i, n);
        const fromApi = (
          (await call('POST', `/v1/workplaces/${workplace}/storages/${size}/${s.op}`, body)) as {
            result: unknown;
          }
        ).result;
        const res = await fetch(`${handWritten}/${size}/${s.hand}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const fromHand = ((await res.json()) as { result: unknown }).result;
        if (res.status !== 200 || canonical(fromApi) !== canonical(fromHand))
          throw new Error(
            `the hand-written server answers ${s.name} (${size}, variant ${i}) unlike the API:\n  API: ${JSON.stringify(fromApi).slice(0, 300)}\n  hand-written (${res.status}): ${JSON.stringify(fromHand).slice(0, 300)}`,
          );
      }
    }
  }
  process.stderr.write('hand-written server: same answers as the API\n');
}

/** The hand-written server's answer to `body` on its route `route` of `table`. */
async function askHandWritten(table: string, route: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${handWritten}/${table}/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(`hand-written ${table}/${route}: ${res.status} ${text.slice(0, 300)}`);
  return (JSON.parse(text) as { result: unknown }).result;
}

/**
 * The write scenarios' check, as checkHandWritten's for reads: one request of each to both
 * servers, while their copies of the data are still the same, must get the same answer. The
 * creates go to the bulk collections, whose content nothing reads; ids given are kept, and the
 * others get 24 hex digits on both servers.
 */
async function checkHandWrittenWrites(workplace: string): Promise<void> {
  const storages = `/v1/workplaces/${workplace}/storages`;
  const { _id, ...unnamed } = doc(0, 1, 1);
  interface WriteCheck {
    name: string;
    /** The API's collection and the hand-written server's table that hold the same documents. */
    collection: string;
    table: string;
    route: string;
    body: unknown;
    /** What of the answer both must agree on. */
    shape?: (result: unknown) => unknown;
  }
  const checks: WriteCheck[] = [
    {
      name: 'findOneAndUpdate',
      collection: 'large',
      table: 'large',
      route: 'find-one-and-update',
      body: findOneAndUpdateBody(0, LARGE),
    },
    { name: 'updateOne', collection: 'large', table: 'large', route: 'update-one', body: updateOneBody(0) },
    {
      name: 'create',
      collection: 'bulkapi',
      table: 'bulk',
      route: 'create',
      body: { docs: [unnamed, { _id: 'check-given', ...unnamed }] },
      shape: (r) => {
        const { insertedCount, insertedIds } = r as { insertedCount: number; insertedIds: unknown[] };
        return {
          insertedCount,
          ids: insertedIds.map((id) => (/^[0-9a-f]{24}$/.test(String(id)) ? 'generated' : id)),
        };
      },
    },
  ];
  if (selected(DELETE_MANY))
    checks.push({
      name: 'deleteMany',
      collection: 'deletes',
      table: 'deletes',
      route: 'delete',
      body: { query: { batch: 0 } },
    });
  for (const { name, collection, table, route, body, shape = (r: unknown) => r } of checks) {
    const fromApi = shape(
      ((await call('POST', `${storages}/${collection}/${route}`, body)) as { result: unknown }).result,
    );
    const fromHand = shape(await askHandWritten(table, route, body));
    if (canonical(fromApi) !== canonical(fromHand))
      throw new Error(
        `the hand-written server answers ${name} unlike the API:\n  API: ${JSON.stringify(fromApi).slice(0, 300)}\n  hand-written: ${JSON.stringify(fromHand).slice(0, 300)}`,
      );
  }
  process.stderr.write('hand-written server: same answers to the writes as the API\n');
}

/** The read scenarios selected, on both sizes, with their targets and how they scale. */
async function runReads(workplace: string, values: Captured['values'], results: Results): Promise<void> {
  for (const s of READS.filter((r) => selected(r.name))) {
    const perSize: Record<string, Figures> = {};
    for (const size of ['small', 'large'] as const) {
      const n = size === 'small' ? SMALL : LARGE;
      const apiBodies = cycle(Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(s.body(i, n))));
      const vs = values.get(`${size}:${s.name}`);
      const baseBodies = vs ? cycle(vs.map((v) => JSON.stringify({ v }))) : undefined;
      const row = await compare(
        `${s.name} (${size === 'small' ? SMALL : LARGE} docs)`,
        (warmUp) => load(docsUrl(workplace, size, s.op), apiBodies, { warmUp }),
        baseBodies
          ? (warmUp) =>
              load(`${baseline}/q/${encodeURIComponent(`${size}:${s.name}`)}`, baseBodies, { warmUp })
          : undefined,
        // The hand-written server takes the API's bodies.
        handWritten ? (warmUp) => load(`${handWritten}/${size}/${s.hand}`, apiBodies, { warmUp }) : undefined,
      );
      results.rows.push(row);
      perSize[size] = row.api;
      if (size === 'large' && s.indexed && row.base) {
        results.targets.push([
          `${s.name}: >= 0.8 x baseline req/s, p99 <= 2 x baseline p99`,
          (row.ratio as number) >= 0.8 && (row.p99Ratio as number) <= 2,
          `${ratioWithSpread(row)} x, p99 ${row.p99Ratio?.toFixed(2)} x (${row.api.p99} vs ${row.base.p99} ms)`,
        ]);
      }
      const handTarget = HAND_TARGETS[s.hand];
      if (size === 'large' && handTarget !== undefined && row.hand) {
        const p99 = s.op === 'read';
        results.targets.push([
          `${s.name}: >= ${handTarget} x hand-written req/s${p99 ? ', p99 <= 2 x hand-written p99' : ''}`,
          (row.handRatio as number) >= handTarget && (!p99 || (row.handP99Ratio as number) <= 2),
          `${handRatioWithSpread(row)} x${p99 ? `, p99 ${row.handP99Ratio?.toFixed(2)} x (${row.api.p99} vs ${row.hand.p99} ms)` : ''}`,
        ]);
      }
    }
    results.scaling.push({
      name: s.name,
      sameWork: s.sameWork,
      small: perSize.small as Figures,
      large: perSize.large as Figures,
    });
    if (s.indexed && s.sameWork) {
      const small = perSize.small as Figures;
      const large = perSize.large as Figures;
      const ratio = latencyRatio(small, large);
      results.targets.push([
        `${s.name}: latency at ${LARGE} <= 1.5 x at ${SMALL}`,
        ratio <= 1.5,
        `${ratio.toFixed(2)} x (mean ${large.mean?.toFixed(2)} vs ${small.mean?.toFixed(2)} ms)`,
      ]);
    }
  }
}

/**
 * The least share of the hand-written server's requests/s the API must reach, per read scenario
 * (its hand-written route). A count over many matches must beat it by half: the API's key columns
 * answer it from the index alone, where the expression index reads every matching row. A count of
 * `GROUP_SIZE` matches is held to the reads' share instead: the rows the index saves reading are
 * too few to pay for a server's layers, so even a server as thin as the hand-written one could not
 * reach 1.5 x (its PostgreSQL CPU saved is less than a third of the request's CPU).
 */
const HAND_TARGETS: Record<string, number> = {
  email: 0.8,
  equality: 0.8,
  range: 0.8,
  in: 0.8,
  'count-group': 0.8,
  'count-city': 1.5,
};

/** The hand-written target of a write scenario: the least share of its rate the API must reach. */
function handTarget(results: Results, row: Row, share: number, unit = 'req/s'): void {
  if (!row.hand) return;
  results.targets.push([
    `${row.scenario}: >= ${share} x hand-written ${unit}`,
    (row.handRatio as number) >= share,
    `${handRatioWithSpread(row)} x`,
  ]);
}

const BULK_WITHOUT_ID = 'bulk create without _id (1,000 docs/request)';
const BULK_MIXED = 'bulk create, mixed: half with _id (1,000 docs/request)';

/**
 * Bulk create, 1,000 documents a request, 4 requests at a time: documents without `_id`, as most
 * clients send them, so each server gives them ids; then half with `_id` and half without,
 * alternating. The baseline (our insert statement alone) is sent the first kind with the ids the
 * API would give already in them: giving ids is the API's work, not its SQL's.
 */
async function runBulkCreate(workplace: string, results: Results): Promise<void> {
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
  ].filter((x) => selected(x.name));
  for (const { name, withId } of scenarios) {
    const bodies = () => JSON.stringify({ docs: batch(withId) });
    const options = { connections: 4 };
    const row = await compare(
      name,
      (warmUp) => load(docsUrl(workplace, 'bulkapi', 'create'), bodies, { ...options, warmUp }),
      baseline && name === BULK_WITHOUT_ID
        ? (warmUp) =>
            load(
              `${baseline}/q/bulk`,
              () =>
                JSON.stringify({
                  v: [JSON.stringify(batch(withId).map((d) => ({ _id: newObjectId(), ...d })))],
                }),
              { ...options, warmUp },
            )
        : undefined,
      handWritten
        ? (warmUp) => load(`${handWritten}/bulk/create`, bodies, { ...options, warmUp })
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

/** updateMany with $inc over 10,000 documents: time per request, sequentially. */
async function runUpdateMany(workplace: string, values: Captured['values'], results: Results): Promise<void> {
  const buckets = partitions(LARGE, UPDATE_MATCHES);
  const apiTimes: number[] = [];
  const baseTimes: number[] = [];
  const handTimes: number[] = [];
  let peakUpdate = 0;
  const updateScenario = `updateMany $inc (${Math.min(UPDATE_MATCHES, LARGE)} docs matched)`;
  await profiled(
    updateScenario,
    async () => {
      for (let k = 0; k < RUNS * 2; k++) {
        const { result, peak } = await peakRss(serverPid, () =>
          timeIt(() =>
            call('POST', `/v1/workplaces/${workplace}/storages/large/update`, {
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
function findOneAndUpdateBody(i: number, size: number) {
  return {
    query: { group: (i * 7919) % partitions(size, GROUP_SIZE) },
    sort: { n: 1 } as Record<string, 1 | -1>,
    doc: { $inc: { n: 1 } },
    fields: { n: 1 },
    returnDocument: 'after',
  };
}

async function runFindOneAndUpdate(
  workplace: string,
  values: Captured['values'],
  results: Results,
): Promise<void> {
  const apiBodies = cycle(
    Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(findOneAndUpdateBody(i, LARGE))),
  );
  const vs = values.get('findOneAndUpdate');
  const baseBodies = vs ? cycle(vs.map((v) => JSON.stringify({ v }))) : undefined;
  const row = await compare(
    `findOneAndUpdate, least-used of ${GROUP_SIZE} ($inc, returnDocument after)`,
    (warmUp) => load(docsUrl(workplace, 'large', 'find-one-and-update'), apiBodies, { warmUp }),
    baseBodies ? (warmUp) => load(`${baseline}/q/findOneAndUpdate`, baseBodies, { warmUp }) : undefined,
    handWritten
      ? (warmUp) => load(`${handWritten}/large/find-one-and-update`, apiBodies, { warmUp })
      : undefined,
  );
  results.rows.push(row);
  handTarget(results, row, SINGLE_WRITE_TARGET);
}

/** The least share of the hand-written server's requests/s for a write of one document. */
const SINGLE_WRITE_TARGET = 0.7;
const CREATE_ONE = 'create one document without _id';
const UPDATE_ONE = 'updateOne by _id ($inc)';
const DELETE_MANY = `deleteMany on an indexed field (${DELETE_BATCH} documents/request)`;

/**
 * One document without `_id` a request, into the large collection with all its indexes (the unique
 * email among them): an insert costs what the table it goes into makes it cost. Each side numbers
 * its documents on from the seeded ones, so that their emails stay unique. It adds documents to the
 * large collection: main() runs it after every scenario that counts them.
 */
async function runCreateOne(workplace: string, results: Results): Promise<void> {
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
    CREATE_ONE,
    (warmUp) => load(docsUrl(workplace, 'large', 'create'), apiBodies, { warmUp }),
    undefined,
    handWritten ? (warmUp) => load(`${handWritten}/large/create`, handBodies, { warmUp }) : undefined,
  );
  results.rows.push(row);
  handTarget(results, row, SINGLE_WRITE_TARGET);
}

/** updateOne by `_id` with $inc on one field: a change to a document the client already knows. */
function updateOneBody(i: number) {
  return { query: { _id: `u${(i * 7919) % LARGE}` }, doc: { $inc: { n: 1 } } };
}

async function runUpdateOne(workplace: string, results: Results): Promise<void> {
  const bodies = cycle(Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(updateOneBody(i))));
  const row = await compare(
    UPDATE_ONE,
    (warmUp) => load(docsUrl(workplace, 'large', 'update-one'), bodies, { warmUp }),
    undefined,
    handWritten ? (warmUp) => load(`${handWritten}/large/update-one`, bodies, { warmUp }) : undefined,
  );
  results.rows.push(row);
  handTarget(results, row, SINGLE_WRITE_TARGET);
}

/**
 * The most deleteMany requests per second a side is expected to answer: on PostgreSQL about twice
 * what the hand-written server (the faster side) answers on the 2-core machine, so that a quieter
 * machine does not exhaust it; embedded, the API runs alone, and slower. The delete scenario's
 * collection holds enough batches for this rate over every run and the warm-up: set too low, the
 * scenario runs dry (its last requests match nothing and cost less than a delete), and its row and
 * a target say so.
 */
const DELETE_RATE_CEILING = embedded ? 1500 : 6000;

/**
 * The batches the delete scenario's collection holds: its highest expected rate over the warm-up
 * and every measured run. A warm-up lasts DURATION or warmUpRequests, whichever takes longer.
 */
const deleteBatches = () =>
  Math.ceil(DELETE_RATE_CEILING * DURATION) * (RUNS + 1) + warmUpRequests(CONNECTIONS) + 1;

/**
 * The delete scenario's own collection, `deletes`: documents of the large kind, DELETE_BATCH of
 * them in each `batch` (indexed), deleteBatches of those. The hand-written server copies it.
 */
async function seedDeletes(workplace: string): Promise<void> {
  const count = deleteBatches() * DELETE_BATCH;
  const started = Date.now();
  await fill(workplace, 'deletes', count, (i) => ({ ...doc(i, 1, 1), batch: Math.floor(i / DELETE_BATCH) }));
  await call('POST', `/v1/workplaces/${workplace}/storages/deletes/indexes`, {
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
 * DELETE_RATE_CEILING must grow.
 */
async function runDeleteMany(workplace: string, results: Results): Promise<void> {
  const batches = deleteBatches();
  const side = () => {
    let batch = 1;
    return { bodies: () => JSON.stringify({ query: { batch: batch++ } }), taken: () => batch - 1 };
  };
  const apiSide = side();
  const handSide = side();
  const row = await compare(
    DELETE_MANY,
    (warmUp) => load(docsUrl(workplace, 'deletes', 'delete'), apiSide.bodies, { warmUp }),
    undefined,
    handWritten ? (warmUp) => load(`${handWritten}/deletes/delete`, handSide.bodies, { warmUp }) : undefined,
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

/** Workplace + collection create/delete cycle. */
async function runWorkplaceCycle(results: Results): Promise<void> {
  const letters = () =>
    randomBytes(8)
      .toString('hex')
      .replace(/\d/g, (d) => String.fromCharCode(103 + Number(d)));
  const cycles = 20;
  const cycleScenario = 'workplace + collection create/delete';
  let apiCycle = { result: 0, peak: 0 };
  let baseCycle: number | undefined;
  await profiled(
    cycleScenario,
    async () => {
      apiCycle = await peakRss(serverPid, () =>
        timeIt(async () => {
          for (let i = 0; i < cycles; i++) {
            const name = `cyc${letters()}`;
            await call('POST', '/v1/workplaces', { name });
            await call('POST', `/v1/workplaces/${name}/storages`, { name: 'things' });
            await call('DELETE', `/v1/workplaces/${name}`);
          }
        }),
      );
      if (baseline) {
        baseCycle = await timeIt(async () => {
          for (let i = 0; i < cycles; i++) {
            const res = await fetch(`${baseline}/cycle`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ v: [letters()] }),
            });
            await res.text();
          }
        });
      }
    },
    // Each cycle is three requests to the API and one to the baseline.
    () => [cycles * 3, baseline ? cycles : 0],
  );
  const cycleRow: Row = {
    scenario: cycleScenario,
    api: ms(apiCycle.result / cycles),
    rssPeak: apiCycle.peak,
    unit: 'ms/cycle',
  };
  if (baseCycle !== undefined) cycleRow.base = ms(baseCycle / cycles);
  results.rows.push(cycleRow);
}

/** The OpenID Provider's token endpoint: refresh_token grants of a user who signed in once. */
async function runOidcTokenEndpoint(workplace: string, results: Results): Promise<void> {
  const refresh = await signInOnce(workplace);
  results.rows.push(
    await compare(
      'OIDC token endpoint (refresh_token grant)',
      (warmUp) =>
        load(refresh.url, () => refresh.body, {
          headers: refresh.headers,
          warmUp,
        }),
      undefined,
    ),
  );
}

/** Sustained reads: RSS after warm-up against RSS after SOAK seconds. */
async function runSustainedReads(workplace: string, results: Results): Promise<void> {
  const bodies = cycle(
    Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(EQUALITY_READ.body(i, LARGE))),
  );
  await load(docsUrl(workplace, 'large', 'read'), bodies, { duration: 5 });
  const warm = await rssMb(serverPid);
  await load(docsUrl(workplace, 'large', 'read'), bodies, { duration: SOAK });
  const after = await rssMb(serverPid);
  results.targets.push([
    `RSS after ${SOAK} s of reads within 50 MB of warm-up`,
    after - warm <= 50,
    `${warm.toFixed(0)} -> ${after.toFixed(0)} MB`,
  ]);
}

/** Documents per page of the cursor walk: the read's limit. */
const WALK_PAGE = 1000;

/**
 * The whole large collection walked with `cursor`, a page at a time in an indexed sort with ties
 * (`age`, broken by `_id`), timing each page: keyset paging finds each page through the index, so
 * the last pages must cost what the first do, where `skip` reads every skipped document. The
 * target compares medians of the first and last tenth of the pages, which one slow page (the
 * machine is shared) cannot move; a skip read at the last page's depth is timed for contrast.
 */
async function runCursorWalk(workplace: string, results: Results): Promise<void> {
  const scenario = `cursor walk over ${LARGE} documents, ${WALK_PAGE} a page`;
  const url = `/v1/workplaces/${workplace}/storages/large/read`;
  const body = { sort: { age: 1 }, fields: { age: 1 }, limit: WALK_PAGE };
  const times: number[] = [];
  const seen = new Set<string>();
  let lastAge = -Infinity;
  let ordered = true;
  let cursor: string | undefined;
  const walk = await peakRss(serverPid, async () => {
    do {
      const t0 = performance.now();
      const page = (await call('POST', url, { ...body, ...(cursor ? { cursor } : {}) })) as {
        result: { _id: string; age: number }[];
        next?: string;
      };
      times.push(performance.now() - t0);
      for (const d of page.result) {
        seen.add(d._id);
        if (d.age < lastAge) ordered = false;
        lastAge = d.age;
      }
      cursor = page.next;
    } while (cursor);
  });
  const skipAtEnd = median(
    await Promise.all(
      [0, 1, 2].map(() => timeIt(() => call('POST', url, { ...body, skip: Math.max(0, LARGE - WALK_PAGE) }))),
    ),
  );
  const tenth = Math.max(1, Math.floor(times.length / 10));
  const first = median(times.slice(0, tenth));
  const last = median(times.slice(-tenth));
  results.rows.push({ scenario, api: ms(median(times)), rssPeak: walk.peak, unit: 'ms/page' });
  const complete = seen.size === LARGE && ordered;
  results.targets.push([
    'cursor walk: median page time of the last tenth <= 2 x the first tenth, every document once, in order',
    complete && last <= 2 * first,
    `${times.length} pages; first tenth ${first.toFixed(1)} ms, last tenth ${last.toFixed(1)} ms (${(last / Math.max(first, 0.01)).toFixed(2)} x); ${seen.size} distinct documents${ordered ? '' : ', OUT OF ORDER'}; skip to the last page: ${skipAtEnd.toFixed(1)} ms`,
  ]);
}

/**
 * `$group` over the large collection: the API's aggregate against the SQL a developer would write
 * by hand for it, run on a connection of this process, timed one request at a time in alternating
 * pairs. Both answers are checked to hold the same groups and counts.
 */
async function runGroupAggregate(
  workplace: string,
  sql: postgres.Sql | undefined,
  results: Results,
): Promise<void> {
  const scenario = `$group over ${LARGE} documents: aggregate vs hand-written SQL`;
  const url = `/v1/workplaces/${workplace}/storages/large/aggregate`;
  const pipeline = [{ $group: { _id: '$city', n: { $sum: 1 }, age: { $avg: '$age' } } }];
  const lookup = sql ? await findCollection(sql, workplace, 'large') : undefined;
  const table = lookup?.workplace ? lookup.found?.table : undefined;
  const handWritten = `select doc->>'city' as city, count(*) as n, avg((doc->>'age')::numeric) as age from ${table} group by 1`;
  const apiTimes: number[] = [];
  const baseTimes: number[] = [];
  let answer: { result: { _id: string; n: number }[] } = { result: [] };
  let rows: { city: string; n: string }[] = [];
  const measured = await peakRss(serverPid, async () => {
    for (let i = 0; i < RUNS; i++) {
      apiTimes.push(
        await timeIt(async () => {
          answer = (await call('POST', url, { pipeline })) as typeof answer;
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

/** The seeded `joined` dates: 2020-01-01 plus (i % JOINED_DAYS) days (see `doc`). */
const JOINED_DAYS = 1500;

/**
 * One TTL pass over a copy of the large collection with a TTL index on `joined`, set so that the
 * documents of the first half of the dates have expired, against the DELETE a developer would
 * write by hand on another copy (no index, the date cast in the condition). The pass runs in this
 * process, as the server's sweeper would run it, on its own connection; once each, since a pass
 * consumes its documents.
 */
async function runTtlExpiry(workplace: string, sql: postgres.Sql, results: Results): Promise<void> {
  const storages = `/v1/workplaces/${workplace}/storages`;
  // Half a day before the first date that stays: the pass runs a while after this is computed.
  const cutoff = Date.UTC(2020, 0, 1) + (JOINED_DAYS / 2) * 86_400_000 - 43_200_000;
  const seconds = Math.floor((Date.now() - cutoff) / 1000);
  let expired = 0;
  for (let i = 0; i < LARGE; i++) if (i % JOINED_DAYS < JOINED_DAYS / 2) expired++;
  await call('POST', storages, { name: 'ttlapi' });
  await call('POST', `${storages}/ttlapi/indexes`, {
    name: 'expire',
    key: ['joined'],
    expireAfterSeconds: seconds,
  });
  await call('POST', storages, { name: 'ttlbase' });
  const table = async (name: string) => {
    const found = await findCollection(sql, workplace, name);
    if (!found.workplace || !found.found) throw new Error(`no collection ${name}`);
    return found.found.table;
  };
  const [large, api, base] = [await table('large'), await table('ttlapi'), await table('ttlbase')];
  for (const t of [api, base]) {
    await sql.unsafe(`insert into ${t} (id, doc) select id, doc from ${large}`);
    await sql.unsafe(`vacuum analyze ${t}`);
  }
  let apiDeleted = 0;
  let baseDeleted = 0;
  const apiMs = await timeIt(async () => {
    apiDeleted = (await sweepExpired(sql)).deleted;
  });
  const baseMs = await timeIt(async () => {
    const r = await sql.unsafe(
      `delete from ${base} where (doc->>'joined')::timestamptz < now() - interval '${seconds} seconds'`,
    );
    baseDeleted = r.count;
  });
  results.rows.push({
    scenario: `TTL expiry pass (${expired} of ${LARGE} documents expired; baseline: hand-written DELETE)`,
    api: ms(apiMs),
    base: ms(baseMs),
    rssPeak: 0,
    unit: 'ms/pass',
  });
  // The steady state: a pass that finds nothing expired, which the hand-written DELETE finds by
  // reading the whole collection.
  const idleMs = await timeIt(() => sweepExpired(sql));
  const idleBaseMs = await timeIt(() =>
    sql.unsafe(
      `delete from ${base} where (doc->>'joined')::timestamptz < now() - interval '${seconds} seconds'`,
    ),
  );
  results.rows.push({
    scenario: `TTL expiry pass, nothing expired (${LARGE - expired} documents left)`,
    api: ms(idleMs),
    base: ms(idleBaseMs),
    rssPeak: 0,
    unit: 'ms/pass',
  });
  results.targets.push([
    'TTL pass deletes every expired document and no other',
    apiDeleted === expired && baseDeleted === expired,
    `${apiDeleted} deleted by the pass, ${baseDeleted} by the DELETE, ${expired} expired; ${(apiMs / Math.max(baseMs, 1)).toFixed(2)} x the DELETE's time`,
  ]);
}

/**
 * With `--workers N` (N > 1): the large collection's read scenarios again with one API process,
 * for the scaling table. The server is restarted with WORKERS=1 on the same database, and the
 * reads run as before (an untimed warm-up, then medians of RUNS runs), API alone.
 */
async function runOneProcessReads(workplace: string, results: Results): Promise<void> {
  process.stderr.write(`restarting the server with WORKERS=1 (was ${WORKERS})\n`);
  const old = serverChild;
  if (old && old.exitCode === null) {
    const exited = new Promise((r) => old.once('exit', r));
    old.kill('SIGTERM');
    await exited;
  }
  await startServer(1, 'server-1');
  for (const s of READS.filter((r) => selected(r.name))) {
    const row = results.rows.find((r) => r.scenario === `${s.name} (${LARGE} docs)`);
    if (!row) continue;
    const bodies = cycle(Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(s.body(i, LARGE))));
    const one = await compare(
      `${s.name} (${LARGE} docs, 1 process)`,
      (warmUp) => load(docsUrl(workplace, 'large', s.op), bodies, { warmUp }),
      undefined,
    );
    results.workers.push({ name: s.name, one: one.api, many: row.api });
  }
}

/** Whatever the run got to: the workplace deleted, the connection closed, both servers stopped. */
async function cleanUp(workplace: string, sql: postgres.Sql | undefined): Promise<void> {
  if (api) await call('DELETE', `/v1/workplaces/${workplace}`).catch(() => {});
  await sql?.unsafe(`drop schema if exists ${handSchema(workplace)} cascade`).catch(() => {});
  await sql?.end({ timeout: 2 });
  for (const c of children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}

async function main() {
  const workplace = randomWorkplaceName();
  let sql: postgres.Sql | undefined;
  const results: Results = { rows: [], scaling: [], targets: [], workers: [] };
  try {
    await prepareDirectories();
    await startServer();
    await seedWorkplace(workplace);
    let captured: Captured = { statements: {}, values: new Map() };
    // PGlite is one process: the baseline cannot have a connection of its own to it.
    // The hand-written server has no PGlite variant: it too needs a connection of its own.
    if (!embedded) {
      sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
      await seedHandWritten(sql, workplace);
      await settle(sql);
      captured = await captureStatements(sql, workplace);
      await startBaseline(captured.statements);
      await startHandWritten(workplace);
      await checkHandWritten(workplace);
      await checkHandWrittenWrites(workplace);
    }
    await runReads(workplace, captured.values, results);
    await runBulkCreate(workplace, results);
    if (selected('updateMany')) await runUpdateMany(workplace, captured.values, results);
    if (selected('findOneAndUpdate')) await runFindOneAndUpdate(workplace, captured.values, results);
    if (selected(UPDATE_ONE)) await runUpdateOne(workplace, results);
    if (selected('workplace + collection')) await runWorkplaceCycle(results);
    if (selected('cursor walk')) await runCursorWalk(workplace, results);
    if (selected('$group')) await runGroupAggregate(workplace, sql, results);
    if (sql && selected('TTL expiry')) await runTtlExpiry(workplace, sql, results);
    // After the cursor walk and the TTL pass, which count on the large collection's size.
    if (selected(CREATE_ONE)) await runCreateOne(workplace, results);
    if (selected(DELETE_MANY)) await runDeleteMany(workplace, results);
    if (selected('OIDC token endpoint')) await runOidcTokenEndpoint(workplace, results);
    if (SOAK > 0 && selected('sustained reads')) await runSustainedReads(workplace, results);
    if (WORKERS > 1) await runOneProcessReads(workplace, results);
    report(results);
  } finally {
    await cleanUp(workplace, sql);
  }
}

function report({ rows, scaling, targets, workers }: Results) {
  const f = (n: number, d = 0) => n.toFixed(d).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const cpu = (r: Row, k: 'cpu' | 'pg' | 'machine') => {
    const a = r.api[k];
    if (a === undefined) return '';
    const other = (x: Figures | undefined, present: boolean) =>
      present ? ` / ${x?.[k] === undefined ? '-' : f(x[k] as number)}` : '';
    return `${f(a)}${other(r.base, r.base !== undefined || r.hand !== undefined)}${other(r.hand, r.hand !== undefined)}`;
  };
  const lines = [
    `\nBenchmark: ${embedded ? 'embedded PGlite' : 'PostgreSQL'}, ${SMALL} and ${LARGE} documents, ${CONNECTIONS} connections, median of ${RUNS} runs of ${DURATION} s (ratios: the median of adjacent API and baseline runs, then the lowest and highest of those pairs), Node ${process.version}\n`,
    '| scenario | unit | API | p50 ms | p99 ms | baseline (our SQL) | p50 ms | p99 ms | API / baseline | hand-written | p50 ms | p99 ms | API / hand-written | CPU us/req (API / baseline / hand-written): server | PostgreSQL | whole machine | server peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const unit = r.unit ?? 'req/s';
    const value = (x: Figures) =>
      unit === 'docs/s' ? f(x.rps * 1000) : unit.startsWith('ms') ? f(x.p50) : f(x.rps);
    const ratioTo = (other: Figures | undefined, ratio: number | undefined, spread: string) =>
      !other
        ? 'n/a'
        : unit.startsWith('ms')
          ? (r.api.p50 / Math.max(other.p50, 1)).toFixed(2)
          : ratio === undefined
            ? (r.api.rps / other.rps).toFixed(2)
            : spread;
    const ratio = ratioTo(r.base, r.ratio, ratioWithSpread(r));
    const handRatio = ratioTo(r.hand, r.handRatio, handRatioWithSpread(r));
    lines.push(
      `| ${r.scenario} | ${unit} | ${value(r.api)} | ${r.api.p50} | ${r.api.p99} | ${r.base ? value(r.base) : 'n/a'} | ${r.base?.p50 ?? ''} | ${r.base?.p99 ?? ''} | ${ratio} | ${r.hand ? value(r.hand) : 'n/a'} | ${r.hand?.p50 ?? ''} | ${r.hand?.p99 ?? ''} | ${handRatio} | ${cpu(r, 'cpu')} | ${cpu(r, 'pg')} | ${cpu(r, 'machine')} | ${f(r.rssPeak)} |`,
    );
  }
  lines.push(
    '',
    `| read scenario | req/s at ${SMALL} | mean ms | req/s at ${LARGE} | mean ms | latency ratio |`,
    '|---|---:|---:|---:|---:|---:|',
  );
  for (const s of scaling) {
    const note = s.sameWork ? '' : ' (more work at the larger size)';
    lines.push(
      `| ${s.name}${note} | ${f(s.small.rps)} | ${s.small.mean?.toFixed(2)} | ${f(s.large.rps)} | ${s.large.mean?.toFixed(2)} | ${latencyRatio(s.small, s.large).toFixed(2)} |`,
    );
  }
  if (workers.length) {
    lines.push(
      '',
      `| read scenario (${LARGE} docs) | req/s, 1 process | req/s, ${WORKERS} processes | ${WORKERS} / 1 |`,
      '|---|---:|---:|---:|',
    );
    for (const w of workers)
      lines.push(
        `| ${w.name} | ${f(w.one.rps)} | ${f(w.many.rps)} | ${(w.many.rps / w.one.rps).toFixed(2)} |`,
      );
  }
  lines.push('', '| target | result | measured |', '|---|---|---|');
  for (const [name, ok, measured] of targets)
    lines.push(`| ${name} | ${ok ? 'PASS' : 'FAIL'} | ${measured} |`);
  const failed = targets.filter(([, ok]) => !ok).map(([name]) => name);
  lines.push(
    '',
    `Targets: ${targets.length - failed.length} of ${targets.length} PASS${failed.length ? `; FAIL: ${failed.join('; ')}` : ''}`,
  );
  if (embedded)
    lines.push(
      '',
      'Embedded: the baseline and the hand-written server need their own connections to the database, which PGlite (one process) cannot give; ratios are n/a.',
    );
  lines.push(
    '',
    `Server and baseline logs: ${logDir}${CPU_PROF ? `; CPU profiles of both: ${CPU_PROF}` : ''}`,
  );
  console.log(lines.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
