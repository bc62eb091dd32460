import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/**
 * Vitest global setup: with DATABASE_URL set, the suite runs in a database of its own, created here
 * and dropped when the run ends, instead of leaving every test's workplace (and its schema) behind
 * in DATABASE_URL's database. Two runs on one server do not see each other's migrations either.
 *
 * The name carries the creation time, so a run that died (and never dropped its database) is
 * cleaned up by the next run once it is old enough not to be another run still going.
 */
const PREFIX = 'wp_test_run_';
const STALE_AFTER_SECONDS = 6 * 60 * 60;

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const source = process.env.DATABASE_URL;
  if (!source) return undefined;
  const admin = postgres(source, { max: 1, onnotice: () => {} });
  const now = Math.floor(Date.now() / 1000);
  const leftovers = await admin<{ datname: string }[]>`
    select datname from pg_database where datname like ${`${PREFIX}%`}`;
  for (const { datname } of leftovers) {
    const created = Number(datname.slice(PREFIX.length).split('_')[0]);
    if (Number.isFinite(created) && now - created > STALE_AFTER_SECONDS) {
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    }
  }
  const name = `${PREFIX}${now}_${randomBytes(4).toString('hex')}`;
  // The same encoding and collation as DATABASE_URL's database, which is what the run was given.
  const [like = { encoding: 'UTF8', collate: 'C', ctype: 'C' }] = await admin<
    { encoding: string; collate: string; ctype: string }[]
  >`
    select pg_encoding_to_char(encoding) as encoding, datcollate as collate, datctype as ctype
    from pg_database where datname = current_database()`;
  await admin.unsafe(
    `create database "${name}" encoding ${quote(like.encoding)} lc_collate ${quote(like.collate)}
     lc_ctype ${quote(like.ctype)} template template0`,
  );
  const url = new URL(source);
  url.pathname = `/${name}`;
  // Read by the test workers, which start after global setup and inherit this environment.
  process.env.DATABASE_URL = url.href;
  return async () => {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 5 });
  };
}

/** A string literal for the DDL above, which takes no bound parameters. */
function quote(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
