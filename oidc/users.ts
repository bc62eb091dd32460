import type { Sql } from '../db/connection/sql.js';
import { type CollectionRef, findCollection } from '../db/storage/catalog.js';
import { readDocuments, updateDocuments } from '../db/storage/documents.js';
import { parseFilter } from '../mongo/filter/parse.js';
import type { Json, JsonObject } from '../mongo/value/json.js';

/**
 * The users of a workplace are documents in the collection its OIDC settings name. A user is
 * found by `email` or `username` (exact match); its `_id` (a string or a number) is the subject
 * (`sub`) of its tokens; `password` holds a hash written by oidc/passwords.ts.
 */

/** The subject of a user document, or undefined when its `_id` cannot be one. */
export function subjectOf(user: JsonObject): string | undefined {
  const id = user._id;
  if (typeof id === 'string' && id.length > 0 && id.length <= 255) return id;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  return undefined;
}

/** The users whose login is `login` (at most two: more than one is an ambiguity, never a sign-in). */
export async function findUsersByLogin(
  sql: Sql,
  workplace: string,
  collection: string,
  login: string,
): Promise<JsonObject[]> {
  const lookup = await findCollection(sql, workplace, collection);
  if (!lookup.workplace || !lookup.found) return [];
  return usersByLogin(sql, lookup.found, login);
}

/** At most two users whose `email` or `username` is `login`: two are an ambiguity, never a sign-in. */
function usersByLogin(sql: Sql, users: CollectionRef, login: string): Promise<JsonObject[]> {
  const filter = parseFilter({ $or: [{ email: login }, { username: login }] });
  return readDocuments(sql, users, { filter, sort: [], skip: 0, limit: 2 });
}

export async function findUserBySubject(
  sql: Sql,
  workplace: string,
  collection: string,
  subject: string,
): Promise<JsonObject | undefined> {
  const lookup = await findCollection(sql, workplace, collection);
  if (!lookup.workplace || !lookup.found) return undefined;
  const ids: Json[] = [subject];
  if (/^-?\d{1,15}$/.test(subject)) ids.push(Number(subject));
  const [user] = await readDocuments(sql, lookup.found, {
    filter: parseFilter({ _id: { $in: ids } }),
    sort: [],
    skip: 0,
    limit: 1,
  });
  return user;
}

export type SetPasswordOutcome = 'set' | 'no-workplace' | 'no-collection' | 'no-user' | 'ambiguous';

/** Stores `passwordHash` as the `password` of the one user whose login is `login`. */
export async function setUserPassword(
  sql: Sql,
  workplace: string,
  collection: string,
  login: string,
  passwordHash: string,
): Promise<SetPasswordOutcome> {
  const lookup = await findCollection(sql, workplace, collection);
  if (!lookup.workplace) return 'no-workplace';
  if (!lookup.found) return 'no-collection';
  const matches = await usersByLogin(sql, lookup.found, login);
  const [user] = matches;
  if (!user) return 'no-user';
  if (matches.length > 1) return 'ambiguous';
  await updateDocuments(sql, lookup.found, {
    filter: parseFilter({ _id: { $eq: user._id ?? null } }),
    apply: (doc) => ({ ...doc, password: passwordHash }),
    modified: () => true,
    maxMatches: 1,
  });
  return 'set';
}
