/** The bench's command line (`npm run bench -- ...`, see run.ts) and its defaults. */
import path from 'node:path';
import { parseArgs } from 'node:util';

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface Options {
  embedded: boolean;
  /** Documents in the large collection (--docs) and in the small one (--small). */
  large: number;
  small: number;
  /** Seconds of each run. */
  duration: number;
  runs: number;
  connections: number;
  /** Seconds of the sustained reads; 0 skips them. */
  soak: number;
  /** API processes (the server's WORKERS): PostgreSQL only, the embedded database is one process. */
  workers: number;
  /** `--only`: parts of scenario names, lower case; undefined runs every scenario. */
  only: string[] | undefined;
  /** `--cpu-prof DIR`, resolved. */
  cpuProf: string | undefined;
  databaseUrl: string;
  /** Node options both servers run with (BENCH_NODE_FLAGS, space-separated): the same for each, so the ratio stays ours. */
  nodeFlags: string[];
}

/** The options of this process's command line; with `--help`, prints the usage and exits. */
export function parseOptions(): Options {
  const { values: opts } = parseArgs({
    options: {
      docs: { type: 'string' },
      small: { type: 'string', default: '10000' },
      duration: { type: 'string', default: '5' },
      runs: { type: 'string', default: '5' },
      connections: { type: 'string', default: '10' },
      soak: { type: 'string', default: '60' },
      embedded: { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      workers: { type: 'string', default: '1' },
      only: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (opts.help) {
    console.log(
      'usage: npm run bench -- [--docs N] [--small N] [--duration s] [--runs n] [--connections n] [--soak s] [--embedded] [--cpu-prof DIR] [--workers N] [--only TEXT[,TEXT...]]',
    );
    process.exit(0);
  }
  const int = (v: string | undefined, name: string, min: number) => {
    const n = Number(String(v).replaceAll('_', ''));
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const embedded = opts.embedded === true;
  const large = int(opts.docs ?? (embedded ? '100000' : '1000000'), 'docs', 1000);
  const small = int(opts.small, 'small', 1000);
  const duration = int(opts.duration, 'duration', 1);
  const runs = int(opts.runs, 'runs', 1);
  const connections = int(opts.connections, 'connections', 1);
  const soak = int(opts.soak, 'soak', 0);
  const workers = int(opts.workers, 'workers', 1);
  if (embedded && workers > 1)
    throw new Error('--workers > 1 needs PostgreSQL; the embedded database is one process');
  return {
    embedded,
    large,
    small,
    duration,
    runs,
    connections,
    soak,
    workers,
    only: opts.only
      ?.toLowerCase()
      .split(',')
      .map((part) => part.trim()),
    cpuProf: opts['cpu-prof'] ? path.resolve(opts['cpu-prof']) : undefined,
    databaseUrl: process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    nodeFlags: (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
  };
}

/** Whether `--only` (parts of scenario names, comma-separated) selects the scenario; all run without it. */
export const selected = (options: Options, scenario: string) =>
  options.only === undefined || options.only.some((part) => scenario.toLowerCase().includes(part));
