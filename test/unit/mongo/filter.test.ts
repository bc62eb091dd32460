import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { parseFilter, pinsOneId } from '../../../mongo/filter/parse.js';
import { compileFilter, type IndexedPath } from '../../../mongo/filter/sql.js';
import { translateRegex } from '../../../mongo/regex/translate.js';
import { compileSort, parseSort } from '../../../mongo/sort.js';
import { Params } from '../../../mongo/value/params.js';
import { multikeyPredicate, navs, parsePath, rootNavs } from '../../../mongo/value/path.js';
import { filterCases } from '../../integration/storage-cases.js';

function compile(query: unknown, indexed: (p: string) => IndexedPath | undefined = () => undefined) {
  const params = new Params();
  const sql = compileFilter(parseFilter(query), { params, indexed });
  return { sql, params: params.values };
}

const everyPathIndexed = (p: string): IndexedPath =>
  p === '_id' ? { key: 'id', truncated: false } : { key: '"i1_0_a"', truncated: true, multikey: '"i1_0_m"' };

describe('parseFilter rejects what MongoDB rejects, naming the operator and the path', () => {
  it.each([
    [{ a: { $foo: 1 } }, /Unknown query operator '\$foo' on 'a'/],
    [{ a: { $gt: 1, b: 2 } }, /'a' mixes operators/],
    [{ $where: 'this.a > 1' }, /Unknown top-level query operator '\$where'/],
    [{ a: { $elemMatch: { $expr: true } } }, /\$expr is not allowed inside \$elemMatch/],
    [{ $expr: { $gt: ['$a'] } }, /Expression \$gt takes exactly 2 arguments/],
    [{ $and: [] }, /\$and must be a non-empty array/],
    [{ $or: {} }, /\$or must be a non-empty array/],
    [{ $nor: [1] }, /\$nor\[0\] must be a query object/],
    [{ a: { $in: 1 } }, /\$in on 'a' needs an array/],
    [{ a: { $nin: 'x' } }, /\$nin on 'a' needs an array/],
    [{ a: { $in: [{ $gt: 1 }] } }, /\$in on 'a' holds an operator object/],
    [{ a: { $size: -1 } }, /\$size on 'a' needs a non-negative integer/],
    [{ a: { $size: 1.5 } }, /\$size on 'a'/],
    [{ a: { $exists: 'yes' } }, /\$exists on 'a' needs true or false/],
    [
      { a: { $bitsAllSet: -1 } },
      /\$bitsAllSet on 'a' needs a bitmask that is a non-negative 64-bit integer, not -1/,
    ],
    [
      { a: { $bitsAnySet: 1.5 } },
      /\$bitsAnySet on 'a' needs a bitmask that is a non-negative 64-bit integer, not 1\.5/,
    ],
    [
      { a: { $bitsAllClear: 2 ** 63 } },
      /\$bitsAllClear on 'a' needs a bitmask that is a non-negative 64-bit integer/,
    ],
    [{ a: { $bitsAnyClear: [1, -1] } }, /\$bitsAnyClear on 'a': bit positions must be integers .* not -1/],
    [{ a: { $bitsAllSet: [0.5] } }, /\$bitsAllSet on 'a': bit positions must be integers .* not 0\.5/],
    [{ a: { $bitsAllSet: ['1'] } }, /\$bitsAllSet on 'a': bit positions must be integers .* not a string/],
    [
      { a: { $bitsAllSet: [2 ** 31] } },
      /\$bitsAllSet on 'a': bit positions must be integers from 0 to 2147483647/,
    ],
    [
      { a: { $bitsAnySet: '5' } },
      /\$bitsAnySet on 'a' takes a non-negative integer bitmask or an array of bit positions, not a string/,
    ],
    [{ a: { $bitsAnySet: null } }, /\$bitsAnySet on 'a' takes .* not null/],
    [
      { a: { $bitsAnySet: { $binary: { base64: 'AQ==', subType: '00' } } } },
      /\$bitsAnySet on 'a' takes .* \(BinData bitmasks have no JSON form here\), not an object/,
    ],
    [{ a: { $regex: 1 } }, /\$regex on 'a' needs a string/],
    [{ a: { $regex: 'x', $options: 'g' } }, /\$options on 'a' may only hold/],
    [{ a: { $options: 'i' } }, /\$options on 'a' needs a \$regex/],
    [{ a: { $regex: '(?<n>x)' } }, /named groups/],
    [{ a: { $regex: '\\p{L}' } }, /\$regex on 'a' uses this escape/],
    [{ a: { $not: 5 } }, /\$not on 'a' needs an object of operators/],
    [{ a: { $elemMatch: 5 } }, /\$elemMatch on 'a' needs an object/],
    [{ 'a..b': 1 }, /'a\.\.b' has an empty segment/],
    [{ 'a.$.b': 1 }, /segment starting with '\$'/],
    [{ 'a.$[].b': 1 }, /positional/],
    [{ ['x'.repeat(1025)]: 1 }, /longer than 1024/],
    [{ 'a.0.1.2.3.4': 1 }, /more than 4 numeric segments/],
    [[], /must be a JSON object/],
  ])('%j', (query, message) => {
    const run = () => compile(query);
    expect(run).toThrow(QueryError);
    expect(run).toThrow(message);
  });

  it('rejects queries nested too deep and with too many conditions', () => {
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 40; i++) deep = { $and: [deep] };
    expect(() => compile(deep)).toThrow(/nested deeper than 32/);
    const wide = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, i]));
    expect(() => compile(wide)).toThrow(/more than 1000 conditions/);
  });
});

describe('compiled SQL holds no request text: every value, path and regex is a bound parameter', () => {
  const hostile = [
    "'; drop table workplaces; --",
    '"; select 1; --',
    'x$$ select $$',
    'a\\" ) || true || ( "',
    ') ? (@ == 1) || exists($',
    'ключ',
    '🙂',
  ];
  it.each(hostile)('field name and value %j', (s) => {
    for (const indexed of [undefined, everyPathIndexed]) {
      const { sql, params } = compile(
        {
          [s]: s,
          [`${s}.x`]: { $regex: s.replace(/[\\()[\]{}.*+?^$|]/g, '\\$&') },
          $or: [{ [s]: { $gt: s } }],
        },
        indexed,
      );
      expect(sql).not.toContain(s);
      expect(sql).not.toContain('drop');
      // A string's key is bound as its bytes (bson-key.ts), after a type byte.
      const text = (p: string | Buffer) => (typeof p === 'string' ? p : p.subarray(1).toString('utf8'));
      expect(params.map(text).some((p) => p.includes(JSON.stringify(s).slice(1, -1)) || p.includes(s))).toBe(
        true,
      );
    }
  });

  it.each(filterCases.map((c) => [c.name, c.query] as const))(
    '%s: SQL text is made of our own syntax only',
    (_n, query) => {
      for (const indexed of [undefined, everyPathIndexed]) {
        const { sql } = compile(query, indexed);
        // Whatever the query, the text is built from a fixed vocabulary plus $n placeholders.
        const stripped = sql
          .replace(/\$\d+::(text::jsonb|jsonpath\[\]|jsonpath|jsonb|bigint|bytea|text\[\]|numeric|text)/g, '')
          .replace(/'\\x[0-9a-f]{2}'::bytea|'null'::jsonb/g, '')
          .replace(/"i1_0_[adm]"/g, '');
        expect(stripped).toMatch(/^[a-z_()., =<>\n*'0-9[\]:]*$/);
      }
    },
  );
});

describe('SQL shapes', () => {
  it('an empty query is true and binds nothing', () => {
    expect(compile({})).toEqual({ sql: 'true', params: [] });
  });

  it('indexed equality puts a key condition (or the multikey flag) before the exact predicate', () => {
    const { sql } = compile({ a: 5 }, everyPathIndexed);
    expect(sql).toMatch(/^\(\("i1_0_a" = \$\d+::bytea or "i1_0_m"\) and jsonb_path_match/);
  });

  it('on a path that never crossed an array, an exact key condition stands alone', () => {
    const plain = (p: string): IndexedPath => ({ key: `"${p}"`, truncated: true });
    expect(compile({ a: 5 }, plain).sql).toBe('("a" = $1::bytea)');
    const range = compile({ a: { $gt: 5, $lte: 9 } }, plain).sql;
    expect(range).toContain(`"a" > $1::bytea and "a" < '\\x15'::bytea`);
    expect(range).toContain(`"a" >= '\\x14'::bytea and "a" <= $2::bytea`);
    expect(range).not.toContain('jsonb_path_match');
    // A long string's key is cut: bounds become inclusive and the document decides.
    const long = 'x'.repeat(1001);
    const { sql } = compile({ a: { $gt: long } }, plain);
    expect(sql).toMatch(/"a" >= \$1::bytea.*jsonb_path_match/);
    expect((compile({ a: 'x'.repeat(1100) }, plain).params[0] as Buffer).length).toBe(1024);
    // Objects and arrays keep the SQL function, once per execution.
    expect(compile({ a: { $gt: { b: 1 } } }, plain).sql).not.toContain('mdb.key');
    expect(compile({ a: [1, 2] }, plain).sql).toContain('(select substr(mdb.key($1::text::jsonb), 1, 1024))');
    // Regexes and negations cannot be decided by keys.
    expect(compile({ a: { $regex: '^x' } }, plain).sql).toMatch(/^jsonb_path_match/);
  });

  it('indexed ranges stay inside the type bracket, with one multikey arm for the conjunction', () => {
    expect(compile({ a: { $gt: 5 } }, everyPathIndexed).sql).toContain(
      `"i1_0_a" > $1::bytea and "i1_0_a" < '\\x15'::bytea) or "i1_0_m")`,
    );
    const mixed = compile({ a: { $gte: 1, $lt: 'm' } }, everyPathIndexed).sql;
    expect(mixed.match(/or "i1_0_m"/g)).toHaveLength(1);
    expect(mixed).toContain(`"i1_0_a" >= '\\x1e'::bytea and "i1_0_a" < $2::bytea`);
    expect(mixed).toContain('jsonb_path_match');
  });

  it('_id conditions use the primary key, untruncated and exact', () => {
    expect(compile({ _id: 'x' }, everyPathIndexed).sql).toBe('(id = $1::bytea)');
    expect(compile({ _id: { $in: ['x', 'y'] } }, everyPathIndexed).sql).toBe(
      '(id in ($1::bytea, $2::bytea))',
    );
    expect(compile({ _id: 'x'.repeat(2000) }, everyPathIndexed).params[0]).toHaveLength(2001);
  });

  it('negations get no index condition', () => {
    expect(compile({ a: { $ne: 5 } }, everyPathIndexed).sql).toMatch(/^not jsonb_path_match/);
  });

  it('values travel as jsonpath variables, not in the jsonpath text', () => {
    const { params } = compile({ a: 'needle', b: { $gt: 7 } });
    const paths = params.filter((p) => typeof p === 'string' && p.startsWith('lax '));
    expect(paths.join(' ')).not.toContain('needle');
    expect(params).toContain(JSON.stringify({ v0: 'needle', v1: 7 }));
  });

  it('the same jsonpath is bound once', () => {
    const { params } = compile({ $or: [{ a: { $exists: true } }, { b: 1 }, { a: { $exists: true } }] });
    expect(params.filter((p) => typeof p === 'string' && p.startsWith('lax '))).toHaveLength(2);
  });
});

describe('paths', () => {
  it('walks numeric segments as an array index and as a field name', () => {
    expect(rootNavs(parsePath('a.0.b'))).toEqual([
      'lax $."a"."0"."b"',
      'lax $ ? (@."a".type() == "array")."a"[0]."b"',
    ]);
  });

  it('quotes every key as a jsonpath string', () => {
    expect(navs('$', ['a"b', 'c\\d']).map((n) => n.parent + n.last)).toEqual(['$."a\\"b"."c\\\\d"']);
  });

  it('the multikey predicate checks every prefix', () => {
    expect(multikeyPredicate(parsePath('a.b'))).toBe(
      'lax $."a".type() == "array" || $."a"."b".type() == "array"',
    );
  });
});

describe('regex translation from PCRE to PostgreSQL', () => {
  const W = 'A-Za-z0-9_';
  const b = `(?:(?<=[${W}])(?![${W}])|(?<![${W}])(?=[${W}]))`;
  it.each([
    ['\\bword\\b', `${b}word${b}`],
    ['\\Bx', `(?:(?<=[${W}])(?=[${W}])|(?<![${W}])(?![${W}]))x`],
    ['end\\z', 'end\\Z'],
    ['[\\b]', '[\\b]'],
    ['\\w+\\W', `[${W}]+(?:[^${W}]|\\n)`],
    // like_regex's negated classes skip the newline; PCRE's match it unless they list it.
    ['[^a]\\D', '(?:[^a]|\\n)(?:[^0-9]|\\n)'],
    ['[^\\n][^\\s]', '[^\\n][^ \\t\\n\\v\\f\\r]'],
    ['[\\w.-]', `[${W}.-]`],
    ['\\d+\\.\\d*', '[0-9]+\\.[0-9]*'],
    ['\\s\\S', '[ \\t\\n\\v\\f\\r][^ \\t\\n\\v\\f\\r]'],
    ['a(?=b)', 'a(?=b)'],
    ['(?<=a)b', '(?<=a)b'],
  ])('%s → %s', (source, pattern) => {
    expect(translateRegex(source, '', 'f').pattern).toBe(pattern);
  });

  it('keeps supported options, drops u, and applies x itself (like_regex does not implement it)', () => {
    expect(translateRegex('x', 'imsxu', 'f').flags).toBe('ims');
  });

  const end = '(?=\\n?\\Z)';
  it.each([
    ['a b\tc # comment\nd', 'x', 'abcd'],
    ['a # comment to the end', 'x', 'a'],
    ['a\\ b\\#c', 'x', 'a\\ b\\#c'],
    ['[ #a] b', 'x', '[ #a]b'],
    ['[] ] x', 'x', '[\\] ]x'],
    ['[[:alpha:] ] x', 'x', '[A-Za-z ]x'],
    ['[\\] ] x', 'x', '[\\] ]x'],
    ['c$', '', `c${end}`],
    ['c$', 'm', 'c$'],
    ['c\\Z', '', `c${end}`],
    ['c\\Z', 'm', `c${end}`],
    ['c\\z', 'm', 'c\\Z'],
    ['a[$]\\$', '', 'a[$]\\$'],
    ['[[:alpha:]\\w]', '', '[A-Za-zA-Za-z0-9_]'],
    ['^a', 'm', '(?:\\A|(?<=\\n)(?!\\Z))a'],
    ['\\Aa\\x41\\x{e9}', '', '\\Aa\\U00000041\\U000000e9'],
    ['[\\w-]', '', '[A-Za-z0-9_\\-]'],
    ['a{1,2}{', '', 'a{1,2}\\{'],
  ])('%j with options %j → %j', (source, options, pattern) => {
    expect(translateRegex(source, options, 'f').pattern).toBe(pattern);
  });

  it.each(['[a', 'a[]', '[[:alpha:]'])('refuses the unclosed class %s, naming the path', (source) => {
    expect(() => translateRegex(source, '', 'f')).toThrow(
      /\$regex on 'f' has a character class that is never closed/,
    );
  });

  it.each(['(?>a)', 'a*+', '(?i)a', '\\K', '(?P<n>a)', '(?#c)', '[\\W]', '[^\\D]'])(
    'refuses %s',
    (source) => {
      expect(() => translateRegex(source, '', 'f')).toThrow(QueryError);
    },
  );
});

describe('sort', () => {
  it('compiles indexed keys to their columns and others to mdb.sort_key, with an _id tiebreak', () => {
    const params = new Params();
    const indexed = (p: string) =>
      p === 'a' ? { key: '"i1_0_a"', desc: '"i1_0_d"', truncated: true } : undefined;
    expect(compileSort(parseSort({ a: -1, b: 1 }), { indexed }, params)).toBe(
      '"i1_0_d" desc, mdb.sort_key(doc, $1::jsonpath[], 1, null) asc, id asc',
    );
    expect(params.values).toEqual(['{"lax $.\\"b\\""}']);
  });

  it('stops at _id, which is unique', () => {
    expect(compileSort(parseSort({ _id: -1, a: 1 }), { indexed: () => undefined }, new Params())).toBe(
      'id desc',
    );
  });

  it.each([
    [{ a: 2 }, /must be 1 or -1/],
    [[], /sort must be an object/],
    [{ '': 1 }, /empty sort path/],
  ])('rejects %j', (sort, message) => {
    expect(() => parseSort(sort)).toThrow(message);
  });
});

describe('pinsOneId: the filters that match one document at most (`_id` is unique)', () => {
  it.each([
    [{ _id: 1 }, true],
    [{ _id: { $eq: 'a' } }, true],
    [{ _id: { k: 1 } }, true],
    [{ _id: 1, a: 2 }, true],
    [{ $and: [{ a: 1 }, { _id: 1 }] }, true],
    [{}, false],
    [{ a: 1 }, false],
    [{ _id: { $in: [1] } }, false],
    [{ _id: { $gte: 1 } }, false],
    [{ '_id.k': 1 }, false],
    [{ $or: [{ _id: 1 }] }, false],
    [{ _id: { $ne: 1 } }, false],
  ])('%j: %s', (query, pinned) => {
    expect(pinsOneId(parseFilter(query))).toBe(pinned);
  });
});
