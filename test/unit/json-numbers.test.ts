import { describe, expect, it } from 'vitest';
import { mayHoldOutOfRangeNumber, nonFiniteNumberAt } from '../../json-numbers.js';

describe('numbers beyond the range of a double', () => {
  it.each<[string, string | undefined]>([
    ['{"a":1}', undefined],
    ['{"a":1e308}', undefined],
    ['{"a":1.7976931348623157e308}', undefined],
    ['{"a":1e999}', '/a'],
    ['{"a":-1e999}', '/a'],
    ['{"a":2e308}', '/a'],
    ['{"a":[1,{"b":1E+400}]}', '/a/1/b'],
    [`{"x/y":{"~":${'9'.repeat(400)}}}`, '/x~1y/~0'],
    ['{"a":1e-999}', undefined], // underflows to 0, which is a finite number
    ['{"a":"1e999"}', undefined], // a string
  ])('%s: %s', (text, pointer) => {
    expect(nonFiniteNumberAt(JSON.parse(text))).toBe(pointer);
    if (pointer !== undefined) expect(mayHoldOutOfRangeNumber(text)).toBe(true);
  });

  it.each(['{"a":1}', '{"a":1.5e10,"b":"text"}', `{"a":${'1'.repeat(308)}}`])(
    'does not walk %s: nothing in it can overflow',
    (text) => {
      expect(mayHoldOutOfRangeNumber(text)).toBe(false);
    },
  );
});
