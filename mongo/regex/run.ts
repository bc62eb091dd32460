import { Worker } from 'node:worker_threads';
import { QueryError } from '../../errors.js';
import { isBoundedRegex } from './translate.js';

/**
 * Running a request's regex in TypeScript without handing it the process. JavaScript's engine
 * backtracks, so a pattern such as `(a+)+$` or `.*a.*b` can take years on one string, with every
 * other request waiting (like_regex in SQL is bounded by the statement timeout, MongoDB's PCRE by
 * its match limit). Short patterns without repetition or back references run here on strings
 * short enough that they cannot take long; the others run on a worker thread this one waits for,
 * up to a limit, and a worker past the limit is terminated and replaced.
 */

export const REGEX_TIME_LIMIT_MS = 1000;
// A bounded pattern costs at most its length at each start of the string: small products run here.
const IN_THREAD_STEPS = 10_000_000;
// How long a new worker may take to start, before its first test is timed.
const START_MS = 5000;

// The worker compiles each pattern once; the cache is dropped when it grows past a page's worth.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const state = new Int32Array(workerData);
const cache = new Map();
Atomics.store(state, 2, 1);
Atomics.notify(state, 2);
parentPort.on('message', ({ source, flags, subject }) => {
  const key = flags + '/' + source;
  let re = cache.get(key);
  if (re === undefined) {
    if (cache.size >= 64) cache.clear();
    re = new RegExp(source, flags);
    cache.set(key, re);
  }
  Atomics.store(state, 1, re.test(subject) ? 1 : 0);
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
});`;

// state: [0] set when a test is done, [1] its answer, [2] set once the worker runs.
let runner: { worker: Worker; state: Int32Array } | undefined;

function startRunner() {
  const shared = new SharedArrayBuffer(12);
  const worker = new Worker(WORKER, { eval: true, workerData: shared });
  // An idle worker does not keep the process alive.
  worker.unref();
  return { worker, state: new Int32Array(shared) };
}

/**
 * The time each pattern has spent on the worker. A request compiles its patterns once, when it is
 * parsed, so this is a budget per request and pattern: many strings that each take a little under
 * the limit cannot add up to a long stall.
 */
const spent = new WeakMap<RegExp, number>();

/**
 * Whether `re` (from compileRegexJs) matches `subject`; a QueryError once the pattern has spent
 * REGEX_TIME_LIMIT_MS on the worker, over all the strings it was tested on.
 */
export function testRegex(re: RegExp, subject: string): boolean {
  if (isBoundedRegex(re) && subject.length * re.source.length <= IN_THREAD_STEPS) return re.test(subject);
  runner ??= startRunner();
  const { worker, state } = runner;
  Atomics.wait(state, 2, 0, START_MS);
  Atomics.store(state, 0, 0);
  worker.postMessage({ source: re.source, flags: re.flags, subject });
  const before = spent.get(re) ?? 0;
  const started = performance.now();
  const outcome = Atomics.wait(state, 0, 0, Math.max(0, REGEX_TIME_LIMIT_MS - before));
  spent.set(re, before + (performance.now() - started));
  if (outcome === 'timed-out') {
    runner = undefined;
    void worker.terminate();
    throw new QueryError(
      `A $regex ran for more than ${REGEX_TIME_LIMIT_MS} ms in all, and was stopped: nested or adjacent repetitions (such as (a+)+ or .*a.*) backtrack without end on some strings.`,
    );
  }
  return Atomics.load(state, 1) === 1;
}
