import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LiveServer, startLiveServer, type Tenant, tenantKit } from '../helpers/oidc-flow.js';

/**
 * CORS on the document routes (issue 45): the origins of the workplace's clients' redirect URIs
 * and its `allowed_origins`, and no other; nothing on the other /v1 routes.
 */

let server: LiveServer;
let kit: ReturnType<typeof tenantKit>;
let t: Tenant;
const CLIENT_ORIGIN = 'http://127.0.0.1:9'; // REDIRECT's origin (newTenant's client)
const LISTED = 'https://app.acme.example';

beforeAll(async () => {
  server = await startLiveServer();
  kit = tenantKit(server);
  t = await kit.newTenant();
});
afterAll(async () => {
  await server?.close();
});

function preflight(path: string, origin: string) {
  return fetch(`${server.base}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
    },
  });
}

const read = () => `/v1/workplaces/${t.workplace}/storages/notes/read`;

it('a preflight from a client’s origin is allowed, authorization named among the headers', async () => {
  const res = await preflight(read(), CLIENT_ORIGIN);
  expect(res.status).toBe(204);
  expect(res.headers.get('access-control-allow-origin')).toBe(CLIENT_ORIGIN);
  expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
  expect(res.headers.get('access-control-allow-methods')).toBe('POST');
  expect(res.headers.get('vary')).toMatch(/origin/i);
  // The actual request carries the header too, whatever its status.
  const actual = await fetch(`${server.base}${read()}`, {
    method: 'POST',
    headers: { origin: CLIENT_ORIGIN, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(actual.status).toBe(401);
  expect(actual.headers.get('access-control-allow-origin')).toBe(CLIENT_ORIGIN);
});

it('allowed_origins adds origins; anything else, and the administration routes, get no CORS', async () => {
  expect((await preflight(read(), LISTED)).headers.get('access-control-allow-origin')).toBeNull();
  const set = await kit.api('POST', `/v1/workplaces/${t.workplace}/oidc`, { allowed_origins: [LISTED] });
  expect(set.status, set.text).toBe(200);
  expect(set.body.result.allowed_origins).toEqual([LISTED]);
  expect((await preflight(read(), LISTED)).headers.get('access-control-allow-origin')).toBe(LISTED);
  for (const [path, origin] of [
    [read(), 'https://evil.example'],
    [read(), `${LISTED}:8443`],
    [`/v1/workplaces/${t.workplace}/storages/notes/rules`, LISTED],
    [`/v1/workplaces/${t.workplace}`, LISTED],
    [`/v1/workplaces/${t.workplace}x/storages/notes/read`, LISTED],
  ] as const) {
    expect(
      (await preflight(path, origin)).headers.get('access-control-allow-origin'),
      `${path} ${origin}`,
    ).toBeNull();
  }
});

it.each([
  'https://app.acme.example/',
  'HTTPS://APP.acme.example',
  'https://app.acme.example:443',
  'app.acme.example',
])('refuses %s as an allowed origin (not as browsers send Origin)', async (origin) => {
  const res = await kit.api('POST', `/v1/workplaces/${t.workplace}/oidc`, { allowed_origins: [origin] });
  expect(res.status, res.text).toBe(400);
});
