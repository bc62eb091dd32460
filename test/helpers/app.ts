import { randomBytes, randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import postgres from 'postgres';
import { type AppDeps, buildApp } from '../../app.js';
import { migrate } from '../../db/connection/migrate.js';
import { openDatabase } from '../../db/connection/open.js';
import type { Sql } from '../../db/connection/sql.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { createResponseChecker } from './contract.js';
import { freshPgliteImage } from './pglite-image.js';

export interface RequestOptions {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH' | 'HEAD' | 'OPTIONS';
  url: string;
  /** JSON-encoded unless `payload` is given. */
  body?: unknown;
  /** A raw body, sent as is. */
  payload?: string | Buffer;
  /** The X-Auth-Token; defaults to the admin token, `null` sends none. */
  token?: string | null;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies
  body: any;
}

export interface TestApp {
  app: FastifyInstance;
  sql: Sql;
  adminToken: string;
  databaseKind: 'postgres' | 'embedded';
  request(options: RequestOptions): Promise<TestResponse>;
  /** Creates a workplace with a random name and returns the name. */
  createWorkplace(): Promise<string>;
  close(): Promise<void>;
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A random Latin-letters-only name, unique enough for one workplace per test. */
export function randomName(prefix = 't'): string {
  let s = prefix;
  for (let i = 0; i < 16; i++) s += LETTERS[randomInt(LETTERS.length)];
  return s;
}

/**
 * The database the suite runs on, opened as the server opens it: PostgreSQL when DATABASE_URL is
 * set, else in-memory PGlite.
 */
export interface TestDatabaseOptions {
  statementTimeoutMs?: number;
  /** Another PostgreSQL database than DATABASE_URL's (with DATABASE_URL set). */
  databaseUrl?: string;
}

export async function openTestDatabase(options: TestDatabaseOptions = {}): Promise<{
  sql: Sql;
  kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}> {
  const databaseUrl = options.databaseUrl ?? (process.env.DATABASE_URL || undefined);
  return openDatabase({
    databaseUrl,
    dataDir: 'memory://',
    memoryImage: databaseUrl ? undefined : freshPgliteImage(),
    dbPoolMax: 4,
    ...(options.statementTimeoutMs !== undefined ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
  });
}

/** Builds the same app the server builds, on a real database, with every response checked against the spec. */
export async function startTestApp(
  options: TestDatabaseOptions & Pick<AppDeps, 'catalogChanges'> = {},
): Promise<TestApp> {
  const db = await openTestDatabase(options);
  await migrate(db.sql);
  const adminToken = generateSecret(TOKEN_PREFIX.admin);
  const app = await buildApp({
    sql: db.sql,
    adminTokenHash: hashSecret(adminToken),
    catalogChanges: options.catalogChanges,
  });
  await app.ready();
  const check = createResponseChecker();

  const request = async (o: RequestOptions): Promise<TestResponse> => {
    const headers: Record<string, string> = {};
    const token = o.token === undefined ? adminToken : o.token;
    if (token !== null) headers['x-auth-token'] = token;
    let payload: string | Buffer | undefined = o.payload;
    if (payload === undefined && o.body !== undefined) {
      payload = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    Object.assign(headers, o.headers);
    const res = await app.inject({
      method: o.method,
      url: o.url,
      headers,
      ...(payload !== undefined ? { payload } : {}),
    });
    const contentType = res.headers['content-type'];
    check(
      o.method,
      o.url,
      res.statusCode,
      typeof contentType === 'string' ? contentType : undefined,
      res.body,
    );
    let body: unknown;
    try {
      body = res.body === '' ? undefined : JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers, text: res.body, body };
  };

  return {
    app,
    sql: db.sql,
    adminToken,
    databaseKind: db.kind,
    request,
    async createWorkplace() {
      const name = randomName();
      const res = await request({ method: 'POST', url: '/v1/workplaces', body: { name } });
      if (res.status !== 201) throw new Error(`could not create workplace: ${res.status} ${res.text}`);
      return name;
    },
    async close() {
      await app.close();
      await db.close();
    },
  };
}

/**
 * startTestApp on a PostgreSQL database of its own (`<prefix>_<hex>`, dropped by `close`) when
 * DATABASE_URL is set: for a file whose database-wide state (a snapshot of every table, an event
 * trigger) must not meet other files'. On PGlite every app has a database of its own anyway.
 */
export async function startTestAppOnOwnDatabase(prefix: string): Promise<TestApp> {
  const url = process.env.DATABASE_URL;
  if (!url) return startTestApp();
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const drop = async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end({ timeout: 5 });
  };
  await admin.unsafe(`create database ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  let t: TestApp;
  try {
    t = await startTestApp({ databaseUrl: own.href });
  } catch (err) {
    await drop();
    throw err;
  }
  const closeApp = t.close;
  return {
    ...t,
    async close() {
      try {
        await closeApp();
      } finally {
        await drop();
      }
    },
  };
}
