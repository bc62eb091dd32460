/**
 * The benchmark's second baseline: the server a developer would write by hand for the scenarios'
 * data. Fastify and postgres.js, no validation, no authentication, no query compiler: each route
 * takes the API's request body, picks the values it knows are there, and runs the simplest SQL
 * that is correct for the bench's documents (not in general) as a prepared statement (postgres.js
 * tagged templates are prepared). Its tables (`id text primary key, doc jsonb`) and plain
 * expression indexes are made and filled by the orchestrator (hand-written-setup.ts, `seedHandWritten`).
 *
 * Config (env BENCH_HAND_WRITTEN): {"databaseUrl": "...", "poolMax": 10, "schema": "..."}.
 * Prints "listening <port>" when ready.
 */
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import postgres from 'postgres';

const config = JSON.parse(process.env.BENCH_HAND_WRITTEN ?? '{}') as {
  databaseUrl: string;
  poolMax: number;
  schema: string;
};
const sql = postgres(config.databaseUrl, { max: config.poolMax, onnotice: () => {} });
const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });

type Query = Record<string, unknown>;
interface Body {
  query: Query;
  limit?: number;
  docs?: Record<string, unknown>[];
}
const TABLES = new Set(['small', 'large', 'bulk', 'deletes']);
/** The collection's table: only names of our own tables, never request text, reach the SQL. */
function table(name: string) {
  if (!TABLES.has(name)) throw new Error(`no table ${name}`);
  return sql(`${config.schema}.${name}`);
}

// What a developer would write for ids of documents sent without one: the API's 24 hex digits
// (seconds, random per process, counter), so both servers store and return ids of the same size.
const processRandom = randomBytes(5).toString('hex');
let counter = randomBytes(3).readUIntBE(0, 3);
function objectId(): string {
  counter = (counter + 1) % 0x1000000;
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0');
  return `${seconds}${processRandom}${counter.toString(16).padStart(6, '0')}`;
}

// API bodies of the reads: {query: {_id}}, {query: {email}}, {query: {city}, limit},
// {query: {age: {$gte, $lt}}, sort: {age: 1}, limit}, {query: {city: {$in}}, limit},
// {query: {'profile.score', 'profile.verified'}, limit}. The API orders by _id when no sort is
// given, and by _id after the sort's keys: so do these. The writes take the API's bodies too.
app.post<{ Params: { t: string; q: string }; Body: Body }>('/:t/:q', async (request) => {
  const t = table(request.params.t);
  const { query, limit = 100 } = request.body;
  switch (request.params.q) {
    case 'lookup':
      return {
        result: (await sql`select doc from ${t} where id = ${query._id as string}`).map((r) => r.doc),
      };
    case 'email':
      // A unique field: no order and no limit needed, at most one row.
      return {
        result: (await sql`select doc from ${t} where doc->>'email' = ${query.email as string}`).map(
          (r) => r.doc,
        ),
      };
    case 'equality':
      return {
        result: (
          await sql`select doc from ${t} where doc->>'city' = ${query.city as string} order by id limit ${limit}`
        ).map((r) => r.doc),
      };
    case 'range': {
      const age = query.age as { $gte: number; $lt: number };
      return {
        result: (
          await sql`select doc from ${t} where (doc->>'age')::int >= ${age.$gte} and (doc->>'age')::int < ${age.$lt}
            order by (doc->>'age')::int, id limit ${limit}`
        ).map((r) => r.doc),
      };
    }
    case 'in': {
      const cities = (query.city as { $in: string[] }).$in;
      return {
        result: (
          await sql`select doc from ${t} where doc->>'city' = any(${cities}::text[]) order by id limit ${limit}`
        ).map((r) => r.doc),
      };
    }
    case 'unindexed': {
      const filter = { profile: { score: query['profile.score'], verified: query['profile.verified'] } };
      return {
        result: (
          await sql`select doc from ${t} where doc @> ${JSON.stringify(filter)}::text::jsonb order by id limit ${limit}`
        ).map((r) => r.doc),
      };
    }
    case 'count-group': {
      const [row] =
        await sql`select count(*)::int as n from ${t} where (doc->>'group')::int = ${query.group as number}`;
      return { result: { count: row?.n } };
    }
    case 'count-city': {
      const [row] =
        await sql`select count(*)::int as n from ${t} where doc->>'city' = ${query.city as string}`;
      return { result: { count: row?.n } };
    }
    case 'create': {
      const docs = (request.body.docs ?? []).map((d) => ('_id' in d ? d : { _id: objectId(), ...d }));
      const r = await sql`insert into ${t} (id, doc)
        select d->>'_id', d from jsonb_array_elements(${JSON.stringify(docs)}::text::jsonb) as d`;
      return { result: { insertedCount: r.count, insertedIds: docs.map((d) => d._id) } };
    }
    case 'update': {
      const r = await sql`update ${t} set doc = jsonb_set(doc, '{n}', to_jsonb((doc->>'n')::int + 1))
        where (doc->>'bucket')::int = ${query.bucket as number}`;
      return { result: { matchedCount: r.count, modifiedCount: r.count } };
    }
    // {query: {_id}, doc: {$inc: {n: 1}}}
    case 'update-one': {
      const r = await sql`update ${t} set doc = jsonb_set(doc, '{n}', to_jsonb((doc->>'n')::int + 1))
        where id = ${query._id as string}`;
      return { result: { matchedCount: r.count, modifiedCount: r.count } };
    }
    // {query: {group}, sort: {n: 1}, doc: {$inc: {n: 1}}, fields: {n: 1}, returnDocument: 'after'}:
    // one statement locks the least-used match, changes it and returns it as projected.
    case 'find-one-and-update': {
      const [row] = await sql`update ${t} set doc = jsonb_set(doc, '{n}', to_jsonb((doc->>'n')::int + 1))
        where id = (select id from ${t} where (doc->>'group')::int = ${query.group as number}
          order by (doc->>'n')::numeric, id limit 1 for update)
        returning jsonb_build_object('_id', doc->'_id', 'n', doc->'n') as doc`;
      return { result: { value: row?.doc ?? null } };
    }
    // {query: {batch}}
    case 'delete': {
      const r = await sql`delete from ${t} where (doc->>'batch')::int = ${query.batch as number}`;
      return { result: { deletedCount: r.count } };
    }
    default:
      throw new Error(`no route ${request.params.q}`);
  }
});

await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
process.on('SIGTERM', async () => {
  await app.close();
  await sql.end({ timeout: 2 });
  process.exit(0);
});
