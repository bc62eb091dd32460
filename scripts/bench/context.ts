/**
 * What one run of the bench carries from step to step (the options, the processes it started, the
 * workplace it seeded, what its scenarios measured), and the API client every step uses.
 */
import type { Options } from './options.js';
import type { Processes, Started } from './processes.js';
import type { Results } from './report.js';

export interface Bench {
  options: Options;
  /** The server's ADMIN_TOKEN, made up for the run. */
  admin: string;
  procs: Processes;
  /** The server under test; `--workers` replaces it with one of WORKERS=1 at the end. */
  api: Started;
  /** PostgreSQL only: the baseline (baseline.ts) and the hand-written server (hand-written.ts). */
  baseline?: Started;
  handWritten?: Started;
  workplace: string;
  results: Results;
}

export async function call(bench: Bench, method: string, url: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${bench.api.url}${url}`, {
    method,
    headers: {
      'x-auth-token': bench.admin,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

export const jsonHeaders = (bench: Bench): Record<string, string> => ({
  'content-type': 'application/json',
  'x-auth-token': bench.admin,
});

export const docsUrl = (bench: Bench, collection: string, op: string) =>
  `${bench.api.url}/v1/workplaces/${bench.workplace}/storages/${collection}/${op}`;
