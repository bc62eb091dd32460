/**
 * Embedded PostgreSQL (PGlite, WASM) exposed through postgres.js, so the app
 * talks to the embedded database and a real server through one driver.
 *
 * postgres.js accepts a `socket` factory; we hand it an in-process Duplex that
 * frames the frontend protocol bytes it writes and feeds whole messages to
 * PGlite's wire-protocol entry point, pushing PGlite's backend bytes back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Duplex } from 'node:stream';
import { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import { jsonbIdFirst } from './jsonb-id-first.js';

export interface EmbeddedDatabase {
  sql: postgres.Sql;
  close(): Promise<void>;
}

export class DataDirLockedError extends Error {
  readonly dataDir: string;
  readonly pid: number | undefined;

  constructor(dataDir: string, pid: number | undefined) {
    super(
      `Data directory ${dataDir} is already in use by ${pid === undefined ? 'another process' : `process ${pid}`} ` +
        `(lock file ${path.join(dataDir, LOCK_FILE)}). Stop that process, or set DATA_DIR to another directory.`,
    );
    this.name = 'DataDirLockedError';
    this.dataDir = dataDir;
    this.pid = pid;
  }
}

const MEMORY = 'memory://';
const LOCK_FILE = '.lock';

/** dataDir: a filesystem path (created if missing), or the literal 'memory://' for a throwaway in-memory db (tests). */
export async function openEmbedded(opts: {
  dataDir: string;
  /** For 'memory://': the data directory to start from (PGlite's dumpDataDir) instead of a new one. */
  image?: Blob | undefined;
  onnotice?: (n: unknown) => void;
}): Promise<EmbeddedDatabase> {
  let lock: Lock | undefined;
  let dataDir = MEMORY;
  if (opts.dataDir !== MEMORY) {
    dataDir = path.resolve(opts.dataDir);
    fs.mkdirSync(dataDir, { recursive: true });
    lock = await acquireLock(dataDir);
  }

  let pg: PGlite | undefined;
  let sql: postgres.Sql | undefined;
  try {
    pg = await PGlite.create(dataDir, opts.image && dataDir === MEMORY ? { loadDataDir: opts.image } : {});
    sql = connect(pg, opts.onnotice ?? (() => {}));
    // Connect now so a broken bridge fails the open rather than the first query.
    await sql`select 1`;
  } catch (err) {
    await sql?.end({ timeout: 0 }).catch(() => {});
    await pg?.close().catch(() => {});
    lock?.release();
    throw err;
  }

  const opened = { sql, pg };
  let closing: Promise<void> | undefined;
  return {
    sql,
    close() {
      closing ??= (async () => {
        try {
          await opened.sql.end();
        } finally {
          try {
            await opened.pg.close();
          } finally {
            lock?.release();
          }
        }
      })();
      return closing;
    },
  };
}

function connect(pg: PGlite, onnotice: (n: unknown) => void): postgres.Sql {
  const session = new SessionGuard();
  const listeners = new SessionListeners();
  // `socket` and `onnotify` are supported by postgres.js at runtime but missing from its typings.
  const options: postgres.Options<{ jsonb: postgres.PostgresType }> & {
    socket: () => Duplex;
    onnotify: (channel: string, payload: string) => void;
  } = {
    max: 1, // PGlite is a single backend: one session, one connection
    socket: () => new PGliteSocket(pg, session),
    onnotice,
    onnotify: (channel, payload) => listeners.notify(channel, payload),
    // A new session has none of the old one's LISTENs (#endSession discards them).
    onclose: () => listeners.relisten(),
    types: { jsonb: jsonbIdFirst },
    // Explicit values so PG* environment variables meant for a real server don't leak in.
    host: 'pglite',
    user: 'postgres',
    database: 'postgres',
    ssl: false,
    // Recycling an in-process connection buys nothing and costs a re-handshake.
    max_lifetime: null,
    idle_timeout: 0,
    // Nothing prepared: the single session is never recycled, so the statements prepared on it
    // would be bounded by nothing (db/storage/statement-texts.ts), and a round trip to the in-process
    // database costs little. Planning each statement is the price.
    prepare: false,
  };
  const sql = postgres(options);
  listeners.sql = sql;
  sql.listen = (channel, onnotify, onlisten) => listeners.listen(channel, onnotify, onlisten);
  return sql;
}

interface Listener {
  onnotify: (payload: string) => void;
  onlisten: (() => void) | undefined;
}

/**
 * sql.listen on the one session. postgres.js would open a connection of its own for it, which PGlite
 * cannot have; instead the session itself LISTENs. PGlite sends it the NotificationResponses of
 * every commit (its own included) before ReadyForQuery, in the stream postgres.js reads, whose
 * onnotify hands them here. Everything on this database is in this process, so nothing is missed
 * while the session lives; when it is replaced, each listener is told, as postgres.js tells its own
 * after a reconnect (its onlisten called again).
 */
class SessionListeners {
  sql: postgres.Sql | undefined;
  readonly #channels = new Map<string, { listeners: Set<Listener>; listening: Promise<postgres.State> }>();

  notify(channel: string, payload: string): void {
    for (const l of this.#channels.get(channel)?.listeners ?? []) l.onnotify(payload);
  }

  async listen(
    name: string,
    onnotify: (payload: string) => void,
    onlisten?: () => void,
  ): Promise<postgres.ListenMeta> {
    const listener: Listener = { onnotify, onlisten };
    let channel = this.#channels.get(name);
    if (!channel) {
      channel = { listeners: new Set(), listening: this.#listenOn(name) };
      this.#channels.set(name, channel);
    }
    channel.listeners.add(listener);
    let state: postgres.State;
    try {
      state = await channel.listening;
    } catch (err) {
      channel.listeners.delete(listener);
      if (channel.listeners.size === 0 && this.#channels.get(name) === channel) this.#channels.delete(name);
      throw err;
    }
    onlisten?.();
    const unlisten = async (): Promise<void> => {
      const current = this.#channels.get(name);
      if (!current?.listeners.delete(listener) || current.listeners.size > 0) return;
      this.#channels.delete(name);
      const sql = this.sql as postgres.Sql;
      await sql`unlisten ${sql(name)}`;
    };
    // What postgres.js's own listen resolves to: the connection's state and unlisten.
    return { state, unlisten } as unknown as postgres.ListenMeta;
  }

  relisten(): void {
    for (const [name, channel] of this.#channels) {
      channel.listening = this.#listenOn(name);
      channel.listening.then(
        () => {
          for (const l of channel.listeners) l.onlisten?.();
        },
        // Closed for good (sql.end), or failing: the next listen() of the channel reports it.
        () => {},
      );
    }
  }

  async #listenOn(name: string): Promise<postgres.State> {
    const sql = this.sql as postgres.Sql;
    return (await sql`listen ${sql(name)}`).state;
  }
}

/**
 * PGlite has exactly one backend session. postgres.js opens extra connections
 * for sql.subscribe() (and sql.listen(), which connect() replaces); sharing the
 * session would interleave their protocol streams, so a second concurrent
 * session is refused loudly instead.
 */
class SessionGuard {
  owner: PGliteSocket | undefined;
}

const CANCEL_REQUEST = 80877102;

/** The socket-like object postgres.js drives (see postgres/src/connection.js). */
class PGliteSocket extends Duplex {
  // postgres.js puts these in connection error messages.
  readonly host = 'pglite';
  readonly port = 0;

  #pending: Buffer = Buffer.alloc(0);
  #started = false;
  #sessionEnded = false;

  constructor(
    private readonly pg: PGlite,
    private readonly session: SessionGuard,
  ) {
    // Nothing to push back against in-process: a message is consumed as soon as it is whole. With
    // the default 16 KiB mark, postgres.js's wait for 'drain' after a longer simple query (a
    // migration file) stalled the connection for good while another query waited for it.
    super({ writableHighWaterMark: 1 << 30 });
  }

  // postgres.js only sends Terminate when this is 'open', and waits for 'close' unless it is 'closed'.
  get readyState(): 'open' | 'readOnly' | 'closed' {
    return this.destroyed ? 'closed' : this.writableEnded ? 'readOnly' : 'open';
  }

  override _read(): void {
    // Output is pushed as soon as PGlite produces it.
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    // The stream calls _write one chunk at a time, which keeps PGlite calls in order.
    this.#consume().then(
      (terminate) => {
        cb();
        if (terminate) this.destroy();
      },
      (err: Error) => cb(err),
    );
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#endSession().then(
      () => cb(err),
      (e: Error) => cb(err ?? e),
    );
  }

  /** Runs every complete message buffered so far; resolves true on Terminate. */
  async #consume(): Promise<boolean> {
    if (!this.#started) {
      if (this.#pending.length < 8) return false;
      const length = this.#pending.readUInt32BE(0);
      if (this.#pending.length < length) return false;
      const packet = this.#pending.subarray(0, length);
      this.#pending = this.#pending.subarray(length);
      // No SSLRequest to handle: connect() sets ssl: false.
      // Statements run to completion synchronously inside PGlite, so by the time
      // a cancel arrives there is nothing left to cancel.
      if (packet.readUInt32BE(4) === CANCEL_REQUEST) return true;
      if (this.session.owner) {
        throw new Error(
          'The embedded database (PGlite) supports a single connection; ' +
            'features that need a second one (sql.subscribe) are unavailable.',
        );
      }
      this.session.owner = this;
      this.#started = true;
      this.#forward(await this.#exec(packet));
      return this.#consume();
    }

    // Hand PGlite only whole messages: it reads until its input is exhausted.
    let end = 0;
    let terminate = false;
    while (end + 5 <= this.#pending.length) {
      const type = this.#pending[end];
      const size = 1 + this.#pending.readUInt32BE(end + 1);
      if (end + size > this.#pending.length) break;
      if (type === 0x58 /* X */) {
        // Never forward Terminate: PGlite skips it only as the first byte of a call; later in a
        // batch it would reach the backend's exit path.
        terminate = true;
        break;
      }
      end += size;
    }
    const batch = this.#pending.subarray(0, end);
    this.#pending = terminate ? Buffer.alloc(0) : this.#pending.subarray(end);
    if (batch.length) this.#forward(await this.#exec(batch));
    return terminate;
  }

  async #exec(message: Uint8Array): Promise<Buffer[]> {
    const out: Buffer[] = [];
    // The streaming variant skips PGlite's own parsing of the response and its
    // 1 GiB response-buffer ceiling. Chunks are views into WASM memory, hence
    // the copy, and they are pushed only once PGlite has returned so that
    // postgres.js handlers never run re-entrantly inside the WASM call.
    await this.pg.runExclusive(() =>
      this.pg.execProtocolRawStream(message, { onRawData: (bytes) => void out.push(Buffer.from(bytes)) }),
    );
    return out;
  }

  #forward(chunks: Buffer[]): void {
    for (const chunk of chunks) this.push(chunk);
  }

  /**
   * Leaves the single PGlite session as a fresh backend would be: a client
   * that vanished mid-transaction or mid-extended-query must not leak its
   * transaction, prepared statements, temp tables or advisory locks into the
   * next connection.
   */
  async #endSession(): Promise<void> {
    if (!this.#started || this.#sessionEnded) return;
    this.#sessionEnded = true;
    try {
      if (this.pg.closed) return;
      const reset = Buffer.concat([
        frontendMessage('S', Buffer.alloc(0)), // leaves a failed extended-query sequence
        frontendMessage('Q', Buffer.from('ROLLBACK\0')),
        frontendMessage('Q', Buffer.from('DISCARD ALL\0')), // not allowed in the same multi-statement query
      ]);
      await this.#exec(reset); // output discarded: nobody is listening any more
    } finally {
      this.session.owner = undefined;
    }
  }
}

function frontendMessage(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeUInt32BE(4 + body.length, 1);
  return Buffer.concat([header, body]);
}

// ---- data directory lock --------------------------------------------------
// PGlite takes no lock of its own, and two processes on one directory lose
// committed rows, so we take one.

interface Lock {
  release(): void;
}

/** Lock files held by this process; a pid check alone can't tell them from a stale file with our reused pid. */
const heldLocks = new Set<string>();

async function acquireLock(dataDir: string): Promise<Lock> {
  const lockPath = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      try {
        fs.writeSync(fd, `${process.pid}\n`);
      } finally {
        fs.closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await readHolder(lockPath);
    if (holder !== undefined && isHeld(lockPath, holder)) throw new DataDirLockedError(dataDir, holder);
    // Stale. If another process replaced it between our read and this removal,
    // its lock is lost; pid lock files can't close that window, and it only
    // opens when two processes recover the same crashed directory at once.
    if (attempt > 0) throw new DataDirLockedError(dataDir, holder);
    fs.rmSync(lockPath, { force: true });
  }

  heldLocks.add(lockPath);
  // A process that exits without close() should not leave a lock that looks live to a reused pid.
  const onExit = () => release();
  process.once('exit', onExit);
  function release(): void {
    process.removeListener('exit', onExit);
    if (!heldLocks.delete(lockPath)) return;
    // Only remove the file if it is still ours.
    if (readPid(lockPath) === process.pid) fs.rmSync(lockPath, { force: true });
  }
  return { release };
}

/** The pid in the lock file, or undefined if it is missing or garbage. */
async function readHolder(lockPath: string): Promise<number | undefined> {
  const pid = readPid(lockPath);
  if (pid !== undefined) return pid;
  // The holder creates the file and then writes its pid; give an empty file a moment.
  await new Promise((resolve) => setTimeout(resolve, 100));
  return readPid(lockPath);
}

function readPid(lockPath: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(lockPath, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^\s*(\d+)\s*$/.exec(text);
  const pid = match ? Number(match[1]) : 0;
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function isHeld(lockPath: string, pid: number): boolean {
  // Our own pid: either we hold it, or it is left over from an earlier process
  // that had the same pid (common for pid 1 in containers).
  if (pid === process.pid) return heldLocks.has(lockPath);
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM means the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
