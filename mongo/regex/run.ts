import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { QueryError } from '../../errors.js';
import { isBoundedRegex } from './translate.js';

/**
 * Running a request's regex in TypeScript without handing it the process. JavaScript's engine
 * backtracks, so a pattern such as `(a+)+$` or `.*a.*b` can take years on one string, with every
 * other request waiting (like_regex in SQL is bounded by the statement timeout, MongoDB's PCRE by
 * its match limit). Short patterns without repetition or back references run here on strings
 * short enough that they cannot take long; the others run on a worker thread, up to a limit, and
 * a worker past the limit is terminated.
 *
 * The matchers that call testRegex are synchronous, and a thread that waits synchronously for a
 * worker serves nobody meanwhile. So a request runs its matching computations in a RegexSession:
 * while one runs, a test the session cannot answer yet answers false and is noted; when the run
 * ends, the noted tests go to a worker in one batch, awaited, and the computation runs again with
 * their answers, until a run needs none it does not know. So a computation must be pure (a copy
 * of a document changed, never the document), or the effects of a run on a guess would stay.
 */

export const REGEX_TIME_LIMIT_MS = 1000;
// A bounded pattern costs at most its length at each start of the string: small products run here.
const IN_THREAD_STEPS = 10_000_000;

function stopped(): QueryError {
  return new QueryError(
    `A $regex ran for more than ${REGEX_TIME_LIMIT_MS} ms in all, and was stopped: nested or adjacent repetitions (such as (a+)+ or .*a.*) backtrack without end on some strings.`,
  );
}

/** The session whose computation is running, whose tests testRegex notes. */
let active: RegexSession | undefined;

/**
 * Whether `re` (from compileRegexJs) matches `subject`. In a session's run, a test that cannot run
 * here answers from what the session learnt, or false for now (RegexSession); outside one, it is
 * a programming error.
 */
export function testRegex(re: RegExp, subject: string): boolean {
  if (isBoundedRegex(re) && subject.length * re.source.length <= IN_THREAD_STEPS) return re.test(subject);
  if (active) return active.answer(re, subject);
  // A route that matched outside its request's session would hand the process to the pattern.
  throw new Error('A regex that may backtrack was tested outside a RegexSession: run the matching in one.');
}

function patternKey(re: RegExp): string {
  return `${re.flags}/${re.source}`;
}

type Attempt<R> = { guessed: boolean } & ({ value: R } | { error: unknown });

/**
 * The regex tests of one request, which share one budget of REGEX_TIME_LIMIT_MS on the workers
 * however many patterns, strings and documents it has: the contract's limit, and the longest a
 * request can keep a worker.
 */
export class RegexSession {
  // By the pattern's text (patternKey), not the RegExp object: a computation that compiles its
  // pattern again on each run must still find what the runs before it learnt.
  private readonly known = new Map<string, Map<string, boolean>>();
  private pending = new Map<string, { re: RegExp; subjects: Set<string> }>();
  private guessed = false;
  private remaining = REGEX_TIME_LIMIT_MS;

  /** What `compute` returns or throws, with every regex it tests answered truly. */
  async run<R>(compute: () => R): Promise<R> {
    const [result] = await this.map([undefined], compute);
    return result as R;
  }

  /**
   * `compute` of each item, or the error the first failing item throws, as a loop over the items
   * would give. The items are computed together, so their unknown tests go to the worker in one
   * batch, not one per item; only the items that guessed run again.
   */
  async map<T, R>(items: readonly T[], compute: (item: T, index: number) => R): Promise<R[]> {
    const results: R[] = new Array(items.length);
    let todo = items.map((_, i) => i);
    // An error of an item after one that guessed: the earlier one may still throw first.
    let failure: { error: unknown } | undefined;
    while (todo.length > 0) {
      const again: number[] = [];
      for (const i of todo) {
        const attempt = this.attempt(() => compute(items[i] as T, i));
        if (attempt.guessed) again.push(i);
        else if ('value' in attempt) results[i] = attempt.value;
        else if (again.length === 0) throw attempt.error;
        else {
          // The items after this one no longer matter.
          failure = attempt;
          break;
        }
      }
      if (again.length > 0) await this.settle();
      todo = again;
    }
    if (failure) throw failure.error;
    return results;
  }

  /** Called by testRegex during this session's run. */
  answer(re: RegExp, subject: string): boolean {
    const key = patternKey(re);
    const known = this.known.get(key)?.get(subject);
    if (known !== undefined) return known;
    this.guessed = true;
    const pending = this.pending.get(key);
    if (pending) pending.subjects.add(subject);
    else this.pending.set(key, { re, subjects: new Set([subject]) });
    return false;
  }

  private attempt<R>(compute: () => R): Attempt<R> {
    const outer = active;
    active = this;
    this.guessed = false;
    try {
      const value = compute();
      return { guessed: this.guessed, value };
    } catch (error) {
      return { guessed: this.guessed, error };
    } finally {
      active = outer;
    }
  }

  /** Runs the pending tests on a worker, within what is left of the budget. */
  private async settle(): Promise<void> {
    const keys = [...this.pending.keys()];
    const patterns = [...this.pending.values()].map(({ re }) => ({ source: re.source, flags: re.flags }));
    const tests: [number, string][] = [];
    keys.forEach((key, p) => {
      for (const subject of this.pending.get(key)?.subjects ?? []) tests.push([p, subject]);
    });
    this.pending = new Map();
    if (this.remaining <= 0) throw stopped();
    const worker = await lease();
    let answers: boolean[] | undefined;
    try {
      const started = performance.now();
      answers = await runBatch(worker, { patterns, tests }, this.remaining);
      this.remaining -= performance.now() - started;
    } finally {
      // A worker that was stopped, or failed, may be in the middle of a match: it is not reused.
      if (answers === undefined) void worker.terminate();
      giveBack(answers === undefined ? undefined : worker);
    }
    if (answers === undefined) {
      this.remaining = 0;
      throw stopped();
    }
    tests.forEach(([p, subject], i) => {
      const key = keys[p] as string;
      const answer = answers[i] === true;
      const bySubject = this.known.get(key);
      if (bySubject) bySubject.set(subject, answer);
      else this.known.set(key, new Map([[subject, answer]]));
    });
  }
}

// ---- The workers of the sessions ---------------------------------------------------------------

const BATCH_WORKER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ patterns, tests }) => {
  const compiled = patterns.map(({ source, flags }) => new RegExp(source, flags));
  parentPort.postMessage(tests.map(([p, subject]) => compiled[p].test(subject)));
});`;

/**
 * A batch has a worker of its own, so that requests at once do not spend each other's budget. At
 * most this many run at once, as many as the cores: more would only share them, each slower. A
 * batch beyond them waits for a worker (at most a budget), and the wait is not counted in its own.
 */
const MAX_WORKERS = Math.max(2, availableParallelism());
const idle: Worker[] = [];
let leased = 0;
const queue: (() => void)[] = [];

async function lease(): Promise<Worker> {
  while (leased >= MAX_WORKERS) await new Promise<void>((resolve) => queue.push(resolve));
  leased++;
  try {
    return idle.pop() ?? (await startWorker());
  } catch (err) {
    giveBack(undefined);
    throw err;
  }
}

function giveBack(worker: Worker | undefined): void {
  leased--;
  if (worker) idle.push(worker);
  queue.shift()?.();
}

/** A new worker, once it runs: its start is not part of any request's budget. */
function startWorker(): Promise<Worker> {
  const worker = new Worker(BATCH_WORKER, { eval: true });
  // An idle worker does not keep the process alive; a batch's timer does while it runs.
  worker.unref();
  // A worker that fails between batches must not take the process with it, nor be leased again.
  worker.on('error', () => {});
  worker.once('exit', () => {
    const at = idle.indexOf(worker);
    if (at >= 0) idle.splice(at, 1);
  });
  return new Promise((resolve, reject) => {
    worker.once('online', () => resolve(worker));
    worker.once('exit', (code) => reject(new Error(`The regex worker exited before it ran (code ${code}).`)));
  });
}

interface Batch {
  patterns: { source: string; flags: string }[];
  tests: [number, string][];
}

/** The worker's answers, or undefined when they did not come within `limitMs`. */
function runBatch(worker: Worker, batch: Batch, limitMs: number): Promise<boolean[] | undefined> {
  return new Promise((resolve, reject) => {
    const settled = (then: () => void) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      then();
    };
    const onMessage = (answers: boolean[]) => settled(() => resolve(answers));
    const onError = (err: Error) => settled(() => reject(err));
    const onExit = (code: number) =>
      settled(() => reject(new Error(`The regex worker exited during a batch (code ${code}).`)));
    const timer = setTimeout(() => settled(() => resolve(undefined)), limitMs);
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.postMessage(batch);
  });
}
