import type { Sql } from '../connection/sql.js';

export interface WorkplaceRow {
  id: string;
  name: string;
  created_at: Date;
}

/**
 * A workplace name as openapi.yaml's `Name` allows it. For the routes that check a name themselves
 * rather than through the spec's validation (the OIDC token scheme, the provider's own routes).
 */
export const WORKPLACE_NAME = /^[A-Za-z]{1,64}$/;

/** A catalog id, checked before it becomes part of an SQL identifier. */
export function catalogId(id: string): string {
  if (!/^[0-9]+$/.test(id)) throw new Error(`not a catalog id: ${id}`);
  return id;
}

/** The schema holding a workplace's collections; derived from the catalog id, never from request text. */
export function workplaceSchema(id: string): string {
  return `wp_${catalogId(id)}`;
}

export type CreateWorkplaceResult = { created: WorkplaceRow } | { conflictsWith: string };

/**
 * Creates the catalog row, the workplace schema and its OIDC settings in one transaction.
 * Concurrent creates of one name serialise on the unique index: exactly one wins.
 */
export function createWorkplace(sql: Sql, name: string, oidcToken: string): Promise<CreateWorkplaceResult> {
  return sql.begin(async (tx): Promise<CreateWorkplaceResult> => {
    const [row] = await tx<WorkplaceRow[]>`
      insert into workplaces (name) values (${name})
      on conflict do nothing
      returning id, name, created_at`;
    if (!row) {
      const [existing] = await tx<{ name: string }[]>`
        select name from workplaces where lower(name) = lower(${name})`;
      return { conflictsWith: existing?.name ?? name };
    }
    await tx`create schema ${tx(workplaceSchema(row.id))}`;
    await tx`insert into oidc_settings (workplace_id, token) values (${row.id}, ${oidcToken})`;
    return { created: row };
  });
}

export async function findWorkplace(sql: Sql, name: string): Promise<WorkplaceRow | undefined> {
  const [row] = await sql<WorkplaceRow[]>`select id, name, created_at from workplaces where name = ${name}`;
  return row;
}

/** Deletes the workplace with everything it owns (catalog rows cascade; the schema is dropped). */
export function deleteWorkplace(sql: Sql, name: string): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: string }[]>`delete from workplaces where name = ${name} returning id`;
    if (!row) return false;
    await tx`drop schema if exists ${tx(workplaceSchema(row.id))} cascade`;
    return true;
  });
}
