/**
 * The hand-written server's data (hand-written.ts serves it): its tables, copied from the API's
 * seeded collections, and the checks that it answers every scenario as the API does.
 */
import type postgres from 'postgres';
import { findCollection } from '../../db/storage/catalog.js';
import { type Bench, call } from './context.js';
import { doc } from './data.js';
import { selected } from './options.js';
import { handSchema } from './processes.js';
import { DELETE_MANY } from './scenarios/deletes.js';
import { READS } from './scenarios/reads.js';
import { findOneAndUpdateBody, updateOneBody } from './scenarios/writes.js';

/**
 * The hand-written server's tables, `id text primary key, doc jsonb` (ids in byte order, as the
 * API orders `_id`), filled with copies of the API's collections once they are seeded, with the
 * plain expression indexes a developer would add for the scenarios: each equality index ends
 * with `id`, since both servers return a page in `_id` order.
 */
export async function seedHandWritten(sql: postgres.Sql, workplace: string): Promise<void> {
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

/**
 * Fails the run unless the hand-written server answers a few variants of every read scenario,
 * at both sizes, with the API's documents in the API's order (or its count): a faster answer to
 * another question would measure nothing.
 */
export async function checkHandWritten(bench: Bench): Promise<void> {
  const { workplace } = bench;
  const handWritten = bench.handWritten?.url ?? '';
  for (const s of READS) {
    for (const size of ['small', 'large'] as const) {
      const n = size === 'small' ? bench.options.small : bench.options.large;
      for (const i of [0, 1, 7, 31, 113]) {
        const body = s.body(i, n);
        const fromApi = (
          (await call(bench, 'POST', `/v1/workplaces/${workplace}/storages/${size}/${s.op}`, body)) as {
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
async function askHandWritten(
  handWritten: string,
  table: string,
  route: string,
  body: unknown,
): Promise<unknown> {
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
export async function checkHandWrittenWrites(bench: Bench): Promise<void> {
  const { options } = bench;
  const handWritten = bench.handWritten?.url ?? '';
  const storages = `/v1/workplaces/${bench.workplace}/storages`;
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
      body: findOneAndUpdateBody(0, options.large),
    },
    {
      name: 'updateOne',
      collection: 'large',
      table: 'large',
      route: 'update-one',
      body: updateOneBody(0, options.large),
    },
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
  if (selected(options, DELETE_MANY))
    checks.push({
      name: 'deleteMany',
      collection: 'deletes',
      table: 'deletes',
      route: 'delete',
      body: { query: { batch: 0 } },
    });
  for (const { name, collection, table, route, body, shape = (r: unknown) => r } of checks) {
    const fromApi = shape(
      ((await call(bench, 'POST', `${storages}/${collection}/${route}`, body)) as { result: unknown }).result,
    );
    const fromHand = shape(await askHandWritten(handWritten, table, route, body));
    if (canonical(fromApi) !== canonical(fromHand))
      throw new Error(
        `the hand-written server answers ${name} unlike the API:\n  API: ${JSON.stringify(fromApi).slice(0, 300)}\n  hand-written: ${JSON.stringify(fromHand).slice(0, 300)}`,
      );
  }
  process.stderr.write('hand-written server: same answers to the writes as the API\n');
}
