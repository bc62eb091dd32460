import type { Sql } from '../connection/sql.js';

/** The SHA-256 hash of the oldest live admin token, if one was ever generated. */
export async function findAdminTokenHash(sql: Sql): Promise<Buffer | undefined> {
  const [row] = await sql<{ secret_hash: Buffer }[]>`
    select secret_hash from api_tokens
    where kind = 'admin' and revoked_at is null
    order by created_at limit 1`;
  return row?.secret_hash;
}

export async function insertAdminToken(sql: Sql, prefix: string, hash: Buffer, label: string): Promise<void> {
  await sql`insert into api_tokens (kind, label, prefix, secret_hash) values ('admin', ${label}, ${prefix}, ${hash})`;
}

/** The workplace's OIDC token, or undefined when the workplace does not exist. */
export async function findOidcToken(sql: Sql, workplace: string): Promise<string | undefined> {
  const [row] = await sql<{ token: string }[]>`
    select s.token from oidc_settings s join workplaces w on w.id = s.workplace_id
    where w.name = ${workplace}`;
  return row?.token;
}

export type TokenAccess = 'read' | 'read_write';

/**
 * Who is calling: which token the request presented, established by the security hook
 * (http/security.ts) before validation. Here, below both, because the hook makes it and the
 * handlers read it.
 */
export type Caller =
  | { kind: 'admin' }
  | {
      kind: 'scoped';
      tokenId: string;
      /** The first characters of the secret: how the token is named to people. */
      prefix: string;
      access: TokenAccess;
      /** Names of the workplaces in scope. */
      workplaces: ReadonlySet<string>;
    }
  | { kind: 'oidc'; workplace: string }
  | ({ kind: 'user' } & EndUser)
  | { kind: 'anonymous' };

/**
 * The end user behind an access token the workplace's own OpenID Provider issued (RFC 9068), once
 * oidc/access-tokens.ts verified it: what the collections' rules read as `$$AUTH` and `$$USER`.
 */
export interface EndUser {
  workplace: string;
  /** `sub`: the user, or the client itself for a client_credentials token. */
  sub: string;
  clientId: string;
  /** Every verified claim of the token. */
  claims: Record<string, unknown>;
  /** The workplace's users collection, where `$$USER` is read (its OIDC settings). */
  usersCollection: string;
  /** Issued to the client itself (client_credentials): there is no user then. */
  isClient: boolean;
}

export interface ScopedTokenRow {
  id: string;
  prefix: string;
  label: string;
  access: TokenAccess;
  /** Names of the workplaces in scope that still exist. */
  workplaces: string[];
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const SCOPED_COLUMNS = `
  t.id, t.prefix, t.label, t.access, t.created_at, t.expires_at, t.last_used_at, t.revoked_at,
  coalesce(array_agg(w.name order by w.name) filter (where w.name is not null), '{}') as workplaces`;
const SCOPED_FROM = `
  from api_tokens t
  left join api_token_workplaces s on s.token_id = t.id
  left join workplaces w on w.id = s.workplace_id`;

export type CreateScopedTokenResult = { created: ScopedTokenRow } | { unknownWorkplaces: string[] };

/** Issues a scoped token for existing workplaces (by exact name), in one transaction. */
export function createScopedToken(
  sql: Sql,
  token: {
    prefix: string;
    secretHash: Buffer;
    label: string;
    access: TokenAccess;
    workplaces: string[];
    expiresAt: Date | null;
  },
): Promise<CreateScopedTokenResult> {
  return sql.begin(async (tx): Promise<CreateScopedTokenResult> => {
    // key share: the workplaces cannot be deleted before the scope rows referencing them land.
    const found = await tx<{ id: string; name: string }[]>`
      select id, name from workplaces where name = any(${token.workplaces}::text[]) for key share`;
    const unknown = token.workplaces.filter((n) => !found.some((w) => w.name === n));
    if (unknown.length > 0) return { unknownWorkplaces: unknown };
    const [row] = await tx<{ id: string }[]>`
      insert into api_tokens (kind, label, prefix, secret_hash, access, expires_at)
      values ('scoped', ${token.label}, ${token.prefix}, ${token.secretHash}, ${token.access}, ${token.expiresAt})
      returning id`;
    const id = (row as { id: string }).id;
    await tx`
      insert into api_token_workplaces (token_id, workplace_id)
      select ${id}, unnest(${found.map((w) => w.id)}::bigint[])`;
    const [created] = await tx.unsafe<ScopedTokenRow[]>(
      `select ${SCOPED_COLUMNS} ${SCOPED_FROM} where t.id = $1 group by t.id`,
      [id],
    );
    return { created: created as ScopedTokenRow };
  });
}

export const MAX_LISTED_TOKENS = 1000;

export function listScopedTokens(sql: Sql): Promise<ScopedTokenRow[]> {
  return sql.unsafe<ScopedTokenRow[]>(
    `select ${SCOPED_COLUMNS} ${SCOPED_FROM}
     where t.kind = 'scoped' group by t.id order by t.created_at desc, t.id limit ${MAX_LISTED_TOKENS}`,
  );
}

/** Sets revoked_at unless already set; false when there is no such scoped token. */
export async function revokeScopedToken(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`
    update api_tokens set revoked_at = coalesce(revoked_at, now())
    where id = ${id} and kind = 'scoped'
    returning 1`;
  return rows.length > 0;
}

/** The scoped token with this secret hash, live or not; the caller decides what revoked or expired means. */
export async function findScopedToken(
  sql: Sql,
  secretHash: Buffer,
): Promise<(ScopedTokenRow & { expired: boolean }) | undefined> {
  const [row] = await sql.unsafe<(ScopedTokenRow & { expired: boolean })[]>(
    `select ${SCOPED_COLUMNS}, coalesce(t.expires_at <= now(), false) as expired ${SCOPED_FROM}
     where t.secret_hash = $1 and t.kind = 'scoped' group by t.id`,
    [secretHash],
  );
  return row;
}

/**
 * Records use, at most once per `intervalSeconds` per token: the condition makes the write a
 * no-op when another request (or process) recorded it recently.
 */
export async function touchScopedToken(sql: Sql, id: string, intervalSeconds: number): Promise<void> {
  await sql`
    update api_tokens set last_used_at = now()
    where id = ${id}
      and (last_used_at is null or last_used_at < now() - make_interval(secs => ${intervalSeconds}))`;
}
