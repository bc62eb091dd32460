import type { Sql } from '../db/connection/sql.js';
import {
  type AttemptLimits,
  clearLoginAttempts,
  purgeExpiredLoginAttempts,
  reserveLoginAttempt,
} from '../db/platform/login-attempts.js';
import type { JsonObject } from '../mongo/value/json.js';
import { subjectOf } from './users.js';

/**
 * Slows down password guessing: after MAX_FAILURES failed sign-ins on one account within WINDOW,
 * the account is refused for LOCK, whatever the password; a success clears the count. Five tries
 * leave room for typos while an online guesser gets no more than five per account every fifteen
 * minutes. The count lives in PostgreSQL, so that every process behind a balancer shares one
 * allowance (in memory, N processes allowed N times the guesses), and each attempt is counted
 * before its password is checked, so that guesses sent at the same moment cannot all be checked
 * before any of them is counted.
 */
export const MAX_FAILURES = 5;
const WINDOW_SECONDS = 15 * 60;
const LOCK_SECONDS = 15 * 60;
const LIMITS: AttemptLimits = {
  maxFailures: MAX_FAILURES,
  windowSeconds: WINDOW_SECONDS,
  lockSeconds: LOCK_SECONDS,
};
/** The share of attempts that also delete expired rows, so that old ones do not pile up. */
const PURGE_PROBABILITY = 0.01;

/**
 * What the attempts of a sign-in are counted on: the user's subject when the login names exactly
 * one user, so that e-mail and username share one count; otherwise the login itself, lowercased,
 * so that an unknown login is locked exactly as a real one is and a 429 tells nothing about which
 * accounts exist. The prefixes keep a subject and a login spelled alike apart.
 */
export function accountKey(user: JsonObject | undefined, login: string): string {
  const subject = user ? subjectOf(user) : undefined;
  return subject !== undefined ? `s:${subject}` : `l:${login.toLowerCase()}`;
}

export class LoginThrottle {
  constructor(private readonly sql: Sql) {}

  /**
   * Counts an attempt on `account` as failed until succeeded() says otherwise. Returns the seconds
   * to wait when the attempt is refused (the account is locked), or 0 when its password may be
   * checked.
   */
  async reserve(workplaceId: string, account: string): Promise<number> {
    const { failures, lockedFor } = await reserveLoginAttempt(this.sql, workplaceId, account, LIMITS);
    if (Math.random() < PURGE_PROBABILITY) await purgeExpiredLoginAttempts(this.sql, WINDOW_SECONDS);
    return failures > MAX_FAILURES ? Math.max(lockedFor, 1) : 0;
  }

  succeeded(workplaceId: string, account: string): Promise<void> {
    return clearLoginAttempts(this.sql, workplaceId, account);
  }
}
