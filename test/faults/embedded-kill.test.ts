import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  api,
  cleanUpServers,
  type Server,
  startServer,
  TEST_TIMEOUT,
  unusedPath,
} from '../helpers/server-process.js';

/**
 * The server on the embedded database is killed with SIGKILL in the middle of a stream of writes.
 * Started again on the same directory, it must hold every write it acknowledged: each document
 * whose create was answered 201, and at least as many increments as were answered 200.
 */
afterAll(cleanUpServers);

describe('kill -9 of the server on the embedded database', () => {
  it('loses no acknowledged write', { timeout: TEST_TIMEOUT }, async () => {
    const dataDir = unusedPath();
    const token = randomBytes(32).toString('base64url');
    const start = () => startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: token });
    let server: Server = await start();
    const call = (s: Server, method: string, path: string, body?: unknown) =>
      api(s, method, path, { token, ...(body !== undefined ? { body } : {}) });
    const docs = '/v1/workplaces/crash/storages/c';
    expect((await call(server, 'POST', '/v1/workplaces', { name: 'crash' })).status).toBe(201);
    expect((await call(server, 'POST', '/v1/workplaces/crash/storages', { name: 'c' })).status).toBe(201);
    expect((await call(server, 'POST', `${docs}/create`, { docs: [{ _id: 'counter', n: 0 }] })).status).toBe(
      201,
    );

    const created: number[] = [];
    let increments = 0;
    let attempted = 0;
    let killed = false;
    // Four writers: creates of new documents and increments of one counter, until the kill.
    const writer = async (w: number) => {
      for (let i = 0; !killed; i++) {
        const id = w * 1_000_000 + i;
        attempted++;
        try {
          if (i % 2 === 0) {
            const res = await call(server, 'POST', `${docs}/create`, { docs: [{ _id: id, w, i }] });
            if (res.status === 201) created.push(id);
          } else {
            const res = await call(server, 'POST', `${docs}/update`, {
              query: { _id: 'counter' },
              doc: { $inc: { n: 1 } },
            });
            if (res.status === 200) increments++;
          }
        } catch {
          // The connection died with the process: not acknowledged.
        }
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await expect.poll(() => created.length, { timeout: 30_000, interval: 20 }).toBeGreaterThanOrEqual(100);
    server.child.kill('SIGKILL');
    killed = true;
    expect(await server.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await Promise.all(writers);

    // Started again on the same directory: the dead process's lock is taken over.
    server = await start();
    const found = new Set<unknown>();
    for (let after: unknown = -1; ; ) {
      const res = await call(server, 'POST', `${docs}/read`, {
        query: { _id: { $gt: after, $type: 'number' } },
        limit: 1000,
      });
      expect(res.status, res.text).toBe(200);
      const page = (res.json as { result: { _id: number }[] }).result;
      for (const d of page) found.add(d._id);
      if (page.length < 1000) break;
      after = page[page.length - 1]?._id;
    }
    const missing = created.filter((id) => !found.has(id));
    expect(missing, `${missing.length} of ${created.length} acknowledged creates are missing`).toEqual([]);
    const counter = await call(server, 'POST', `${docs}/read`, { query: { _id: 'counter' } });
    const n = (counter.json as { result: { n: number }[] }).result[0]?.n ?? -1;
    expect(n).toBeGreaterThanOrEqual(increments);
    expect(n).toBeLessThanOrEqual(attempted);
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  });
});
