// Patches postgres.js (npm `postgres`) after every install; `npm ci` runs it as the root package's
// postinstall script. Dependency-free on purpose: it must also run under `npm ci --omit=dev`, where
// the patched code serves production.
//
// Why: postgres.js 3.4.9 (the newest release) has these defects in src/connection.js (and the
// cjs/ and cf/ builds generated from it):
//
// 1. A write that is flushed from a setImmediate (`nextWrite`) after the connection closed
//    dereferences the nulled socket: an uncaught `TypeError: Cannot read properties of null
//    (reading 'write')` that no caller can catch, and the process exits. It happens when
//    PostgreSQL restarts under load (a transaction's own ROLLBACK after its connection closed is
//    one such write). The guard turns it into what the caller expects, a query rejected with
//    CONNECTION_CLOSED. Upstream: porsager/postgres#1066, #1154, #1208; the fix mirrors the open
//    pull request porsager/postgres#1209 (settle the queries rather than only skip the write,
//    which left them pending: see the discussion on #1168).
// 2. Closing a connection cancels a pending flush (`clearImmediate`) but keeps the timer handle
//    and the unsent bytes, so after a reconnect no write is ever flushed again (the timer looks
//    pending) until 1 KB accumulates, stale bytes first: the connection hangs until its connect
//    timeout, again and again. Reset both when the socket goes away.
// 3. A query cancelled while it waited for a new connection (postgres.js's query.cancel(), which
//    db/connection/deadline.ts uses at a request's deadline) left that connection, once connected, outside
//    the pool for its whole lifetime: it never ran its first query, so nothing made it open again.
//    After enough such cancellations during an outage every request queued behind a pool with no
//    usable connection. Hand the connection to the pool instead.
// 4. The pool's queues (src/queue.js) take from the front by leaving a hole (`undefined`) and moving
//    an index, and empty the array only when the last element is taken. The queue of idle
//    connections is never empty while the pool has more connections than queries in flight, the
//    usual state of a server, so its array grows by one hole per query for as long as the server
//    runs; and every query then scans all of it: `move` removes the connection just taken from that
//    queue (`indexOf` over the holes, to find nothing). A query cost more with every query before
//    it (measured: 57 us at first, 134 us after 120,000 queries on one pool). Search only the live
//    part, and drop the holes once they are most of the array. Not reported upstream as of 3.4.9.
//
// When to drop it: once a postgres.js release fixes all four (check each marker below against
// the new src/connection.js and src/queue.js), bump the dependency and delete this file and the postinstall script.
// The script refuses to run against any other version than the one the patch was written for, so
// an upgrade cannot silently leave the process unprotected: it fails the install instead.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const VERSION = '3.4.9';
const MARK = '/* workplace-platform patch */';

const replacements = [
  {
    name: 'nextWrite after close',
    before: `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`,
    after: `  function nextWrite(fn) {
    if (!socket) { ${MARK}
      nextWriteTimer !== null && clearImmediate(nextWriteTimer)
      chunk = nextWriteTimer = null
      error(Errors.connection('CONNECTION_CLOSED', options))
      return false
    }
    const x = socket.write(chunk, fn)`,
  },
  {
    name: 'stale flush after terminate',
    before: `    clearImmediate(nextWriteTimer)
    if (socket) {`,
    after: `    clearImmediate(nextWriteTimer)
    chunk = nextWriteTimer = null ${MARK}
    if (socket) {`,
  },
  {
    name: 'stale flush after close',
    before: `    incomings = null
    clearImmediate(nextWriteTimer)
    socket.removeListener('data', data)`,
    after: `    incomings = null
    clearImmediate(nextWriteTimer)
    chunk = nextWriteTimer = null ${MARK}
    socket.removeListener('data', data)`,
  },
  {
    name: 'cancelled first query of a new connection',
    before: `      initial && !initial.reserve && execute(initial)
      options.shared.retries = retries = 0
      initial = null
      return`,
    after: `      const cancelled = initial && initial.cancelled ${MARK}
      initial && !initial.reserve && !cancelled && execute(initial)
      options.shared.retries = retries = 0
      initial = null
      return cancelled ? onopen(connection) : undefined`,
  },
];

const queueReplacements = [
  {
    name: 'queue remove scans its holes',
    before: `      const index = xs.indexOf(x)`,
    after: `      const index = xs.indexOf(x, start) ${MARK}`,
  },
  {
    name: 'queue keeps its holes',
    before: `      } else {
        xs[index - 1] = undefined
      }`,
    after: `      } else if (index > 64 && index * 2 > xs.length) { ${MARK}
        xs = xs.slice(index)
        index = 0
      } else {
        xs[index - 1] = undefined
      }`,
  },
  {
    name: 'queue remove start',
    before: `    remove: (x) => {`,
    after: `    remove: (x, start = index) => { ${MARK}`,
  },
];

const require = createRequire(import.meta.url);
// The package exports no ./package.json; its CommonJS entry is cjs/src/index.js.
const root = join(dirname(require.resolve('postgres')), '..', '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (version !== VERSION) {
  throw new Error(
    `patches/postgres.mjs was written for postgres ${VERSION}, found ${version}: check whether the new release fixes the defects it describes, then update or delete it.`,
  );
}

for (const [name, patches] of [
  ['connection.js', replacements],
  ['queue.js', queueReplacements],
]) {
  for (const build of ['src', 'cjs/src', 'cf/src']) {
    patchFile(join(root, build, name), patches);
  }
}

function patchFile(file, patches) {
  let text = readFileSync(file, 'utf8');
  if (text.includes(MARK)) return;
  for (const r of patches) {
    const at = text.indexOf(r.before);
    if (at < 0 || text.indexOf(r.before, at + 1) >= 0) {
      throw new Error(`patches/postgres.mjs: '${r.name}' does not match ${file} exactly once`);
    }
    text = text.replace(r.before, r.after);
  }
  writeFileSync(file, text);
}
