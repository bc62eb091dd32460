import type { Json } from './json.js';

/**
 * mdb.key() of migration 0002 for the values a request binds most (numbers, strings, booleans,
 * null), computed here so that a statement compares its key columns with a bound bytea: a call of
 * mdb.key on a bound value is a PL/pgSQL call per execution at best, and per row in a prepared
 * statement's generic plan wherever the condition is a filter rather than an index condition.
 * Undefined for objects and arrays, whose keys are jsonb's own text of them, and for strings that
 * jsonb refuses (a NUL, an unpaired surrogate): those keep the SQL function, which gives the same
 * error or key as before.
 */
export function scalarKey(value: Json): Buffer | undefined {
  if (value === null) return NULL_KEY;
  switch (typeof value) {
    case 'number':
      return numberKey(value);
    case 'string':
      if (value.includes('\0') || LONE_SURROGATE.test(value)) return undefined;
      return Buffer.concat([STRING_TAG, Buffer.from(value, 'utf8')]);
    case 'boolean':
      return value ? TRUE_KEY : FALSE_KEY;
    default:
      return undefined;
  }
}

/** With `u`, a surrogate pair is one code point: only an unpaired surrogate matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;
const NULL_KEY = Buffer.from([0x0a]);
const STRING_TAG = Buffer.from([0x1e]);
const TRUE_KEY = Buffer.from([0x3c, 0x01]);
const FALSE_KEY = Buffer.from([0x3c, 0x00]);
/** The least normal double: mdb.key keys the subnormals below it as 0. */
const MIN_NORMAL = 2 ** -1022;

/**
 * `\x14` and the double's bits made to sort as the numbers do (mdb.f8key): the sign bit flipped
 * for positive numbers, every bit for negative ones. -0 keys as 0.
 */
function numberKey(n: number): Buffer {
  const key = Buffer.alloc(9);
  key[0] = 0x14;
  key.writeDoubleBE(Math.abs(n) < MIN_NORMAL ? 0 : n, 1);
  if ((key[1] as number) & 0x80) for (let i = 1; i < 9; i++) key[i] = ~(key[i] as number) & 0xff;
  else key[1] = (key[1] as number) ^ 0x80;
  return key;
}

/**
 * A PostgreSQL `bytea[]` literal of the keys of `values` (scalarKey), NULL where the database must
 * compute one: bound as one parameter, so that a statement writing many documents calls mdb.key
 * only for ids that are objects or arrays.
 */
export function keyArrayLiteral(values: Json[]): string {
  return `{${values.map((v) => {
    const key = scalarKey(v);
    return key ? `"\\\\x${key.toString('hex')}"` : 'NULL';
  })}}`;
}
