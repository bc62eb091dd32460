import { randomBytes } from 'node:crypto';
import {
  type ClientRow,
  deleteClient as deleteClientRow,
  findClient,
  insertClient,
  listClients,
  MAX_CLIENTS,
  updateClient,
} from '../db/oidc-clients.js';
import { errors } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../secrets.js';
import { metadataForCreate, metadataForUpdate } from './client-metadata.js';
import type { Handler, HandlerDeps } from './types.js';

type Client = components['schemas']['Client'];

/** The client as the API shows it; `secret` only in the response that generated it. */
function present(row: ClientRow, secret?: string): Client {
  return {
    client_id: row.client_id,
    ...(secret !== undefined ? { client_secret: secret } : {}),
    client_id_issued_at: row.issued_at,
    ...row.metadata,
  };
}

/** 128 random bits, URL-safe: unguessable, so knowing one client's id tells nothing about another's. */
function newClientId(): string {
  return randomBytes(16).toString('base64url');
}

export function oidcClientHandlers({ sql }: HandlerDeps) {
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
      const secret = generateSecret(TOKEN_PREFIX.clientSecret);
      const outcome = await insertClient(sql, params.name, {
        clientId: newClientId(),
        secretHash: hashSecret(secret),
        metadata,
      });
      if ('problem' in outcome) {
        throw outcome.problem === 'too-many'
          ? errors.badRequest(`This workplace already has the maximum of ${MAX_CLIENTS} clients.`)
          : errors.unauthorized('The bearer token is not valid for this workplace.');
      }
      return { status: 201, body: { result: present(outcome.inserted, secret) } };
    }
    const secret = body.generate_token === true ? generateSecret(TOKEN_PREFIX.clientSecret) : undefined;
    const row = await updateClient(sql, params.name, clientId, (stored) => ({
      metadata: metadataForUpdate(stored, body),
      ...(secret !== undefined ? { secretHash: hashSecret(secret) } : {}),
    }));
    if (!row) throw errors.clientNotFound(clientId);
    return { status: 200, body: { result: present(row, secret) } };
  };

  const deleteClient: Handler<'deleteClient'> = async ({ params, query }) => {
    if (!(await deleteClientRow(sql, params.name, query.client_id)))
      throw errors.clientNotFound(query.client_id);
    return { status: 204 };
  };

  return { readClients, saveClient, deleteClient };
}
