import type { JsonObject } from '../mongo/value/json.js';

/**
 * The claims a user document releases, each only when it has the type OpenID Connect Core
 * (section 5.1) or RFC 9068 (section 2.2.3.1, `roles` and `groups`) gives it: a relying party
 * decodes claims by those types, so a member of another type is left out rather than passed on
 * for the client to trip over. Pure: no I/O.
 */

const BOOLEAN_CLAIMS = new Set(['email_verified', 'phone_number_verified']);
const NUMBER_CLAIMS = new Set(['updated_at']);
const OBJECT_CLAIMS = new Set(['address']);
/** Lists of names: released only when every member is a string, never a partial list. */
export const LIST_CLAIMS = ['roles', 'groups'] as const;
const LIST_CLAIM_SET = new Set<string>(LIST_CLAIMS);

function hasClaimType(name: string, value: unknown): boolean {
  if (BOOLEAN_CLAIMS.has(name)) return typeof value === 'boolean';
  if (NUMBER_CLAIMS.has(name)) return typeof value === 'number' && Number.isFinite(value);
  if (OBJECT_CLAIMS.has(name)) return typeof value === 'object' && value !== null && !Array.isArray(value);
  if (LIST_CLAIM_SET.has(name)) return Array.isArray(value) && value.every((v) => typeof v === 'string');
  return typeof value === 'string';
}

/** The members named in `names` that the user document carries with their claim type, and `sub`. */
export function userClaims(user: JsonObject, sub: string, names: Iterable<string>): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub };
  for (const name of names) {
    if (name === 'sub' || !Object.hasOwn(user, name)) continue;
    const value = user[name];
    if (hasClaimType(name, value)) claims[name] = value;
  }
  return claims;
}

/**
 * The claim that ties a user's access token to the grant it was issued under (extraTokenClaims in
 * provider.ts), so that the data routes stop the token when the grant ends (access-tokens.ts).
 */
export const GRANT_CLAIM = 'grant_id';

/** Whether a JWT's `typ` header names an RFC 9068 access token (`at+jwt`, `application/` optional). */
export function isAccessTokenType(typ: unknown): boolean {
  return typeof typ === 'string' && typ.toLowerCase().replace(/^application\//, '') === 'at+jwt';
}
