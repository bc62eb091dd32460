import { type CollectionRef, findCollection } from '../db/collections.js';
import type { Sql } from '../db/sql.js';
import { errors } from '../errors.js';

/** The collection named in the path, or the 404 that says which of workplace and collection is missing. */
export async function requireCollection(sql: Sql, workplace: string, name: string): Promise<CollectionRef> {
  const lookup = await findCollection(sql, workplace, name);
  if (!lookup.workplace) throw errors.workplaceNotFound(workplace);
  if (!lookup.found) throw errors.collectionNotFound(name);
  return lookup.found;
}
