import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import {
  CURSOR_VERSION,
  cursorBinding,
  decodeCursor,
  encodeCursor,
  keysetPredicate,
  MAX_CURSOR_LENGTH,
} from '../../../mongo/cursor.js';
import { compileOrderKeys, type OrderKey, orderKeyCount, parseSort } from '../../../mongo/sort.js';
import { Params } from '../../../mongo/value/params.js';

const BINDING = cursorBinding({ a: 1 }, { b: -1 });
const hex = (s: string) => Buffer.from(s, 'hex');

/** A token laid out by hand, with a valid check: what a client could forge. */
function forge(body: Buffer): string {
  const check = createHash('sha256').update(body).digest().subarray(0, 8);
  return Buffer.concat([body, check]).toString('base64url');
}
const header = (version: number, binding: Buffer, count: number) =>
  Buffer.concat([Buffer.from([version]), binding, Buffer.from([count])]);
const key = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b]);

describe('encodeCursor / decodeCursor round trip', () => {
  it.each([
    ['one id key', [hex('14bff0000000000000')]],
    ['an empty key', [Buffer.alloc(0), hex('0a')]],
    ['sort keys and id', [hex('1e616263'), hex('0a'), hex('3c01'), hex('1e69643132')]],
    ['keys cut at 1,024 bytes, 33 of them', Array.from({ length: 33 }, (_, i) => Buffer.alloc(1024, i))],
    ['a long _id key', [Buffer.alloc(60_000, 0x30)]],
  ])('%s', (_label, keys) => {
    const token = encodeCursor(BINDING, keys);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
    expect(decodeCursor(token, BINDING, keys.length)).toEqual(keys);
  });

  it('refuses to issue a token past the bound rather than one it would refuse', () => {
    expect(() =>
      encodeCursor(
        BINDING,
        Array.from({ length: 33 }, () => Buffer.alloc(4000)),
      ),
    ).toThrow(/keys too long for a cursor/);
    expect(() => encodeCursor(BINDING, [Buffer.alloc(70_000)])).toThrow(QueryError);
  });
});

describe('cursorBinding: a token continues only the read it came from', () => {
  it.each([
    ['the same query and sort', [{ a: 1 }, { b: -1 }], [{ a: 1 }, { b: -1 }], true],
    ['no query is {}', [undefined, { b: 1 }], [{}, { b: 1 }], true],
    ['no sort is {}', [{ a: 1 }, undefined], [{ a: 1 }, {}], true],
    ['another value', [{ a: 1 }, {}], [{ a: 2 }, {}], false],
    ['1 and "1"', [{ a: 1 }, {}], [{ a: '1' }, {}], false],
    ['another direction', [{}, { b: 1 }], [{}, { b: -1 }], false],
    ['sort keys in another order', [{}, { a: 1, b: 1 }], [{}, { b: 1, a: 1 }], false],
    // Key order matters to equality on an embedded document, so the binding keeps it.
    ['query keys in another order', [{ e: { x: 1, y: 2 } }, {}], [{ e: { y: 2, x: 1 } }, {}], false],
    ['query and sort swapped', [{ a: 1 }, {}], [{}, { a: 1 }], false],
  ] as const)('%s', (_label, [q1, s1], [q2, s2], same) => {
    expect(cursorBinding(q1, s1).equals(cursorBinding(q2, s2))).toBe(same);
  });
});

describe('decodeCursor refuses what it did not issue, naming cursor', () => {
  const keys = [hex('1e616263'), hex('14bff0000000000000')];
  const token = encodeCursor(BINDING, keys);
  const raw = Buffer.from(token, 'base64url');
  const body = raw.subarray(0, raw.length - 8);

  it.each([
    ['empty', '', 2, /altered/],
    ['not base64url', `${token.slice(0, -2)}+/`, 2, /altered/],
    ['padded', `${token}=`, 2, /altered/],
    ['spaces', ` ${token}`, 2, /altered/],
    ['a base64url text that does not re-encode the same', `${token}A`, 2, /altered/],
    ['too short for a header', 'AAAAAAAA', 2, /altered/],
    ['cut short', token.slice(0, -3), 2, /altered/],
    [
      'another query or sort',
      encodeCursor(cursorBinding({ a: 2 }, { b: -1 }), keys),
      2,
      /different query or sort/,
    ],
    ['too long', 'A'.repeat(MAX_CURSOR_LENGTH + 1), 2, /longer than/],
    ['another version', forge(Buffer.concat([header(CURSOR_VERSION + 1, BINDING, 0)])), 2, /another version/],
    ['a key count the sort does not have', token, 3, /altered/],
    ['more keys than it holds', forge(Buffer.concat([header(1, BINDING, 3), key(hex('0a'))])), 3, /altered/],
    [
      'a key longer than the token',
      forge(Buffer.concat([header(1, BINDING, 1), hex('00ff'), hex('0a')])),
      1,
      /altered/,
    ],
    ['bytes after the keys', forge(Buffer.concat([body, hex('00')])), 2, /altered/],
    ['a key length cut in half', forge(Buffer.concat([header(1, BINDING, 1), hex('00')])), 1, /altered/],
  ] as const)('%s', (_label, t, count, message) => {
    expect(() => decodeCursor(t, BINDING, count)).toThrow(QueryError);
    expect(() => decodeCursor(t, BINDING, count)).toThrow(message);
    expect(() => decodeCursor(t, BINDING, count)).toThrow(/cursor/);
  });

  it('any one byte changed is refused', () => {
    for (let i = 0; i < raw.length; i++) {
      const changed = Buffer.from(raw);
      changed[i] = (changed[i] as number) ^ 0x01;
      expect(() => decodeCursor(changed.toString('base64url'), BINDING, 2), `byte ${i}`).toThrow(QueryError);
    }
  });
});

describe('keysetPredicate: the rows after a position, in the order of the ORDER BY', () => {
  const k = (sql: string, dir: 1 | -1): OrderKey => ({ sql, dir });
  const v = (n: number) => Buffer.from([n]);
  const d = (n: number) => `$${n}::bytea`;

  it.each([
    ['one key ascending', [k('id', 1)], `id > ${d(1)}`],
    ['one key descending', [k('id', -1)], `id < ${d(1)}`],
    [
      'all ascending: one row comparison',
      [k('"i1_0_a"', 1), k('id', 1)],
      `("i1_0_a", id) > (${d(1)}, ${d(2)})`,
    ],
    [
      'all descending: one row comparison',
      [k('"i1_0_d"', -1), k('x', -1), k('id', -1)],
      `("i1_0_d", x, id) < (${d(1)}, ${d(2)}, ${d(3)})`,
    ],
    [
      'mixed: the expanded chain, led by the first key bound',
      [k('a', 1), k('b', -1), k('id', -1)],
      `a >= ${d(1)} and ((a > ${d(1)}) or (a = ${d(1)} and b < ${d(2)}) or (a = ${d(1)} and b = ${d(2)} and id < ${d(3)}))`,
    ],
    [
      'mixed, the leading keys of one direction as the bound',
      [k('a', 1), k('b', 1), k('c', -1), k('id', -1)],
      `(a, b) >= (${d(1)}, ${d(2)}) and ((a > ${d(1)}) or (a = ${d(1)} and b > ${d(2)}) or (a = ${d(1)} and b = ${d(2)} and c < ${d(3)}) or (a = ${d(1)} and b = ${d(2)} and c = ${d(3)} and id < ${d(4)}))`,
    ],
    [
      'mixed, descending first',
      [k('a', -1), k('id', 1)],
      `a <= ${d(1)} and ((a < ${d(1)}) or (a = ${d(1)} and id > ${d(2)}))`,
    ],
  ])('%s', (_label, order, sql) => {
    const params = new Params();
    expect(
      keysetPredicate(
        order,
        order.map((_, i) => v(i + 10)),
        params,
      ),
    ).toBe(sql);
    // Every value is a bound parameter, in hex.
    expect(params.values).toEqual(order.map((_, i) => Buffer.from([i + 10])));
  });

  it('keys that do not fit the order are refused', () => {
    expect(() => keysetPredicate([k('id', 1)], [v(1), v(2)], new Params())).toThrow(/cursor/);
    expect(() => keysetPredicate([], [], new Params())).toThrow(QueryError);
  });
});

describe('orderKeyCount is the length of the ORDER BY compileOrderKeys gives', () => {
  const none = { indexed: () => undefined };
  it.each([
    [{}, ['id']],
    [{ a: 1 }, ['mdb.sort_key', 'id']],
    [{ a: -1, 'b.c': 1 }, ['mdb.sort_key', 'mdb.sort_key', 'id']],
    [{ _id: -1 }, ['id']],
    [{ a: 1, _id: 1, b: 1 }, ['mdb.sort_key', 'id']],
  ])('%j', (sort, kinds) => {
    const keys = parseSort(sort);
    const order = compileOrderKeys(keys, none, new Params());
    expect(order.map((o) => o.sql.replace(/\(.*/, ''))).toEqual(kinds);
    expect(orderKeyCount(keys)).toBe(order.length);
  });

  it('the tie-breaking id takes the last key direction', () => {
    expect(compileOrderKeys(parseSort({ a: 1, b: -1 }), none, new Params()).map((o) => o.dir)).toEqual([
      1, -1, -1,
    ]);
    expect(compileOrderKeys(parseSort({ _id: -1, a: 1 }), none, new Params()).map((o) => o.dir)).toEqual([
      -1,
    ]);
  });
});
