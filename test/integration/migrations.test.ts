import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbedded } from '../../db/connection/embedded.js';
import { loadMigrations, migrate } from '../../db/connection/migrate.js';
import type { Sql } from '../../db/connection/sql.js';
import { findClient, insertClient } from '../../db/platform/oidc-clients.js';
import { createWorkplace } from '../../db/platform/workplaces.js';
import { createCollection, findCollection } from '../../db/storage/catalog.js';
import { countStatement } from '../../db/storage/documents.js';
import { catalogGuard } from '../../db/storage/plan.js';
import { parseFilter } from '../../mongo/filter/parse.js';
import { openTestDatabase } from '../helpers/app.js';

describe('migrations on the suite database', () => {
  it('are idempotent: a second run applies nothing', async () => {
    const db = await openTestDatabase();
    try {
      await migrate(db.sql);
      expect(await migrate(db.sql)).toEqual([]);
      const rows = await db.sql<{ name: string }[]>`select name from schema_migrations order by version`;
      expect(rows.map((r) => r.name)).toEqual((await loadMigrations()).map((m) => m.name));
    } finally {
      await db.close();
    }
  });

  it('serialise concurrent runs under the advisory lock', async () => {
    const db = await openTestDatabase();
    try {
      const results = await Promise.all([migrate(db.sql), migrate(db.sql), migrate(db.sql)]);
      const applied = results.flat();
      expect(new Set(applied).size, 'no migration applied twice').toBe(applied.length);
      const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from schema_migrations`;
      expect(row?.n).toBe((await loadMigrations()).length);
    } finally {
      await db.close();
    }
  });
});

// Tampering needs a database of its own, so these always run on a throwaway embedded one.
describe('migration safety', () => {
  let sql: Sql;
  let close: () => Promise<void>;
  let dir: string;
  beforeAll(async () => {
    const db = await openEmbedded({ dataDir: 'memory://' });
    sql = db.sql;
    close = db.close;
    dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  });
  afterAll(async () => {
    await close?.();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies new files in order, records checksums, and refuses edited or unknown ones', async () => {
    await writeFile(join(dir, '0001_first.sql'), 'create table a (x int);');
    await writeFile(join(dir, '0002_second.sql'), 'create table b (y int); insert into a values (1);');
    await writeFile(join(dir, 'notes.txt'), 'ignored');
    expect(await migrate(sql, dir)).toEqual(['0001_first.sql', '0002_second.sql']);
    const [row] = await sql<{ checksum: string }[]>`select checksum from schema_migrations where version = 1`;
    expect(row?.checksum).toMatch(/^[0-9a-f]{64}$/);

    await writeFile(join(dir, '0003_third.sql'), 'alter table b add column z int;');
    expect(await migrate(sql, dir)).toEqual(['0003_third.sql']);

    await writeFile(join(dir, '0001_first.sql'), 'create table a (x bigint);');
    await expect(migrate(sql, dir)).rejects.toThrow(/0001_first\.sql was edited/);
    await writeFile(join(dir, '0001_first.sql'), 'create table a (x int);');

    await sql`insert into schema_migrations (version, name, checksum) values (9, '0009_future.sql', 'x')`;
    await expect(migrate(sql, dir)).rejects.toThrow(/0009_future\.sql.*does not know/);
    await sql`delete from schema_migrations where version = 9`;
  });

  it('rolls back a failing migration completely', async () => {
    await writeFile(join(dir, '0004_broken.sql'), 'create table c (x int); select * from no_such_table;');
    await expect(migrate(sql, dir)).rejects.toThrow(/no_such_table/);
    const [exists] = await sql<
      { n: number }[]
    >`select count(*)::int as n from pg_tables where tablename = 'c'`;
    expect(exists?.n).toBe(0);
    const [applied] = await sql<
      { n: number }[]
    >`select count(*)::int as n from schema_migrations where version = 4`;
    expect(applied?.n).toBe(0);
  });
});

// An upgrade: collections made before migration 0008 got their catalog markers from it; migration
// 0021 drops them again, and guarded reads of those collections must work after both.
describe('migrations 0008 and 0021 on a database with collections', () => {
  it('leave existing collections guarded by their catalog version, without marker types', async () => {
    const db = await openEmbedded({ dataDir: 'memory://' });
    const dir = await mkdtemp(join(tmpdir(), 'migrations-0008-'));
    try {
      const all = await loadMigrations();
      for (const m of all.filter((m) => m.version < 8)) await writeFile(join(dir, m.name), m.sql);
      await migrate(db.sql, dir);
      expect(await createWorkplace(db.sql, 'w', 'wpo_x')).toHaveProperty('created');
      expect(await createCollection(db.sql, 'w', 'c')).toEqual({ created: true });
      // An index as version 7 stored one (today's createIndex writes columns added since): its
      // catalog row and the key columns a count reads.
      const [ix] = await db.sql<{ id: string; cid: string; wid: string }[]>`
        insert into collection_indexes (collection_id, name, key, is_unique)
        select c.id, 'byTag', '[["tag", 1]]', false from collections c where c.name = 'c'
        returning id::text, collection_id::text as cid,
          (select workplace_id::text from collections where id = collection_id) as wid`;
      if (!ix) throw new Error('no index row');
      await db.sql`select mdb.add_index_field(${`"wp_${ix.wid}"."c_${ix.cid}"`}::regclass, ${`i${ix.id}_0`},
        array['lax $."tag"']::jsonpath[], null, 'lax $."tag".type() == "array"'::jsonpath)`;

      await migrate(db.sql);
      const fresh = await findCollection(db.sql, 'w', 'c');
      if (!fresh.workplace || !fresh.found) throw new Error('no collection');
      const statement = countStatement(fresh.found, parseFilter({ tag: 'x' }), true);
      expect(statement.text).toContain(catalogGuard(fresh.found));
      const [row] = await db.sql.unsafe<{ n: string }[]>(statement.text, statement.values);
      expect(row?.n).toBe('0');
      const [markers] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_type where typnamespace = 'mdb'::regnamespace and typname like 'catalog\\_%'`;
      expect(markers?.n).toBe(0);
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// An upgrade: clients registered before migration 0011 hold a secret and authenticate with it.
describe('migration 0011 on a database with clients', () => {
  it('makes existing clients confidential, and keeps a secret exactly on confidential clients', async () => {
    const db = await openEmbedded({ dataDir: 'memory://' });
    const dir = await mkdtemp(join(tmpdir(), 'migrations-0011-'));
    try {
      const all = await loadMigrations();
      for (const m of all.filter((m) => m.version < 11)) await writeFile(join(dir, m.name), m.sql);
      await migrate(db.sql, dir);
      expect(await createWorkplace(db.sql, 'w', 'wpo_x')).toHaveProperty('created');
      const metadata = { redirect_uris: ['https://a.example/cb'], application_type: 'web' } as never;
      const hash = Buffer.alloc(32, 1);
      expect(
        await insertClient(db.sql, 'w', { clientId: 'c'.repeat(22), secretHash: hash, metadata }),
      ).toHaveProperty('inserted');

      await migrate(db.sql);
      const found = await findClient(db.sql, 'w', 'c'.repeat(22));
      expect(found?.metadata).toEqual({
        redirect_uris: ['https://a.example/cb'],
        application_type: 'web',
        token_endpoint_auth_method: 'client_secret_basic',
      });
      const insert = (secretHash: Buffer | null, method: string) =>
        insertClient(db.sql, 'w', {
          clientId: randomBytes(16).toString('base64url'),
          secretHash,
          metadata: { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: method } as never,
        });
      await expect(insert(null, 'client_secret_basic')).rejects.toThrow(/oidc_clients_secret_by_kind/);
      await expect(insert(hash, 'none')).rejects.toThrow(/oidc_clients_secret_by_kind/);
      await expect(insert(null, 'none')).resolves.toHaveProperty('inserted');
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
