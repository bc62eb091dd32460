import type { Sql } from '../connection/sql.js';

export interface OidcSettingsRow {
  collection: string;
  token: string;
  token_timeout: number;
  id_token_timeout: number;
  refresh_timeout: number;
  session_timeout: number;
}

export type OidcSettingsPatch = Partial<Omit<OidcSettingsRow, 'token'>>;

/** The writable columns; a patch may name no other, so no request text ever becomes an identifier. */
const WRITABLE = [
  'collection',
  'token_timeout',
  'id_token_timeout',
  'refresh_timeout',
  'session_timeout',
] as const;

export async function findOidcSettings(sql: Sql, workplace: string): Promise<OidcSettingsRow | undefined> {
  const [row] = await sql<OidcSettingsRow[]>`
    select s.collection, s.token, s.token_timeout, s.id_token_timeout, s.refresh_timeout, s.session_timeout
    from oidc_settings s join workplaces w on w.id = s.workplace_id
    where w.name = ${workplace}`;
  return row;
}

/** Applies the fields present in `patch`; undefined when the workplace does not exist. */
export async function updateOidcSettings(
  sql: Sql,
  workplace: string,
  patch: OidcSettingsPatch,
): Promise<OidcSettingsRow | undefined> {
  const columns = WRITABLE.filter((c) => patch[c] !== undefined);
  if (columns.length === 0) return findOidcSettings(sql, workplace);
  const [row] = await sql<OidcSettingsRow[]>`
    update oidc_settings s set ${sql(patch, columns)}, updated_at = now()
    from workplaces w
    where w.id = s.workplace_id and w.name = ${workplace}
    returning s.collection, s.token, s.token_timeout, s.id_token_timeout, s.refresh_timeout, s.session_timeout`;
  return row;
}

/** Replaces the workplace OIDC token; false when the workplace does not exist. */
export async function replaceOidcToken(sql: Sql, workplace: string, token: string): Promise<boolean> {
  const rows = await sql`
    update oidc_settings s set token = ${token}, updated_at = now()
    from workplaces w
    where w.id = s.workplace_id and w.name = ${workplace}
    returning 1`;
  return rows.length > 0;
}
