import { type Config, DEFAULT_DB_DEADLINE_MS } from '../config.js';
import { openWithDeadlines } from './deadline.js';
import { openEmbedded } from './embedded.js';
import { jsonbIdFirst } from './jsonb-id-first.js';
import type { Sql } from './sql.js';

/**
 * Seconds before a connection is attempted again after `failures` failed attempts in a row:
 * doubling from 50 ms up to half a second, with jitter so that the pool's connections spread out.
 */
export function reconnectDelaySeconds(failures: number): number {
  return (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** failures, 0.5);
}

export interface Database {
  sql: Sql;
  kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}

/** PostgreSQL when DATABASE_URL is set; otherwise embedded PGlite in DATA_DIR, behind one driver. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolMax'> &
    Partial<Pick<Config, 'statementTimeoutMs' | 'dbDeadlineMs'>>,
  log?: { info(msg: string): void },
): Promise<Database> {
  if (config.databaseUrl) {
    const pool = openWithDeadlines(
      config.databaseUrl,
      {
        // One more than requests are given: background maintenance (a VACUUM after bulk writes,
        // minutes on a large table) holds a connection while it runs, and requests would otherwise
        // queue for the others, which shows in the reads' tail latency.
        max: config.dbPoolMax + 1,
        idle_timeout: 60,
        // postgres.js waits up to 20 s between attempts after failures, which kept requests failing
        // long after PostgreSQL was back: retry within half a second instead.
        backoff: reconnectDelaySeconds,
        onnotice: () => {},
        types: { jsonb: jsonbIdFirst },
        connection: {
          application_name: 'workplace-platform',
          // Every statement of every request is bounded; index builds and maintenance lift it for
          // themselves (withoutStatementTimeout). PGlite cannot interrupt a statement, so it has none.
          ...(config.statementTimeoutMs ? { statement_timeout: config.statementTimeoutMs } : {}),
        },
      },
      config.dbDeadlineMs ?? DEFAULT_DB_DEADLINE_MS,
    );
    log?.info(`database: PostgreSQL (pool of ${config.dbPoolMax}, plus one for maintenance)`);
    return { sql: pool.sql, kind: 'postgres', close: () => pool.end(5) };
  }
  const embedded = await openEmbedded({ dataDir: config.dataDir });
  log?.info(`database: embedded PGlite in ${config.dataDir}`);
  return { sql: embedded.sql, kind: 'embedded', close: () => embedded.close() };
}
