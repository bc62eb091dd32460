/**
 * The benchmark's baseline: the least a server can do to answer each scenario. Fastify and
 * postgres.js, no validation, no authentication, no query compilation: each route runs one SQL
 * statement fixed at start (the statement our compiler produces for that scenario, captured by
 * the orchestrator) with the parameter values sent in the body as `{"v": [...]}`.
 *
 * Config (env BENCH_BASELINE): {"databaseUrl": "...", "statements": {"<name>": "<sql>"}}.
 * Prints "listening <port>" when ready.
 */
import Fastify from 'fastify';
import postgres from 'postgres';

const config = JSON.parse(process.env.BENCH_BASELINE ?? '{}') as {
  databaseUrl: string;
  poolMax: number;
  statements: Record<string, string>;
};
const sql = postgres(config.databaseUrl, { max: config.poolMax, onnotice: () => {} });
const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });

app.post<{ Params: { name: string }; Body: { v: unknown[] } }>('/q/:name', async (request) => {
  const text = config.statements[request.params.name];
  if (!text) throw new Error(`no statement ${request.params.name}`);
  // Keys come as {"bytea": hex} (baseline-statements.ts `wire`), everything else as text.
  const values = request.body.v.map((x) =>
    typeof x === 'object' && x !== null && 'bytea' in x ? Buffer.from(String(x.bytea), 'hex') : x,
  );
  const rows = await sql.unsafe(text, values as never[]);
  return { result: rows.map((r) => (r as { doc?: unknown }).doc ?? r) };
});

// The workplace + collection create/delete cycle, as the bare SQL it comes down to.
app.post<{ Body: { v: [string] } }>('/cycle', async (request) => {
  const schema = `bench_${request.body.v[0]}`;
  await sql.begin(async (tx) => {
    await tx.unsafe(`create schema ${schema}`);
    await tx.unsafe(`create table ${schema}.c (id bytea primary key, doc jsonb not null)`);
  });
  await sql.unsafe(`drop schema ${schema} cascade`);
  return { result: true };
});

await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
process.on('SIGTERM', async () => {
  await app.close();
  await sql.end({ timeout: 2 });
  process.exit(0);
});
