import { loadSpec, type SpecOperation } from '../../http/spec.js';
import type { TestApp } from './app.js';

/**
 * Requests that pass validation for every operation of the spec: path parameters filled in, the
 * spec's own example as the body, and whatever the example acts on created first.
 */

const spec = loadSpec();

/** The workplace's OIDC token, read straight from the database. */
export async function oidcTokenOf(t: TestApp, name: string): Promise<string> {
  const [row] = await t.sql<{ token: string }[]>`
    select s.token from oidc_settings s join workplaces w on w.id = s.workplace_id where w.name = ${name}`;
  if (!row) throw new Error(`no settings for ${name}`);
  return row.token;
}

const SAMPLE_PARAMS: Record<string, string> = {
  storage_name: 'users',
  index_name: 'byEmail',
  sub: 'ada',
  session_id: 'examplesession',
  grant_id: 'examplegrant',
};

/** Ids of things the example requests act on; made up unless createWhatTheExampleNeeds made them. */
export interface SampleIds {
  clientId: string;
  connectorId: string;
  tokenId: string;
}
const MADE_UP: SampleIds = {
  clientId: 'someclient',
  connectorId: 'abc',
  tokenId: '00000000-0000-4000-8000-000000000000',
};

/** A request that passes validation: path parameters filled in and the spec's own example as the body. */
export function exampleRequest(op: SpecOperation, name: string, ids: SampleIds = MADE_UP) {
  const url = op.path.replace(/\{(\w+)\}/g, (_m, p: string) =>
    p === 'name'
      ? name
      : p === 'id'
        ? ids.connectorId
        : p === 'token_id'
          ? ids.tokenId
          : (SAMPLE_PARAMS[p] ?? 'x'),
  );
  const operation = (spec.paths[op.path] as Record<string, Record<string, unknown>>)[
    op.method.toLowerCase()
  ] as {
    requestBody?: {
      content: Record<string, { examples?: Record<string, { value?: unknown; $ref?: string }> }>;
    };
  };
  const example = Object.values(operation.requestBody?.content['application/json']?.examples ?? {})[0];
  let body = example?.value;
  if (example?.$ref) {
    const key = example.$ref.split('/').pop() as string;
    body = (spec.components as unknown as { examples: Record<string, { value: unknown }> }).examples[key]
      ?.value;
  }
  const query = op.operationId === 'deleteClient' ? `?client_id=${ids.clientId}` : '';
  // The example names a workplace of its own; the request must name the one it runs in.
  if (op.operationId === 'createToken') body = { ...(body as object), workplaces: [name] };
  return {
    method: op.method as 'GET' | 'POST' | 'DELETE',
    url: url + query,
    ...(body !== undefined ? { body } : {}),
  };
}

/** A client registered in the workplace, for the operations that act on one. */
async function registerSampleClient(t: TestApp, name: string): Promise<string> {
  const res = await t.request({
    method: 'POST',
    url: `/oidc/${name}/oidc/registration`,
    token: null,
    headers: { authorizarion: `Bearer ${await oidcTokenOf(t, name)}` },
    body: { redirect_uris: ['https://app.example/cb'] },
  });
  if (res.status !== 201) throw new Error(`could not register the sample client: ${res.text}`);
  return res.body.result.client_id;
}

/** The example connector, created in the workplace, for the operations that act on one. */
async function createSampleConnector(t: TestApp, name: string): Promise<string> {
  const example = (spec.components as unknown as { examples: Record<string, { value: unknown }> }).examples
    .Connector?.value;
  const res = await t.request({ method: 'POST', url: `/v1/workplaces/${name}/connectors`, body: example });
  if (res.status !== 201) throw new Error(`could not create the sample connector: ${res.text}`);
  return res.body.result.id;
}

/** Whatever the operation's example request acts on: a client, a connector, a collection, an index. */
export async function createWhatTheExampleNeeds(
  t: TestApp,
  op: SpecOperation,
  name: string,
): Promise<SampleIds> {
  const ids = { ...MADE_UP };
  if (op.path.startsWith('/oidc/')) ids.clientId = await registerSampleClient(t, name);
  if (op.path.includes('/connectors/{id}')) ids.connectorId = await createSampleConnector(t, name);
  if (op.path.includes('{token_id}')) {
    const res = await t.request({
      method: 'POST',
      url: '/v1/tokens',
      body: { workplaces: [name], access: 'read' },
    });
    if (res.status !== 201) throw new Error(`could not create the sample token: ${res.text}`);
    ids.tokenId = res.body.result.id;
  }
  if (op.path.includes('{storage_name}')) await createSampleCollection(t, op, name);
  if (op.operationId === 'setUserPassword' || op.path.includes('{sub}')) {
    // The example's login, as a user of the default users collection.
    const storages = `/v1/workplaces/${name}/storages`;
    await t.request({ method: 'POST', url: storages, body: { name: 'users' } });
    const res = await t.request({
      method: 'POST',
      url: `${storages}/users/create`,
      body: { docs: [{ _id: 'ada', email: 'ada@acme.example', name: 'Ada' }] },
    });
    if (res.status !== 201) throw new Error(`could not create the sample user: ${res.text}`);
  }
  if (op.path.includes('{sub}')) await createSampleSession(t, name);
  return ids;
}

/**
 * A session of the sample user with the grant it made, as the provider stores them (a sign-in
 * needs a live server and a browser; the sessions test does that).
 */
async function createSampleSession(t: TestApp, name: string) {
  const now = Math.floor(Date.now() / 1000);
  const common = { accountId: SAMPLE_PARAMS.sub, iat: now, exp: now + 3600 };
  const rows = [
    [
      'Session',
      SAMPLE_PARAMS.session_id,
      { authorizations: { someclient: { grantId: SAMPLE_PARAMS.grant_id } } },
    ],
    ['Grant', SAMPLE_PARAMS.grant_id, { clientId: 'someclient', openid: { scope: 'openid' } }],
  ] as const;
  for (const [model, id, payload] of rows) {
    await t.sql`
      insert into oidc_payloads (workplace_id, model, id, payload, expires_at)
      select w.id, ${model}, ${id as string}, ${JSON.stringify({ ...common, ...payload, jti: id, kind: model })}::text::jsonb,
        now() + interval '1 hour'
      from workplaces w where w.name = ${name}`;
  }
}

/** The collection and index that SAMPLE_PARAMS name. */
async function createSampleCollection(t: TestApp, op: SpecOperation, name: string) {
  const storages = `/v1/workplaces/${name}/storages`;
  const res = await t.request({ method: 'POST', url: storages, body: { name: SAMPLE_PARAMS.storage_name } });
  if (res.status !== 201) throw new Error(`could not create the sample collection: ${res.text}`);
  if (op.path.includes('{index_name}')) {
    const ix = await t.request({
      method: 'POST',
      url: `${storages}/${SAMPLE_PARAMS.storage_name}/indexes`,
      body: { name: SAMPLE_PARAMS.index_name, key: ['email'] },
    });
    if (ix.status !== 201) throw new Error(`could not create the sample index: ${ix.text}`);
  }
}
