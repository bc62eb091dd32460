import { randomUUID } from 'node:crypto';
import {
  deleteConnector as deleteConnectorRow,
  insertConnector,
  listConnectors as listConnectorRows,
  MAX_CONNECTORS,
  replaceConnector,
  type WriteResult,
} from '../db/platform/connectors.js';
import { errors } from '../errors.js';
import { checkConnector, connectorBody } from './connector-rules.js';
import type { Caller, Handler, HandlerDeps } from './types.js';

/** Who `owner` defaults to: the identity behind the X-Auth-Token. */
function ownerOf(caller: Caller): string {
  return caller.kind === 'scoped' ? `token:${caller.tokenId}` : caller.kind;
}

function connectorOrThrow(result: WriteResult, workplace: string, id: string) {
  if ('connector' in result) return result.connector;
  switch (result.problem) {
    case 'no-workplace':
      throw errors.workplaceNotFound(workplace);
    case 'no-connector':
      throw errors.connectorNotFound(id);
    case 'too-many':
      throw errors.badRequest(`This workplace already has the maximum of ${MAX_CONNECTORS} connectors.`);
  }
}

export function connectorHandlers({ sql }: HandlerDeps) {
  const listConnectors: Handler<'listConnectors'> = async ({ params }) => {
    const items = await listConnectorRows(sql, params.name);
    if (!items) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { items } };
  };

  const createConnector: Handler<'createConnector'> = async ({ params, body, caller }) => {
    checkConnector(body, undefined);
    const id = randomUUID();
    const result = await insertConnector(sql, params.name, id, connectorBody(body, ownerOf(caller)));
    return { status: 201, body: { result: connectorOrThrow(result, params.name, id) } };
  };

  const updateConnector: Handler<'updateConnector'> = async ({ params, body }) => {
    checkConnector(body, params.id);
    const result = await replaceConnector(sql, params.name, params.id, (stored) =>
      connectorBody(body, stored.owner),
    );
    return { status: 200, body: { result: connectorOrThrow(result, params.name, params.id) } };
  };

  const deleteConnector: Handler<'deleteConnector'> = async ({ params }) => {
    const outcome = await deleteConnectorRow(sql, params.name, params.id);
    if (outcome === 'no-workplace') throw errors.workplaceNotFound(params.name);
    if (outcome === 'no-connector') throw errors.connectorNotFound(params.id);
    return { status: 204 };
  };

  return { listConnectors, createConnector, updateConnector, deleteConnector };
}
