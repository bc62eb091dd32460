import type { Sql } from '../db/connection/sql.js';
import { type CollectionRef, findCollection } from '../db/storage/catalog.js';
import { errors } from '../errors.js';

/** The collection named in the path, or the 404 that says which of workplace and collection is missing. */
export async function requireCollection(sql: Sql, workplace: string, name: string): Promise<CollectionRef> {
  const lookup = await findCollection(sql, workplace, name);
  if (!lookup.workplace) throw errors.workplaceNotFound(workplace);
  if (!lookup.found) throw errors.collectionNotFound(name);
  return lookup.found;
}
