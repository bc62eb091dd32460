import {
  createWorkplace,
  deleteWorkplace,
  findWorkplace,
  type WorkplaceRow,
} from '../db/platform/workplaces.js';
import { errors } from '../errors.js';
import { generateSecret, TOKEN_PREFIX } from '../secrets.js';
import type { Handler, HandlerDeps } from './types.js';

function present(row: WorkplaceRow) {
  return { name: row.name, created_at: row.created_at.toISOString() };
}

export function workplaceHandlers({ sql, workplaceDeleted }: HandlerDeps) {
  const createWorkplaceHandler: Handler<'createWorkplace'> = async ({ body }) => {
    const outcome = await createWorkplace(sql, body.name, generateSecret(TOKEN_PREFIX.oidc));
    if ('conflictsWith' in outcome) throw errors.workplaceExists(body.name, outcome.conflictsWith);
    return { status: 201, body: { result: present(outcome.created) } };
  };

  const getWorkplaceHandler: Handler<'getWorkplace'> = async ({ params }) => {
    const row = await findWorkplace(sql, params.name);
    if (!row) throw errors.workplaceNotFound(params.name);
    return { status: 200, body: { result: present(row) } };
  };

  const deleteWorkplaceHandler: Handler<'deleteWorkplace'> = async ({ params }) => {
    if (!(await deleteWorkplace(sql, params.name))) throw errors.workplaceNotFound(params.name);
    workplaceDeleted?.(params.name);
    return { status: 204 };
  };

  return {
    createWorkplace: createWorkplaceHandler,
    getWorkplace: getWorkplaceHandler,
    deleteWorkplace: deleteWorkplaceHandler,
  };
}
