/**
 * What one run of the bench carries from step to step (the options, the processes it started, the
 * workplace it seeded, the baseline's statements it captured, what its scenarios measured), and the
 * API client every step uses. Only options.ts is below it: the types here are the ones the other
 * modules share, so that each imports only modules below it and none in a cycle.
 */
import type { ChildProcess } from 'node:child_process';
import type { Options } from './options.js';

/** What the run started and must remove. */
export interface Processes {
  /** The servers' logs: `<logDir>/<name>.log`. */
  logDir: string;
  /** The embedded database's directory. */
  dataDir?: string;
  children: ChildProcess[];
}

/** A server started: its address, and its process. */
export interface Started {
  url: string;
  pid: number;
  child: ChildProcess;
}

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** Mean latency in ms (p50 and p99 are whole milliseconds). */
  mean?: number;
  /** The server's CPU time (user + system) per request, in microseconds. */
  cpu?: number;
  /** PostgreSQL's (all its processes), in microseconds per request. */
  pg?: number;
  /** The whole machine's busy CPU time (every process, every core), in microseconds per request. */
  machine?: number;
  requests?: number;
}

export interface Row {
  scenario: string;
  api: Figures;
  base?: Figures;
  rssPeak: number;
  unit?: string;
  /** The median of API / baseline over the alternating pairs of runs (requests/s, and p99). */
  ratio?: number;
  p99Ratio?: number;
  /** The requests/s ratio of each pair: how far a median near a target is from it, run to run. */
  pairRatios?: number[];
  /** The hand-written server (hand-written.ts), with the API / hand-written ratios as above. */
  hand?: Figures;
  handRatio?: number;
  handP99Ratio?: number;
  handPairRatios?: number[];
}

/** What the scenarios measured, for the report. */
export interface Results {
  rows: Row[];
  scaling: { name: string; sameWork: boolean; small: Figures; large: Figures }[];
  targets: [string, boolean, string][];
  /** With --workers N > 1: each large read scenario's figures with one API process and with N. */
  workers: { name: string; one: Figures; many: Figures }[];
}

/** A bound value as JSON carries it to the baseline server (baseline.ts turns `bytea` back into bytes). */
export type Wire = string | { bytea: string };

/** The SQL our compiler produces for each scenario, and each variant's bound values: what the baseline runs. */
export interface Captured {
  statements: Record<string, string>;
  values: Map<string, Wire[][]>;
}

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
