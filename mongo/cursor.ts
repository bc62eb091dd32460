/**
 * Continuation tokens for reads past the page limit (keyset paging). A token carries the ORDER BY
 * values of the last document a page returned (compileOrderKeys: bytea keys ending with `id`, so
 * they order documents totally); the next page is the documents strictly after them, found through
 * the same btree that gives the order, so its cost does not grow with how deep the page is (OFFSET
 * reads and throws away every skipped row).
 *
 * Nothing is kept in the server: the token is the whole state, so it works across processes and
 * restarts. Layout, base64url-encoded:
 *
 *   version (1 byte) | binding (8) | key count (1) | per key: length (uint16 BE), bytes | check (8)
 *
 * `binding` is a hash of the request's query and sort: a token only continues the read it came
 * from, whose ORDER BY its keys belong to. `check` is a hash of everything before it, so a token
 * garbled in transit or edited by hand is refused rather than read as some other position. It is
 * not a secret MAC, and need not be: a token grants nothing (the caller may read any position of
 * the collection with its own query), and its keys are bound parameters like any query value.
 */
import { createHash } from 'node:crypto';
import { QueryError } from '../errors.js';
import type { OrderKey } from './sort.js';
import type { Params } from './value/params.js';

export const CURSOR_VERSION = 1;

/**
 * The longest token accepted or issued. Sort keys are cut at 1,024 bytes and a sort has at most 32
 * of them; the `_id` key is the stored `_id` (at most 1,024 bytes of JSON, but numbers are written
 * out in full by the database), so this leaves room for every real document.
 */
export const MAX_CURSOR_LENGTH = 131_072;

const BINDING_BYTES = 8;
const CHECK_BYTES = 8;
const HEADER_BYTES = 1 + BINDING_BYTES + 1;
const MAX_KEY_BYTES = 0xffff;

const sha256 = (...parts: (Buffer | string)[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/**
 * The hash that binds a token to its read: the query and sort as the request sent them (key order
 * included, as it matters to a sort and to equality on an embedded document). A missing query is
 * `{}` and a missing sort is `{}`, as the read treats them.
 */
export function cursorBinding(query: unknown, sort: unknown): Buffer {
  return sha256(JSON.stringify([query ?? {}, sort ?? {}])).subarray(0, BINDING_BYTES);
}

/** The token for the position after the row whose ORDER BY values are `keys`. */
export function encodeCursor(binding: Buffer, keys: Buffer[]): string {
  const parts: Buffer[] = [Buffer.from([CURSOR_VERSION]), binding, Buffer.from([keys.length])];
  for (const k of keys) {
    if (k.length > MAX_KEY_BYTES) throw tooLong();
    const len = Buffer.alloc(2);
    len.writeUInt16BE(k.length);
    parts.push(len, k);
  }
  const body = Buffer.concat(parts);
  const token = Buffer.concat([body, sha256(body).subarray(0, CHECK_BYTES)]).toString('base64url');
  if (token.length > MAX_CURSOR_LENGTH) throw tooLong();
  return token;
}

const tooLong = () =>
  new QueryError(
    `The last document of this page sorts by keys too long for a cursor (more than ${MAX_CURSOR_LENGTH} characters); sort by fewer or shorter fields.`,
  );

const damaged = () =>
  new QueryError(
    'cursor is not a token this API returned, or was altered: pass the `next` of the previous page unchanged.',
  );

/**
 * The ORDER BY values a token resumes after, checked against the read it is passed to: `binding`
 * of that read's query and sort, and `keyCount` expressions in its ORDER BY.
 */
export function decodeCursor(token: string, binding: Buffer, keyCount: number): Buffer[] {
  if (token.length > MAX_CURSOR_LENGTH)
    throw new QueryError(
      `cursor is longer than ${MAX_CURSOR_LENGTH} characters, so no token this API returned.`,
    );
  if (!/^[A-Za-z0-9_-]*$/.test(token)) throw damaged();
  const bytes = Buffer.from(token, 'base64url');
  // base64url decoding skips what it cannot read; a token that does not re-encode the same is garbled.
  if (bytes.toString('base64url') !== token || bytes.length < HEADER_BYTES + CHECK_BYTES) throw damaged();
  const body = bytes.subarray(0, bytes.length - CHECK_BYTES);
  if (!sha256(body).subarray(0, CHECK_BYTES).equals(bytes.subarray(body.length))) throw damaged();
  if (body[0] !== CURSOR_VERSION)
    throw new QueryError(
      'cursor comes from another version of this API and cannot be continued; start the read again without it.',
    );
  if (!body.subarray(1, 1 + BINDING_BYTES).equals(binding))
    throw new QueryError(
      'cursor was returned for a different query or sort: send the same query and sort as the read that returned it (fields and limit may change).',
    );
  const count = body[1 + BINDING_BYTES] as number;
  const keys: Buffer[] = [];
  let at = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + 2 > body.length) throw damaged();
    const len = body.readUInt16BE(at);
    at += 2;
    if (at + len > body.length) throw damaged();
    keys.push(body.subarray(at, at + len));
    at += len;
  }
  if (at !== body.length || count !== keyCount) throw damaged();
  return keys;
}

/**
 * The rows strictly after `after` in the order `order`. With every key in one direction it is one
 * row comparison, which a btree on those columns serves as a range (its leading columns as the
 * index condition); with mixed directions, the expanded chain `k1 > v1 or (k1 = v1 and k2 < v2) or
 * ...`, led by `(k1, ...) >= (v1, ...)` over the leading keys in one direction, so an index on them
 * still bounds the scan. The keys are never null (compileOrderKeys), so plain comparisons are exact.
 */
export function keysetPredicate(order: OrderKey[], after: Buffer[], params: Params): string {
  if (order.length !== after.length || order.length === 0) throw damaged();
  const values = after.map((k) => params.bytes(k));
  const beyond = (d: 1 | -1) => (d === 1 ? '>' : '<');
  /** `k op v` for one key, a row comparison for several. */
  const compare = (n: number, op: string) =>
    n === 1
      ? `${order[0]?.sql} ${op} ${values[0]}`
      : `(${order
          .slice(0, n)
          .map((k) => k.sql)
          .join(', ')}) ${op} (${values.slice(0, n).join(', ')})`;
  const dir = (order[0] as OrderKey).dir;
  // The leading keys that share the first one's direction.
  let lead = 1;
  while (order[lead]?.dir === dir) lead++;
  if (lead === order.length) return compare(lead, beyond(dir));
  const chain = order.map((k, i) => {
    const equal = order.slice(0, i).map((e, j) => `${e.sql} = ${values[j]}`);
    return [...equal, `${k.sql} ${beyond(k.dir)} ${values[i]}`].join(' and ');
  });
  return `${compare(lead, `${beyond(dir)}=`)} and (${chain.map((c) => `(${c})`).join(' or ')})`;
}
