/** The documents the bench seeds, and the seeding of the workplace through the API. */
import { randomBytes } from 'node:crypto';
import type postgres from 'postgres';
import { type Bench, call } from './context.js';

export const CITIES = Array.from({ length: 50 }, (_, i) => `City${String.fromCharCode(65 + (i % 26))}${i}`);
/** How many request bodies a scenario cycles through, each with values of its own. */
export const VARIANTS = 200;
/** Documents matched by one updateMany. */
export const UPDATE_MATCHES = 10_000;
/** Documents in one `group`: the count scenario that does the same work at every size. */
export const GROUP_SIZE = 100;
/** How many values a field takes so that each holds `per` of `size` documents (`bucket`, `group`). */
export const partitions = (size: number, per: number) => Math.max(1, Math.floor(size / per));

export function doc(i: number, buckets: number, groups: number) {
  return {
    _id: `u${i}`,
    email: `user${i}@example.com`,
    name: `User ${i}`,
    age: 18 + (i % 80),
    city: CITIES[i % CITIES.length],
    bucket: i % buckets,
    group: i % groups,
    n: 0,
    joined: new Date(Date.UTC(2020, 0, 1) + (i % 1500) * 86_400_000).toISOString(),
    profile: { score: (i * 7919) % 1000, tags: [`t${i % 7}`, `t${i % 11}`], verified: i % 3 === 0 },
    orders: [
      { sku: `SKU-${i % 997}`, qty: 1 + (i % 5), price: (i % 100) + 0.99 },
      { sku: `SKU-${(i * 31) % 997}`, qty: 1, price: 9.5 },
    ],
  };
}

export const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;

/** The elements of `xs` one after the other, round and round. */
export function cycle<T>(xs: T[]): () => T {
  let i = 0;
  return () => xs[i++ % xs.length] as T;
}

/** A workplace name of letters only, unlikely to meet one that exists. */
export function randomWorkplaceName(): string {
  return `bench${randomBytes(6)
    .toString('hex')
    .replace(/\d/g, (d) => String.fromCharCode(97 + Number(d)))}`;
}

/** Creates the collection and fills it through the API, 1,000 documents a request, 4 at a time. */
export async function fill(
  bench: Bench,
  collection: string,
  count: number,
  make: (i: number) => Record<string, unknown>,
) {
  const workplace = bench.workplace;
  await call(bench, 'POST', `/v1/workplaces/${workplace}/storages`, { name: collection });
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const from = next;
      next += 1000;
      const docs = [];
      for (let i = from; i < Math.min(from + 1000, count); i++) docs.push(make(i));
      await call(bench, 'POST', `/v1/workplaces/${workplace}/storages/${collection}/create`, { docs });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

async function seed(bench: Bench, collection: string, count: number) {
  const buckets = partitions(count, UPDATE_MATCHES);
  const groups = partitions(count, GROUP_SIZE);
  const started = Date.now();
  await fill(bench, collection, count, (i) => doc(i, buckets, groups));
  for (const index of [
    { name: 'byCity', key: ['city'] },
    { name: 'byAge', key: ['age'] },
    { name: 'byBucket', key: ['bucket'] },
    { name: 'byGroup', key: ['group'] },
    // Users look one another up by a unique field more often than by anything else but `_id`.
    { name: 'byEmail', key: ['email'], unique: true },
  ]) {
    await call(bench, 'POST', `/v1/workplaces/${bench.workplace}/storages/${collection}/indexes`, index);
  }
  process.stderr.write(
    `seeded ${collection}: ${count} documents in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

/**
 * The workplace with its small and large collections seeded and two empty ones for bulk create
 * (the delete scenario seeds its own collection after these: seedDeletes).
 */
export async function seedWorkplace(bench: Bench): Promise<void> {
  const { workplace, options } = bench;
  await call(bench, 'POST', '/v1/workplaces', { name: workplace });
  process.stderr.write(`workplace ${workplace}; seeding (${options.small} + ${options.large} documents)\n`);
  await seed(bench, 'small', options.small);
  await seed(bench, 'large', options.large);
  await call(bench, 'POST', `/v1/workplaces/${workplace}/storages`, { name: 'bulkapi' });
  await call(bench, 'POST', `/v1/workplaces/${workplace}/storages`, { name: 'bulkbase' });
}

/**
 * Waits until the database has settled after the seed, as pgbench vacuums before it measures: the
 * server's background VACUUM of the freshly loaded tables has ended (after a large seed it may
 * still be running, and would share the 2 cores with the first read scenarios, tilting them by
 * whichever side it happened to overlap), and the seed's writes are checkpointed (skipped where
 * the role may not run CHECKPOINT). Maintenance must be absent twice, a second apart: the server
 * starts its VACUUM just after answering the request that triggered it.
 */
export async function settle(sql: postgres.Sql) {
  const started = Date.now();
  for (let quiet = 0; quiet < 2; ) {
    await new Promise((r) => setTimeout(r, 1000));
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state = 'active'
        and query ~* '^\\s*(vacuum|analyze)'`;
    quiet = row?.n ? 0 : quiet + 1;
  }
  const checkpoint = await sql`checkpoint`.then(
    () => 'checkpointed',
    () => 'no CHECKPOINT privilege',
  );
  process.stderr.write(
    `database settled in ${((Date.now() - started) / 1000).toFixed(0)} s (${checkpoint})\n`,
  );
}
