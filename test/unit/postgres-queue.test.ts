import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';

/**
 * patches/postgres.mjs (4): postgres.js's pool queues left a hole for every connection taken while
 * others stayed idle, and scanned all the holes on every query, so each query cost more than the
 * one before. The pool's own pattern on its queue of idle connections, as `handler` and `move` run
 * it: take the first, remove it (found nowhere, it was just taken), give it back.
 */
const root = join(dirname(createRequire(import.meta.url).resolve('postgres')), '..', '..');

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T;
  remove(x: T): T | null;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(['src', 'cjs/src', 'cf/src'])("postgres.js's patched queue (%s)", (build) => {
  it('scans only its live part, however many connections went through it', async () => {
    const { default: Queue } = (await import(pathToFileURL(join(root, build, 'queue.js')).href)) as {
      default: (initial?: unknown[]) => Queue<object>;
    };
    const idle = Queue();
    const connections = Array.from({ length: 10 }, () => ({}));
    for (const c of connections) idle.push(c);
    let widest = 0;
    let found = 0;
    const indexOf = Array.prototype.indexOf;
    vi.spyOn(Array.prototype, 'indexOf').mockImplementation(function (this: unknown[], ...args) {
      widest = Math.max(widest, this.length - ((args[1] as number | undefined) ?? 0));
      return indexOf.apply(this, args as [unknown, number?]);
    });
    for (let i = 0; i < 20_000; i++) {
      const c = idle.shift();
      if (idle.remove(c) !== null) found++;
      idle.push(c);
    }
    vi.restoreAllMocks();
    expect(found).toBe(0);
    expect(idle.length).toBe(10);
    expect(widest).toBeLessThanOrEqual(200);
    // Still a queue: first in, first out, and remove takes out the element asked for.
    const order = Array.from({ length: 10 }, () => idle.shift());
    expect(new Set(order).size).toBe(10);
    for (const c of order) idle.push(c);
    expect(idle.remove(order[3] as object)).toBe(order[3]);
    expect(Array.from({ length: 9 }, () => idle.shift())).toEqual(order.filter((_, i) => i !== 3));
  });
});
