// SIGTERM under load, as a rolling deploy sends it: every response that starts is finished.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { randomName } from '../helpers/app.js';
import { api, cleanUpServers, startServer, TEST_TIMEOUT, tempDir } from '../helpers/server-process.js';

afterAll(cleanUpServers);

const CLIENTS = 8;
const DOCS = 300;

describe('SIGTERM while requests stream in', () => {
  it(
    'cuts no response mid-body: each one started is whole, the others are refused or closed, and the server exits 0',
    async () => {
      const token = randomBytes(32).toString('base64url');
      const database: Record<string, string> = process.env.DATABASE_URL
        ? { DATABASE_URL: process.env.DATABASE_URL }
        : { DATA_DIR: tempDir() };
      const server = await startServer({ ...database, ADMIN_TOKEN: token });
      const w = randomName();
      const base = `/v1/workplaces/${w}/storages`;
      expect((await api(server, 'POST', '/v1/workplaces', { token, body: { name: w } })).status).toBe(201);
      expect((await api(server, 'POST', base, { token, body: { name: 'c' } })).status).toBe(201);
      // Responses of some size, so that SIGTERM finds bodies being written.
      const docs = Array.from({ length: DOCS }, (_, i) => ({ i, text: 'x'.repeat(1000) }));
      expect((await api(server, 'POST', `${base}/c/create`, { token, body: { docs } })).status).toBe(201);

      const whole: number[] = [];
      const refused: string[] = [];
      const cut: string[] = [];
      let signalled = false;
      let afterSignal = 0;
      const client = async () => {
        // Until the server is gone: each request on the client's kept-alive connection.
        for (;;) {
          let res: Response;
          try {
            res = await fetch(`${server.url}${base}/c/read`, {
              method: 'POST',
              headers: { 'x-auth-token': token, 'content-type': 'application/json' },
              body: JSON.stringify({ limit: DOCS }),
            });
          } catch (err) {
            // No response began: a closed or refused connection, which a client retries elsewhere.
            refused.push(String((err as Error).cause ?? err));
            if (signalled) return;
            continue;
          }
          if (signalled) afterSignal++;
          try {
            const text = await res.text();
            if (res.status === 200) {
              expect(JSON.parse(text).result).toHaveLength(DOCS);
              whole.push(200);
            } else {
              // The server closing answers 503, whole.
              expect(res.status, text).toBe(503);
              JSON.parse(text);
              whole.push(res.status);
            }
          } catch (err) {
            cut.push(`${res.status}: ${String((err as Error).cause ?? err)}`);
            return;
          }
        }
      };
      const clients = Array.from({ length: CLIENTS }, client);
      // Load first, then the signal in the middle of it.
      while (whole.length < 4 * CLIENTS) await new Promise((r) => setTimeout(r, 20));
      signalled = true;
      const exit = await server.stop('SIGTERM');
      await Promise.all(clients);

      expect(cut, cut.join('\n')).toEqual([]);
      expect(
        exit,
        server
          .stdout()
          .split('\n')
          .filter((l) => !l.includes(`"msg":"request"`))
          .slice(-8)
          .join('\n'),
      ).toEqual({ code: 0, signal: null });
      expect(whole.length).toBeGreaterThan(4 * CLIENTS);
      // The signal met requests in flight: some were answered after it.
      expect(afterSignal + refused.length).toBeGreaterThan(0);
    },
    TEST_TIMEOUT,
  );
});
