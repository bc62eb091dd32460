import type { Sql } from '../connection/sql.js';

/** Whether the database is a Citus coordinator: its catalog of distributed tables exists. */
export async function citusInstalled(sql: Sql): Promise<boolean> {
  const [row] = await sql.unsafe<{ citus: boolean }[]>(
    `select to_regclass('pg_catalog.pg_dist_partition') is not null as citus`,
  );
  return row?.citus === true;
}

/**
 * Statement shapes Citus refuses or cannot plan although PostgreSQL runs them (issue 42; seen on
 * Citus 13.2 with schema-based sharding). Where one of these errors comes back, the caller runs
 * another statement that means the same and that Citus runs; on PostgreSQL and PGlite they never
 * occur, so their statements stay as they are. docs/scaling.md lists them.
 *
 * - A statement whose conditions the planner proves false is routed to no shard, and then Citus
 *   cannot plan a data-modifying WITH ("could not find valid entry for shard 0"), nor a system
 *   column such as `xmin` next to the catalog guard's sub-select ("invalid attnum -2 for
 *   rangetable entry").
 * - An UPDATE or DELETE with a VOLATILE function in its conditions (`$expr`'s functions that raise
 *   MongoDB's errors are VOLATILE, so that they never run while a statement is planned).
 */
export function citusCannotRun(err: unknown): boolean {
  const { code, message = '' } = err as { code?: unknown; message?: string };
  if (code === 'XX000')
    return (
      message === 'could not find valid entry for shard 0' ||
      /^invalid attnum -\d+ for rangetable entry /.test(message)
    );
  return (
    code === '0A000' &&
    message.startsWith(
      'functions used in the WHERE/ON/WHEN clause of modification queries on distributed tables must not be VOLATILE',
    )
  );
}
