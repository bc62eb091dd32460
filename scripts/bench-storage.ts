// Storage benchmark: the real server in-process on a random port, driven over HTTP with fetch.
//
//   npm run bench:storage                      # 100,000 documents on PostgreSQL (DATABASE_URL)
//   npm run bench:storage -- --docs 20000      # fewer documents
//   npm run bench:storage -- --embedded        # embedded PGlite in a temporary DATA_DIR
//
// Every phase is bounded (loading by a time budget, each read scenario by a request count and a
// duration), and the workplace it creates is deleted at the end, on failure and on Ctrl-C.
import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.js';
import { findCollection } from '../db/collections.js';
import { migrate } from '../db/migrate.js';
import { type Database, openDatabase } from '../db/open.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../secrets.js';

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const SEED = 0x5eed_2026;
const BATCH_SIZE = 1000;
const LOAD_CONCURRENCY = 4;
/** Loading stops taking new batches after this; the scenarios then run on what was loaded. */
const LOAD_BUDGET_MS = 150_000;
const READ_CONCURRENCY = 8;
const MAX_REQUESTS = 2000;
const MAX_SCENARIO_MS = 10_000;
const WARMUP_REQUESTS = 16;
const REQUEST_TIMEOUT_MS = 60_000;
/** After this the run is aborted (in-flight requests included) and cleanup still runs. */
const WATCHDOG_MS = 270_000;
const COLLECTION = 'users';

// ---------------------------------------------------------------------------------------------
// Arguments

function usage(): string {
  return 'usage: tsx scripts/bench-storage.ts [--docs N] [--embedded] [--no-analyze]';
}

function parseOptions(): { docs: number; embedded: boolean; analyze: boolean } {
  const { values } = parseArgs({
    options: {
      docs: { type: 'string' },
      embedded: { type: 'boolean', default: false },
      'no-analyze': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    process.exit(0);
  }
  const docs = values.docs === undefined ? 100_000 : Number(values.docs.replaceAll('_', ''));
  if (!Number.isInteger(docs) || docs < 100 || docs > 10_000_000) {
    throw new Error(`--docs must be an integer from 100 to 10,000,000\n${usage()}`);
  }
  return { docs, embedded: values.embedded, analyze: !values['no-analyze'] };
}

// ---------------------------------------------------------------------------------------------
// Deterministic documents

/** mulberry32: a small, fast, seeded PRNG returning floats in [0, 1). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(rnd: () => number, items: readonly T[]): T {
  return items[Math.floor(rnd() * items.length)] as T;
}

const FIRST_NAMES: readonly string[] = (
  'Ada Alan Barbara Brian Carla Chen Dana Diego Elena Emeka Fatima Felix Grace Hiro Ines ' +
  'Ivan Jamal Julia Kenji Lara Linus Maria Mateo Nadia Noah Olga Omar Priya Quinn Rosa Sam ' +
  'Sofia Tariq Uma Victor Wen Xavier Yara Zane Zoe'
).split(' ');
const LAST_NAMES: readonly string[] = (
  'Adams Bauer Costa Dubois Eriksson Fischer Garcia Hansen Ito Jansen Kowalski Lopez Moreau ' +
  'Nakamura Okafor Petrov Quispe Rossi Silva Tanaka Usman Varga Weber Xu Yilmaz Zhang Novak ' +
  'Berg Kim Singh Murphy Haddad Kaya Lind Mendes Nagy Olsen Park Reyes Schmidt Torres Vogel ' +
  'Walsh Young Ahmed Brown Clark Diaz Evans Ford'
).split(' ');
const CITIES: readonly string[] = (
  'Amsterdam Berlin Bogota Cairo Chicago Delhi Dublin Istanbul Lagos Lima Lisbon London ' +
  'Madrid Nairobi Osaka Paris Seoul Sydney Toronto Warsaw'
).split(' ');
const TAGS: readonly string[] =
  'admin beta billing churned enterprise mobile newsletter partner premium support trial vip'.split(' ');
const INITIALS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const JOINED_FROM = Date.UTC(2015, 0, 1);
const JOINED_SPAN = Date.UTC(2025, 0, 1) - JOINED_FROM;

interface UserDoc {
  email: string;
  name: string;
  age: number;
  city: string;
  tags: string[];
  active: boolean;
  profile: { score: number; joined: string; visits: number; bio: string };
}

/** Document i, the same on every run: each document has its own seeded generator. */
function makeDoc(i: number): UserDoc {
  const rnd = prng((SEED ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0);
  const first = pick(rnd, FIRST_NAMES);
  const last = pick(rnd, LAST_NAMES);
  const initial = INITIALS[Math.floor(rnd() * INITIALS.length)] as string;
  const tags = new Set<string>();
  const tagCount = 1 + Math.floor(rnd() * 4);
  while (tags.size < tagCount) tags.add(pick(rnd, TAGS));
  const city = pick(rnd, CITIES);
  return {
    email: `user${i}@x.io`,
    // 40 x 26 x 50 = 52,000 names: an equality on name matches only a few documents.
    name: `${first} ${initial}. ${last}`,
    age: 18 + Math.floor(rnd() * 63),
    city,
    tags: [...tags],
    active: rnd() < 0.8,
    profile: {
      score: Math.round(rnd() * 10_000) / 100,
      joined: new Date(JOINED_FROM + Math.floor(rnd() * JOINED_SPAN)).toISOString(),
      visits: Math.floor(rnd() * 5000),
      bio: `${first} from ${city}, customer since ${2015 + Math.floor(rnd() * 10)}.`,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP

const stop = new AbortController();

class HttpError extends Error {}

interface Client {
  /**
   * Sends one request and returns the response text; throws unless the status is `expected`.
   * Aborting the run aborts the request, unless `cleanup` (which still has to run then).
   */
  send(
    method: 'POST' | 'DELETE',
    url: string,
    body: string | undefined,
    expected: number,
    cleanup?: boolean,
  ): Promise<string>;
}

function createClient(base: string, token: string): Client {
  return {
    async send(method, url, body, expected, cleanup = false) {
      const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
      const signal = cleanup ? timeout : AbortSignal.any([stop.signal, timeout]);
      const headers: Record<string, string> = { 'x-auth-token': token };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${base}${url}`, { method, headers, body: body ?? null, signal });
      const text = await res.text();
      if (res.status !== expected) {
        throw new HttpError(
          `${method} ${url}: expected ${expected}, got ${res.status}: ${text.slice(0, 500)}`,
        );
      }
      return text;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Measurement

interface Stats {
  requests: number;
  seconds: number;
  p50: number;
  p95: number;
  p99: number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

function stats(latencies: number[], seconds: number): Stats {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    requests: sorted.length,
    seconds,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
  };
}

/** Runs `count` tasks (or fewer once `until` passes) with `concurrency` in flight; returns each latency. */
async function runPool(
  concurrency: number,
  count: number,
  until: number,
  task: (k: number) => Promise<void>,
): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < count && performance.now() < until) {
      if (stop.signal.aborted) throw new Error('aborted');
      const k = next++;
      const t0 = performance.now();
      await task(k);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

interface Scenario {
  group: string;
  name: string;
  op: 'read' | 'count';
  /** The body of request k. */
  body: (k: number) => unknown;
  /** Checks one response body; returns the figure shown in the "result" column. */
  check: (k: number, response: unknown) => number;
  resultLabel: string;
}

interface ScenarioResult {
  scenario: Scenario;
  stats: Stats;
  /** The mean of `check` over the warm-up responses. */
  meanResult: number;
}

async function runScenario(client: Client, prefix: string, s: Scenario): Promise<ScenarioResult> {
  const url = `${prefix}/${s.op}`;
  // Warm-up, with every response checked: plans are cached and the pages are in memory.
  const seen: number[] = [];
  await runPool(4, WARMUP_REQUESTS, Number.POSITIVE_INFINITY, async (k) => {
    const body = s.body(1_000_000 + k);
    const text = await client.send('POST', url, JSON.stringify(body), 200);
    seen.push(s.check(1_000_000 + k, JSON.parse(text)));
  });
  const bodies = Array.from({ length: MAX_REQUESTS }, (_, k) => JSON.stringify(s.body(k)));
  const run = await runPool(READ_CONCURRENCY, MAX_REQUESTS, performance.now() + MAX_SCENARIO_MS, (k) =>
    client.send('POST', url, bodies[k], 200).then(() => undefined),
  );
  return {
    scenario: s,
    stats: stats(run.latencies, run.seconds),
    meanResult: seen.reduce((a, b) => a + b, 0) / Math.max(1, seen.length),
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

function resultOf(response: unknown): unknown {
  if (typeof response !== 'object' || response === null || !('result' in response)) {
    throw new Error(`unexpected response: ${JSON.stringify(response).slice(0, 300)}`);
  }
  return response.result;
}

function docsOf(response: unknown): Record<string, unknown>[] {
  const result = resultOf(response);
  if (!Array.isArray(result)) throw new Error(`expected an array of documents: ${JSON.stringify(result)}`);
  return result as Record<string, unknown>[];
}

function countOf(response: unknown): number {
  const result = resultOf(response) as { count?: unknown };
  if (typeof result.count !== 'number') throw new Error(`expected a count: ${JSON.stringify(result)}`);
  return result.count;
}

function fail(message: string): never {
  throw new Error(`wrong result: ${message}`);
}

function scenarios(loaded: number): Scenario[] {
  // Request k asks for document docIndex(k): spread over the collection, the same on every run.
  const docIndex = (k: number) => Math.floor(prng((SEED + 7919 * (k + 1)) >>> 0)() * loaded);
  const ageFrom = (k: number) => 18 + (k % 53);
  const scoreFrom = (k: number) => (k % 90) + 0.5;
  return [
    {
      group: 'indexed',
      name: 'equality {email}',
      op: 'read',
      body: (k) => ({ query: { email: `user${docIndex(k)}@x.io` } }),
      check: (k, r) => {
        const docs = docsOf(r);
        if (docs.length !== 1 || docs[0]?.email !== `user${docIndex(k)}@x.io`) fail('email lookup');
        return docs.length;
      },
      resultLabel: 'docs',
    },
    {
      group: 'indexed',
      name: 'range {age} + sort {age} + limit 20',
      op: 'read',
      body: (k) => ({
        query: { age: { $gte: ageFrom(k), $lt: ageFrom(k) + 10 } },
        sort: { age: 1 },
        limit: 20,
      }),
      check: (k, r) => {
        const ages = docsOf(r).map((d) => d.age);
        const inRange = (a: unknown, j: number) =>
          typeof a === 'number' && a >= ageFrom(k) && a < ageFrom(k) + 10 && a >= Number(ages[j - 1] ?? 0);
        if (ages.length > 20 || (loaded >= 1000 && ages.length < 20) || !ages.every(inRange))
          fail('age range');
        return ages.length;
      },
      resultLabel: 'docs',
    },
    {
      group: 'unindexed',
      name: 'equality {name} + limit 20',
      op: 'read',
      body: (k) => ({ query: { name: makeDoc(docIndex(k)).name }, limit: 20 }),
      check: (k, r) => {
        const docs = docsOf(r);
        if (docs.length < 1 || docs.some((d) => d.name !== makeDoc(docIndex(k)).name)) fail('name lookup');
        return docs.length;
      },
      resultLabel: 'docs',
    },
    {
      group: 'unindexed',
      name: 'range {city, profile.score} + sort + limit 20',
      op: 'read',
      body: (k) => ({
        query: { city: pick(prng(k + 1), CITIES), 'profile.score': { $gte: scoreFrom(k) } },
        sort: { 'profile.score': -1 },
        limit: 20,
      }),
      check: (_k, r) => {
        const docs = docsOf(r);
        if (docs.length > 20) fail('limit');
        return docs.length;
      },
      resultLabel: 'docs',
    },
    {
      group: 'count',
      name: 'indexed range {age}',
      op: 'count',
      body: (k) => ({ query: { age: { $gte: ageFrom(k), $lt: ageFrom(k) + 10 } } }),
      check: (_k, r) => {
        const n = countOf(r);
        if (n <= 0 || n > loaded) fail(`age range count ${n}`);
        return n;
      },
      resultLabel: 'count',
    },
    {
      group: 'count',
      name: 'all {}',
      op: 'count',
      body: () => ({ query: {} }),
      check: (_k, r) => {
        const n = countOf(r);
        if (n !== loaded) fail(`count {} is ${n}, expected ${loaded}`);
        return n;
      },
      resultLabel: 'count',
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Output

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) =>
  Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0);

function table(header: string[], rows: string[][], leftColumns = 1): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (c < leftColumns ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(header), rule, ...rows.map(line)].join('\n');
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable DATABASE_URL)';
  }
}

/** Waits for `work`, but at most `ms`: cleanup must not keep the run from ending. */
async function bounded(work: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!work) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work.catch(() => {}), timeout]);
  clearTimeout(timer);
}

const log = (line = '') => process.stdout.write(`${line}\n`);
const progress = (line: string) => process.stderr.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const options = parseOptions();
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const watchdog = setTimeout(() => {
    progress(`\nThe benchmark ran longer than ${WATCHDOG_MS / 1000} s; aborting.`);
    stop.abort();
  }, WATCHDOG_MS);
  watchdog.unref();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stop.signal.aborted) process.exit(130);
      progress(`\n${signal}: aborting, then cleaning up (again to exit at once).`);
      stop.abort();
    });
  }

  let tempDir: string | undefined;
  let db: Database | undefined;
  let app: FastifyInstance | undefined;
  let client: Client | undefined;
  let workplace: string | undefined;
  try {
    if (options.embedded) tempDir = await mkdtemp(path.join(os.tmpdir(), 'bench-storage-'));
    db = await openDatabase({
      databaseUrl: options.embedded ? undefined : databaseUrl,
      dataDir: tempDir ?? './data',
      dbPoolMax: 10,
    });
    await migrate(db.sql);
    const [version] = await db.sql<{ server_version: string }[]>`show server_version`;
    const adminToken = generateSecret(TOKEN_PREFIX.admin);
    app = await buildApp({ sql: db.sql, adminTokenHash: hashSecret(adminToken) });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const http = createClient(base, adminToken);
    client = http;

    const where = options.embedded ? `embedded PGlite in ${tempDir}` : `PostgreSQL ${redactUrl(databaseUrl)}`;
    const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
    log(`Storage benchmark: ${int(options.docs)} documents in one collection`);
    log(`database: ${where}`);
    log(
      `Node ${process.version}, PostgreSQL ${version?.server_version ?? '?'}, ` +
        `${os.availableParallelism()} cores (${cpu})`,
    );
    log(`server in-process at ${base}, driven over HTTP by fetch from the same process`);

    // Setup: a workplace with a random name, one collection, indexes on email and age.
    const name = `bench${Array.from({ length: 12 }, () => INITIALS[randomInt(26)]).join('')}`;
    await http.send('POST', '/v1/workplaces', JSON.stringify({ name }), 201);
    workplace = name;
    const wp = `/v1/workplaces/${name}`;
    const prefix = `${wp}/storages/${COLLECTION}`;
    await http.send('POST', `${wp}/storages`, JSON.stringify({ name: COLLECTION }), 201);
    for (const [name, key] of [
      ['byEmail', 'email'],
      ['byAge', 'age'],
    ] as const) {
      await http.send('POST', `${prefix}/indexes`, JSON.stringify({ name, key: [key] }), 201);
    }

    // 1. Bulk create: the bodies are built first, so that generating them is not measured.
    progress(`generating ${int(options.docs)} documents...`);
    const batches: string[] = [];
    for (let from = 0; from < options.docs; from += BATCH_SIZE) {
      const docs: UserDoc[] = [];
      for (let i = from; i < Math.min(from + BATCH_SIZE, options.docs); i++) docs.push(makeDoc(i));
      batches.push(JSON.stringify({ docs }));
    }
    progress(`loading in ${batches.length} requests, ${LOAD_CONCURRENCY} in flight...`);
    const load = await runPool(
      LOAD_CONCURRENCY,
      batches.length,
      performance.now() + LOAD_BUDGET_MS,
      async (k) => {
        const text = await http.send('POST', `${prefix}/create`, batches[k], 201);
        const inserted = (resultOf(JSON.parse(text)) as { insertedCount?: unknown }).insertedCount;
        const expected = Math.min(BATCH_SIZE, options.docs - k * BATCH_SIZE);
        if (inserted !== expected) fail(`batch ${k} inserted ${String(inserted)} of ${expected}`);
      },
    );
    const loaded = Math.min(options.docs, load.latencies.length * BATCH_SIZE);
    const loadStats = stats(load.latencies, load.seconds);
    if (loaded < options.docs) {
      progress(`load budget of ${LOAD_BUDGET_MS / 1000} s spent: continuing with ${int(loaded)} documents`);
    }

    // Right after a bulk load the table has no planner statistics until autovacuum gets to it, and
    // the plans chosen meanwhile can be very different (a full scan in _id order for an indexed
    // equality). Analyzing now measures the steady state, the same on every run.
    if (options.analyze) {
      const lookup = await findCollection(db.sql, name, COLLECTION);
      if (!lookup.workplace || !lookup.found) throw new Error(`collection ${COLLECTION} not in the catalog`);
      await db.sql.unsafe(`analyze ${lookup.found.table}`);
    }

    // 2-4. Reads and counts.
    const results: ScenarioResult[] = [];
    for (const s of scenarios(loaded)) {
      progress(`${s.group}: ${s.name}...`);
      results.push(await runScenario(http, prefix, s));
    }

    log();
    log(
      table(
        ['bulk create', 'docs', 'requests', 'seconds', 'docs/s', 'p50 ms', 'p95 ms', 'p99 ms'],
        [
          [
            `${int(BATCH_SIZE)} docs/request, ${LOAD_CONCURRENCY} in flight, indexes on email and age`,
            int(loaded),
            int(loadStats.requests),
            loadStats.seconds.toFixed(1),
            int(loaded / loadStats.seconds),
            ms(loadStats.p50),
            ms(loadStats.p95),
            ms(loadStats.p99),
          ],
        ],
      ),
    );
    log();
    log(
      options.analyze
        ? 'planner statistics: ANALYZE after loading (--no-analyze: before autovacuum analyzes the new rows)'
        : 'planner statistics: none (--no-analyze), unless autovacuum analyzed the table during the run',
    );
    log(
      `reads: ${READ_CONCURRENCY} in flight, at most ${int(MAX_REQUESTS)} requests or ${MAX_SCENARIO_MS / 1000} s ` +
        `per scenario, after ${WARMUP_REQUESTS} checked warm-up requests`,
    );
    log(
      table(
        ['scenario', 'requests', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'result (mean)'],
        results.map((r) => [
          `${r.scenario.group}: ${r.scenario.name}`,
          int(r.stats.requests),
          int(r.stats.requests / r.stats.seconds),
          ms(r.stats.p50),
          ms(r.stats.p95),
          ms(r.stats.p99),
          `${r.scenario.resultLabel} ${int(r.meanResult)}`,
        ]),
      ),
    );
  } finally {
    clearTimeout(watchdog);
    if (workplace && client) {
      try {
        await client.send('DELETE', `/v1/workplaces/${workplace}`, undefined, 204, true);
      } catch (err) {
        progress(
          `could not delete workplace ${workplace}: ${err instanceof Error ? err.message : String(err)}`,
        );
        process.exitCode = 1;
      }
    }
    if (app) {
      const closing = app.close();
      // Keep-alive connections of aborted requests would otherwise hold the close open.
      app.server.closeAllConnections();
      await bounded(closing, 10_000);
    }
    await bounded(db?.close(), 10_000);
    if (tempDir) await rm(tempDir, { recursive: true, force: true }).catch(() => {});
  }
}

main().then(
  () => process.exit(),
  (err) => {
    if (stop.signal.aborted) {
      process.stderr.write('bench-storage: aborted\n');
      process.exit(130);
    }
    process.stderr.write(
      `bench-storage failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
