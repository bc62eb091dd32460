import { describe, expect, it } from 'vitest';
import { scanJsonText } from '../../http/json-depth.js';

const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('scanJsonText: depth', () => {
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
    ['numbers between brackets', `{"a":[1,-2.5,[3]],"b":{"c":[[0]]}}`, 4, false],
    ['numbers between brackets, one over', `{"a":[1,-2.5,[3]],"b":{"c":[[0]]}}`, 3, true],
  ])('%s', (_label, text, max, expected) => {
    expect(scanJsonText(text, max).tooDeep).toBe(expected);
  });
});

// Whether every number is spelled as JSON.stringify writes the double it parses to: checked against
// JSON.stringify itself, so that a number the scan calls "as written" can never store differently.
describe('scanJsonText: numbers as written', () => {
  const asWritten = [
    '0',
    '1',
    '-1',
    '42',
    '123456789012345',
    '-123456789012345',
    '0.5',
    '-0.5',
    '0.99',
    '10.25',
    '9.5',
    '0.000001',
    '-0.000001',
    '0.1',
    '0.2',
    '1234567.89012345',
    '100',
    '1000000',
  ];
  const rewritten = [
    '1.0',
    '1.50',
    '-0',
    '-0.0',
    '0.0',
    '1e2',
    '1E2',
    '1e-7',
    '2.5e+3',
    '0.0000001',
    '1234567890123456',
    '0.1000000000000000055',
    '12345678.901234567',
    '1e999',
    '100000000000000000000000',
  ];
  it.each(asWritten)('%s is as written', (n) => {
    expect(JSON.stringify(JSON.parse(n))).toBe(n);
    expect(scanJsonText(`{"a":[${n}],"b":${n}}`, 128).numbersAsWritten).toBe(true);
  });
  it.each(rewritten)('%s is rewritten', (n) => {
    expect(scanJsonText(`{"a":[${n}],"b":1}`, 128).numbersAsWritten).toBe(false);
    expect(scanJsonText(`{"b":1,"a":${n}}`, 128).numbersAsWritten).toBe(false);
  });
  it('looks only at numbers outside strings', () => {
    expect(scanJsonText('{"a":"1.0 1e5 -0","b\\"1.0":2}', 128).numbersAsWritten).toBe(true);
  });
  it('agrees with JSON.stringify on random numbers', () => {
    const spellings = (x: number) => [
      String(x),
      x.toFixed(2),
      x.toFixed(6),
      x.toPrecision(15),
      x.toPrecision(17),
    ];
    for (let k = 0; k < 20_000; k++) {
      const scale = 10 ** Math.floor(Math.random() * 30 - 12);
      const x = (Math.random() - 0.5) * scale;
      for (const n of spellings(x)) {
        if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(n)) continue;
        if (scanJsonText(`[${n}]`, 128).numbersAsWritten) expect(JSON.stringify(JSON.parse(n))).toBe(n);
      }
    }
  });
});
