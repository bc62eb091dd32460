/**
 * Slows down password guessing: after MAX_FAILURES failed sign-ins for one login within WINDOW,
 * that login is refused for LOCK, whatever the password. Per process (a deployment with several
 * processes multiplies the allowance by their number); a success clears the count.
 */
export const MAX_FAILURES = 5;
const WINDOW_MS = 15 * 60_000;
const LOCK_MS = 15 * 60_000;
const MAX_TRACKED = 100_000;

interface Entry {
  failures: number;
  since: number;
  lockedUntil: number;
}

export class LoginThrottle {
  readonly #entries = new Map<string, Entry>();
  constructor(private readonly now: () => number = Date.now) {}

  /** Seconds until `key` may try again; 0 when it may now. */
  retryAfter(key: string): number {
    const e = this.#entries.get(key);
    if (!e) return 0;
    const left = e.lockedUntil - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  failed(key: string): void {
    const now = this.now();
    let e = this.#entries.get(key);
    if (!e || now - e.since > WINDOW_MS) {
      if (this.#entries.size >= MAX_TRACKED) this.#prune(now);
      e = { failures: 0, since: now, lockedUntil: 0 };
      this.#entries.set(key, e);
    }
    e.failures++;
    if (e.failures >= MAX_FAILURES) e.lockedUntil = now + LOCK_MS;
  }

  succeeded(key: string): void {
    this.#entries.delete(key);
  }

  #prune(now: number) {
    for (const [key, e] of this.#entries) {
      if (now - e.since > WINDOW_MS && e.lockedUntil < now) this.#entries.delete(key);
    }
    if (this.#entries.size >= MAX_TRACKED) this.#entries.clear();
  }
}
