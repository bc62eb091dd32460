import { randomBytes } from 'node:crypto';
import {
  type ClientMetadata,
  type ClientRow,
  deleteClient as deleteClientRow,
  findClient,
  insertClient,
  listClients,
  MAX_CLIENTS,
  updateClient,
} from '../db/platform/oidc-clients.js';
import { errors } from '../errors.js';
import type { components } from '../generated/openapi.js';
import {
  grantTypesOf,
  isPublic,
  metadataForCreate,
  metadataForUpdate,
  secretChange,
} from '../oidc/client-metadata.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../secrets.js';
import type { Handler, HandlerDeps } from './types.js';

type Client = components['schemas']['Client'];

/** Response fields in the order of the interface's client table (jsonb keeps its own order). */
const METADATA_ORDER = [
  'client_secret_expires_at',
  'scope',
  'redirect_uris',
  'post_logout_redirect_uris',
  'client_name',
  'contacts',
  'logo_uri',
  'client_uri',
  'tos_uri',
  'policy_uri',
  'response_types',
  'grant_types',
  'application_type',
  'token_endpoint_auth_method',
] as const satisfies readonly (keyof ClientMetadata)[];

/** The client as the API shows it; `secret` only in the response that generated it. */
function present(row: ClientRow, secret?: string): Client {
  const client: Record<string, unknown> = { client_id: row.client_id };
  if (secret !== undefined) client.client_secret = secret;
  client.client_id_issued_at = row.issued_at;
  // A client stored before grant_types were registered shows the ones it has.
  const metadata = { ...row.metadata, grant_types: grantTypesOf(row.metadata) };
  for (const key of METADATA_ORDER) {
    if (metadata[key] !== undefined) client[key] = metadata[key];
  }
  return client as Client;
}

/** 128 random bits, URL-safe: unguessable, so knowing one client's id tells nothing about another's. */
function newClientId(): string {
  return randomBytes(16).toString('base64url');
}

export function oidcClientHandlers({ sql, grantsEnded, originsChanged }: HandlerDeps) {
  const readClients: Handler<'readClients'> = async ({ params, query }) => {
    if (query.client_id === undefined) {
      const rows = await listClients(sql, params.name);
      return { status: 200, body: { result: rows.map((r) => present(r)) } };
    }
    const row = await findClient(sql, params.name, query.client_id);
    if (!row) throw errors.clientNotFound(query.client_id);
    return { status: 200, body: { result: present(row) } };
  };

  const saveClient: Handler<'saveClient'> = async ({ params, query, body }) => {
    const { client_id: clientId } = query;
    if (clientId === undefined) {
      const metadata = metadataForCreate(body);
      const secret = isPublic(metadata) ? undefined : generateSecret(TOKEN_PREFIX.clientSecret);
      const outcome = await insertClient(sql, params.name, {
        clientId: newClientId(),
        secretHash: secret === undefined ? null : hashSecret(secret),
        metadata,
      });
      if ('problem' in outcome) {
        throw outcome.problem === 'too-many'
          ? errors.badRequest(`This workplace already has the maximum of ${MAX_CLIENTS} clients.`)
          : errors.unauthorized('The bearer token is not valid for this workplace.');
      }
      originsChanged?.(params.name);
      return { status: 201, body: { result: present(outcome.inserted, secret) } };
    }
    let secret: string | undefined;
    const row = await updateClient(sql, params.name, clientId, (stored) => {
      const metadata = metadataForUpdate(stored, body);
      const change = secretChange(stored, metadata, body);
      if (change === 'keep') return { metadata };
      if (change === 'drop') return { metadata, secretHash: null };
      secret = generateSecret(TOKEN_PREFIX.clientSecret);
      return { metadata, secretHash: hashSecret(secret) };
    });
    if (!row) throw errors.clientNotFound(clientId);
    originsChanged?.(params.name);
    return { status: 200, body: { result: present(row, secret) } };
  };

  const deleteClient: Handler<'deleteClient'> = async ({ params, query }) => {
    if (!(await deleteClientRow(sql, params.name, query.client_id)))
      throw errors.clientNotFound(query.client_id);
    // Its tokens stop at once on the data routes (oidc/access-tokens.ts).
    grantsEnded?.(params.name);
    originsChanged?.(params.name);
    return { status: 204 };
  };

  return { readClients, saveClient, deleteClient };
}
