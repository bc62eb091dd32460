import postgres from 'postgres';
import type { Config } from '../config.js';
import { openEmbedded } from './embedded.js';
import { jsonbIdFirst } from './jsonb-id-first.js';
import type { Sql } from './sql.js';

export interface Database {
  sql: Sql;
  kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}

/** PostgreSQL when DATABASE_URL is set; otherwise embedded PGlite in DATA_DIR, behind one driver. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolMax'> & Partial<Pick<Config, 'statementTimeoutMs'>>,
  log?: { info(msg: string): void },
): Promise<Database> {
  if (config.databaseUrl) {
    const sql = postgres(config.databaseUrl, {
      // One more than requests are given: background maintenance (a VACUUM after bulk writes,
      // minutes on a large table) holds a connection while it runs, and requests were left
      // queueing for the others (the bench's read p99 at 1,000,000 documents, 11-15 ms against 5).
      max: config.dbPoolMax + 1,
      connect_timeout: 10,
      idle_timeout: 60,
      onnotice: () => {},
      types: { jsonb: jsonbIdFirst },
      connection: {
        application_name: 'workplace-platform',
        // Every statement of every request is bounded; index builds and maintenance lift it for
        // themselves (withoutStatementTimeout). PGlite cannot interrupt a statement, so it has none.
        ...(config.statementTimeoutMs ? { statement_timeout: config.statementTimeoutMs } : {}),
      },
    });
    log?.info(`database: PostgreSQL (pool of ${config.dbPoolMax}, plus one for maintenance)`);
    return { sql, kind: 'postgres', close: () => sql.end({ timeout: 5 }) };
  }
  const embedded = await openEmbedded({ dataDir: config.dataDir });
  log?.info(`database: embedded PGlite in ${config.dataDir}`);
  return { sql: embedded.sql, kind: 'embedded', close: () => embedded.close() };
}
