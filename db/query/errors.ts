/**
 * The one error the pure query modules throw: the request's query, sort, fields or update document
 * is malformed or unsupported. The HTTP layer renders it as a 400 with code INVALID_QUERY; the
 * message must name the operator and the path, as MongoDB's own messages do.
 */
export class QueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QueryError';
  }
}

/** JSON values as they arrive in request bodies and leave the database. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
