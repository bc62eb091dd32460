/**
 * Reproduces, without the server, the state of V8's young-generation collector that the `_id`
 * lookup's gap to the baseline depends on (README, Performance (14)): ten concurrent `_id` lookups
 * through postgres.js in one process, and the share of the allocated bytes that the scavenges
 * promoted to the old generation (the baseline server: under 1%; the API server: 3-9%).
 *
 *   npm run bench:promotion                         # a fresh heap
 *   npm run bench:promotion -- --grown              # a heap grown as the server's is after startup
 *   npm run bench:promotion -- --grown --layers     # and the read path's two extra async layers
 *   BENCH_NODE_FLAGS=--no-allocation-site-pretenuring npm run bench:promotion -- --grown
 *
 * It makes a table of its own (20,000 documents) in a schema it drops at the end, on DATABASE_URL
 * (default the local `test` database). The lookups run in a child process started with
 * `--trace-gc-nvp`, whose trace this process reads.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import postgres from 'postgres';

const { values: opts } = parseArgs({
  options: {
    grown: { type: 'boolean', default: false },
    layers: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '10' },
    child: { type: 'string' },
  },
});
const databaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const DOCUMENTS = 20_000;
const CONCURRENCY = 10;
/** Collections in the first seconds (start, JIT, the grown heap's own allocation) are not counted. */
const WARM_UP_MS = 2_000;

if (opts.child) await lookups(opts.child);
else await orchestrate();

async function orchestrate() {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const schema = `bench_promotion_${randomBytes(4).toString('hex')}`;
  try {
    await sql.unsafe(`create schema ${schema}`);
    await sql.unsafe(`create table ${schema}.c (id text primary key, doc jsonb not null)`);
    await sql.unsafe(
      `insert into ${schema}.c select 'u' || i, jsonb_build_object('_id', 'u' || i, 'n', 0, 'name', 'User ' || i,
         'email', 'user' || i || '@example.com', 'age', 18 + i % 80, 'tags', jsonb_build_array('t' || i % 7, 't' || i % 11))
       from generate_series(0, ${DOCUMENTS - 1}) as i`,
    );
    const flags = [
      '--trace-gc-nvp',
      ...(opts.grown ? ['--min-semi-space-size=16'] : []),
      ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ];
    const args = [...flags, '--import', 'tsx', fileURLToPath(import.meta.url), '--child', `${schema}.c`];
    if (opts.grown) args.push('--grown');
    if (opts.layers) args.push('--layers');
    args.push('--seconds', String(opts.seconds));
    const trace = await run(args);
    report(trace);
  } finally {
    await sql.unsafe(`drop schema if exists ${schema} cascade`);
    await sql.end();
  }
}

function run(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`lookups exited with ${code}`)),
    );
  });
}

/** Sums the scavenges (`gc=s`) of `--trace-gc-nvp` after the warm-up. */
function report(trace: string) {
  let scavenges = 0;
  let promoted = 0;
  let allocated = 0;
  for (const line of trace.split('\n')) {
    const at = /(\d+) ms: /.exec(line);
    if (!at || Number(at[1]) < WARM_UP_MS || !/ gc=s /.test(line)) continue;
    scavenges++;
    promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    allocated += Number(/ allocated=(\d+)/.exec(line)?.[1] ?? 0);
  }
  const summary = /^lookups (\d+) in (\d+) ms$/m.exec(trace);
  const rate = summary ? (Number(summary[1]) * 1000) / Number(summary[2]) : 0;
  console.log(
    `${opts.grown ? 'grown heap' : 'fresh heap'}${opts.layers ? ', read-path layers' : ''}: ` +
      `${rate.toFixed(0)} lookups/s; scavenges promoted ${((100 * promoted) / Math.max(allocated, 1)).toFixed(2)}% ` +
      `of the bytes allocated (${(promoted / Math.max(scavenges, 1) / 1024).toFixed(0)} KB a scavenge, ${scavenges} scavenges)`,
  );
}

async function lookups(table: string) {
  const sql = postgres(databaseUrl, { max: CONCURRENCY, onnotice: () => {} });
  // Long-lived objects, as a server's heap holds after loading its modules and spec.
  const held: unknown[] = [];
  if (opts.grown)
    for (let i = 0; i < 200_000; i++) held.push({ a: i, b: `x${i}`, c: [i, i + 1], d: { e: i } });
  const text = `select doc from ${table} where id = $1 limit $2::bigint`;
  const readJson = async (values: string[]) => {
    const rows = await sql.unsafe(text, values).raw();
    let json = '[';
    for (const row of rows) json += (row[0] as unknown as Buffer).toString('latin1');
    return Buffer.from(`${json}]`, 'latin1');
  };
  const entries = new Map([['w\nc', { ref: {}, readAt: Date.now() }]]);
  const withCollection = async (workplace: string, name: string, read: (ref: object) => Promise<Buffer>) => {
    const entry = entries.get(`${workplace}\n${name}`) as { ref: object };
    return { workplace: true, found: await read(entry.ref) };
  };
  /** With --layers, the read path's shape: a catalog step awaiting a closure that awaits the query (db/catalog-cache.ts). */
  const one = async (i: number) => {
    const values = [`u${(i * 7919) % DOCUMENTS}`, '100'];
    if (opts.layers) await withCollection('w', 'c', () => readJson(values));
    else await sql.unsafe(text, values).raw();
  };
  const started = Date.now();
  const end = started + Number(opts.seconds) * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < end) await one(n++);
    }),
  );
  process.stdout.write(`lookups ${n} in ${Date.now() - started} ms\n`);
  held.length = 0; // read after the lookups, so the long-lived objects stay alive while they run
  await sql.end();
}
