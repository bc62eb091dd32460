import {
  createCollection as createCollectionRow,
  deleteCollection as deleteCollectionRow,
  listCollections as listCollectionRows,
} from '../db/storage/catalog.js';
import { errors } from '../errors.js';
import type { Handler, HandlerDeps } from './types.js';

export function collectionHandlers({ sql, catalog }: HandlerDeps) {
  const listCollections: Handler<'listCollections'> = async ({ params }) => {
    const names = await listCollectionRows(sql, params.name);
    if (!names) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: names.map((name) => ({ name })) } };
  };

  const createCollection: Handler<'createCollection'> = async ({ params, body }) => {
    const outcome = await createCollectionRow(sql, params.name, body.name);
    if ('noWorkplace' in outcome) throw errors.workplaceNotFound(params.name);
    if (!outcome.created) throw errors.collectionExists(body.name, outcome.conflictsWith);
    return { status: 201, body: { result: { name: body.name } } };
  };

  const deleteCollection: Handler<'deleteCollection'> = async ({ params }) => {
    const outcome = await deleteCollectionRow(sql, params.name, params.storage_name);
    if (!outcome.workplace) throw errors.workplaceNotFound(params.name);
    if (!outcome.found) throw errors.collectionNotFound(params.storage_name);
    catalog.forget(params.name);
    return { status: 204 };
  };

  return { listCollections, createCollection, deleteCollection };
}
