import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSpec, specOperations } from '../../http/spec.js';
import { startTestAppOnOwnDatabase, type TestApp } from '../helpers/app.js';

/**
 * Issue 34's acceptance: a request on a collection's documents, read or write, does no DDL (Citus
 * runs DDL on every node, so one node down would fail such writes) and names no schema but its own
 * workplace's (each workplace schema lives on one Citus node). Recorded at the database: an event
 * trigger on ddl_command_start, which sees DDL from triggers and functions too, raises while a
 * request is audited; and every statement text the pool sends is recorded (postgres.js's `debug`).
 */
let t: TestApp;
let recorded: string[] | undefined;

beforeAll(async () => {
  // A database of its own: the event trigger must not fail other files' index builds.
  t = await startTestAppOnOwnDatabase('audit');
  await t.sql.unsafe(`create table audit_ddl (audited boolean not null)`);
  await t.sql.unsafe(`insert into audit_ddl values (false)`);
  await t.sql.unsafe(`create function audit_no_ddl() returns event_trigger language plpgsql as $$
    begin
      if (select audited from public.audit_ddl) then
        raise exception 'DDL in an audited request: %', tg_tag;
      end if;
    end $$`);
  await t.sql.unsafe(
    `create event trigger audit_no_ddl on ddl_command_start execute function audit_no_ddl()`,
  );
  // postgres.js reads `debug` from the pool's options at every statement it builds.
  (t.sql.options as { debug?: unknown }).debug = (_conn: number, text: string) => recorded?.push(text);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

const STORAGE = '/v1/workplaces/{name}/storages/{storage_name}/';

interface Case {
  op: string;
  body: Record<string, unknown>;
  status: number;
}

/** Every document operation, writes that flip indexes multikey and upserts included, in order. */
const CASES: Case[] = [
  {
    op: 'create',
    body: { docs: [{ _id: 1, k: 1, u: 'a', t: 'hello world', seen: '2999-01-01T00:00:00Z' }] },
    status: 201,
  },
  // The first array on each indexed path turns its index multikey, in the write's own statement.
  { op: 'create', body: { docs: [{ _id: 2, k: [1, 2], nick: 'n', active: true, u: 'b' }] }, status: 201 },
  { op: 'update', body: { query: { _id: 1 }, doc: { $set: { nick: ['x', 'y'] } } }, status: 200 },
  {
    op: 'update',
    body: { query: { _id: 9 }, doc: { $set: { k: 9, p: [1], u: 'u9' } }, upsert: true },
    status: 200,
  },
  { op: 'update-one', body: { query: { _id: 1 }, doc: { $set: { p: [2, 3] } } }, status: 200 },
  {
    op: 'update-one',
    body: { query: { _id: 10 }, doc: { $set: { k: 10, u: 'u10' } }, upsert: true },
    status: 200,
  },
  { op: 'replace-one', body: { query: { _id: 10 }, doc: { k: 11, u: 'c', active: true } }, status: 200 },
  { op: 'replace-one', body: { query: { _id: 12 }, doc: { k: 12, u: 'd' }, upsert: true }, status: 200 },
  { op: 'find-one-and-update', body: { query: { k: 12 }, doc: { $inc: { n: 1 } } }, status: 200 },
  {
    op: 'find-one-and-update',
    body: { query: { _id: 13 }, doc: { $set: { k: 13, u: 'u13' } }, upsert: true },
    status: 200,
  },
  {
    op: 'find-one-and-replace',
    body: { query: { _id: 13 }, doc: { k: 14, t: 'more words', u: 'u14' } },
    status: 200,
  },
  { op: 'read', body: { query: { k: 1 }, sort: { k: 1 } }, status: 200 },
  { op: 'read', body: { query: { $text: { $search: 'hello' } } }, status: 200 },
  { op: 'count', body: { query: { k: { $gte: 1 } } }, status: 200 },
  { op: 'distinct', body: { key: 'k', query: {} }, status: 200 },
  {
    op: 'aggregate',
    body: {
      pipeline: [
        { $match: { k: 1 } },
        { $lookup: { from: 'other', localField: 'k', foreignField: 'k', as: 'o' } },
      ],
    },
    status: 200,
  },
  { op: 'find-one-and-delete', body: { query: { _id: 13 } }, status: 200 },
  { op: 'delete-one', body: { query: { _id: 12 } }, status: 200 },
  { op: 'delete', body: { query: { k: { $gte: 9 } } }, status: 200 },
  // A unique index refusing a duplicate: an error, and still no DDL.
  { op: 'create', body: { docs: [{ _id: 20, u: 'a' }] }, status: 409 },
];

describe('the statements of document requests', () => {
  it('cover every document operation of the API', () => {
    const ops = specOperations(loadSpec())
      .filter(
        (o) =>
          o.path.startsWith(STORAGE) &&
          !o.path.startsWith(`${STORAGE}indexes`) &&
          !o.path.startsWith(`${STORAGE}rules`),
      )
      .map((o) => o.path.slice(STORAGE.length));
    expect(ops.length).toBeGreaterThan(10);
    for (const op of ops) expect(CASES.map((c) => c.op)).toContain(op);
  });

  it('do no DDL and name no other workplace, reads and writes alike', async () => {
    const mine = await t.createWorkplace();
    const other = await t.createWorkplace();
    for (const wp of [mine, other]) {
      for (const name of ['items', 'other']) {
        const res = await t.request({ method: 'POST', url: `/v1/workplaces/${wp}/storages`, body: { name } });
        expect(res.status, res.text).toBe(201);
      }
    }
    const base = `/v1/workplaces/${mine}/storages/items`;
    const indexes = [
      { name: 'byK', key: ['k'] },
      { name: 'byU', key: ['u'], unique: true },
      { name: 'active', key: [{ p: 1 }], partialFilterExpression: { active: true } },
      { name: 'nick', key: [{ nick: 1 }], sparse: true },
      { name: 'ttl', key: [{ seen: 1 }], expireAfterSeconds: 3600 },
      { name: 'byText', key: [{ t: 'text' }] },
    ];
    for (const body of indexes) {
      const res = await t.request({ method: 'POST', url: `${base}/indexes`, body });
      expect(res.status, res.text).toBe(201);
    }
    const [row] = await t.sql<{ id: string }[]>`select id::text as id from workplaces where name = ${mine}`;
    const own = `wp_${row?.id}`;

    await t.sql.unsafe('update audit_ddl set audited = true');
    try {
      for (const c of CASES) {
        recorded = [];
        const res = await t.request({ method: 'POST', url: `${base}/${c.op}`, body: c.body });
        const texts = recorded;
        recorded = undefined;
        expect(res.status, `${c.op} ${JSON.stringify(c.body)}: ${res.text}`).toBe(c.status);
        expect(
          texts.some((text) => text.includes(`"${own}".`)),
          c.op,
        ).toBe(true);
        for (const text of texts) {
          expect(text, c.op).not.toMatch(/^\s*(create|alter|drop|comment|grant|revoke|truncate)\b/i);
          for (const [schema] of text.matchAll(/wp_[0-9a-z_]+/gi))
            expect(schema, `${c.op}: ${text}`).toBe(own);
        }
      }
    } finally {
      await t.sql.unsafe('update audit_ddl set audited = false');
    }
    // The writes did turn indexes multikey, without DDL.
    const flipped = await t.sql<{ name: string }[]>`
      select i.name from collection_indexes i join collections c on c.id = i.collection_id
      join workplaces w on w.id = c.workplace_id where w.name = ${mine} and i.multikey order by i.name`;
    expect(flipped.map((r) => r.name)).toEqual(expect.arrayContaining(['active', 'byK', 'nick']));
  });

  it('fail when a request does DDL', async () => {
    const wp = await t.createWorkplace();
    const base = `/v1/workplaces/${wp}/storages`;
    expect((await t.request({ method: 'POST', url: base, body: { name: 'items' } })).status).toBe(201);
    await t.sql.unsafe('update audit_ddl set audited = true');
    try {
      const res = await t.request({
        method: 'POST',
        url: `${base}/items/indexes`,
        body: { name: 'byK', key: ['k'] },
      });
      expect(res.status).toBe(500);
    } finally {
      await t.sql.unsafe('update audit_ddl set audited = false');
    }
  });
});
