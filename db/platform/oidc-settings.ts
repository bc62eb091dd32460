import type { Sql } from '../connection/sql.js';

export interface OidcSettingsRow {
  collection: string;
  token: string;
  token_timeout: number;
  id_token_timeout: number;
  refresh_timeout: number;
  session_timeout: number;
  allowed_origins: string[];
}

export type OidcSettingsPatch = Partial<Omit<OidcSettingsRow, 'token'>>;

/** The writable columns; a patch may name no other, so no request text ever becomes an identifier. */
const WRITABLE = [
  'collection',
  'token_timeout',
  'id_token_timeout',
  'refresh_timeout',
  'session_timeout',
  'allowed_origins',
] as const;

export async function findOidcSettings(sql: Sql, workplace: string): Promise<OidcSettingsRow | undefined> {
  const [row] = await sql<OidcSettingsRow[]>`
    select s.collection, s.token, s.token_timeout, s.id_token_timeout, s.refresh_timeout, s.session_timeout,
      s.allowed_origins
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
    returning s.collection, s.token, s.token_timeout, s.id_token_timeout, s.refresh_timeout, s.session_timeout,
      s.allowed_origins`;
  return row;
}

/** The origins whose pages may call the workplace's document routes (http/cors.ts); undefined without it. */
export async function findCorsOrigins(sql: Sql, workplace: string): Promise<string[] | undefined> {
  const [row] = await sql<{ allowed: string[]; redirects: string[] }[]>`
    select s.allowed_origins as allowed,
      array(select jsonb_array_elements_text(c.metadata -> 'redirect_uris')
            from oidc_clients c where c.workplace_id = w.id) as redirects
    from workplaces w join oidc_settings s on s.workplace_id = w.id
    where w.name = ${workplace}`;
  if (!row) return undefined;
  const origins = new Set(row.allowed);
  for (const uri of row.redirects) {
    const origin = URL.parse(uri)?.origin;
    if (origin && origin !== 'null') origins.add(origin);
  }
  return [...origins];
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
