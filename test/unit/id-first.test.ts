import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../mongo/value/json.js';
import { idFirst } from '../../mongo/value/json.js';

// JSONB orders keys by length, then bytes: documents come back from PostgreSQL in that order.
const CASES: [string, string, string][] = [
  ['_id already leads', '{"_id": 1, "age": 2, "name": "x"}', '{"_id":1,"age":2,"name":"x"}'],
  ['a shorter key leads', '{"n": 0, "_id": "u1", "age": 18}', '{"_id":"u1","n":0,"age":18}'],
  ['_id last', '{"a": 1, "b": {"c": [1, 2]}, "_id": {"k": 1}}', '{"_id":{"k":1},"a":1,"b":{"c":[1,2]}}'],
  ['no _id', '{"a": 1, "b": 2}', '{"a":1,"b":2}'],
];

describe('idFirst', () => {
  it.each(CASES)('%s', (_name, stored, sent) => {
    expect(JSON.stringify(idFirst(JSON.parse(stored) as JsonObject))).toBe(sent);
  });

  it('returns the document itself when nothing moves', () => {
    const doc = JSON.parse('{"_id": 1, "a": 2}') as JsonObject;
    expect(idFirst(doc)).toBe(doc);
  });

  it('keeps an own __proto__ field as data and leaves prototypes alone', () => {
    const doc = JSON.parse('{"a": 1, "_id": 2, "__proto__": {"polluted": true}}') as JsonObject;
    const out = idFirst(doc);
    expect(JSON.stringify(out)).toBe('{"_id":2,"a":1,"__proto__":{"polluted":true}}');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
