/**
 * The regex budget of a request (mongo/regex/run.ts): the patterns that run in TypeScript (update
 * and projection conditions) have REGEX_TIME_LIMIT_MS in all per request, not each, and while
 * they run on a worker thread the process goes on serving other requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchFilter } from '../../mongo/filter/match.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { REGEX_TIME_LIMIT_MS, RegexSession } from '../../mongo/regex/run.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/**
 * Nested or adjacent repetitions, each different so that neither a budget per pattern nor a cache
 * can stand for the others: on 'aaa…b' each backtracks through every way of splitting the a's,
 * which takes years.
 */
const RUNAWAY = [
  '^(a+)+$',
  '^(a|aa)+$',
  '^(aa|a)+$',
  '^(a|a?)+$',
  '^(a*)*$',
  '^(a+)*$',
  '^(a|a)+$',
  '^(?:a+)+$',
  '^(a*a)+$',
  '^((a+)+)$',
];
const SUBJECT = `${'a'.repeat(100)}b`;
/** A condition on an element of `items` that tests every pattern, none of which matches. */
const anyMatches = { $or: RUNAWAY.map((p) => ({ s: { $regex: p } })) };
const STOPPED = /^A \$regex ran for more than \d+ ms in all, and was stopped/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the regex budget is one per request, and waiting for it blocks nothing', () => {
  let col: Awaited<ReturnType<typeof freshCollection>>;
  const doc = { _id: 1, items: [{ s: SUBJECT }, { s: 'kept' }], n: 1 };
  beforeAll(async () => {
    col = await freshCollection(t);
    await col.insert([doc]);
  });

  it('stops an update of ten runaway patterns after one budget, writing nothing, while /healthz answers', async () => {
    const started = performance.now();
    let settled = false;
    const update = col
      .call('update', { query: { _id: 1 }, doc: { $pull: { items: anyMatches }, $inc: { n: 1 } } })
      .finally(() => {
        settled = true;
      });
    // Probes sent one after another while the update runs: each answers fast, and none waits
    // long for its turn (a blocked event loop would show as a gap between two of them).
    const latencies: number[] = [];
    let longestGap = 0;
    let last = performance.now();
    while (!settled) {
      const sent = performance.now();
      const health = await t.request({ method: 'GET', url: '/healthz', token: null });
      const answered = performance.now();
      expect(health.status).toBe(200);
      latencies.push(answered - sent);
      longestGap = Math.max(longestGap, answered - last);
      last = answered;
      await sleep(10);
    }
    const res = await update;
    const elapsed = performance.now() - started;
    console.info(
      `regex budget: the update answered ${res.status} after ${Math.round(elapsed)} ms; ` +
        `${latencies.length} /healthz probes, slowest ${Math.round(Math.max(...latencies))} ms, ` +
        `longest gap ${Math.round(longestGap)} ms`,
    );

    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(STOPPED);
    // Ten patterns, one budget: a budget per pattern would allow ten.
    expect(elapsed).toBeLessThan(3 * REGEX_TIME_LIMIT_MS);
    expect(latencies.length).toBeGreaterThanOrEqual(5);
    // A loop blocked by the regexes would stall for the whole budget; the bounds sit well below
    // it, and well above what a loaded 2-core CI machine adds to a probe.
    expect(Math.max(...latencies)).toBeLessThan(REGEX_TIME_LIMIT_MS / 4);
    expect(longestGap).toBeLessThan(REGEX_TIME_LIMIT_MS / 2);
    expect(await col.read({ query: {} })).toStrictEqual([doc]);
  });

  it('stops an $elemMatch projection of ten runaway patterns after one budget', async () => {
    const started = performance.now();
    const res = await col.call('read', { query: { _id: 1 }, fields: { items: { $elemMatch: anyMatches } } });
    const elapsed = performance.now() - started;
    console.info(`regex budget: the read answered ${res.status} after ${Math.round(elapsed)} ms`);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('INVALID_QUERY');
    expect(res.body.detail).toMatch(STOPPED);
    expect(elapsed).toBeLessThan(3 * REGEX_TIME_LIMIT_MS);
  });
});

describe('a RegexSession, which each request matches in', () => {
  const runaway = parseFilter({ s: { $regex: RUNAWAY[0] } });
  // A repetition: never tested in this thread, however short the string.
  const quick = parseFilter({ s: { $regex: 'a+b' } });

  it('stops every pattern once its budget is spent, not only the one that spent it', async () => {
    const session = new RegexSession();
    await expect(session.run(() => matchFilter({ s: SUBJECT }, runaway))).rejects.toThrow(STOPPED);
    const started = performance.now();
    await expect(session.run(() => matchFilter({ s: 'aab' }, quick))).rejects.toThrow(STOPPED);
    expect(performance.now() - started).toBeLessThan(REGEX_TIME_LIMIT_MS / 4);
    await expect(new RegexSession().run(() => matchFilter({ s: 'aab' }, quick))).resolves.toBe(true);
  });

  it('does not spend the budget of another session running at the same time', async () => {
    const stalled = new RegexSession().run(() => matchFilter({ s: SUBJECT }, runaway));
    const started = performance.now();
    await expect(new RegexSession().run(() => matchFilter({ s: 'aab' }, quick))).resolves.toBe(true);
    expect(performance.now() - started).toBeLessThan(REGEX_TIME_LIMIT_MS / 2);
    await expect(stalled).rejects.toThrow(STOPPED);
  });

  it('gives what a loop over the items gives: their values, or the first failing item’s error', async () => {
    const session = new RegexSession();
    const strings = ['aab', 'b', 'xaab', 'aa'];
    await expect(session.map(strings, (s) => matchFilter({ s }, quick))).resolves.toEqual([
      true,
      false,
      true,
      false,
    ]);
    // The second item fails at once, the first only once its match is known: the first's error wins.
    const failing = session.map(['aab', 'b'], (s, i) => {
      if (i === 1) throw new Error('second');
      if (matchFilter({ s }, quick)) throw new Error('first');
      return s;
    });
    await expect(failing).rejects.toThrow('first');
  });
});
