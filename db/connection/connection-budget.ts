import type { Sql } from './sql.js';

/** What the PostgreSQL server allows, and what other clients hold right now. */
export interface ConnectionLimits {
  maxConnections: number;
  /** superuser_reserved_connections plus reserved_connections (PostgreSQL 16+): not ours to take. */
  reserved: number;
  /** Client connections open right now, besides the one that asked. */
  inUse: number;
}

export async function readConnectionLimits(sql: Sql): Promise<ConnectionLimits> {
  // reserved_connections exists from PostgreSQL 16 on; current_setting(..., true) is null before.
  const [row] = await sql<{ max: string; superuser: string; reserved: string | null; in_use: number }[]>`
    select current_setting('max_connections') as max,
           current_setting('superuser_reserved_connections') as superuser,
           current_setting('reserved_connections', true) as reserved,
           (select count(*)::int from pg_stat_activity
             where backend_type = 'client backend' and pid <> pg_backend_pid()) as in_use`;
  if (!row) throw new Error('the connection settings query returned no row');
  return {
    maxConnections: Number(row.max),
    reserved: Number(row.superuser) + Number(row.reserved ?? 0),
    inUse: row.in_use,
  };
}

export interface ConnectionBudget {
  /** refuse: the processes could open more connections than the server accepts at all. */
  verdict: 'ok' | 'warn' | 'refuse';
  message: string;
}

/**
 * Every process holds a pool of DB_POOL_MAX connections plus one for maintenance (db/connection/open.ts),
 * and one that listens for catalog changes (db/storage/catalog-changes.ts).
 * A budget the server can never grant is refused: under load the pools would fill and requests
 * would fail with "too many clients" at random, far from the setting that caused it. A budget
 * above what other clients leave free right now is only a warning: they may be gone by then.
 */
export function connectionBudget(
  limits: ConnectionLimits,
  processes: number,
  dbPoolMax: number,
): ConnectionBudget {
  const perProcess = dbPoolMax + 2;
  const budget = perProcess * processes;
  const usable = limits.maxConnections - limits.reserved;
  const free = usable - limits.inUse;
  const summary =
    `connection budget: ${processes} process${processes === 1 ? '' : 'es'} x ${perProcess} = ${budget}` +
    ` of max_connections ${limits.maxConnections} (${limits.reserved} reserved, ${limits.inUse} in use by other clients)`;
  if (budget > usable) {
    return {
      verdict: 'refuse',
      message:
        `${summary}: (DB_POOL_MAX ${dbPoolMax} + 2) x WORKERS ${processes} exceeds the ${usable} connections ` +
        `PostgreSQL accepts; lower DB_POOL_MAX or WORKERS, or raise max_connections`,
    };
  }
  if (budget > free) {
    return {
      verdict: 'warn',
      message: `${summary}: only ${free} are free now; under load some requests may fail with too many clients`,
    };
  }
  return { verdict: 'ok', message: summary };
}
