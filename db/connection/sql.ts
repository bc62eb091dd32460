import type postgres from 'postgres';

/** The one database handle type: postgres.js, over PostgreSQL or over embedded PGlite. */
export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

/**
 * Runs `work` on one reserved connection with no statement timeout: maintenance such as VACUUM
 * takes as long as the data needs, and cannot run inside a transaction where `set local` would do.
 */
export async function withoutStatementTimeout<T>(sql: Sql, work: (conn: Sql) => Promise<T>): Promise<T> {
  // Only the timeout this process put in its startup packet (db/connection/open.ts) is lifted. Through a
  // pooler in transaction mode (PgBouncer) each statement may reach another server connection, so
  // a session-level SET could miss the VACUUM and stay behind for other clients; there the timeout
  // belongs to the role (README, "Scaling out"), and maintenance runs under it.
  const own = (sql.options?.connection as { statement_timeout?: unknown } | undefined)?.statement_timeout;
  if (!own) return work(sql);
  const conn = await sql.reserve();
  try {
    await conn.unsafe('set statement_timeout = 0');
    return await work(conn as unknown as Sql);
  } finally {
    // Back to the value the connection was opened with, before another request gets it.
    await conn.unsafe('reset statement_timeout').catch(() => {});
    conn.release();
  }
}

/** SQLSTATEs after which PostgreSQL has rolled the statement or transaction back: running it again is safe. */
const TRANSIENT_CONFLICTS = new Set(['40P01', '40001']);
export const CONFLICT_ATTEMPTS = 5;

/**
 * Runs `work` (one statement or one transaction) again when PostgreSQL aborted it for a deadlock or
 * a serialization failure, after a short random pause, so that requests racing for the same rows
 * all complete instead of one of them reaching the client as an error.
 */
export async function retryingConflicts<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= CONFLICT_ATTEMPTS || typeof code !== 'string' || !TRANSIENT_CONFLICTS.has(code))
        throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}
