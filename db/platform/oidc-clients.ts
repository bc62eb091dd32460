import type { components } from '../../generated/openapi.js';
import type { Sql } from '../connection/sql.js';

/** A client's metadata as stored: the API's client without its identity and secret. */
export type ClientMetadata = Omit<
  components['schemas']['Client'],
  'client_id' | 'client_secret' | 'client_id_issued_at'
>;

export interface ClientRow {
  client_id: string;
  metadata: ClientMetadata;
  /** Unix seconds. */
  issued_at: number;
}

/** Clients per workplace, so that a list answer stays bounded. */
export const MAX_CLIENTS = 1000;

const COLUMNS = 'c.client_id, c.metadata, floor(extract(epoch from c.issued_at))::bigint as issued_at';

function toRow(r: { client_id: string; metadata: ClientMetadata; issued_at: string | number }): ClientRow {
  return { client_id: r.client_id, metadata: r.metadata, issued_at: Number(r.issued_at) };
}

export async function listClients(sql: Sql, workplace: string): Promise<ClientRow[]> {
  const rows = await sql.unsafe(
    `select ${COLUMNS} from oidc_clients c join workplaces w on w.id = c.workplace_id
     where w.name = $1 order by c.issued_at, c.client_id limit ${MAX_CLIENTS}`,
    [workplace],
  );
  return rows.map((r) => toRow(r as never));
}

export async function findClient(
  sql: Sql,
  workplace: string,
  clientId: string,
): Promise<ClientRow | undefined> {
  const [row] = await sql.unsafe(
    `select ${COLUMNS} from oidc_clients c join workplaces w on w.id = c.workplace_id
     where w.name = $1 and c.client_id = $2`,
    [workplace, clientId],
  );
  return row ? toRow(row as never) : undefined;
}

export type InsertClientResult = { inserted: ClientRow } | { problem: 'no-workplace' | 'too-many' };

/**
 * Registers a client. The workplace row is locked for the count, so concurrent registrations
 * cannot together pass MAX_CLIENTS.
 */
export function insertClient(
  sql: Sql,
  workplace: string,
  client: { clientId: string; secretHash: Buffer | null; metadata: ClientMetadata },
): Promise<InsertClientResult> {
  return sql.begin(async (tx): Promise<InsertClientResult> => {
    const [w] = await tx<
      { id: string }[]
    >`select id from workplaces where name = ${workplace} for no key update`;
    if (!w) return { problem: 'no-workplace' };
    const [count] = await tx<{ n: number }[]>`
      select count(*)::int as n from oidc_clients where workplace_id = ${w.id}`;
    if ((count?.n ?? 0) >= MAX_CLIENTS) return { problem: 'too-many' };
    const [row] = await tx.unsafe(
      `insert into oidc_clients as c (client_id, workplace_id, secret_hash, metadata)
       values ($1, $2, $3, $4::text::jsonb)
       returning ${COLUMNS}`,
      [client.clientId, w.id, client.secretHash, JSON.stringify(client.metadata)],
    );
    return { inserted: toRow(row as never) };
  });
}

/**
 * Read-modify-write of one client under a row lock: `change` gets the stored metadata and returns
 * the new metadata (and a new secret hash to rotate it, or null to drop it as the client becomes
 * public). A throw from `change` rolls back.
 * Undefined when the workplace has no such client.
 */
export function updateClient(
  sql: Sql,
  workplace: string,
  clientId: string,
  change: (stored: ClientMetadata) => { metadata: ClientMetadata; secretHash?: Buffer | null },
): Promise<ClientRow | undefined> {
  return sql.begin(async (tx) => {
    const [current] = await tx.unsafe(
      `select ${COLUMNS} from oidc_clients c join workplaces w on w.id = c.workplace_id
       where w.name = $1 and c.client_id = $2
       for update of c`,
      [workplace, clientId],
    );
    if (!current) return undefined;
    const next = change(toRow(current as never).metadata);
    const [row] = await tx.unsafe(
      `update oidc_clients as c
       set metadata = $2::text::jsonb,
           secret_hash = case when $4::boolean then $3::bytea else c.secret_hash end,
           updated_at = now()
       where c.client_id = $1
       returning ${COLUMNS}`,
      [clientId, JSON.stringify(next.metadata), next.secretHash ?? null, next.secretHash !== undefined],
    );
    return toRow(row as never);
  });
}

export async function deleteClient(sql: Sql, workplace: string, clientId: string): Promise<boolean> {
  const rows = await sql`
    delete from oidc_clients c using workplaces w
    where w.id = c.workplace_id and w.name = ${workplace} and c.client_id = ${clientId}
    returning 1`;
  return rows.length > 0;
}

/**
 * A client as the OpenID Provider needs it: with the hash of its secret (never the secret), null
 * for a public client.
 */
export async function findClientForProvider(
  sql: Sql,
  workplaceId: string,
  clientId: string,
): Promise<(ClientRow & { secretHash: Buffer | null }) | undefined> {
  const [row] = await sql.unsafe(
    `select ${COLUMNS}, c.secret_hash from oidc_clients c where c.workplace_id = $1 and c.client_id = $2`,
    [workplaceId, clientId],
  );
  if (!row) return undefined;
  return {
    ...toRow(row as never),
    secretHash: (row as unknown as { secret_hash: Buffer | null }).secret_hash,
  };
}
