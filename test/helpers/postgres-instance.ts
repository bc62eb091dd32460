// A PostgreSQL instance of a test's own (initdb + pg_ctl from the Debian packages), so that
// stopping or freezing it disturbs nothing else. Run as the postgres user when the tests run as
// root (initdb refuses root).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './server-process.js';

function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(root, v, 'bin')).find((dir) => existsSync(join(dir, 'pg_ctl')));
}

/** The directory of pg_ctl and initdb; undefined where PostgreSQL is not installed (skip the test). */
export const POSTGRES_BIN = postgresBin();
const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL program, as the postgres user when this process is root. */
function pg(program: string, args: string[]): string {
  const path = join(POSTGRES_BIN as string, program);
  return asRoot
    ? execFileSync('runuser', ['-u', 'postgres', '--', path, ...args], { encoding: 'utf8' })
    : execFileSync(path, args, { encoding: 'utf8' });
}

export interface PostgresInstance {
  url: string;
  start(): void;
  /** `pg_ctl stop -m fast`: backends are terminated, connections closed. */
  stop(): void;
  /** SIGSTOP to the postmaster and every backend: connections stay open and nothing answers. */
  freeze(): void;
  thaw(): void;
  /** Stops it whatever its state and removes its directory; safe to call more than once. */
  destroy(): void;
}

const instances = new Set<PostgresInstance>();

export async function createPostgresInstance(): Promise<PostgresInstance> {
  const dir = mkdtempSync(join(tmpdir(), 'wp-pg-'));
  const data = join(dir, 'data');
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  const port = await freePort();
  let frozen = false;
  const signalAll = (signal: 'SIGSTOP' | 'SIGCONT') => {
    // The postmaster's pid is the first line of postmaster.pid; its backends are its children.
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
    for (const p of [pid, ...children]) {
      try {
        process.kill(p, signal);
      } catch {
        // A backend that exited meanwhile.
      }
    }
  };
  const instance: PostgresInstance = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start() {
      pg('pg_ctl', [
        '-D',
        data,
        '-l',
        join(dir, 'postgres.log'),
        '-w',
        '-o',
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
        'start',
      ]);
    },
    stop() {
      pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    freeze() {
      signalAll('SIGSTOP');
      frozen = true;
    },
    thaw() {
      signalAll('SIGCONT');
      frozen = false;
    },
    destroy() {
      instances.delete(instance);
      if (existsSync(join(data, 'postmaster.pid'))) {
        try {
          if (frozen) instance.thaw();
          pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } catch {
          // Already stopped.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  instances.add(instance);
  try {
    pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    instance.start();
  } catch (err) {
    instance.destroy();
    throw err;
  }
  return instance;
}

/** Destroys every instance still there; call it in afterAll. */
export function cleanUpPostgresInstances(): void {
  for (const instance of [...instances]) instance.destroy();
}
