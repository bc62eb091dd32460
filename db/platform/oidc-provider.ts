import type { Sql, TransactionSql } from '../connection/sql.js';

/** What a workplace's provider is built from and configured with, read on every provider request. */
export interface ProviderState {
  workplaceId: string;
  collection: string;
  tokenTimeout: number;
  idTokenTimeout: number;
  refreshTimeout: number;
  sessionTimeout: number;
  cookieSecret: string | null;
  /** The id of the newest key; a change means the JWKS changed and the provider is rebuilt. */
  keysVersion: string | null;
}

export async function findProviderState(sql: Sql, workplace: string): Promise<ProviderState | undefined> {
  const [row] = await sql<ProviderState[]>`
    select w.id as "workplaceId", s.collection, s.token_timeout as "tokenTimeout",
      s.id_token_timeout as "idTokenTimeout", s.refresh_timeout as "refreshTimeout",
      s.session_timeout as "sessionTimeout", s.cookie_secret as "cookieSecret",
      (select max(k.id)::text from oidc_keys k where k.workplace_id = w.id) as "keysVersion"
    from workplaces w join oidc_settings s on s.workplace_id = w.id
    where w.name = ${workplace}`;
  return row;
}

/** Sets the cookie secret once; concurrent first requests agree on whichever landed first. */
export async function ensureCookieSecret(sql: Sql, workplaceId: string, candidate: string): Promise<string> {
  const [row] = await sql<{ cookie_secret: string }[]>`
    update oidc_settings set cookie_secret = coalesce(cookie_secret, ${candidate})
    where workplace_id = ${workplaceId}
    returning cookie_secret`;
  return row?.cookie_secret ?? candidate;
}

export interface KeyRow {
  id: string;
  kid: string;
  private_jwk: Record<string, unknown>;
  retired_at: Date | null;
}

/** Keys still published: the live ones and those retired less than `keepSeconds` ago; newest first. */
export function publishedKeys(sql: Sql, workplaceId: string, keepSeconds: number): Promise<KeyRow[]> {
  return sql<KeyRow[]>`
    select k.id::text as id, k.kid, k.private_jwk, k.retired_at from oidc_keys k
    where k.workplace_id = ${workplaceId}
      and (k.retired_at is null or k.retired_at > (select now() - make_interval(secs => ${keepSeconds})))
    order by k.id desc`;
}

/** Adds a key; with `retireOthers`, every older key is retired (rotation). */
export function addKey(
  sql: Sql,
  workplaceId: string,
  key: { kid: string; privateJwk: object },
  retireOthers: boolean,
): Promise<void> {
  return sql.begin(async (tx) => {
    if (retireOthers) {
      await tx`update oidc_keys set retired_at = now() where workplace_id = ${workplaceId} and retired_at is null`;
    }
    await tx`
      insert into oidc_keys (workplace_id, kid, private_jwk)
      values (${workplaceId}, ${key.kid}, ${JSON.stringify(key.privateJwk)}::text::jsonb)`;
  });
}

// The provider's storage (oidc-provider's adapter contract), scoped to one workplace.

export async function upsertPayload(
  sql: Sql,
  workplaceId: string,
  model: string,
  id: string,
  payload: Record<string, unknown>,
  expiresInSeconds: number | undefined,
): Promise<void> {
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  await sql`
    insert into oidc_payloads (workplace_id, model, id, payload, grant_id, uid, user_code, expires_at)
    values (${workplaceId}, ${model}, ${id}, ${JSON.stringify(payload)}::text::jsonb,
      ${str(payload.grantId)}, ${str(payload.uid)}, ${str(payload.userCode)},
      case when ${expiresInSeconds ?? null}::int is null then null
           else now() + make_interval(secs => ${expiresInSeconds ?? 0}) end)
    on conflict (workplace_id, model, id) do update set
      payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
      user_code = excluded.user_code, expires_at = excluded.expires_at`;
}

type Where = { column: 'id' | 'uid' | 'user_code'; value: string };

export async function findPayload(
  sql: Sql,
  workplaceId: string,
  model: string,
  where: Where,
): Promise<Record<string, unknown> | undefined> {
  const [row] = await sql<{ payload: Record<string, unknown>; consumed_at: Date | null }[]>`
    select payload, consumed_at from oidc_payloads
    where workplace_id = ${workplaceId} and model = ${model} and ${sql(where.column)} = ${where.value}
      and (expires_at is null or expires_at > now())
    limit 1`;
  if (!row) return undefined;
  return row.consumed_at
    ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) }
    : row.payload;
}

export async function consumePayload(
  sql: Sql,
  workplaceId: string,
  model: string,
  id: string,
): Promise<void> {
  await sql`
    update oidc_payloads set consumed_at = now()
    where workplace_id = ${workplaceId} and model = ${model} and id = ${id}`;
}

export async function destroyPayload(
  sql: Sql,
  workplaceId: string,
  model: string,
  id: string,
): Promise<void> {
  await sql`delete from oidc_payloads where workplace_id = ${workplaceId} and model = ${model} and id = ${id}`;
}

export async function revokeGrant(
  sql: Sql | TransactionSql,
  workplaceId: string,
  grantId: string,
): Promise<void> {
  await sql`delete from oidc_payloads where workplace_id = ${workplaceId} and grant_id = ${grantId}`;
}

/** Drops expired rows; called now and then, so the table does not grow without bound. */
export async function purgeExpiredPayloads(sql: Sql): Promise<void> {
  await sql`delete from oidc_payloads where expires_at < now() - interval '1 minute'`;
}

export interface PublicKeyRow {
  kid: string;
  created_at: Date;
  retired_at: Date | null;
}

/** The published keys without their private parts, newest first. */
export function publishedKeyList(
  sql: Sql,
  workplaceId: string,
  keepSeconds: number,
): Promise<PublicKeyRow[]> {
  return sql<PublicKeyRow[]>`
    select kid, created_at, retired_at from oidc_keys
    where workplace_id = ${workplaceId}
      and (retired_at is null or retired_at > (select now() - make_interval(secs => ${keepSeconds})))
    order by id desc`;
}

/** What verifying a workplace's access tokens needs: its keys (public parts) and its users collection. */
export interface TokenVerification {
  workplaceId: string;
  /** The OIDC settings' users collection, where `$$USER` is read. */
  collection: string;
  /** The published keys' public JWKs, newest first. */
  keys: Record<string, unknown>[];
}

const PRIVATE_JWK_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth']);

/** The public part of a stored private JWK: what verifies what it signed. */
export function publicJwk(jwk: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(jwk).filter(([k]) => !PRIVATE_JWK_MEMBERS.has(k)));
}

export async function findTokenVerification(
  sql: Sql,
  workplace: string,
  keepSeconds: number,
): Promise<TokenVerification | undefined> {
  const rows = await sql<
    { workplace_id: string; collection: string; private_jwk: Record<string, unknown> | null }[]
  >`
    select w.id::text as workplace_id, s.collection, k.private_jwk
    from workplaces w join oidc_settings s on s.workplace_id = w.id
      left join oidc_keys k on k.workplace_id = w.id
        and (k.retired_at is null or k.retired_at > now() - make_interval(secs => ${keepSeconds}))
    where w.name = ${workplace}
    order by k.id desc`;
  const first = rows[0];
  if (!first) return undefined;
  const keys = rows.flatMap((r) => (r.private_jwk ? [publicJwk(r.private_jwk)] : []));
  return { workplaceId: first.workplace_id, collection: first.collection, keys };
}

/**
 * Whether an access token's grant still holds: its client is registered, and (for a user's token)
 * the grant it was issued under is live. A grant ends when it is revoked, when a sign-out ends it,
 * or when it expires; oidc-provider deletes its row then (and db/platform/oidc-sessions.ts does
 * for the administration routes).
 */
export async function grantIsLive(
  sql: Sql,
  workplaceId: string,
  clientId: string,
  grantId: string | undefined,
): Promise<boolean> {
  const [row] = await sql<{ live: boolean }[]>`
    select exists (select 1 from oidc_clients where workplace_id = ${workplaceId} and client_id = ${clientId})
      and (${grantId ?? null}::text is null or exists (
        select 1 from oidc_payloads where workplace_id = ${workplaceId} and model = 'Grant'
          and id = ${grantId ?? null}::text and (expires_at is null or expires_at > now()))) as live`;
  return row?.live === true;
}
