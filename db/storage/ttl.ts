import { ttlDeleted, ttlPassDuration } from '../../metrics.js';
import type { Sql } from '../connection/sql.js';
import { catalogId } from '../platform/workplaces.js';
import { tableOf } from './catalog.js';
import type { Statistics } from './statistics.js';

/**
 * TTL indexes (`expireAfterSeconds`): a sweeper deletes the documents whose date (the generated
 * column t<index id>, migration 0015, with a btree) lies further back than the index's seconds.
 * Each batch is one short transaction, so a pass never holds many row locks or a long statement,
 * and writes to the collection go on between batches.
 */

/**
 * Documents deleted per statement: bounds each statement's time, locks and WAL. Smaller batches
 * cost more per document (each statement walks the index entries earlier batches left dead).
 */
export const TTL_BATCH = 5000;

interface TtlIndex {
  id: string;
  wid: string;
  cid: string;
  seconds: string;
  /** A partial or sparse TTL index removes only the documents it holds. */
  predicate: boolean;
}

export interface SweepResult {
  deleted: number;
  /** Indexes another process was sweeping at the time (it holds their lock): left to it. */
  skipped: number;
}

/**
 * One pass over every TTL index of every workplace. Several server processes on one database each
 * run passes; a transaction-scoped advisory lock per index makes one of them sweep a given index
 * at a time (the others skip it), and SKIP LOCKED leaves alone the documents a request is changing,
 * for the next pass. A document is deleted once: DELETE of a row another transaction deleted
 * affects nothing.
 */
export async function sweepExpired(
  sql: Sql,
  batch = TTL_BATCH,
  noteDeleted: (table: string, rows: number) => void = () => {},
): Promise<SweepResult> {
  const indexes = await sql<TtlIndex[]>`
    select i.id::text as id, c.workplace_id::text as wid, c.id::text as cid,
      (i.options->>'expireAfterSeconds') as seconds,
      (i.options ? 'partialFilterExpression' or i.options->'sparse' = 'true'::jsonb) as predicate
    from collection_indexes i join collections c on c.id = i.collection_id
    where i.options ? 'expireAfterSeconds'
    order by i.id`;
  const result: SweepResult = { deleted: 0, skipped: 0 };
  for (const ix of indexes) {
    let deleted = 0;
    for (;;) {
      const n = await deleteBatch(sql, ix, batch);
      if (n === undefined) {
        result.skipped++;
        break;
      }
      deleted += n;
      if (n < batch) break;
    }
    result.deleted += deleted;
    if (deleted > 0) {
      ttlDeleted.inc(deleted);
      noteDeleted(tableOf(ix.wid, ix.cid), deleted);
    }
  }
  return result;
}

/**
 * Deletes one batch of the expired documents of one TTL index, oldest first, as the btree over
 * t<id> gives them ($1: the index's seconds, $2: the batch size); exported so tests can EXPLAIN
 * it. The cutoff is a sub-select, computed once per execution rather than per row by the generic
 * plan of the prepared statement. The rows are found by their physical address (a TID scan),
 * which they keep while this transaction holds their lock: cheaper than looking each up again by
 * `id`.
 */
export function deleteExpiredStatement(table: string, indexId: string, predicate: boolean): string {
  const t = `"t${catalogId(indexId)}"`;
  const p = predicate ? ` and "p${catalogId(indexId)}"` : '';
  return `delete from ${table} where ctid = any(array(
    select ctid from ${table} where ${t} < (select now() - $1::bigint * interval '1 second')${p}
    order by ${t} limit $2::int for update skip locked))`;
}

/** One batch of the oldest expired documents, or undefined when another process holds the index. */
async function deleteBatch(sql: Sql, ix: TtlIndex, batch: number): Promise<number | undefined> {
  const table = tableOf(ix.wid, ix.cid);
  try {
    return await sql.begin(async (tx) => {
      const [lock] = await tx<{ ok: boolean }[]>`
        select pg_try_advisory_xact_lock(hashtextextended(${`ttl ${ix.id}`}, 0)) as ok`;
      if (!lock?.ok) return undefined;
      const deleted = await tx.unsafe(deleteExpiredStatement(table, ix.id, ix.predicate), [
        ix.seconds,
        String(batch),
      ]);
      return deleted.count;
    });
  } catch (err) {
    // The collection or the index went away since the catalog was read: nothing left to sweep.
    const code = (err as { code?: string }).code;
    if (code === '42P01' || code === '42703') return 0;
    throw err;
  }
}

interface SweeperLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface TtlSweeper {
  /** Ends the schedule and waits for a pass in progress; no pass starts after it resolves. */
  stop(): Promise<void>;
}

/**
 * Runs a pass every `intervalMs`, counted from the end of the previous one (passes never overlap).
 * A failed pass (the database is down, say) is logged and the next one comes at the next interval.
 * Deletions are reported to `statistics`, which vacuums a table once enough of it changed: PGlite
 * has no autovacuum, and expired documents would otherwise keep their space for good.
 * Started and stopped only by server.ts: the app itself starts no timers.
 */
export function startTtlSweeper(
  sql: Sql,
  log: SweeperLog,
  intervalMs: number,
  statistics?: Pick<Statistics, 'noteWrites'>,
): TtlSweeper {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const pass = async () => {
    const endTimer = ttlPassDuration.startTimer();
    try {
      const { deleted } = await sweepExpired(sql, TTL_BATCH, (table, rows) => {
        void statistics?.noteWrites(table, rows);
      });
      if (deleted > 0) log.info({ deleted }, 'TTL pass deleted expired documents');
    } catch (err) {
      log.warn({ err }, 'TTL pass failed; the next one runs at the next interval');
    } finally {
      endTimer();
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
