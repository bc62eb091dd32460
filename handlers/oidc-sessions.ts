import type { Sql } from '../db/connection/sql.js';
import { findProviderState } from '../db/platform/oidc-provider.js';
import {
  authorizationsOf,
  decodeSessionCursor,
  encodeSessionCursor,
  endAllUserSessions,
  endUserSession as endSession,
  listSessionsAndGrants,
  revokeUserGrant as revokeGrant,
  type SessionOrGrantRow,
} from '../db/platform/oidc-sessions.js';
import { errors } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { findUserBySubject, subjectOf } from '../oidc/users.js';
import type { Handler, HandlerDeps } from './types.js';

type Item = components['schemas']['UserSession'] | components['schemas']['UserGrant'];

const DEFAULT_PAGE = 100;

/** The workplace's id, once the workplace and a user with that subject are known to exist. */
async function workplaceOfUser(sql: Sql, workplace: string, sub: string): Promise<string> {
  const state = await findProviderState(sql, workplace);
  if (!state) throw errors.workplaceNotFound(workplace);
  // As the provider's findAccount decides: a user whose own subject is `sub`.
  const user = await findUserBySubject(sql, workplace, state.collection, sub);
  if (!user || subjectOf(user) !== sub) throw errors.subjectNotFound(sub);
  return state.workplaceId;
}

const seconds = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const time = (epochSeconds: number) => new Date(epochSeconds * 1000).toISOString();

function toItem(row: SessionOrGrantRow): Item {
  const p = row.payload;
  const created_at = time(seconds(p.iat));
  const expires_at = row.expires_at?.toISOString() ?? time(seconds(p.exp));
  if (row.model === 'Session') {
    return {
      kind: 'session',
      id: row.id,
      created_at,
      expires_at,
      signed_in_at: typeof p.loginTs === 'number' ? time(p.loginTs) : null,
      clients: Object.entries(authorizationsOf(p)).map(([client_id, a]) => ({
        client_id,
        grant_id: a.grantId ?? null,
      })),
    };
  }
  const openid = p.openid as { scope?: unknown } | undefined;
  return {
    kind: 'grant',
    id: row.id,
    client_id: typeof p.clientId === 'string' ? p.clientId : '',
    scope: typeof openid?.scope === 'string' ? openid.scope : '',
    created_at,
    expires_at,
  };
}

export function oidcSessionHandlers({ sql, grantsEnded }: HandlerDeps) {
  const listUserSessions: Handler<'listUserSessions'> = async ({ params, query }) => {
    const after = query.cursor === undefined ? undefined : decodeSessionCursor(query.cursor);
    const workplaceId = await workplaceOfUser(sql, params.name, params.sub);
    const limit = query.limit === undefined ? DEFAULT_PAGE : Number(query.limit);
    // One row more than the page says whether another page follows.
    const rows = await listSessionsAndGrants(sql, workplaceId, params.sub, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      status: 200,
      body: {
        result: page.map(toItem),
        ...(rows.length > limit && last
          ? { next: encodeSessionCursor({ iat: last.iat, model: last.model, id: last.id }) }
          : {}),
      },
    };
  };

  const endUserSessions: Handler<'endUserSessions'> = async ({ params }) => {
    const workplaceId = await workplaceOfUser(sql, params.name, params.sub);
    await endAllUserSessions(sql, workplaceId, params.sub);
    grantsEnded?.(params.name);
    return { status: 204 };
  };

  const endUserSession: Handler<'endUserSession'> = async ({ params }) => {
    const workplaceId = await workplaceOfUser(sql, params.name, params.sub);
    if (!(await endSession(sql, workplaceId, params.sub, params.session_id)))
      throw errors.sessionNotFound(params.session_id);
    grantsEnded?.(params.name);
    return { status: 204 };
  };

  const revokeUserGrant: Handler<'revokeUserGrant'> = async ({ params }) => {
    const workplaceId = await workplaceOfUser(sql, params.name, params.sub);
    if (!(await revokeGrant(sql, workplaceId, params.sub, params.grant_id)))
      throw errors.grantNotFound(params.grant_id);
    grantsEnded?.(params.name);
    return { status: 204 };
  };

  return { listUserSessions, endUserSessions, endUserSession, revokeUserGrant };
}
