/**
 * The processes of a run: the server under test, the baseline and the hand-written server, each
 * started with the same Node options and logging to a file of its own, and everything the run
 * made, removed at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type postgres from 'postgres';
import { type Bench, call, type Processes, type Started } from './context.js';
import type { Options } from './options.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The hand-written server's schema: its own tables in the bench's database, dropped at the end. */
export const handSchema = (workplace: string) => `hw_${workplace}`;

/**
 * Starts one of the two servers (a TypeScript entry point) in its own process with NODE_FLAGS, its
 * output going to `<logDir>/<name>.log`, and resolves once that output matches `ready`.
 */
async function start(
  procs: Processes,
  options: Options,
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const logFile = path.join(procs.logDir, `${name}.log`);
  const out = openSync(logFile, 'w');
  // The profiler hook is TypeScript: it is loaded after tsx.
  const hook = options.cpuProf ? ['--import', path.join(ROOT, 'scripts/bench/cpu-profiler.ts')] : [];
  const child = spawn(process.execPath, [...options.nodeFlags, '--import', 'tsx', ...hook, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    // The profiler hook takes its orders over an IPC channel.
    stdio: options.cpuProf ? ['ignore', out, out, 'ipc'] : ['ignore', out, out],
  });
  procs.children.push(child);
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });
  for (;;) {
    const text = await readFile(logFile, 'utf8');
    const m = ready.exec(text);
    if (m) return { child, match: m };
    if (exited !== undefined) throw new Error(`${name} exited with ${exited} before it was ready:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The directories the run writes to: the servers' logs, and with `--cpu-prof` the profiles. */
export async function prepareDirectories(procs: Processes, options: Options): Promise<void> {
  procs.logDir = await mkdtemp(path.join(os.tmpdir(), 'bench-logs-'));
  if (options.cpuProf)
    for (const side of ['server', 'baseline'])
      await mkdir(path.join(options.cpuProf, side), { recursive: true });
}

/** The server under test, in its own process, as `npm start` runs it. */
export async function startServer(
  procs: Processes,
  options: Options,
  admin: string,
  workers = options.workers,
  logName = 'server',
): Promise<Started> {
  const serverEnv: Record<string, string> = {
    ADMIN_TOKEN: admin,
    PORT: '0',
    LOG_LEVEL: 'info',
    DB_POOL_MAX: '10',
    // The TTL scenario times one pass of its own; the server's sweeper must not take its documents.
    TTL_INTERVAL_SECONDS: '86400',
  };
  if (options.embedded) {
    procs.dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-'));
    Object.assign(serverEnv, { DATA_DIR: procs.dataDir, DATABASE_URL: '' });
  } else {
    Object.assign(serverEnv, { DATABASE_URL: options.databaseUrl, WORKERS: String(workers) });
  }
  const server = await start(
    procs,
    options,
    logName,
    ['server.ts'],
    serverEnv,
    /Listening on (http:\/\/[^;\s"]+)/,
  );
  return {
    url: (server.match[1] as string).replace(/\/$/, ''),
    pid: server.child.pid as number,
    child: server.child,
  };
}

/** Stops a server and waits until its process has exited. */
export async function stopServer(server: Started): Promise<void> {
  const old = server.child;
  if (old.exitCode === null) {
    const exited = new Promise((r) => old.once('exit', r));
    old.kill('SIGTERM');
    await exited;
  }
}

/** The baseline, in its own process, running `statements`. */
export async function startBaseline(
  procs: Processes,
  options: Options,
  statements: Record<string, string>,
): Promise<Started> {
  const base = await start(
    procs,
    options,
    'baseline',
    ['scripts/bench/baseline.ts'],
    { BENCH_BASELINE: JSON.stringify({ databaseUrl: options.databaseUrl, poolMax: 10, statements }) },
    /listening (\d+)/,
  );
  return { url: `http://127.0.0.1:${base.match[1]}`, pid: base.child.pid as number, child: base.child };
}

/** The hand-written server, in its own process, on the tables of seedHandWritten. */
export async function startHandWritten(
  procs: Processes,
  options: Options,
  workplace: string,
): Promise<Started> {
  const hand = await start(
    procs,
    options,
    'hand-written',
    ['scripts/bench/hand-written.ts'],
    {
      BENCH_HAND_WRITTEN: JSON.stringify({
        databaseUrl: options.databaseUrl,
        poolMax: 10,
        schema: handSchema(workplace),
      }),
    },
    /listening (\d+)/,
  );
  return { url: `http://127.0.0.1:${hand.match[1]}`, pid: hand.child.pid as number, child: hand.child };
}

/**
 * Whatever the run got to: the workplace deleted (once the server has started: `bench`), the
 * connection closed, both servers stopped.
 */
export async function cleanUp(
  procs: Processes,
  bench: Bench | undefined,
  workplace: string,
  sql: postgres.Sql | undefined,
): Promise<void> {
  if (bench) await call(bench, 'DELETE', `/v1/workplaces/${workplace}`).catch(() => {});
  await sql?.unsafe(`drop schema if exists ${handSchema(workplace)} cascade`).catch(() => {});
  await sql?.end({ timeout: 2 });
  for (const c of procs.children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  if (procs.dataDir) await rm(procs.dataDir, { recursive: true, force: true });
}
