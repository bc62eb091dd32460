import type { components } from '../../generated/openapi.js';
import type { Sql, TransactionSql } from '../connection/sql.js';

export type Connector = components['schemas']['Connector'];
/** What is stored: the connector without its id, top-level fields in the interface's order. */
export type ConnectorBody = Omit<Connector, 'id'>;

/** Connectors per workplace, so that the unpaged list stays bounded. */
export const MAX_CONNECTORS = 1000;

type Row = { id: string; body: ConnectorBody };
const toConnector = (r: Row): Connector => ({ id: r.id, ...r.body });

/** Undefined when the workplace does not exist. */
export async function listConnectors(sql: Sql, workplace: string): Promise<Connector[] | undefined> {
  const rows = await sql<(Row | { id: null; body: null })[]>`
    select c.id, c.body
    from workplaces w left join connectors c on c.workplace_id = w.id
    where w.name = ${workplace}
    order by c.created_at, c.id
    limit ${MAX_CONNECTORS}`;
  if (rows.length === 0) return undefined;
  return rows.filter((r): r is Row => r.id !== null).map(toConnector);
}

export type WriteResult =
  | { connector: Connector }
  | { problem: 'no-workplace' | 'no-connector' | 'too-many' };

/** The workplace row, locked so that concurrent creates cannot together pass MAX_CONNECTORS. */
async function lockWorkplace(tx: TransactionSql, workplace: string): Promise<string | undefined> {
  const [w] = await tx<
    { id: string }[]
  >`select id from workplaces where name = ${workplace} for no key update`;
  return w?.id;
}

export function insertConnector(
  sql: Sql,
  workplace: string,
  id: string,
  body: ConnectorBody,
): Promise<WriteResult> {
  return sql.begin(async (tx): Promise<WriteResult> => {
    const workplaceId = await lockWorkplace(tx, workplace);
    if (workplaceId === undefined) return { problem: 'no-workplace' };
    const [count] = await tx<{ n: number }[]>`
      select count(*)::int as n from connectors where workplace_id = ${workplaceId}`;
    if ((count?.n ?? 0) >= MAX_CONNECTORS) return { problem: 'too-many' };
    const [row] = await tx<Row[]>`
      insert into connectors (id, workplace_id, body)
      values (${id}, ${workplaceId}, ${JSON.stringify(body)}::text::json)
      returning id, body`;
    return { connector: toConnector(row as Row) };
  });
}

/**
 * Replaces a connector under a row lock: `replace` gets the stored body and returns the new one
 * (it may throw, which rolls back).
 */
export function replaceConnector(
  sql: Sql,
  workplace: string,
  id: string,
  replace: (stored: ConnectorBody) => ConnectorBody,
): Promise<WriteResult> {
  return sql.begin(async (tx): Promise<WriteResult> => {
    const [w] = await tx<{ id: string }[]>`select id from workplaces where name = ${workplace}`;
    if (!w) return { problem: 'no-workplace' };
    const [current] = await tx<Row[]>`
      select id, body from connectors where workplace_id = ${w.id} and id = ${id} for update`;
    if (!current) return { problem: 'no-connector' };
    const body = replace(current.body);
    const [row] = await tx<Row[]>`
      update connectors set body = ${JSON.stringify(body)}::text::json, updated_at = now()
      where id = ${id}
      returning id, body`;
    return { connector: toConnector(row as Row) };
  });
}

export async function deleteConnector(
  sql: Sql,
  workplace: string,
  id: string,
): Promise<'deleted' | 'no-workplace' | 'no-connector'> {
  const [row] = await sql<{ deleted: boolean }[]>`
    with gone as (
      delete from connectors c using workplaces w
      where w.id = c.workplace_id and w.name = ${workplace} and c.id = ${id}
      returning 1
    )
    select exists (select from gone) as deleted from workplaces where name = ${workplace}`;
  if (!row) return 'no-workplace';
  return row.deleted ? 'deleted' : 'no-connector';
}
