import type { Sql } from './sql.js';

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
