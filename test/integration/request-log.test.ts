import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../app.js';
import { migrate } from '../../db/connection/migrate.js';
import { RequestLogger } from '../../http/request-logger.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../../secrets.js';
import { openTestDatabase, randomName } from '../helpers/app.js';

/** A pino logger whose lines are collected, parsed. */
function collectingLogger(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe('request log', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let app: FastifyInstance;
  const { logger, lines } = collectingLogger();
  const adminToken = generateSecret(TOKEN_PREFIX.admin);

  beforeAll(async () => {
    db = await openTestDatabase();
    await migrate(db.sql);
    app = await buildApp({ sql: db.sql, adminTokenHash: hashSecret(adminToken), logger });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it.each([
    ['an error', 'GET', '/v1/no-such-thing?secret=1', undefined, 404, '/v1/no-such-thing'],
    ['a success', 'GET', '/healthz?secret=2', adminToken, 200, '/healthz'],
    ['a refusal', 'DELETE', '/v1/workplaces/acme?secret=3', 'wrong', 401, '/v1/workplaces/acme'],
  ])('writes one line per request: %s', async (_name, method, url, token, status, path) => {
    lines.length = 0;
    const res = await app.inject({
      method: method as 'GET' | 'DELETE',
      url,
      headers: token ? { 'x-auth-token': token } : {},
    });
    expect(res.statusCode).toBe(status);
    await new Promise((resolve) => setImmediate(resolve));
    const written = lines.filter((l) => l.msg === 'request');
    expect(written).toEqual([
      expect.objectContaining({ level: 30, reqId: expect.any(String), method, url: path, status }),
    ]);
    // The query string (it may hold secrets) is never logged.
    expect(JSON.stringify(written)).not.toContain('secret');
    if (status >= 400) expect(written[0]?.reqId).toBe(res.json().request_id);
  });

  it("logs the OpenID Provider's requests with their full path", async () => {
    const workplace = randomName('log');
    const created = await app.inject({
      method: 'POST',
      url: '/v1/workplaces',
      headers: { 'x-auth-token': adminToken },
      payload: { name: workplace },
    });
    expect(created.statusCode).toBe(201);
    for (const [method, path, status] of [
      ['GET', `/oidc/${workplace}/.well-known/openid-configuration`, 200],
      ['POST', `/oidc/${workplace}/token`, 400],
      ['GET', `/oidc/${workplace}/jwks`, 200],
    ] as const) {
      lines.length = 0;
      const res = await app.inject({ method, url: `${path}?secret=4` });
      expect(res.statusCode, path).toBe(status);
      await new Promise((resolve) => setImmediate(resolve));
      expect(lines.filter((l) => l.msg === 'request')).toEqual([
        expect.objectContaining({ method, url: path, status }),
      ]);
    }
  });

  it.each([
    ['not trusted (the default)', undefined, '127.0.0.1'],
    ['trusted by address', ['127.0.0.1'], '203.0.113.7'],
    ['from another address than the trusted one', ['10.0.0.1'], '127.0.0.1'],
  ] as const)('logs the client address; a proxy %s', async (_label, trustProxy, ip) => {
    const { logger: own, lines: ownLines } = collectingLogger();
    const other = await buildApp({
      sql: db.sql,
      adminTokenHash: hashSecret(adminToken),
      logger: own,
      ...(trustProxy ? { trustProxy: [...trustProxy] } : {}),
    });
    try {
      await other.inject({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-for': '203.0.113.7' } });
      await new Promise((resolve) => setImmediate(resolve));
      expect(ownLines.filter((l) => l.msg === 'request')).toEqual([expect.objectContaining({ ip })]);
    } finally {
      await other.close();
    }
  });
});

describe('RequestLogger', () => {
  it('makes the child logger only when something logs through it, with the request id', () => {
    const { logger, lines } = collectingLogger('debug');
    const child = vi.spyOn(logger, 'child');
    const log = new RequestLogger(logger, { reqId: 'r1' }, {});
    expect(log.level).toBe('debug');
    expect(child).not.toHaveBeenCalled();

    log.debug({ a: 1 }, 'first');
    log.warn('second');
    log.child({ step: 'x' }).error('third');
    log.trace('not written at debug');
    expect(child).toHaveBeenCalledTimes(2); // the request's child once, then the explicit child
    expect(lines.map(({ msg, reqId, a, step, level }) => ({ msg, reqId, a, step, level }))).toEqual([
      { msg: 'first', reqId: 'r1', a: 1, step: undefined, level: 20 },
      { msg: 'second', reqId: 'r1', a: undefined, step: undefined, level: 40 },
      { msg: 'third', reqId: 'r1', a: undefined, step: 'x', level: 50 },
    ]);
  });

  it('takes the level its options give, and a level set on it', () => {
    const { logger, lines } = collectingLogger('info');
    const log = new RequestLogger(logger, { reqId: 'r2' }, { level: 'warn' });
    expect(log.level).toBe('warn');
    log.info('dropped');
    log.level = 'debug';
    log.debug('kept');
    expect(logger.level).toBe('info');
    expect(lines.map((l) => l.msg)).toEqual(['kept']);
  });
});
