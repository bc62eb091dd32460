// QueryError is defined in errors.ts, which everyone may import, so that mapping it to INVALID_QUERY
// needs no import of the compiler there; the compiler's modules keep importing it from here.
export { QueryError } from '../../errors.js';

/** JSON values as they arrive in request bodies and leave the database. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
/** A document's `_id`: prepareDocument refuses an array there. */
export type DocumentId = Exclude<Json, Json[]>;

export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
