import { describe, expect, it } from 'vitest';
import { mayHoldUnsafeNumber, unsafeNumberAt } from '../../http/json-numbers.js';

describe('numbers a double would change', () => {
  it.each<[string, string | undefined, ('range' | 'integer')?]>([
    ['{"a":1}', undefined],
    ['{"a":1e308}', undefined],
    ['{"a":1.7976931348623157e308}', undefined],
    ['{"a":1e999}', '/a', 'range'],
    ['{"a":-1e999}', '/a', 'range'],
    ['{"a":2e308}', '/a', 'range'],
    ['{"a":[1,{"b":1E+400}]}', '/a/1/b', 'range'],
    [`{"x/y":{"~":${'9'.repeat(400)}}}`, '/x~1y/~0', 'range'],
    ['{"a":1e-999}', undefined], // underflows to 0, which is a finite number
    ['{"a":"1e999"}', undefined], // a string
    // integer literals: refused when a double cannot hold them, kept at any size when it can
    ['{"n":9007199254740991}', undefined],
    ['{"n":-9007199254740992}', undefined],
    ['{"n":9007199254740993}', '/n', 'integer'],
    ['{"n":-9007199254740993}', '/n', 'integer'],
    ['{"n":9007199254740994}', undefined],
    ['{"n":18446744073709552000}', undefined], // 2^64 as JSON.stringify writes it
    ['{"n":18446744073709551616}', '/n', 'integer'], // 2^64 in full: written back as …552000
    ['{"n":18446744073709551615}', '/n', 'integer'],
    ['{"n":100000000000000000000,"m":1152921504606847000}', undefined], // 1e20 and 2^60 from JSON.stringify
    ['{"n":1000000000000000000000,"m":-12345678901234568000000}', undefined], // written as 1e+21, -1.2345678901234568e+22
    ['{"n":1000000000000000000001}', '/n', 'integer'],
    ['{"n":1e20,"m":1e300,"k":9007199254740993.0,"j":1.5e16}', undefined], // doubles by their syntax
    ['{"n":"9007199254740993"}', undefined], // a string
    ['{"docs":[{"a":1},{"n":12345678901234567891}]}', '/docs/1/n', 'integer'],
    // the pointer follows the text: JavaScript would list the key "1" before "b"
    ['{"b":[0,{"\\"q\\"":[true,null,"x]",12345678901234567890]}],"1":2}', '/b/1/"q"/3', 'integer'],
    ['{"a":{"b":1},"c":[{"d":[]},"e"],"f":99999999999999999}', '/f', 'integer'],
    ['[1,[2,3],99999999999999999]', '/2', 'integer'],
    ['{"a/b~":{"":99999999999999999}}', '/a~1b~0/', 'integer'],
    [`{"a":${'1'.repeat(308)}}`, '/a', 'integer'],
    [`{"a":${'9'.repeat(309)}.5}`, '/a', 'range'],
    ['{"a":0.1,"n":[12345678901234567891]}', '/n/0', 'integer'],
  ])('%s: %s', (text, pointer, reason) => {
    JSON.parse(text);
    const found = unsafeNumberAt(text);
    expect(found?.pointer).toBe(pointer);
    expect(found?.reason).toBe(reason);
    if (pointer !== undefined) expect(mayHoldUnsafeNumber(text)).toBe(true);
  });

  it('names the integer that would be stored instead', () => {
    expect(unsafeNumberAt('{"n":9007199254740993}')?.stored).toBe('9007199254740992');
    expect(unsafeNumberAt('[-1000000000000000000001]')?.stored).toBe('-1000000000000000000000');
  });

  it.each([
    '{"a":1}',
    '{"a":1.5e10,"b":"text"}',
    `{"a":${'1'.repeat(15)}}`,
    '{"a":-999999999999999}',
    '{"a":0.30000000000000004,"b":[-12345678901234567.5,1234567890123456789e-3]}',
  ])('does not scan %s: nothing in it can be unsafe', (text) => {
    expect(mayHoldUnsafeNumber(text)).toBe(false);
  });
});
