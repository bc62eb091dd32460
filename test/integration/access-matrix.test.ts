import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSpec, type SpecOperation, specOperations } from '../../http/spec.js';
import { randomName, startTestApp, type TestApp } from '../helpers/app.js';
import { createWhatTheExampleNeeds, exampleRequest } from '../helpers/examples.js';

/**
 * Every /v1 operation against every kind of X-Auth-Token. The access each operation needs is
 * written here by hand, not read from the spec: the test checks that the two agree, so an
 * operation added to openapi.yaml without a line here fails.
 */
const ACCESS: Record<string, 'read' | 'write' | 'admin'> = {
  createWorkplace: 'admin',
  getWorkplace: 'read',
  deleteWorkplace: 'admin',
  createToken: 'admin',
  listTokens: 'admin',
  revokeToken: 'admin',
  // The settings hold the workplace OIDC token, a credential: reading them needs read_write.
  getOidcSettings: 'write',
  updateOidcSettings: 'write',
  generateOidcToken: 'write',
  setUserPassword: 'write',
  rotateSigningKeys: 'write',
  // Who signed in where is the business of those who set the passwords and end the sessions.
  listUserSessions: 'write',
  endUserSessions: 'write',
  endUserSession: 'write',
  revokeUserGrant: 'write',
  listCollections: 'read',
  createCollection: 'write',
  deleteCollection: 'write',
  listIndexes: 'read',
  createIndex: 'write',
  deleteIndex: 'write',
  // As index management: what the collection's end users may do.
  getCollectionRules: 'read',
  replaceCollectionRules: 'write',
  testCollectionRules: 'write',
  readDocuments: 'read',
  countDocuments: 'read',
  distinctValues: 'read',
  aggregateDocuments: 'read',
  createDocuments: 'write',
  updateDocuments: 'write',
  deleteDocuments: 'write',
  updateOneDocument: 'write',
  replaceOneDocument: 'write',
  deleteOneDocument: 'write',
  findOneAndUpdate: 'write',
  findOneAndReplace: 'write',
  findOneAndDelete: 'write',
  listConnectors: 'read',
  createConnector: 'write',
  updateConnector: 'write',
  deleteConnector: 'write',
};

type CallerKind =
  | 'no token'
  | 'malformed token'
  | 'revoked token'
  | 'expired token'
  | 'token scoped to another workplace'
  | 'read-only token'
  | 'scoped read-write token'
  | 'admin token';

const CALLERS: CallerKind[] = [
  'no token',
  'malformed token',
  'revoked token',
  'expired token',
  'token scoped to another workplace',
  'read-only token',
  'scoped read-write token',
  'admin token',
];

/** The documented answer for each cell ('2xx' = the operation's success). */
function expected(caller: CallerKind, access: 'read' | 'write' | 'admin', op: SpecOperation): number | '2xx' {
  switch (caller) {
    case 'no token':
    case 'malformed token':
    case 'revoked token':
    case 'expired token':
      return 401;
    case 'token scoped to another workplace':
      // Out of scope looks like absent; an admin operation on no workplace is just forbidden.
      return op.path.includes('{name}') ? 404 : 403;
    case 'read-only token':
      return access === 'read' ? '2xx' : 403;
    case 'scoped read-write token':
      return access === 'admin' ? 403 : '2xx';
    case 'admin token':
      return '2xx';
  }
}

const spec = loadSpec();
const v1 = specOperations(spec).filter((op) => op.path.startsWith('/v1/'));

let t: TestApp;
let elsewhere: string;
beforeAll(async () => {
  t = await startTestApp();
  elsewhere = await t.createWorkplace();
});
afterAll(async () => {
  await t?.close();
});

async function issue(body: Record<string, unknown>): Promise<{ id: string; token: string }> {
  const res = await t.request({ method: 'POST', url: '/v1/tokens', body });
  if (res.status !== 201) throw new Error(`could not issue a token: ${res.text}`);
  return res.body.result;
}

/** The X-Auth-Token value a caller of this kind sends, for an operation on `workplace`. */
async function tokenFor(caller: CallerKind, workplace: string): Promise<string | null> {
  switch (caller) {
    case 'no token':
      return null;
    case 'malformed token':
      return 'wpt_definitely not a token';
    case 'revoked token': {
      const { id, token } = await issue({ workplaces: [workplace], access: 'read_write' });
      expect((await t.request({ method: 'DELETE', url: `/v1/tokens/${id}` })).status).toBe(204);
      return token;
    }
    case 'expired token': {
      const { id, token } = await issue({
        workplaces: [workplace],
        access: 'read_write',
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      });
      await t.sql`update api_tokens set expires_at = now() - interval '1 second' where id = ${id}`;
      return token;
    }
    case 'token scoped to another workplace':
      return (await issue({ workplaces: [elsewhere], access: 'read_write' })).token;
    case 'read-only token':
      return (await issue({ workplaces: [workplace], access: 'read' })).token;
    case 'scoped read-write token':
      return (await issue({ workplaces: [workplace], access: 'read_write' })).token;
    case 'admin token':
      return t.adminToken;
  }
}

describe('the access table', () => {
  it('names every /v1 operation of openapi.yaml, and no other', () => {
    expect(Object.keys(ACCESS).sort()).toEqual(v1.map((op) => op.operationId).sort());
  });

  it('agrees with the x-access each operation declares', () => {
    for (const op of v1) expect(op.access, op.operationId).toBe(ACCESS[op.operationId]);
  });
});

describe('every /v1 operation against every kind of token', () => {
  const cells = v1.flatMap((op) => CALLERS.map((caller) => [op.operationId, caller, op] as const));

  it.each(cells)('%s with a %s', async (operationId, caller, op) => {
    const access = ACCESS[operationId] ?? 'admin';
    const workplace = await t.createWorkplace();
    const ids = await createWhatTheExampleNeeds(t, op, workplace);
    const request = exampleRequest(op, workplace, ids);
    const token = await tokenFor(caller, workplace);
    const res = await t.request({
      ...request,
      ...(operationId === 'createWorkplace' ? { body: { name: randomName() } } : {}),
      token,
    });
    const want = expected(caller, access, op);
    if (want === '2xx') {
      expect(res.status, res.text).toBeGreaterThanOrEqual(200);
      expect(res.status, res.text).toBeLessThan(300);
      return;
    }
    expect(res.status, res.text).toBe(want);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const code = { 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'WORKPLACE_NOT_FOUND' }[want];
    expect(res.body.code).toBe(code);
  });
});
