/**
 * JSON values as they arrive in request bodies and leave the database, and as the compiler, the
 * update operators, projections and db/ handle them: own properties only, copies, `_id` first, and
 * how a value is named in an error message.
 */

/** JSON values as they arrive in request bodies and leave the database. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
/** A document's `_id`: prepareDocument refuses an array there. */
export type DocumentId = Exclude<Json, Json[]>;

export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own properties only: a field named '__proto__' or 'constructor' must not reach Object.prototype. */
export function getOwn(obj: JsonObject, key: string): Json | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** JSON.parse makes `__proto__` an ordinary key; plain assignment would set the prototype instead. */
export function setOwn<T extends Json>(obj: JsonObject, key: string, value: T): T {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
  return value;
}

export function cloneJson<T extends Json>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => cloneJson(v)) as T;
  if (!isPlainObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, cloneJson(v));
  return out as T;
}

/**
 * `_id` first, as MongoDB returns documents; JSONB does not keep key order. JavaScript enumerates
 * integer-like keys ("0", "42") before all others whatever the insertion order, so `_id` can only
 * lead the other keys; a document with such keys cannot start with `_id`.
 */
export function idFirst(doc: JsonObject): JsonObject {
  if (!('_id' in doc)) return doc;
  // Documents read from the database already lead with `_id` (db/connection/jsonb-id-first.ts reorders the
  // text before it is parsed): nothing is copied then.
  for (const key in doc) {
    if (key === '_id') return doc;
    break;
  }
  // Copied key by key: an object built by spreading is slower to copy and, having left V8's fast
  // property layout, takes longer to serialize.
  const out: JsonObject = { _id: doc._id as Json };
  const keys = Object.keys(doc);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key !== '_id') setOwn(out, key, doc[key] as Json);
  }
  return out;
}

/**
 * A value named for an error message by its kind ('an array', 'a number'). With `showStrings`, a
 * string is shown itself (cut short), where the message reads better with the text that was sent.
 */
export function describeValue(value: unknown, showStrings = false): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string')
    return showStrings
      ? `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
      : 'a string';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
