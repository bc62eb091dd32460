import { DEFAULT_DB_DEADLINE_MS, openWithDeadlines } from './deadline.js';
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

/**
 * What opening the database takes: these fields of the server's Config (config.ts), declared here
 * so that db/ depends on no layer above it. Tests and scripts/token.ts pass only the first three.
 */
export interface DatabaseOptions {
  /** Unset: the embedded PGlite database in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  dbPoolMax: number;
  /** postgres.js's `prepare`: false turns every prepared statement off (DB_PREPARE). Default true. */
  dbPrepare?: boolean;
  /** PostgreSQL's statement_timeout for requests' statements; 0 or unset for none. */
  statementTimeoutMs?: number;
  /** The client-side deadline of every statement; DEFAULT_DB_DEADLINE_MS when unset. */
  dbDeadlineMs?: number;
  /**
   * With `dataDir` 'memory://': a data directory image to start from rather than initialising a
   * new cluster, which takes seconds (the test suite opens hundreds of in-memory databases).
   */
  memoryImage?: Blob | undefined;
}

export interface Database {
  sql: Sql;
  kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}

/** PostgreSQL when DATABASE_URL is set; otherwise embedded PGlite in DATA_DIR, behind one driver. */
export async function openDatabase(
  config: DatabaseOptions,
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
        // Statements stay prepared for a connection's life; it is recycled after 30 to 60 minutes
        // (postgres.js's max_lifetime), which bounds them (db/storage/statement-texts.ts).
        prepare: config.dbPrepare ?? true,
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
  const embedded = await openEmbedded({ dataDir: config.dataDir, image: config.memoryImage });
  log?.info(`database: embedded PGlite in ${config.dataDir}`);
  return { sql: embedded.sql, kind: 'embedded', close: () => embedded.close() };
}
