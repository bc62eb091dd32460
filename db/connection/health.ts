import type { Sql } from './sql.js';

/** Resolves once the database has answered a statement; the readiness probe bounds the wait. */
export async function pingDatabase(sql: Sql): Promise<void> {
  await sql`select 1`;
}
