import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Sql } from './sql.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));
const FILE_PATTERN = /^(\d{4})_[a-z0-9_]+\.sql$/;
/** Serialises migrations across every process that starts against the same database. */
export const MIGRATION_LOCK_KEY = '7268354101';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => FILE_PATTERN.test(f)).sort();
  const migrations: Migration[] = [];
  for (const name of files) {
    const text = await readFile(`${dir}/${name}`, 'utf8');
    const version = Number(name.slice(0, 4));
    if (migrations.some((m) => m.version === version))
      throw new Error(`Two migrations have version ${version}`);
    migrations.push({ version, name, sql: text, checksum: createHash('sha256').update(text).digest('hex') });
  }
  return migrations;
}

/**
 * Applies forward-only migrations in one transaction under an advisory lock, and refuses to run
 * against a database whose recorded migrations were edited or are unknown to this build.
 * Returns the names of the migrations it applied.
 */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await loadMigrations(dir);
  return sql.begin(async (tx) => {
    // Waiting for another server's migrations, or rewriting a big table, may take longer than a
    // request's statement timeout; a server that gave up here would not start.
    await tx`set local statement_timeout = 0`;
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY}::bigint)`;
    await tx`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`;
    const applied = await tx<{ version: number; name: string; checksum: string }[]>`
      select version, name, checksum from schema_migrations order by version`;
    for (const row of applied) {
      const known = migrations.find((m) => m.version === row.version);
      if (!known) {
        throw new Error(
          `The database has migration ${row.name}, which this build does not know; upgrade the server.`,
        );
      }
      if (known.checksum !== row.checksum) {
        throw new Error(
          `Migration ${row.name} was edited after it was applied; add a new migration instead.`,
        );
      }
    }
    const done = new Set(applied.map((r) => r.version));
    const ran: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name, checksum) values (${m.version}, ${m.name}, ${m.checksum})`;
      ran.push(m.name);
    }
    return ran;
  });
}
