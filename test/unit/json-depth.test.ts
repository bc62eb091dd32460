import { describe, expect, it } from 'vitest';
import { jsonNestsDeeperThan } from '../../http/json-depth.js';

const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('jsonNestsDeeperThan', () => {
  it.each([
    ['a scalar', '1', 0, false],
    ['an empty object at depth 1', '{}', 1, false],
    ['an empty object over a limit of 0', '{}', 0, true],
    ['exactly the limit', nest(128), 128, false],
    ['one over the limit', nest(129), 128, true],
    ['mixed objects and arrays', '{"a":[{"b":[1]}]}', 4, false],
    ['mixed objects and arrays, one over', '{"a":[{"b":[1]}]}', 3, true],
    ['brackets inside strings', `{"a":"${'['.repeat(500)}"}`, 1, false],
    ['an escaped quote inside a string', `{"a":"\\"${'{'.repeat(10)}"}`, 1, false],
    ['an escaped backslash before the closing quote', `{"a":"\\\\","b":${nest(3)}}`, 3, true],
    ['three backslashes and a quote: the string goes on', `{"a":"\\\\\\"[[["}`, 1, false],
    ['four backslashes and a quote: the string ends', `{"a":"\\\\\\\\",${'"b":'}[[[1]]]}`, 3, true],
    ['an escaped quote right after the opening one', `["\\"", ${nest(2)}]`, 2, true],
    ['an unterminated string', `[[{"a":"${'['.repeat(10)}`, 3, false],
    ['siblings never add up', `[${Array(1000).fill(nest(5)).join(',')}]`, 6, false],
    ['a very deep body', nest(100_000), 128, true],
  ])('%s', (_label, text, max, expected) => {
    expect(jsonNestsDeeperThan(text, max)).toBe(expected);
  });
});
