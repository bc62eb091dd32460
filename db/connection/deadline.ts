import net from 'node:net';
import postgres from 'postgres';
import { deadlineStatements, registerPool } from '../../metrics.js';

/**
 * The client side of a PostgreSQL outage. Every statement of a pool registered here gets a
 * deadline, counted from when its caller runs it:
 *  - still waiting for a connection then (the server is down, restarting, or every connection is
 *    busy): postgres.js cancels it, which takes it out of its queue; it is never sent;
 *  - sent and not answered then: the server is asked for a sign of life on a connection of its own.
 *    A server that answers is merely busy: the statement goes on, bounded by PostgreSQL's
 *    statement_timeout, and is checked again a deadline later. A server that does not answer
 *    within PROBE_TIMEOUT_MS is frozen or out of reach, where statement_timeout cannot fire: every
 *    connection of the pool is closed, which fails each statement in flight and keeps every open
 *    transaction from ever sending its COMMIT.
 * A statement given up either way is rejected with DatabaseDeadlineError (503 in errors.ts).
 *
 * postgres.js has no per-query timeout, so this hooks the one method every query goes through once
 * (its `handle`, on the first `await` or `execute()`), acting only for the pools registered here:
 * tagged queries, `unsafe`, `begin` (its BEGIN is what waits for a connection) and its statements,
 * and `reserve`d connections. Cursors are left alone: their promise settles only at their end.
 * The embedded database (PGlite, in-process) cannot go away and is not registered.
 */

/** The error a statement given up at its deadline is rejected with. */
export class DatabaseDeadlineError extends Error {
  readonly code = 'DB_DEADLINE_EXCEEDED';
  constructor(
    deadlineMs: number,
    /**
     * Whether the server had been sent the statement. Closing the connection rolls back an open
     * transaction, but a server that wakes up still runs what it had received before it reads that
     * the connection closed: a statement outside a transaction, or a COMMIT, may yet take effect.
     */
    readonly sent: boolean,
    cause: unknown,
  ) {
    super(`The database did not answer within ${deadlineMs} ms.`, { cause });
    this.name = 'DatabaseDeadlineError';
  }
}

/**
 * How long a request's statement may wait for PostgreSQL, for a connection and for its answer,
 * before it is given up (503): a request never hangs behind a stopped, restarting or frozen database.
 */
export const DEFAULT_DB_DEADLINE_MS = 5_000;

/**
 * How long the sign of life may take. A live server answers `select 1` on an open connection in
 * well under a millisecond and opens a new one in a few; a second tolerates a loaded machine.
 */
export const PROBE_TIMEOUT_MS = 1_000;

/** The parts of postgres.js's Query (src/query.js) this module relies on. */
interface QueryInternals {
  executed: boolean;
  /** The connection's backend key once the query was handed to a connection; null before. */
  state: unknown;
  canceller: ((q: QueryInternals) => Promise<void>) | null;
  cursorRows?: number;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  handle(): Promise<void>;
}

/**
 * One pool's statements and deadline. One timer per pool sweeps the statements rather than a timer
 * and a promise reaction per statement, which every query of every request would pay for. A
 * statement is therefore given up between its deadline and a tenth of a deadline later.
 */
class Policy {
  /** Statements not yet answered, with when their deadline was last set (performance.now()). */
  readonly #running = new Map<QueryInternals, number>();
  /** Statements given up, and whether each had been sent. */
  readonly #givenUp = new WeakMap<QueryInternals, boolean>();
  #sweeper: NodeJS.Timeout | undefined;
  readonly #sweepMs: number;

  constructor(
    readonly deadlineMs: number,
    /** Resolves true when the server answers within PROBE_TIMEOUT_MS; one probe at a time. */
    private readonly alive: () => Promise<boolean>,
    /** Closes every connection of the pool. */
    private readonly disconnect: () => void,
  ) {
    this.#sweepMs = Math.max(deadlineMs / 10, 20);
  }

  /** The statements running now: sent (a connection busy with each) and waiting for a connection. */
  counts(): { active: number; waiting: number } {
    let waiting = 0;
    for (const q of this.#running.keys()) if (q.state === null) waiting++;
    return { active: this.#running.size - waiting, waiting };
  }

  arm(q: QueryInternals): void {
    this.#running.set(q, performance.now());
    const { resolve, reject } = q;
    q.resolve = (value: unknown) => {
      this.#running.delete(q);
      resolve(value);
    };
    q.reject = (err: unknown) => {
      this.#running.delete(q);
      const sent = this.#givenUp.get(q);
      reject(sent === undefined ? err : new DatabaseDeadlineError(this.deadlineMs, sent, err));
    };
    if (!this.#sweeper) {
      this.#sweeper = setInterval(() => this.#sweep(), this.#sweepMs);
      this.#sweeper.unref();
    }
  }

  #sweep(): void {
    if (this.#running.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
      return;
    }
    const now = performance.now();
    const unanswered: QueryInternals[] = [];
    for (const [q, since] of this.#running) {
      if (now - since < this.deadlineMs) continue;
      if (q.state === null) {
        this.#givenUp.set(q, false);
        deadlineStatements.inc({ state: 'unsent' });
        this.#running.delete(q);
        (q.canceller as (q: QueryInternals) => Promise<void>)(q).catch(() => {});
      } else {
        // Checked again a deadline later if the server turns out to be merely busy.
        this.#running.set(q, now);
        unanswered.push(q);
      }
    }
    if (unanswered.length === 0) return;
    void this.alive().then((alive) => {
      if (alive) return;
      for (const q of unanswered)
        if (this.#running.has(q)) {
          this.#givenUp.set(q, true);
          deadlineStatements.inc({ state: 'sent' });
        }
      this.disconnect();
    });
  }
}

/** Keyed by the cancel function postgres.js gives every query of one pool (and only that pool). */
const policies = new WeakMap<object, Policy>();
const HOOKED = Symbol.for('workplace-platform.db-deadline');

function arm(q: QueryInternals): void {
  const policy = q.canceller ? policies.get(q.canceller) : undefined;
  if (!policy || q.cursorRows !== undefined) return;
  policy.arm(q);
}

function hook(sql: postgres.Sql): void {
  const proto = Object.getPrototypeOf(sql`select 1`) as QueryInternals & { [HOOKED]?: true };
  if (proto[HOOKED]) return;
  const handle = proto.handle;
  proto.handle = function handleWithDeadline(this: QueryInternals) {
    if (!this.executed) arm(this);
    return handle.call(this);
  };
  proto[HOOKED] = true;
}

/**
 * postgres.js's `socket` option, so that a pool's sockets can be closed when the server stops
 * answering. It connects the way postgres.js does without the option (which then skips its own
 * connect): to the unix socket path, or to the hosts in turn.
 */
function trackedSockets(sockets: Set<net.Socket>) {
  let next = 0;
  return (options: { host: string[]; port: number[]; path?: string | false }) => {
    for (const s of sockets) if (s.destroyed) sockets.delete(s);
    const i = next++ % options.host.length;
    const host = options.host[i] as string;
    const port = options.port[i] as number;
    const socket = options.path ? net.connect(options.path) : net.connect(port, host);
    // postgres.js reads these for TLS (the server name) and in its connection errors.
    Object.assign(socket, { host, port });
    sockets.add(socket);
    return socket;
  };
}

/**
 * A PostgreSQL pool whose every statement is bounded by `deadlineMs` (see above); `options` are
 * postgres.js's. `end` closes the pool and the connection used for signs of life.
 */
export function openWithDeadlines(
  url: string,
  options: postgres.Options<Record<string, postgres.PostgresType>>,
  deadlineMs: number,
): { sql: postgres.Sql; end(timeoutSeconds: number): Promise<void> } {
  const sockets = new Set<net.Socket>();
  const sql = postgres(url, {
    ...options,
    // A connection attempt that outlives the deadline only holds up the statements queued behind
    // it: a frozen server accepts the TCP connection and never answers.
    connect_timeout: deadlineMs / 1000,
    socket: trackedSockets(sockets),
  } as typeof options);
  const probeSql = postgres(url, {
    ...({ socket: trackedSockets(sockets) } as object),
    max: 1,
    connect_timeout: PROBE_TIMEOUT_MS / 1000,
    idle_timeout: 10,
    fetch_types: false,
    backoff: () => 0,
    onnotice: () => {},
    connection: { application_name: 'workplace-platform probe' },
  });
  let probing: Promise<boolean> | undefined;
  const probe = async (): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        // Any answer of the server's own, an error included (too many connections...), is a sign of life.
        probeSql`select 1`.then(
          () => true,
          (err) => err instanceof postgres.PostgresError,
        ),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(resolve, PROBE_TIMEOUT_MS, false);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };

  hook(sql);
  const sample = sql`select 1` as unknown as QueryInternals;
  if (!sample.canceller) throw new Error('db/connection/deadline.ts does not know this postgres.js release');
  const policy = new Policy(
    deadlineMs,
    () => {
      probing ??= probe().finally(() => {
        probing = undefined;
      });
      return probing;
    },
    () => {
      for (const socket of sockets) socket.destroy();
    },
  );
  policies.set(sample.canceller, policy);
  const max = options.max ?? 10;
  const unregister = registerPool(() => ({ max, ...policy.counts() }));
  return {
    sql,
    async end(timeoutSeconds) {
      unregister();
      await Promise.all([sql.end({ timeout: timeoutSeconds }), probeSql.end({ timeout: 0 })]);
    },
  };
}
