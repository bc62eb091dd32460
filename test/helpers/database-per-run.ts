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
  const cluster = await citusNodes(admin);
  const leftovers = await admin<{ datname: string }[]>`
    select datname from pg_database where datname like ${`${PREFIX}%`}`;
  for (const { datname } of leftovers) {
    const created = Number(datname.slice(PREFIX.length).split('_')[0]);
    if (Number.isFinite(created) && now - created > STALE_AFTER_SECONDS) {
      await admin.unsafe(`drop database if exists "${datname}" with (force)`);
      if (cluster)
        await onNodes(new URL(source), cluster.workers, (node) =>
          node.unsafe(`drop database if exists "${datname}" with (force)`),
        );
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
  if (cluster) await makeCitusDatabase(url, name, cluster);
  // Read by the test workers, which start after global setup and inherit this environment.
  process.env.DATABASE_URL = url.href;
  return async () => {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 5 });
    if (cluster)
      await onNodes(url, cluster.workers, (node) =>
        node.unsafe(`drop database if exists "${name}" with (force)`),
      );
  };
}

interface CitusCluster {
  coordinator: { host: string; port: number };
  workers: { host: string; port: number }[];
}

/**
 * The nodes of the Citus cluster DATABASE_URL's database belongs to (its coordinator), or
 * undefined on PostgreSQL without Citus.
 */
async function citusNodes(admin: postgres.Sql): Promise<CitusCluster | undefined> {
  const [ext] = await admin`select 1 as x from pg_extension where extname = 'citus'`;
  if (!ext) return undefined;
  const nodes = await admin<{ nodename: string; nodeport: number; groupid: number }[]>`
    select nodename, nodeport, groupid from pg_dist_node where noderole = 'primary' order by groupid`;
  const coordinator = nodes.find((n) => n.groupid === 0);
  if (!coordinator) return undefined;
  return {
    coordinator: { host: coordinator.nodename, port: coordinator.nodeport },
    workers: nodes.filter((n) => n.groupid !== 0).map((n) => ({ host: n.nodename, port: n.nodeport })),
  };
}

/**
 * Makes the run's database a Citus cluster database, as the cluster's own setup does for its first
 * one: the database and the extension on every worker, then the extension, the coordinator and
 * the workers registered in the coordinator's database, with schema-based sharding on, so that
 * every workplace schema the run creates is a distributed schema.
 */
async function makeCitusDatabase(url: URL, name: string, cluster: CitusCluster): Promise<void> {
  await onNodes(url, cluster.workers, async (node) => {
    await node.unsafe(`create database "${name}" template template0`);
  });
  const inDatabase = cluster.workers.map((w) => ({ ...w, database: name }));
  await onNodes(url, inDatabase, (node) => node.unsafe('create extension citus'));
  const coordinator = postgres(url.href, { max: 1, onnotice: () => {} });
  try {
    await coordinator.unsafe('create extension citus');
    await coordinator`select citus_set_coordinator_host(${cluster.coordinator.host}, ${cluster.coordinator.port})`;
    for (const w of cluster.workers) await coordinator`select citus_add_node(${w.host}, ${w.port})`;
    await coordinator.unsafe(`alter database "${name}" set citus.enable_schema_based_sharding = on`);
  } finally {
    await coordinator.end({ timeout: 5 });
  }
}

/** Runs `work` on a connection to each node, in `database` when given, else in `postgres`. */
async function onNodes(
  url: URL,
  nodes: { host: string; port: number; database?: string }[],
  work: (node: postgres.Sql) => Promise<unknown>,
): Promise<void> {
  for (const n of nodes) {
    const at = new URL(url.href);
    at.hostname = n.host;
    at.port = String(n.port);
    at.pathname = `/${n.database ?? 'postgres'}`;
    const node = postgres(at.href, { max: 1, onnotice: () => {} });
    try {
      await work(node);
    } finally {
      await node.end({ timeout: 5 });
    }
  }
}

/** A string literal for the DDL above, which takes no bound parameters. */
function quote(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
