import { describe, expect, it } from 'vitest';
import { parseFilter } from '../../../mongo/filter/parse.js';
import { compileFilter } from '../../../mongo/filter/sql.js';
import {
  compileTextScore,
  parseTextOperator,
  type TextIndexRef,
  type TextSearch,
  textWeights,
} from '../../../mongo/filter/text-search.js';
import { Params } from '../../../mongo/value/params.js';

const INDEX: TextIndexRef = {
  column: '"t1"',
  config: 'english',
  walks: ['lax $."subject"'],
  rankWeights: [1, 1, 1, 1],
};

// MongoDB's reading of the search string (fts_query_impl.cpp, and its fts_query_test.cpp cases).
const searches: [search: string, parsed: Omit<TextSearch, 'config'>][] = [
  ['coffee', { terms: ['coffee'], negatedTerms: [], phrases: [], negatedPhrases: [] }],
  [
    'bake coffee  cake',
    { terms: ['bake', 'coffee', 'cake'], negatedTerms: [], phrases: [], negatedPhrases: [] },
  ],
  ['coffee -shop', { terms: ['coffee'], negatedTerms: ['shop'], phrases: [], negatedPhrases: [] }],
  ['-foo-bar', { terms: [], negatedTerms: ['foo', 'bar'], phrases: [], negatedPhrases: [] }],
  ['- foo', { terms: ['foo'], negatedTerms: [], phrases: [], negatedPhrases: [] }],
  ['foo-bar', { terms: ['foo', 'bar'], negatedTerms: [], phrases: [], negatedPhrases: [] }],
  [
    '"coffee shop" tea',
    { terms: ['coffee', 'shop', 'tea'], negatedTerms: [], phrases: ['coffee shop'], negatedPhrases: [] },
  ],
  ['-"coffee shop" tea', { terms: ['tea'], negatedTerms: [], phrases: [], negatedPhrases: ['coffee shop'] }],
  [
    '- "coffee shop"',
    { terms: ['coffee', 'shop'], negatedTerms: [], phrases: ['coffee shop'], negatedPhrases: [] },
  ],
  [
    '-"foo bar"-"baz quux"',
    { terms: [], negatedTerms: [], phrases: [], negatedPhrases: ['foo bar', 'baz quux'] },
  ],
  ['"a -b"', { terms: ['a', 'b'], negatedTerms: [], phrases: ['a -b'], negatedPhrases: [] }],
  ['"unclosed phrase', { terms: ['unclosed', 'phrase'], negatedTerms: [], phrases: [], negatedPhrases: [] }],
  ["l'été, naïve!", { terms: ['l', 'été', 'naïve'], negatedTerms: [], phrases: [], negatedPhrases: [] }],
  ['a a A', { terms: ['a', 'A'], negatedTerms: [], phrases: [], negatedPhrases: [] }],
  ['', { terms: [], negatedTerms: [], phrases: [], negatedPhrases: [] }],
];

describe('parseTextOperator reads $search as MongoDB does', () => {
  it.each(searches)('%j', (search, parsed) => {
    expect(parseTextOperator({ $search: search })).toEqual(parsed);
  });

  it('refuses a $search too long or with too many words', () => {
    expect(() => parseTextOperator({ $search: 'a'.repeat(100_001) })).toThrow(/longer than 100000/);
    const words = Array.from({ length: 257 }, (_, i) => `w${i}`).join(' ');
    expect(() => parseTextOperator({ $search: words })).toThrow(/more than 256 terms/);
    expect(() => parseTextOperator({ $search: '"a" '.repeat(257) })).toThrow(/more than 256 terms/);
  });

  it('maps $language to a configuration, names and codes alike, case aside', () => {
    expect(parseTextOperator({ $search: 'x', $language: 'es' }).config).toBe('spanish');
    expect(parseTextOperator({ $search: 'x', $language: 'French' }).config).toBe('french');
    expect(parseTextOperator({ $search: 'x', $language: 'none' }).config).toBe('simple');
    expect(() => parseTextOperator({ $search: 'x', $language: 'toString' })).toThrow(/unsupported language/);
  });
});

describe('$text in SQL', () => {
  it('binds every word and phrase as a parameter', () => {
    const evil = `x'); drop table t; --`;
    const params = new Params();
    const sql = compileFilter(parseFilter({ $text: { $search: `${evil} -"${evil}" "${evil}" -y` } }), {
      params,
      indexed: () => undefined,
      text: INDEX,
    });
    expect(sql).not.toMatch(/drop|evil/);
    expect(params.values.join(' ')).toMatch(/drop/);
    expect(sql).toMatch(/"t1" @@ \(select to_tsquery/);
    expect(sql).toMatch(/not \("t1" @@ \(select to_tsquery/);
    // The positive terms go to to_tsquery ORed, each quoted.
    expect(params.values).toContain(`'x' | 'drop' | 'table' | 't'`);
  });

  it('with no positive term matches nothing, and binds nothing', () => {
    const params = new Params();
    const sql = compileFilter(parseFilter({ $text: { $search: '-a -"b c"' } }), {
      params,
      indexed: () => undefined,
      text: INDEX,
    });
    expect(sql).toBe('false');
  });

  it('needs a text index', () => {
    expect(() =>
      compileFilter(parseFilter({ $text: { $search: 'a' } }), {
        params: new Params(),
        indexed: () => undefined,
      }),
    ).toThrow(/text index required for \$text query/);
  });

  it('scores with the index weights', () => {
    const params = new Params();
    const sql = compileTextScore(
      parseTextOperator({ $search: 'a' }),
      { ...INDEX, rankWeights: [0.1, 0.2, 0.5, 1] },
      params,
    );
    expect(sql).toMatch(/^ts_rank\(\$1::float4\[\], "t1", \(select to_tsquery/);
    expect(params.values[0]).toBe('{0.1,0.2,0.5,1}');
  });
});

describe('textWeights', () => {
  it.each([
    [[1], ['A'], [1, 1, 1, 1]],
    [
      [10, 1],
      ['A', 'B'],
      [0.1, 0.1, 0.1, 1],
    ],
    [
      [5, 1, 5, 2],
      ['A', 'C', 'A', 'B'],
      [0.2, 0.2, 0.4, 1],
    ],
    [
      [8, 4, 2, 1],
      ['A', 'B', 'C', 'D'],
      [0.125, 0.25, 0.5, 1],
    ],
    // Past four distinct weights the lightest share D, at the heaviest of them.
    [
      [16, 8, 4, 2, 1],
      ['A', 'B', 'C', 'D', 'D'],
      [0.125, 0.25, 0.5, 1],
    ],
  ])('%j', (weights, letters, rankWeights) => {
    expect(textWeights(weights)).toEqual({ letters, rankWeights });
  });
});
