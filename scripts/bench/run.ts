/**
 * The benchmark suite (`npm run bench`). It starts the real server (`server.ts`) and the baseline
 * (scripts/bench/baseline.ts) as separate processes on the same database, seeds two collections of
 * realistic documents (a small one and a large one), and drives HTTP load at both with autocannon
 * from this process. Every figure is a median of several alternating runs, and every ratio is
 * taken within this run: absolute numbers on a shared 2-core machine mean little.
 *
 *   npm run bench                               # 1,000,000 + 10,000 documents on PostgreSQL
 *   npm run bench -- --docs 200000 --runs 5     # smaller, more runs
 *   npm run bench -- --embedded                 # embedded PGlite (100,000 documents, no baseline)
 *   npm run bench -- --soak 60                  # RSS over 60 s of sustained reads (the default)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { findCollection } from '../../db/collections.js';
import { countStatement, readStatement } from '../../db/documents.js';
import { parseFilter } from '../../db/query/filter-ast.js';
import { parseSort } from '../../db/query/sort.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const CITIES = Array.from({ length: 50 }, (_, i) => `City${String.fromCharCode(65 + (i % 26))}${i}`);
const VARIANTS = 200;
/** Documents matched by one updateMany. */
const UPDATE_MATCHES = 10_000;

// ---------------------------------------------------------------------------------------------
// Options

const { values: opts } = parseArgs({
  options: {
    docs: { type: 'string' },
    small: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '5' },
    runs: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    soak: { type: 'string', default: '60' },
    embedded: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(
    'usage: npm run bench -- [--docs N] [--small N] [--duration s] [--runs n] [--connections n] [--soak s] [--embedded]',
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
const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;

// ---------------------------------------------------------------------------------------------
// Processes

const children: ChildProcess[] = [];
let dataDir: string | undefined;

function start(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) {
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve({ child, match: m });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => {
      const text = d.toString();
      if (!/Unsupported runtime/.test(text)) process.stderr.write(`[${args[0]}] ${text}`);
    });
    child.on('exit', (code) =>
      reject(new Error(`${args[0]} exited with ${code} before it was ready:\n${out}`)),
    );
  });
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
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

function doc(i: number, buckets: number) {
  return {
    _id: `u${i}`,
    email: `user${i}@example.com`,
    name: `User ${i}`,
    age: 18 + (i % 80),
    city: CITIES[i % CITIES.length],
    bucket: i % buckets,
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

async function seed(workplace: string, collection: string, count: number) {
  const buckets = Math.max(1, Math.floor(count / UPDATE_MATCHES));
  await call('POST', `/v1/workplaces/${workplace}/storages`, { name: collection });
  let next = 0;
  const started = Date.now();
  const worker = async () => {
    while (next < count) {
      const from = next;
      next += 1000;
      const docs = [];
      for (let i = from; i < Math.min(from + 1000, count); i++) docs.push(doc(i, buckets));
      await call('POST', `/v1/workplaces/${workplace}/storages/${collection}/create`, { docs });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  for (const [name, key] of [
    ['byCity', ['city']],
    ['byAge', ['age']],
    ['byBucket', ['bucket']],
  ] as const) {
    await call('POST', `/v1/workplaces/${workplace}/storages/${collection}/indexes`, { name, key });
  }
  process.stderr.write(
    `seeded ${collection}: ${count} documents in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

// ---------------------------------------------------------------------------------------------
// Load

interface Figures {
  rps: number;
  p50: number;
  p99: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

async function load(
  url: string,
  bodies: () => string,
  connections = CONNECTIONS,
  duration = DURATION,
): Promise<Figures> {
  const result = await autocannon({
    url,
    connections,
    duration,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': ADMIN },
    requests: [{ setupRequest: (req) => ({ ...req, body: bodies() }) }],
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
  }
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

interface Row {
  scenario: string;
  api: Figures;
  base?: Figures;
  rssPeak: number;
  unit?: string;
}

/** Alternates API and baseline runs, so both see the same noise; medians of each. */
async function compare(
  scenario: string,
  serverPid: number,
  apiRun: () => Promise<Figures>,
  baseRun: (() => Promise<Figures>) | undefined,
): Promise<Row> {
  const a: Figures[] = [];
  const b: Figures[] = [];
  let rssPeak = 0;
  for (let i = 0; i < RUNS; i++) {
    const { result, peak } = await peakRss(serverPid, apiRun);
    a.push(result);
    rssPeak = Math.max(rssPeak, peak);
    if (baseRun) b.push(await baseRun());
  }
  const med = (xs: Figures[]): Figures => ({
    rps: median(xs.map((x) => x.rps)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
  });
  const row: Row = { scenario, api: med(a), rssPeak, ...(baseRun ? { base: med(b) } : {}) };
  process.stderr.write(
    `  ${scenario}: ${row.api.rps.toFixed(0)} req/s${row.base ? ` (baseline ${row.base.rps.toFixed(0)})` : ''}\n`,
  );
  return row;
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface ReadScenario {
  name: string;
  indexed: boolean;
  op: 'read' | 'count';
  body: (
    i: number,
    size: number,
  ) => { query: Record<string, unknown>; sort?: Record<string, 1 | -1>; limit?: number };
}

const READS: ReadScenario[] = [
  {
    name: '_id lookup',
    indexed: true,
    op: 'read',
    body: (i, size) => ({ query: { _id: `u${(i * 7919) % size}` } }),
  },
  {
    name: 'indexed equality, limit 10',
    indexed: true,
    op: 'read',
    body: (i) => ({ query: { city: pick(CITIES, i) }, limit: 10 }),
  },
  {
    name: 'indexed range + sort, limit 20',
    indexed: true,
    op: 'read',
    body: (i) => ({
      query: { age: { $gte: 18 + (i % 70), $lt: 28 + (i % 70) } },
      sort: { age: 1 },
      limit: 20,
    }),
  },
  {
    name: '$in on an indexed field',
    indexed: true,
    op: 'read',
    body: (i) => ({
      query: { city: { $in: [pick(CITIES, i), pick(CITIES, i + 17), pick(CITIES, i + 31)] } },
      limit: 20,
    }),
  },
  {
    name: 'unindexed filter, limit 10',
    indexed: false,
    op: 'read',
    body: (i) => ({ query: { 'profile.score': 990 + (i % 10), 'profile.verified': true }, limit: 10 }),
  },
  {
    name: 'count, indexed filter',
    indexed: true,
    op: 'count',
    body: (i) => ({ query: { city: pick(CITIES, i) } }),
  },
];

async function main() {
  let workplace = '';
  let sql: postgres.Sql | undefined;
  const rows: Row[] = [];
  const scaling: { name: string; small: Figures; large: Figures }[] = [];
  const targets: [string, boolean, string][] = [];
  try {
    // The server under test, in its own process, as `npm start` runs it.
    const serverEnv: Record<string, string> = {
      ADMIN_TOKEN: ADMIN,
      PORT: '0',
      LOG_LEVEL: 'info',
      DB_POOL_MAX: '10',
    };
    if (embedded) {
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-'));
      Object.assign(serverEnv, { DATA_DIR: dataDir, DATABASE_URL: '' });
    } else {
      serverEnv.DATABASE_URL = databaseUrl;
    }
    const server = await start(['server.ts'], serverEnv, /Listening on (http:\/\/[^;\s"]+)/);
    api = (server.match[1] as string).replace(/\/$/, '');
    const serverPid = server.child.pid as number;

    workplace = `bench${randomBytes(6)
      .toString('hex')
      .replace(/\d/g, (d) => String.fromCharCode(97 + Number(d)))}`;
    await call('POST', '/v1/workplaces', { name: workplace });
    process.stderr.write(`workplace ${workplace}; seeding (${SMALL} + ${LARGE} documents)\n`);
    await seed(workplace, 'small', SMALL);
    await seed(workplace, 'large', LARGE);
    await call('POST', `/v1/workplaces/${workplace}/storages`, { name: 'bulkapi' });
    await call('POST', `/v1/workplaces/${workplace}/storages`, { name: 'bulkbase' });

    // The baseline runs the statements our compiler produces, captured here once.
    const statements: Record<string, string> = {};
    const values = new Map<string, string[][]>();
    if (!embedded) {
      sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
      for (const size of ['small', 'large'] as const) {
        const lookup = await findCollection(sql, workplace, size);
        if (!lookup.workplace || !lookup.found) throw new Error(`no collection ${size}`);
        const c = lookup.found;
        const n = size === 'small' ? SMALL : LARGE;
        for (const s of READS) {
          const vs: string[][] = [];
          for (let i = 0; i < VARIANTS; i++) {
            const b = s.body(i, n);
            const filter = parseFilter(b.query);
            const st =
              s.op === 'count'
                ? countStatement(c, filter)
                : readStatement(c, { filter, sort: parseSort(b.sort), skip: 0, limit: b.limit ?? 100 });
            const key = `${size}:${s.name}`;
            if (statements[key] !== undefined && statements[key] !== st.text)
              throw new Error(`${key}: the SQL varies`);
            statements[key] = st.text;
            vs.push(st.values);
          }
          values.set(`${size}:${s.name}`, vs);
        }
        if (size === 'large') {
          // updateMany: the compiler's WHERE, and the change as one SQL UPDATE.
          const vs: string[][] = [];
          for (let k = 0; k < VARIANTS; k++) {
            const st = countStatement(
              c,
              parseFilter({ bucket: k % Math.max(1, Math.floor(LARGE / UPDATE_MATCHES)) }),
            );
            const where = st.text.slice(st.text.indexOf(' where ') + 7);
            statements.update = `update ${c.table} set doc = jsonb_set(doc, '{n}', to_jsonb(coalesce((doc->>'n')::numeric, 0) + 1)) where ${where}`;
            vs.push(st.values);
          }
          values.set('update', vs);
        }
      }
      const bulk = await findCollection(sql, workplace, 'bulkbase');
      if (!bulk.workplace || !bulk.found) throw new Error('no bulk collection');
      statements.bulk = `insert into ${bulk.found.table} (id, doc) select mdb.key(d -> '_id'), d from jsonb_array_elements($1::text::jsonb) as d`;
      const base = await start(
        ['scripts/bench/baseline.ts'],
        { BENCH_BASELINE: JSON.stringify({ databaseUrl, poolMax: 10, statements }) },
        /listening (\d+)/,
      );
      baseline = `http://127.0.0.1:${base.match[1]}`;
    }

    const docsUrl = (collection: string, op: string) =>
      `${api}/v1/workplaces/${workplace}/storages/${collection}/${op}`;
    const cycle = <T>(xs: T[]) => {
      let i = 0;
      return () => xs[i++ % xs.length] as T;
    };

    // Reads, on both sizes.
    for (const s of READS) {
      const perSize: Record<string, Figures> = {};
      for (const size of ['small', 'large'] as const) {
        const n = size === 'small' ? SMALL : LARGE;
        const apiBodies = cycle(Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(s.body(i, n))));
        const vs = values.get(`${size}:${s.name}`);
        const baseBodies = vs ? cycle(vs.map((v) => JSON.stringify({ v }))) : undefined;
        const row = await compare(
          `${s.name} (${size === 'small' ? SMALL : LARGE} docs)`,
          serverPid,
          () => load(docsUrl(size, s.op), apiBodies),
          baseBodies
            ? () => load(`${baseline}/q/${encodeURIComponent(`${size}:${s.name}`)}`, baseBodies)
            : undefined,
        );
        rows.push(row);
        perSize[size] = row.api;
        if (size === 'large' && s.indexed && row.base) {
          targets.push([
            `${s.name}: >= 0.8 x baseline req/s, p99 <= 2 x baseline p99`,
            row.api.rps >= 0.8 * row.base.rps && row.api.p99 <= 2 * Math.max(row.base.p99, 1),
            `${(row.api.rps / row.base.rps).toFixed(2)} x, p99 ${row.api.p99} vs ${row.base.p99} ms`,
          ]);
        }
      }
      scaling.push({ name: s.name, small: perSize.small as Figures, large: perSize.large as Figures });
      if (s.indexed) {
        const small = perSize.small as Figures;
        const large = perSize.large as Figures;
        const ratio = Math.max(large.p50, 1) / Math.max(small.p50, 1);
        targets.push([
          `${s.name}: latency at ${LARGE} <= 1.5 x at ${SMALL}`,
          ratio <= 1.5,
          `${ratio.toFixed(2)} x (p50 ${large.p50} vs ${small.p50} ms)`,
        ]);
      }
    }

    // Bulk create: 1,000 documents per request, unique ids on both sides.
    let seq = 0;
    const batch = (prefix: string) => {
      const start = seq;
      seq += 1000;
      return Array.from({ length: 1000 }, (_, k) => ({ ...doc(start + k, 1), _id: `${prefix}${start + k}` }));
    };
    const bulkRow = await compare(
      'bulk create (1,000 docs/request)',
      serverPid,
      () => load(docsUrl('bulkapi', 'create'), () => JSON.stringify({ docs: batch('a') }), 4),
      baseline
        ? () => load(`${baseline}/q/bulk`, () => JSON.stringify({ v: [JSON.stringify(batch('b'))] }), 4)
        : undefined,
    );
    bulkRow.unit = 'docs/s';
    rows.push(bulkRow);
    if (bulkRow.base) {
      const r = bulkRow.api.rps / bulkRow.base.rps;
      targets.push(['bulk create >= 0.7 x baseline multi-row insert', r >= 0.7, `${r.toFixed(2)} x`]);
    }

    // updateMany with $inc over 10,000 documents: time per request, sequentially.
    const buckets = Math.max(1, Math.floor(LARGE / UPDATE_MATCHES));
    const timeIt = async (f: () => Promise<unknown>) => {
      const t0 = performance.now();
      await f();
      return performance.now() - t0;
    };
    const apiTimes: number[] = [];
    const baseTimes: number[] = [];
    let peakUpdate = 0;
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
    }
    const ms = (x: number): Figures => ({ rps: 1000 / x, p50: Math.round(x), p99: Math.round(x) });
    const upd: Row = {
      scenario: `updateMany $inc (${UPDATE_MATCHES} docs matched)`,
      api: ms(median(apiTimes)),
      rssPeak: peakUpdate,
      unit: 'ms/request',
    };
    if (baseTimes.length) upd.base = ms(median(baseTimes));
    rows.push(upd);
    if (upd.base) {
      const r = upd.api.p50 / Math.max(upd.base.p50, 1);
      targets.push([
        'updateMany of 10,000 <= 3 x one SQL UPDATE',
        r <= 3,
        `${r.toFixed(2)} x (${upd.api.p50} vs ${upd.base.p50} ms)`,
      ]);
    }

    // Workplace + collection create/delete cycle.
    const letters = () =>
      randomBytes(8)
        .toString('hex')
        .replace(/\d/g, (d) => String.fromCharCode(103 + Number(d)));
    const cycles = 20;
    const apiCycle = await peakRss(serverPid, () =>
      timeIt(async () => {
        for (let i = 0; i < cycles; i++) {
          const name = `cyc${letters()}`;
          await call('POST', '/v1/workplaces', { name });
          await call('POST', `/v1/workplaces/${name}/storages`, { name: 'things' });
          await call('DELETE', `/v1/workplaces/${name}`);
        }
      }),
    );
    const cycleRow: Row = {
      scenario: 'workplace + collection create/delete',
      api: ms(apiCycle.result / cycles),
      rssPeak: apiCycle.peak,
      unit: 'ms/cycle',
    };
    if (baseline) {
      const t = await timeIt(async () => {
        for (let i = 0; i < cycles; i++) {
          const res = await fetch(`${baseline}/cycle`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ v: [letters()] }),
          });
          await res.text();
        }
      });
      cycleRow.base = ms(t / cycles);
    }
    rows.push(cycleRow);

    // Sustained reads: RSS after warm-up against RSS after SOAK seconds.
    if (SOAK > 0) {
      const bodies = cycle(
        Array.from({ length: VARIANTS }, (_, i) => JSON.stringify(pick(READS, 1).body(i, LARGE))),
      );
      await load(docsUrl('large', 'read'), bodies, CONNECTIONS, 5);
      const warm = await rssMb(serverPid);
      await load(docsUrl('large', 'read'), bodies, CONNECTIONS, SOAK);
      const after = await rssMb(serverPid);
      targets.push([
        `RSS after ${SOAK} s of reads within 50 MB of warm-up`,
        after - warm <= 50,
        `${warm.toFixed(0)} -> ${after.toFixed(0)} MB`,
      ]);
    }

    report(rows, scaling, targets);
  } finally {
    if (workplace && api) await call('DELETE', `/v1/workplaces/${workplace}`).catch(() => {});
    await sql?.end({ timeout: 2 });
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

function report(
  rows: Row[],
  scaling: { name: string; small: Figures; large: Figures }[],
  targets: [string, boolean, string][],
) {
  const f = (n: number, d = 0) => n.toFixed(d).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const lines = [
    `\nBenchmark: ${embedded ? 'embedded PGlite' : 'PostgreSQL'}, ${SMALL} and ${LARGE} documents, ${CONNECTIONS} connections, median of ${RUNS} runs of ${DURATION} s, Node ${process.version}\n`,
    '| scenario | unit | API | p50 ms | p99 ms | baseline | p50 ms | p99 ms | API / baseline | server peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const unit = r.unit ?? 'req/s';
    const value = (x: Figures) =>
      unit === 'docs/s' ? f(x.rps * 1000) : unit.startsWith('ms') ? f(x.p50) : f(x.rps);
    const ratio = r.base
      ? unit.startsWith('ms')
        ? r.api.p50 / Math.max(r.base.p50, 1)
        : r.api.rps / r.base.rps
      : undefined;
    lines.push(
      `| ${r.scenario} | ${unit} | ${value(r.api)} | ${r.api.p50} | ${r.api.p99} | ${r.base ? value(r.base) : 'n/a'} | ${r.base?.p50 ?? ''} | ${r.base?.p99 ?? ''} | ${ratio === undefined ? 'n/a' : ratio.toFixed(2)} | ${f(r.rssPeak)} |`,
    );
  }
  lines.push(
    '',
    `| read scenario | req/s at ${SMALL} | p50 | req/s at ${LARGE} | p50 | latency ratio |`,
    '|---|---:|---:|---:|---:|---:|',
  );
  for (const s of scaling) {
    lines.push(
      `| ${s.name} | ${f(s.small.rps)} | ${s.small.p50} | ${f(s.large.rps)} | ${s.large.p50} | ${(Math.max(s.large.p50, 1) / Math.max(s.small.p50, 1)).toFixed(2)} |`,
    );
  }
  lines.push('', '| target | result | measured |', '|---|---|---|');
  for (const [name, ok, measured] of targets)
    lines.push(`| ${name} | ${ok ? 'PASS' : 'FAIL'} | ${measured} |`);
  if (embedded)
    lines.push(
      '',
      'Embedded: the baseline needs its own connection to the database, which PGlite (one process) cannot give; ratios are n/a.',
    );
  console.log(lines.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
