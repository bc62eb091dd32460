/** JSON values as the update operators see them: equality, BSON's order, messages. */
import { getOwn, isPlainObject, type Json, type JsonObject } from './json.js';

export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i] as Json));
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => {
    const other = getOwn(b, k);
    return other !== undefined && jsonEqual(a[k] as Json, other);
  });
}

/** BSON's order of types; within a type, values compare by content. */
export function typeRank(v: Json): number {
  if (v === null) return 1;
  switch (typeof v) {
    case 'number':
      return 2;
    case 'string':
      return 3;
    case 'boolean':
      return 6;
    default:
      return Array.isArray(v) ? 5 : 4;
  }
}

/**
 * MongoDB's total order of values: null < numbers < strings < objects < arrays < booleans. `keys`
 * gives the order in which a document's fields compare: as written, unless the caller says.
 */
export function bsonCompare(a: Json, b: Json, keys: (o: JsonObject) => string[] = Object.keys): number {
  const rank = typeRank(a) - typeRank(b);
  if (rank !== 0) return Math.sign(rank);
  if (typeof a === 'number') return Math.sign(a - (b as number));
  if (typeof a === 'string') return compareStrings(a, b as string);
  if (typeof a === 'boolean') return Number(a) - Number(b);
  if (Array.isArray(a)) return compareArrays(a, b as Json[], keys);
  if (isPlainObject(a)) return compareObjects(a, b as JsonObject, keys);
  return 0;
}

function compareArrays(a: Json[], b: Json[], keys: (o: JsonObject) => string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = bsonCompare(a[i] as Json, b[i] as Json, keys);
    if (c !== 0) return c;
  }
  return Math.sign(a.length - b.length);
}

/** BSON compares documents field by field: the value's type, then the field name, then the value. */
function compareObjects(a: JsonObject, b: JsonObject, keys: (o: JsonObject) => string[]): number {
  const ak = keys(a);
  const bk = keys(b);
  for (let i = 0; i < Math.min(ak.length, bk.length); i++) {
    const ka = ak[i] as string;
    const kb = bk[i] as string;
    const va = a[ka] as Json;
    const vb = b[kb] as Json;
    const c = Math.sign(typeRank(va) - typeRank(vb)) || compareStrings(ka, kb) || bsonCompare(va, vb, keys);
    if (c !== 0) return c;
  }
  return Math.sign(ak.length - bk.length);
}

/**
 * Code point order, which is the order of the strings' UTF-8 bytes: MongoDB's order of strings,
 * and jsonpath's. UTF-16 code units agree except that surrogates (code points above U+FFFF) must
 * sort after U+E000..U+FFFF.
 */
export function compareStrings(a: string, b: string): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return Math.sign(utf8Order(x) - utf8Order(y));
  }
  return Math.sign(a.length - b.length);
}

function utf8Order(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/** JSONB's order of keys (PostgreSQL's, which the SQL sees): shorter UTF-8 first, then bytewise. */
export function jsonbKeys(o: JsonObject): string[] {
  return Object.keys(o)
    .map((k) => Buffer.from(k))
    .sort((a, b) => a.length - b.length || Buffer.compare(a, b))
    .map((b) => b.toString());
}

export function isPrefix(prefix: string[], of: string[]): boolean {
  return prefix.length < of.length && prefix.every((s, i) => s === of[i]);
}

export function preview(v: Json): string {
  const text = JSON.stringify(v);
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/**
 * JSON text with every object's keys sorted: the same text for values jsonEqual finds equal (key
 * order aside; 1 and 1.0 are one number), so that equal values can be found by hashing.
 */
export function canonicalJson(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (isPlainObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k] as Json)}`)
      .join(',')}}`;
  return JSON.stringify(v);
}
