import { errors } from '../../errors.js';
import type { Sql, TransactionSql } from '../connection/sql.js';
import { revokeGrant } from './oidc-provider.js';

/**
 * A user's sessions and grants at a workplace's OpenID Provider, as the provider stores them in
 * oidc_payloads (db/platform/oidc-provider.ts): sessions and grants carry the `accountId` (the user's
 * subject), tokens and codes the `grantId` of their grant (and the `accountId` too). Ending and
 * revoking delete the rows: the provider reads every session, grant and token from the table on
 * each use, so what is deleted is refused from the next request on, in every process.
 */

export interface SessionOrGrantRow {
  model: 'Session' | 'Grant';
  id: string;
  payload: Record<string, unknown>;
  expires_at: Date | null;
  iat: string;
}

/** Where a page starts: right after the last item of the previous one, in the list's order. */
export interface SessionCursor {
  iat: string;
  model: string;
  id: string;
}

export function encodeSessionCursor(c: SessionCursor): string {
  return Buffer.from(JSON.stringify([c.iat, c.model, c.id])).toString('base64url');
}

/** The cursor a `next` encoded; anything else is a 400. */
export function decodeSessionCursor(text: string): SessionCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    typeof parsed[0] !== 'string' ||
    !/^\d{1,15}$/.test(parsed[0]) ||
    (parsed[1] !== 'Session' && parsed[1] !== 'Grant') ||
    typeof parsed[2] !== 'string'
  ) {
    throw errors.badRequest("'cursor' is not a 'next' this operation returned; send it unchanged.");
  }
  return { iat: parsed[0], model: parsed[1], id: parsed[2] };
}

/**
 * Up to `limit` of the user's live sessions and grants, newest first (ties in a fixed order), after
 * `after` when given.
 */
export function listSessionsAndGrants(
  sql: Sql,
  workplaceId: string,
  sub: string,
  limit: number,
  after: SessionCursor | undefined,
): Promise<SessionOrGrantRow[]> {
  return sql<SessionOrGrantRow[]>`
    select model, id, payload, expires_at, coalesce(payload ->> 'iat', '0')::bigint::text as iat
    from oidc_payloads
    where workplace_id = ${workplaceId} and (payload ->> 'accountId') = ${sub}
      and model in ('Session', 'Grant')
      and (expires_at is null or expires_at > now())
      ${
        after
          ? sql`and (coalesce(payload ->> 'iat', '0')::bigint, model, id)
                  < (${after.iat}::bigint, ${after.model}, ${after.id})`
          : sql``
      }
    order by coalesce(payload ->> 'iat', '0')::bigint desc, model desc, id desc
    limit ${limit}`;
}

async function findLive(
  tx: TransactionSql,
  workplaceId: string,
  model: 'Session' | 'Grant',
  id: string,
  sub: string,
): Promise<Record<string, unknown> | undefined> {
  const [row] = await tx<{ payload: Record<string, unknown> }[]>`
    select payload from oidc_payloads
    where workplace_id = ${workplaceId} and model = ${model} and id = ${id}
      and (payload ->> 'accountId') = ${sub} and (expires_at is null or expires_at > now())
    for update`;
  return row?.payload;
}

/** The grant with every token and code issued under it (the adapter's revokeByGrantId, then the grant). */
async function revokeGrantAndTokens(tx: TransactionSql, workplaceId: string, grantId: string): Promise<void> {
  await revokeGrant(tx, workplaceId, grantId);
  await tx`delete from oidc_payloads where workplace_id = ${workplaceId} and model = 'Grant' and id = ${grantId}`;
}

/** Revokes a grant with every token and code issued under it, whoever's it is (RFC 7009 revocation). */
export function revokeGrantWithTokens(sql: Sql, workplaceId: string, grantId: string): Promise<void> {
  return sql.begin((tx) => revokeGrantAndTokens(tx, workplaceId, grantId));
}

/** Revokes one of the user's grants; false when the user has no live grant of that id. */
export function revokeUserGrant(
  sql: Sql,
  workplaceId: string,
  sub: string,
  grantId: string,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (!(await findLive(tx, workplaceId, 'Grant', grantId, sub))) return false;
    await revokeGrantAndTokens(tx, workplaceId, grantId);
    return true;
  });
}

/**
 * Ends one of the user's sessions as oidc-provider's end-session endpoint does: the grants made in
 * it go too, unless they persist a sign-out (offline_access). False when there is no such session.
 */
export function endUserSession(
  sql: Sql,
  workplaceId: string,
  sub: string,
  sessionId: string,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    const session = await findLive(tx, workplaceId, 'Session', sessionId, sub);
    if (!session) return false;
    for (const a of Object.values(authorizationsOf(session))) {
      if (a.grantId && !a.persistsLogout) await revokeGrantAndTokens(tx, workplaceId, a.grantId);
    }
    await tx`delete from oidc_payloads where workplace_id = ${workplaceId} and model = 'Session' and id = ${sessionId}`;
    return true;
  });
}

/** Ends every session of the user and revokes every grant, token and code it holds. */
export async function endAllUserSessions(sql: Sql, workplaceId: string, sub: string): Promise<void> {
  await sql.begin(async (tx) => {
    const grants = await tx<{ id: string }[]>`
      select id from oidc_payloads
      where workplace_id = ${workplaceId} and (payload ->> 'accountId') = ${sub} and model = 'Grant'`;
    for (const g of grants) await revokeGrant(tx, workplaceId, g.id);
    // Sessions, grants, and every token or code that names the user (whatever its grant).
    await tx`delete from oidc_payloads where workplace_id = ${workplaceId} and (payload ->> 'accountId') = ${sub}`;
  });
}

export interface SessionAuthorization {
  grantId?: string;
  persistsLogout?: boolean;
}

/** A session payload's `authorizations`: per client id, the grant it holds and whether it outlives a sign-out. */
export function authorizationsOf(session: Record<string, unknown>): Record<string, SessionAuthorization> {
  const a = session.authorizations;
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return {};
  const out: Record<string, SessionAuthorization> = {};
  for (const [clientId, v] of Object.entries(a as Record<string, unknown>)) {
    if (typeof v !== 'object' || v === null) continue;
    const { grantId, persistsLogout } = v as Record<string, unknown>;
    out[clientId] = {
      ...(typeof grantId === 'string' ? { grantId } : {}),
      ...(persistsLogout === true ? { persistsLogout: true } : {}),
    };
  }
  return out;
}
