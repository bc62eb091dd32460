import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';

/**
 * Vitest global setup: the data directory of a new, empty PGlite cluster, written once per run, so
 * that each in-memory database a test opens starts from it (openTestDatabase) instead of running
 * initdb again, which takes seconds. The image is what initdb makes, nothing more: every test still
 * migrates its own database.
 */
const VARIABLE = 'WPA_TEST_PGLITE_IMAGE';

export default async function setup(): Promise<(() => void) | undefined> {
  // On PostgreSQL the tests' databases are PostgreSQL's.
  if (process.env.DATABASE_URL) return undefined;
  const pg = await PGlite.create('memory://');
  const image = await pg.dumpDataDir('none');
  await pg.close();
  const file = path.join(os.tmpdir(), `wpa-pglite-image-${process.pid}.tar`);
  writeFileSync(file, Buffer.from(await image.arrayBuffer()));
  // Read by the test workers, which start after global setup and inherit this environment.
  process.env[VARIABLE] = file;
  return () => rmSync(file, { force: true });
}

let image: Blob | undefined;

/** The image global setup wrote, read once per test worker; undefined without one (a new cluster then). */
export function freshPgliteImage(): Blob | undefined {
  const file = process.env[VARIABLE];
  if (!file) return undefined;
  image ??= new Blob([readFileSync(file)]);
  return image;
}
