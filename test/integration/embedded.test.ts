import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDirLockedError, type EmbeddedDatabase, openEmbedded } from '../../db/connection/embedded.js';

const OPEN_TIMEOUT = 30_000;
const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const fixture = fileURLToPath(new URL('../fixtures/open-embedded.ts', import.meta.url));

/**
 * postgres.js binds bigints and plain objects (as json/jsonb) at runtime, but its
 * typings for a plain `Sql` only admit them through helpers such as sql.json().
 */
const param = (value: bigint | object) => value as postgres.ParameterOrFragment<never>;

describe('openEmbedded: postgres.js over PGlite', () => {
  let db: EmbeddedDatabase;
  let sql: postgres.Sql;
  const notices: unknown[] = [];

  beforeAll(async () => {
    db = await openEmbedded({ dataDir: 'memory://', onnotice: (n) => notices.push(n) });
    sql = db.sql;
  }, OPEN_TIMEOUT);

  afterAll(() => db?.close());

  it('runs a simple query', async () => {
    const rows = await sql`select 1 as one, current_database() as db, current_user as usr`;
    expect([...rows]).toEqual([{ one: 1, db: 'postgres', usr: 'postgres' }]);
  });

  it('binds parameters of the common types', async () => {
    const [row] = await sql`
      select ${'héllo'}::text as t, ${41}::int + 1 as i, ${param(2n ** 62n)}::int8 as b,
             ${true}::boolean as yes, ${false}::boolean as no, ${null}::text as nothing`;
    // postgres.js returns int8 as a string unless told otherwise.
    expect(row).toEqual({ t: 'héllo', i: 42, b: '4611686018427387904', yes: true, no: false, nothing: null });
  });

  it('binds arrays', async () => {
    const [row] =
      await sql`select ${sql.array([1, 2, 3])}::int[] as ints, ${sql.array(['a', 'b'])}::text[] as texts`;
    expect(row).toEqual({ ints: [1, 2, 3], texts: ['a', 'b'] });
  });

  it('stores jsonb parameters as JSON objects and arrays, not strings', async () => {
    const [cast] = await sql`select ${sql.json({ a: 1 })}::jsonb->>'a' as v`;
    expect(cast?.v).toBe('1');

    await sql`create table docs (id int primary key, doc jsonb not null)`;
    const obj = { name: 'x', nested: { n: 1, list: [1, 'two', null] }, ok: true };
    await sql`insert into docs values (1, ${param(obj)})`;
    await sql.unsafe('insert into docs values ($1, $2)', [3, obj]);
    await sql`insert into docs values (2, ${sql.json([1, { b: 2 }])})`;
    const rows =
      await sql`select id, doc, jsonb_typeof(doc) as kind, doc->'nested'->>'n' as n from docs order by id`;
    expect([...rows]).toEqual([
      { id: 1, doc: obj, kind: 'object', n: '1' },
      { id: 2, doc: [1, { b: 2 }], kind: 'array', n: null },
      { id: 3, doc: obj, kind: 'object', n: '1' },
    ]);
  });

  it('returns multi-row results', async () => {
    const rows = await sql`select i, i * i as sq from generate_series(1, 5) as i order by i`;
    expect(rows.map((r) => [r.i, r.sq])).toEqual([
      [1, 1],
      [2, 4],
      [3, 9],
      [4, 16],
      [5, 25],
    ]);
  });

  it('commits sql.begin and rolls it back when the callback throws', async () => {
    await sql`create table tx_t (id int primary key)`;
    await sql.begin(async (tx) => {
      await tx`insert into tx_t values (1)`;
      await tx`insert into tx_t values (${2})`;
    });
    await expect(
      sql.begin(async (tx) => {
        await tx`insert into tx_t values (3)`;
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const rows = await sql`select id from tx_t order by id`;
    expect(rows.map((r) => r.id)).toEqual([1, 2]);
  });

  it('supports savepoints inside sql.begin', async () => {
    await sql`create table sp_t (id int primary key)`;
    await sql.begin(async (tx) => {
      await tx`insert into sp_t values (10)`;
      await tx
        .savepoint(async (sp) => {
          await sp`insert into sp_t values (11)`;
          throw new Error('undo 11');
        })
        .catch(() => {});
      // A database error inside a savepoint leaves the outer transaction usable.
      await expect(tx.savepoint((sp) => sp`insert into sp_t values (10)`)).rejects.toMatchObject({
        code: '23505',
      });
      await tx.savepoint((sp) => sp`insert into sp_t values (12)`);
    });
    const rows = await sql`select id from sp_t order by id`;
    expect(rows.map((r) => r.id)).toEqual([10, 12]);
  });

  it('runs a simple query longer than 16 KiB in a transaction while another transaction waits', async () => {
    // A migration file is one such query; the bridge used to stall postgres.js for good here.
    const long = `select 1 as x; -- ${'x'.repeat(40_000)}`;
    const transaction = () =>
      db.sql.begin(async (tx) => {
        await tx`select 0`;
        const [row] = await tx.unsafe(long);
        await tx`select 2`;
        return row;
      });
    const [inTx, after] = await Promise.all([transaction(), transaction()]);
    expect(inTx).toEqual({ x: 1 });
    expect(after).toEqual({ x: 1 });
  });

  it('runs multi-statement simple queries via sql.unsafe', async () => {
    await sql.unsafe(
      'create table ms_t (x int); insert into ms_t values (1), (2); insert into ms_t values (3);',
    );
    const [row] = await sql`select sum(x)::int as total from ms_t`;
    expect(row?.total).toBe(6);
    const results = await sql.unsafe('select 1 as a; select 2 as b');
    expect(results).toHaveLength(2);
  });

  it('surfaces PostgreSQL errors as postgres.js errors and keeps the connection usable', async () => {
    await sql`create table uq_t (k text primary key)`;
    await sql`insert into uq_t values ('a')`;
    const dup = await sql`insert into uq_t values (${'a'})`.catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(postgres.PostgresError);
    expect(dup).toMatchObject({ code: '23505', constraint_name: 'uq_t_pkey' });

    // Errors at Parse time (parameterised: Parse/Describe/Flush without Sync) and from the simple protocol.
    await expect(sql`select ${1}::int from no_such_table`).rejects.toMatchObject({ code: '42P01' });
    await expect(sql.unsafe('selec 1')).rejects.toMatchObject({ code: '42601' });

    const [row] = await sql`select count(*)::int as n from uq_t where k = ${'a'}`;
    expect(row?.n).toBe(1);
  });

  it('takes transaction-scoped advisory locks', async () => {
    const held = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${42})`;
      const [row] = await tx`select count(*)::int as n from pg_locks where locktype = 'advisory'`;
      return row?.n;
    });
    expect(held).toBe(1);
    const [after] = await sql`select count(*)::int as n from pg_locks where locktype = 'advisory'`;
    expect(after?.n).toBe(0);
  });

  it('returns 20,000 rows intact', async () => {
    const rows = await sql`select i, md5(i::text) as h from generate_series(1, 20000) as i order by i`;
    expect(rows).toHaveLength(20000);
    expect(rows[0]).toEqual({ i: 1, h: 'c4ca4238a0b923820dcc509a6f75849b' });
    expect(rows[19999]?.i).toBe(20000);
    expect(rows.every((r, idx) => r.i === idx + 1 && r.h.length === 32)).toBe(true);
  });

  it('round-trips a 5 MB jsonb value', async () => {
    const big = { items: Array.from({ length: 50_000 }, (_, i) => ({ i, s: `${i}:${'x'.repeat(80)}` })) };
    expect(JSON.stringify(big).length).toBeGreaterThan(5_000_000);
    await sql`create table big_t (id int primary key, doc jsonb)`;
    await sql`insert into big_t values (1, ${sql.json(big)})`;
    const [row] = await sql`select doc, octet_length(doc::text) as size from big_t where id = 1`;
    expect(row?.size).toBeGreaterThan(5_000_000);
    expect(row?.doc).toEqual(big);
  });

  it('streams with cursors (Execute with a row limit + Flush)', async () => {
    const batches: number[] = [];
    let sum = 0;
    for await (const rows of sql`select i from generate_series(1, 1000) as i`.cursor(100)) {
      batches.push(rows.length);
      for (const r of rows) sum += r.i;
    }
    expect(batches).toEqual(Array(10).fill(100));
    expect(sum).toBe(500500);
  });

  it('resolves 200 concurrent queries correctly on the single connection', async () => {
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        i % 3 === 0
          ? sql`select ${i}::int as i, ${`s${i}`} as s`
          : sql`select ${i}::int as i, ${`s${i}`}::text as s`,
      ),
    );
    expect(results.map((r) => r[0])).toEqual(Array.from({ length: 200 }, (_, i) => ({ i, s: `s${i}` })));
  });

  it('delivers notices to onnotice', async () => {
    await sql`do $$ begin raise notice 'hello %', 7; end $$`;
    expect(notices).toContainEqual(expect.objectContaining({ severity: 'NOTICE', message: 'hello 7' }));
  });

  it('listens on its one session: hears what commits, not what rolls back, until unlisten', async () => {
    const heard: string[] = [];
    let listening = 0;
    const { unlisten } = await sql.listen(
      'chan',
      (payload) => heard.push(payload),
      () => listening++,
    );
    expect(listening).toBe(1);
    await sql`select pg_notify('chan', 'one')`;
    // Delivered with the commit's answer, before the statement resolves.
    expect(heard).toEqual(['one']);
    await sql.begin(async (tx) => {
      await tx`select pg_notify('chan', 'two')`;
      await tx`select pg_notify('chan', 'two')`;
    });
    await sql
      .begin(async (tx) => {
        await tx`select pg_notify('chan', 'rolled back')`;
        throw new Error('roll back');
      })
      .catch(() => {});
    await sql`select pg_notify('other', 'three')`;
    expect(heard).toEqual(['one', 'two']);
    await unlisten();
    await sql`select pg_notify('chan', 'four')`;
    expect(heard).toEqual(['one', 'two']);
  });
});

describe('openEmbedded: data directory and lock', () => {
  const root = mkdtempSync(join(tmpdir(), 'embedded-test-'));
  // Nested and missing, to cover mkdir -p.
  const dir = join(root, 'nested', 'data');
  const lockFile = join(dir, '.lock');
  let db: EmbeddedDatabase | undefined;
  const opened = (): EmbeddedDatabase => {
    if (!db) throw new Error('expected the database to be open');
    return db;
  };

  afterAll(async () => {
    await db?.close();
    rmSync(root, { recursive: true, force: true });
  });

  async function reopenAndCount(): Promise<number> {
    db = await openEmbedded({ dataDir: dir });
    expect(readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    const [row] = await db.sql`select count(*)::int as n from kept`;
    await db.close();
    db = undefined;
    return row?.n;
  }

  it(
    'persists data across close and reopen',
    async () => {
      db = await openEmbedded({ dataDir: dir });
      await db.sql`create table kept (id int primary key, doc jsonb)`;
      await db.sql`insert into kept values (1, ${param({ a: 1 })}), (2, ${param({ b: [2] })})`;
      await db.close();
      await db.close(); // idempotent
      expect(existsSync(lockFile)).toBe(false);

      db = await openEmbedded({ dataDir: dir });
      const rows = await db.sql`select id, doc from kept order by id`;
      expect([...rows]).toEqual([
        { id: 1, doc: { a: 1 } },
        { id: 2, doc: { b: [2] } },
      ]);
    },
    2 * OPEN_TIMEOUT,
  );

  it('rejects a second open of a directory that is in use, naming it and the holder', async () => {
    expect(readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    // A relative path must be reported as the absolute directory.
    const err = await openEmbedded({ dataDir: relative(process.cwd(), dir) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect(err).toMatchObject({ dataDir: dir, pid: process.pid });
    expect((err as Error).message).toBe(
      `Data directory ${dir} is already in use by process ${process.pid} (lock file ${lockFile}). ` +
        'Stop that process, or set DATA_DIR to another directory.',
    );
    // The first instance is unaffected.
    const [row] = await opened().sql`select count(*)::int as n from kept`;
    expect(row?.n).toBe(2);
  });

  it(
    'rejects another process opening the directory while it is in use',
    async () => {
      const child = await run(process.execPath, ['--import', 'tsx', fixture, dir]);
      expect(child.stdout).not.toContain('opened');
      expect(child.stderr).toContain(
        `Data directory ${dir} is already in use by process ${process.pid} (lock file ${lockFile}).`,
      );
      expect(child.code).toBe(3);
      expect(readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    },
    OPEN_TIMEOUT,
  );

  it(
    'can be opened again after close()',
    async () => {
      await opened().close();
      db = undefined;
      expect(existsSync(lockFile)).toBe(false);
      expect(await reopenAndCount()).toBe(2);
    },
    OPEN_TIMEOUT,
  );

  it(
    'takes over a stale lock left by a dead process',
    async () => {
      const exited = spawnSync(process.execPath, ['-e', '']);
      expect(exited.status).toBe(0);
      writeFileSync(lockFile, `${exited.pid}\n`);
      expect(await reopenAndCount()).toBe(2);

      writeFileSync(lockFile, '999999999\n');
      expect(await reopenAndCount()).toBe(2);
      expect(existsSync(lockFile)).toBe(false);
    },
    2 * OPEN_TIMEOUT,
  );

  it(
    'treats an unreadable lock file as stale',
    async () => {
      writeFileSync(lockFile, 'not a pid');
      expect(await reopenAndCount()).toBe(2);
    },
    OPEN_TIMEOUT,
  );

  it(
    'lets another process open the directory once it is free',
    async () => {
      const child = await run(process.execPath, ['--import', 'tsx', fixture, dir]);
      expect(child.stderr).toBe('');
      expect(child.stdout).toBe('opened\n');
      expect(child.code).toBe(0);
      expect(existsSync(lockFile)).toBe(false);
    },
    OPEN_TIMEOUT,
  );

  it(
    'does not leave the lock behind when PGlite fails to open',
    async () => {
      // PG_VERSION present but no cluster: PGlite skips initdb and fails to start.
      const broken = join(root, 'broken');
      mkdirSync(broken);
      writeFileSync(join(broken, 'PG_VERSION'), 'garbage\n');
      await expect(openEmbedded({ dataDir: broken })).rejects.toThrow();
      expect(existsSync(join(broken, '.lock'))).toBe(false);
    },
    OPEN_TIMEOUT,
  );
});

function run(cmd: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
