/** The TTL scenario: one expiry pass, timed against the DELETE a developer would write. */
import type postgres from 'postgres';
import { findCollection } from '../../../db/storage/catalog.js';
import { sweepExpired } from '../../../db/storage/ttl.js';
import { type Bench, call } from '../context.js';
import { ms, timeIt } from '../measure.js';

/** The seeded `joined` dates: 2020-01-01 plus (i % JOINED_DAYS) days (see `doc`, data.ts). */
const JOINED_DAYS = 1500;

/**
 * One TTL pass over a copy of the large collection with a TTL index on `joined`, set so that the
 * documents of the first half of the dates have expired, against the DELETE a developer would
 * write by hand on another copy (no index, the date cast in the condition). The pass runs in this
 * process, as the server's sweeper would run it, on its own connection; once each, since a pass
 * consumes its documents.
 */
export async function runTtlExpiry(bench: Bench, sql: postgres.Sql): Promise<void> {
  const { results, workplace } = bench;
  const LARGE = bench.options.large;
  const storages = `/v1/workplaces/${workplace}/storages`;
  // Half a day before the first date that stays: the pass runs a while after this is computed.
  const cutoff = Date.UTC(2020, 0, 1) + (JOINED_DAYS / 2) * 86_400_000 - 43_200_000;
  const seconds = Math.floor((Date.now() - cutoff) / 1000);
  let expired = 0;
  for (let i = 0; i < LARGE; i++) if (i % JOINED_DAYS < JOINED_DAYS / 2) expired++;
  await call(bench, 'POST', storages, { name: 'ttlapi' });
  await call(bench, 'POST', `${storages}/ttlapi/indexes`, {
    name: 'expire',
    key: ['joined'],
    expireAfterSeconds: seconds,
  });
  await call(bench, 'POST', storages, { name: 'ttlbase' });
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
