// Running server.ts as operators run it: a real child process, real HTTP, real signals.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_VARIABLES } from '../../config.js';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/**
 * How long a server may take to print its listening line. A start is CPU-bound (tsx compiles the
 * import graph, a fresh PGlite directory runs initdb in WebAssembly, migrations run), so on a
 * 2-core machine whose other test files keep both cores busy it takes many times what it takes
 * alone, and 30 s was not always enough. The bound is there to end a start that hangs, not to time
 * a slow one; such a start still fails with the server's output.
 */
export const START_TIMEOUT = 120_000;
/**
 * For a test that starts servers: two starts one after the other and the test's own work fit in
 * it, so a slow start fails with the server's output (startServer) instead of vitest's timeout.
 */
export const TEST_TIMEOUT = 3 * START_TIMEOUT;
export const ADMIN_TOKEN_PATTERN = /wpa_[A-Za-z0-9_-]{43}/g;
export const LISTENING = /Listening on http:\/\/127\.0\.0\.1:(\d+)/;

const children = new Set<ChildProcess>();
/** The children that lead a process group of their own (SpawnOptions.npmStart). */
const groups = new Set<ChildProcess>();
const tempDirs: string[] = [];

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once the process has exited and its output is fully read. */
  exited: Promise<Exit>;
}

export interface Server extends Proc {
  port: number;
  url: string;
  /** Sends `signal` (SIGTERM by default) and resolves with the exit once the process is gone. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wp-server-test-'));
  tempDirs.push(dir);
  return dir;
}

/** A path in a fresh temporary directory that does not exist yet. */
export function unusedPath(): string {
  return join(tempDir(), 'data');
}

/** The test's environment without any of the server's variables, plus `vars`. */
export function serverEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // None of the server's own variables may leak in from the environment the tests run in.
  for (const key of CONFIG_VARIABLES) delete env[key];
  return { ...env, PORT: '0', LOG_LEVEL: 'info', ...vars };
}

export interface SpawnOptions {
  /**
   * Started as the README starts it, `npm start` (the compiled server in dist/, which `npm install`
   * builds), instead of server.ts under tsx, the source as it is now.
   */
  npmStart?: boolean;
}

export function spawnServer(vars: Record<string, string>, options: SpawnOptions = {}): Proc {
  const child = options.npmStart
    ? // npm forwards SIGTERM and SIGINT to the server; a group of its own lets cleanUpServers
      // kill both, the server too when npm is killed.
      spawn('npm', ['start', '--silent'], {
        cwd: repoRoot,
        env: serverEnv(vars),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      })
    : spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
        cwd: repoRoot,
        env: serverEnv(vars),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
  children.add(child);
  if (options.npmStart) groups.add(child);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<Exit>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Starts server.ts and resolves once it listens; rejects with its output if it exits or hangs. */
export async function startServer(vars: Record<string, string>, options: SpawnOptions = {}): Promise<Server> {
  const proc = spawnServer(vars, options);
  const started = Date.now();
  const port = await new Promise<number>((resolve, reject) => {
    const output = () => `\n--- stdout ---\n${proc.stdout()}\n--- stderr ---\n${proc.stderr()}`;
    const timer = setTimeout(() => {
      // Stopped now, not in afterAll: meanwhile a hung server would hold a core and its data directory.
      proc.child.kill('SIGKILL');
      clearInterval(poll);
      reject(new Error(`server did not listen within ${START_TIMEOUT} ms${output()}`));
    }, START_TIMEOUT);
    const poll = setInterval(() => {
      const m = LISTENING.exec(proc.stdout());
      if (!m) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve(Number(m[1]));
    }, 25);
    proc.exited.then(
      (exit) => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(
          new Error(
            `server exited (${exit.code ?? exit.signal}) before listening, ${Date.now() - started} ms after it was spawned${output()}`,
          ),
        );
      },
      (err: Error) => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new Error(`server could not be spawned: ${err.message}${output()}`, { cause: err }));
      },
    );
  });
  return {
    ...proc,
    port,
    url: `http://127.0.0.1:${port}`,
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
      return proc.exited;
    },
  };
}

/** Runs a server that is expected to fail; resolves with its exit once it is gone. */
export async function runToExit(vars: Record<string, string>, timeoutMs = START_TIMEOUT) {
  const proc = spawnServer(vars);
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    proc.exited,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        proc.child.kill('SIGKILL');
        reject(
          new Error(
            `process did not exit within ${timeoutMs} ms\n--- stdout ---\n${proc.stdout()}\n--- stderr ---\n${proc.stderr()}`,
          ),
        );
      }, timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  return { ...exit, ms: Date.now() - started, stdout: proc.stdout(), stderr: proc.stderr() };
}

/** A port that is free right now, for tests that need to know the port before the server starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function api(
  server: Server,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<{ status: number; contentType: string; text: string; json: unknown }> {
  const headers: Record<string, string> = {};
  if (opts.token !== undefined) headers['x-auth-token'] = opts.token;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, json };
}

/** The pino JSON lines a server wrote to stdout. */
export function logLines(stdout: string): Array<{ msg?: string; level?: number; [k: string]: unknown }> {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

/** Kills every server still running and removes the temporary directories; call it in afterAll. */
export async function cleanUpServers(): Promise<void> {
  await Promise.all(
    [...children].map(async (child) => {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((resolve) => child.once('close', resolve));
        if (groups.has(child) && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
        await gone;
      }
    }),
  );
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  children.clear();
}
