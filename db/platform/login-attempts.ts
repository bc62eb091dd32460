import type { Sql } from '../connection/sql.js';

/** How many failures lock an account, over which window, and for how long (oidc/throttle.ts). */
export interface AttemptLimits {
  maxFailures: number;
  windowSeconds: number;
  lockSeconds: number;
}

export interface Reservation {
  /** The attempts counted in the current window, this one included (capped at maxFailures + 1). */
  failures: number;
  /**
   * Seconds until the lock ends, from 1 to lockSeconds; 0 when the account is not locked. now() is
   * when a statement's transaction began, so one that waited for the row behind the statement that
   * set the lock sees a little more than lockSeconds left: the bound keeps Retry-After honest.
   */
  lockedFor: number;
}

/**
 * Counts one sign-in attempt on `account` before its password is checked, in one statement: the
 * row lock of the upsert orders concurrent attempts, from any process, so each gets a number of
 * its own. A row whose window (or lock) is over starts again at 1. The attempt that reaches
 * maxFailures sets the lock; attempts after it are counted no further than maxFailures + 1, so
 * an attacker hammering a locked account never overflows the counter.
 */
export async function reserveLoginAttempt(
  sql: Sql,
  workplaceId: string,
  account: string,
  limits: AttemptLimits,
): Promise<Reservation> {
  const { maxFailures, windowSeconds, lockSeconds } = limits;
  const [row] = await sql<Reservation[]>`
    insert into login_attempts as a (workplace_id, account, failures, window_start, locked_until)
    values (${workplaceId}, ${account}, 1, now(),
      case when ${maxFailures}::int <= 1 then now() + make_interval(secs => ${lockSeconds}) end)
    on conflict (workplace_id, account) do update set
      failures = case
        when coalesce(a.locked_until, a.window_start + make_interval(secs => ${windowSeconds})) <= now()
          then excluded.failures
        else least(a.failures + 1, ${maxFailures}::int + 1) end,
      window_start = case
        when coalesce(a.locked_until, a.window_start + make_interval(secs => ${windowSeconds})) <= now()
          then excluded.window_start
        else a.window_start end,
      locked_until = case
        when coalesce(a.locked_until, a.window_start + make_interval(secs => ${windowSeconds})) <= now()
          then excluded.locked_until
        when a.locked_until is not null then a.locked_until
        when a.failures + 1 >= ${maxFailures}::int then now() + make_interval(secs => ${lockSeconds})
        end
    returning failures,
      coalesce(least(${lockSeconds}::int, greatest(1, ceil(extract(epoch from locked_until - now())))::int), 0)
        as "lockedFor"`;
  if (!row) throw new Error('the login attempt upsert returned no row');
  return row;
}

/** Forgets the attempts on `account`: a sign-in succeeded. */
export async function clearLoginAttempts(sql: Sql, workplaceId: string, account: string): Promise<void> {
  await sql`delete from login_attempts where workplace_id = ${workplaceId} and account = ${account}`;
}

/** Drops rows whose window and lock are both over; called now and then, so the table stays small. */
export async function purgeExpiredLoginAttempts(sql: Sql, windowSeconds: number): Promise<void> {
  await sql`
    delete from login_attempts
    where window_start < (select now() - make_interval(secs => ${windowSeconds}))
      and (locked_until is null or locked_until < now())`;
}
