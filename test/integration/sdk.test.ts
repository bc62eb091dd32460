/**
 * The SDK (sdk/index.ts) against a live server, driven only through the SDK: every request goes
 * over HTTP through openapi-fetch, and every answer is checked against openapi.yaml on the way
 * back, so the SDK's types and the server's answers are held to the same contract. The README's
 * example is run as a user runs it (tsx, in its own process) and type-checked as a user compiles it,
 * so the documentation cannot drift from the SDK.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiError,
  type components,
  createEndUserClient,
  createOidcClient,
  createPlatformClient,
  OAuthError,
  type PlatformClient,
  ProblemError,
  unwrap,
} from '../../sdk/index.js';
import { randomName } from '../helpers/app.js';
import { createResponseChecker } from '../helpers/contract.js';
import { addUser, signInEndUser } from '../helpers/end-users.js';
import { type LiveServer, startLiveServer, tenantKit } from '../helpers/oidc-flow.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

let server: LiveServer;
const check = createResponseChecker();
/** Every request the SDK sends, as it went out. */
const sent: Request[] = [];

/** The global fetch, with each request recorded and each answer checked against the contract. */
async function checkedFetch(request: Request): Promise<Response> {
  sent.push(request.clone());
  const response = await fetch(request);
  const url = new URL(request.url);
  check(
    request.method,
    url.pathname + url.search,
    response.status,
    response.headers.get('content-type') ?? undefined,
    await response.clone().text(),
  );
  return response;
}

function admin(): PlatformClient {
  return createPlatformClient({ baseUrl: server.base, token: server.adminToken, fetch: checkedFetch });
}

/** The error `promise` rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected an error, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

beforeAll(async () => {
  server = await startLiveServer();
});
afterAll(async () => {
  await server?.close();
});

describe('the SDK for end users (an access token, under the rules)', () => {
  it('runs document operations with the token, answers 403 where the rules refuse, and takes a new token', async () => {
    const kit = tenantKit(server);
    const t = await kit.newTenant();
    await addUser(kit, t, 'u1');
    await kit.api('POST', `/v1/workplaces/${t.workplace}/storages`, { name: 'notes' });
    const own = { $expr: { $eq: ['$owner', '$$AUTH.sub'] } };
    await kit.api('PUT', `/v1/workplaces/${t.workplace}/storages/notes/rules`, {
      read: own,
      create: {},
      fields: { presets: { owner: '$$AUTH.sub' } },
    });
    await kit.api('POST', `/v1/workplaces/${t.workplace}/storages/notes/create`, { docs: [{ owner: 'u2' }] });
    const user = await signInEndUser(t, 'u1@acme.example');
    const client = createEndUserClient({
      baseUrl: server.base,
      workplace: t.workplace,
      accessToken: 'not-yet-a-token',
      fetch: checkedFetch,
    });
    const refused = await rejection(client.run('read', 'notes', {}));
    expect(refused).toBeInstanceOf(ProblemError);
    expect((refused as ProblemError).status).toBe(401);
    client.setAccessToken(user.accessToken);
    const created = await client.run('create', 'notes', { docs: [{ text: 'mine' }] });
    expect(created.result.insertedCount).toBe(1);
    const read = await client.run('read', 'notes', { query: {} });
    expect(read.result).toEqual([{ _id: created.result.insertedIds[0], text: 'mine', owner: 'u1' }]);
    expect((await client.run('count', 'notes', { query: {} })).result.count).toBe(1);
    const forbidden = await rejection(client.run('delete', 'notes', { query: {} }));
    expect((forbidden as ProblemError).code).toBe('FORBIDDEN');
  });
});

describe('the SDK on /v1 (X-Auth-Token)', () => {
  it('creates a workplace and a collection, and runs documents CRUD with the MongoDB grammar', async () => {
    sent.length = 0;
    const api = admin();
    const name = randomName();
    const created = await unwrap(api.POST('/v1/workplaces', { body: { name } }));
    expect(created.result.name).toBe(name);
    expect((await unwrap(api.GET('/v1/workplaces/{name}', { params: { path: { name } } }))).result.name).toBe(
      name,
    );
    await unwrap(
      api.POST('/v1/workplaces/{name}/storages', { params: { path: { name } }, body: { name: 'inventory' } }),
    );
    const inventory = { path: { name, storage_name: 'inventory' } };

    // The manual's inventory collection (db.collection.find, "Query on Embedded/Nested Documents").
    const inserted = await unwrap(
      api.POST('/v1/workplaces/{name}/storages/{storage_name}/create', {
        params: inventory,
        body: {
          docs: [
            { _id: 'journal', qty: 25, size: { h: 14, w: 21, uom: 'cm' }, status: 'A' },
            { _id: 'notebook', qty: 50, size: { h: 8.5, w: 11, uom: 'in' }, status: 'A' },
            { _id: 'paper', qty: 100, size: { h: 8.5, w: 11, uom: 'in' }, status: 'D' },
            { _id: 'planner', qty: 75, size: { h: 22.85, w: 30, uom: 'cm' }, status: 'D' },
            { _id: 'postcard', qty: 45, size: { h: 10, w: 15.25, uom: 'cm' }, status: 'A' },
          ],
        },
      }),
    );
    expect(inserted.result.insertedIds).toEqual(['journal', 'notebook', 'paper', 'planner', 'postcard']);

    const read = async (body: components['schemas']['ReadRequest']) =>
      (
        await unwrap(
          api.POST('/v1/workplaces/{name}/storages/{storage_name}/read', {
            params: inventory,
            body: { ...body, fields: { _id: 1 } },
          }),
        )
      ).result.map((d) => d._id);
    expect(await read({ query: { 'size.uom': 'in' } })).toEqual(['notebook', 'paper']);
    expect(await read({ query: { 'size.h': { $lt: 15 }, status: 'A' } })).toEqual([
      'journal',
      'notebook',
      'postcard',
    ]);
    expect(
      await read({ query: { $or: [{ status: 'A' }, { qty: { $lt: 30 } }] }, sort: { qty: -1 } }),
    ).toEqual(['notebook', 'postcard', 'journal']);

    const updated = await unwrap(
      api.POST('/v1/workplaces/{name}/storages/{storage_name}/update', {
        params: inventory,
        body: {
          query: { qty: { $lt: 50 } },
          doc: { $set: { 'size.uom': 'in', status: 'P' }, $inc: { qty: 5 } },
        },
      }),
    );
    expect(updated.result).toEqual({ matchedCount: 2, modifiedCount: 2 });
    const one = await unwrap(
      api.POST('/v1/workplaces/{name}/storages/{storage_name}/read', {
        params: inventory,
        body: { query: { _id: 'journal' } },
      }),
    );
    expect(one.result).toEqual([{ _id: 'journal', qty: 30, size: { h: 14, w: 21, uom: 'in' }, status: 'P' }]);

    const counted = await unwrap(
      api.POST('/v1/workplaces/{name}/storages/{storage_name}/count', {
        params: inventory,
        body: { query: { status: { $in: ['A', 'P'] } } },
      }),
    );
    expect(counted.result).toEqual({ count: 3 });

    const deleted = await unwrap(
      api.POST('/v1/workplaces/{name}/storages/{storage_name}/delete', {
        params: inventory,
        body: { query: { status: 'D' } },
      }),
    );
    expect(deleted.result.deletedCount).toBe(2);
    expect(await read({ query: {} })).toEqual(['journal', 'notebook', 'postcard']);

    // A 204 unwraps to undefined.
    expect(
      await unwrap(api.DELETE('/v1/workplaces/{name}/storages/{storage_name}', { params: inventory })),
    ).toBeUndefined();
    expect(sent.every((r) => r.headers.get('x-auth-token') === server.adminToken)).toBe(true);
  });

  it('throws problems as ProblemError with status, code, detail and errors[]', async () => {
    const api = admin();
    const name = await unwrap(api.POST('/v1/workplaces', { body: { name: randomName() } })).then(
      (r) => r.result.name,
    );
    await unwrap(
      api.POST('/v1/workplaces/{name}/storages', { params: { path: { name } }, body: { name: 'c' } }),
    );
    const c = { path: { name, storage_name: 'c' } };

    const invalid = await rejection(
      unwrap(
        api.POST('/v1/workplaces/{name}/storages/{storage_name}/read', {
          params: c,
          body: { query: { qty: { $foo: 1 } } },
        }),
      ),
    );
    expect(invalid).toBeInstanceOf(ProblemError);
    expect(invalid).toBeInstanceOf(ApiError);
    expect(invalid).toMatchObject({ status: 400, code: 'INVALID_QUERY', errors: [] });
    expect((invalid as ProblemError).detail).toContain('$foo');
    expect((invalid as ProblemError).message).toContain('INVALID_QUERY');

    // A body the schema rejects lists every broken rule.
    const validation = await rejection(
      unwrap(
        api.POST('/v1/workplaces/{name}/storages/{storage_name}/read', {
          params: c,
          // @ts-expect-error: a string limit does not compile; sent anyway, the server names it
          body: { query: {}, limit: 'ten' },
        }),
      ),
    );
    expect(validation).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
    expect((validation as ProblemError).errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ in: 'body', path: '/limit' })]),
    );

    await unwrap(
      api.POST('/v1/workplaces/{name}/storages/{storage_name}/create', {
        params: c,
        body: { docs: [{ _id: 1 }] },
      }),
    );
    const duplicate = await rejection(
      unwrap(
        api.POST('/v1/workplaces/{name}/storages/{storage_name}/create', {
          params: c,
          body: { docs: [{ _id: 1 }] },
        }),
      ),
    );
    expect(duplicate).toMatchObject({ status: 409, code: 'DUPLICATE_KEY' });

    const missing = await rejection(
      unwrap(api.GET('/v1/workplaces/{name}', { params: { path: { name: randomName('missing') } } })),
    );
    expect(missing).toMatchObject({ status: 404, code: 'WORKPLACE_NOT_FOUND' });

    const stranger = createPlatformClient({
      baseUrl: server.base,
      token: 'wpt_not-a-token',
      fetch: checkedFetch,
    });
    const unauthorized = await rejection(
      unwrap(stranger.GET('/v1/workplaces/{name}', { params: { path: { name } } })),
    );
    expect(unauthorized).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });
});

describe('the SDK on /oidc (the workplace OIDC token)', () => {
  it('registers, reads, updates and deletes a client with the workplace token in Authorizarion', async () => {
    const api = admin();
    const name = randomName();
    await unwrap(api.POST('/v1/workplaces', { body: { name } }));
    const settings = await unwrap(api.GET('/v1/workplaces/{name}/oidc', { params: { path: { name } } }));
    sent.length = 0;
    const oidc = createOidcClient({
      baseUrl: server.base,
      workplaceToken: settings.result.token,
      fetch: checkedFetch,
    });
    const path = { name };

    const registered = await unwrap(
      oidc.POST('/oidc/{name}/oidc/registration', {
        params: { path },
        body: { client_name: 'Acme portal', redirect_uris: ['https://portal.acme.example/callback'] },
      }),
    );
    const clientId = registered.result.client_id;
    expect(registered.result.client_secret).toEqual(expect.any(String));
    expect(registered.result.redirect_uris).toEqual(['https://portal.acme.example/callback']);

    const listed = await unwrap(oidc.GET('/oidc/{name}/registration', { params: { path } }));
    expect(Array.isArray(listed.result) ? listed.result.map((c) => c.client_id) : listed.result).toEqual([
      clientId,
    ]);

    const renamed = await unwrap(
      oidc.POST('/oidc/{name}/oidc/registration', {
        params: { path, query: { client_id: clientId } },
        body: { client_name: 'Acme intranet' },
      }),
    );
    expect(renamed.result).toMatchObject({ client_id: clientId, client_name: 'Acme intranet' });
    expect(renamed.result).not.toHaveProperty('client_secret');

    expect(
      await unwrap(
        oidc.DELETE('/oidc/{name}/registration', { params: { path, query: { client_id: clientId } } }),
      ),
    ).toBeUndefined();

    // The token went in the interface's header, with the Bearer scheme, and nowhere else.
    expect(sent.length).toBe(4);
    for (const request of sent) {
      expect(request.headers.get('authorizarion')).toBe(`Bearer ${settings.result.token}`);
      expect(request.headers.get('authorization')).toBeNull();
      expect(request.headers.get('x-auth-token')).toBeNull();
    }
  });

  it('throws OAuth errors as OAuthError with status, error and description', async () => {
    const api = admin();
    const name = randomName();
    await unwrap(api.POST('/v1/workplaces', { body: { name } }));
    const settings = await unwrap(api.GET('/v1/workplaces/{name}/oidc', { params: { path: { name } } }));
    const oidc = createOidcClient({
      baseUrl: server.base,
      workplaceToken: settings.result.token,
      fetch: checkedFetch,
    });

    const badUri = await rejection(
      unwrap(
        oidc.POST('/oidc/{name}/oidc/registration', {
          params: { path: { name } },
          body: { redirect_uris: ['not a uri'] },
        }),
      ),
    );
    expect(badUri).toBeInstanceOf(OAuthError);
    expect(badUri).toMatchObject({ status: 400, error: 'invalid_redirect_uri' });
    expect((badUri as OAuthError).description).toEqual(expect.stringContaining('redirect_uris'));

    const unknown = await rejection(
      unwrap(
        oidc.GET('/oidc/{name}/registration', { params: { path: { name }, query: { client_id: 'nope' } } }),
      ),
    );
    expect(unknown).toMatchObject({ status: 404, error: 'invalid_client_id' });

    // The admin token is not a workplace token: /oidc answers 401 invalid_token.
    const wrong = createOidcClient({
      baseUrl: server.base,
      workplaceToken: server.adminToken,
      fetch: checkedFetch,
    });
    const unauthorized = await rejection(
      unwrap(wrong.GET('/oidc/{name}/registration', { params: { path: { name } } })),
    );
    expect(unauthorized).toMatchObject({ status: 401, error: 'invalid_token' });
  });
});

describe('sdk/README.md', () => {
  /** The fenced block after the `<!-- sdk-example -->` marker, importing the SDK by its path in the repository. */
  async function readmeExample(): Promise<string> {
    const readme = await readFile(join(ROOT, 'sdk/README.md'), 'utf8');
    const match = /<!-- sdk-example -->\n```ts\n([\s\S]*?)\n```/.exec(readme);
    if (!match?.[1]) throw new Error('sdk/README.md has no ```ts block after <!-- sdk-example -->');
    const importSdk = "from './sdk/index.js';";
    expect(match[1]).toContain(importSdk);
    return match[1].replace(importSdk, `from '${join(ROOT, 'sdk/index.js')}';`);
  }

  it('runs the example as a user would, and it prints what its comments say', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-example-'));
    try {
      // .mts: an ES module wherever it lands, so its top-level awaits compile and run.
      const file = join(dir, 'example.mts');
      await writeFile(file, await readmeExample());
      const { stdout } = await run(join(ROOT, 'node_modules/.bin/tsx'), [file], {
        cwd: ROOT,
        env: {
          ...process.env,
          PLATFORM_URL: server.base,
          ADMIN_TOKEN: server.adminToken,
          WORKPLACE: randomName(),
        },
      });
      const lines = stdout.trim().split('\n');
      expect(lines.slice(0, 4)).toEqual([
        'modified 1',
        '[{"_id":"o2","qty":50},{"_id":"o1","qty":15}]',
        '400 INVALID_QUERY',
        expect.stringMatching(/^client \S+ secret shown once: true$/),
      ]);
      expect(lines).toHaveLength(4);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('type-checks the example under tsc --strict', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sdk-example-'));
    try {
      const file = join(dir, 'example.mts');
      await writeFile(file, await readmeExample());
      await run(
        join(ROOT, 'node_modules/.bin/tsc'),
        [
          '--noEmit',
          '--strict',
          '--target',
          'ES2023',
          '--module',
          'NodeNext',
          '--moduleResolution',
          'NodeNext',
          '--skipLibCheck',
          '--types',
          'node',
          '--typeRoots',
          join(ROOT, 'node_modules/@types'),
          file,
        ],
        { cwd: ROOT },
      ).catch((error: { stdout?: string }) => {
        throw new Error(`the README's example does not compile:\n${error.stdout ?? String(error)}`);
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
