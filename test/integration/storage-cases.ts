/**
 * Semantic cases: documents, a request, and MongoDB's answer. Each `ids` list is what MongoDB
 * returns (in order when the case sorts, else sorted by _id). Every trap of DESIGN.md §5 is here.
 */
export interface FilterCase {
  name: string;
  docs: Record<string, unknown>[];
  query: Record<string, unknown>;
  ids: (string | number)[];
}

const d = (_id: string | number, rest: Record<string, unknown> = {}) => ({ _id, ...rest });

/** A $regex case over documents {_id: i + 1, s: values[i]}. */
function regexCase(
  name: string,
  values: unknown[],
  pattern: string,
  ids: number[],
  options?: string,
): FilterCase {
  return {
    name,
    docs: values.map((s, i) => d(i + 1, { s })),
    query: { s: { $regex: pattern, ...(options ? { $options: options } : {}) } },
    ids,
  };
}

export const filterCases: FilterCase[] = [
  // equality and array traversal
  { name: 'equality on a scalar', docs: [d(1, { a: 1 }), d(2, { a: 2 })], query: { a: 1 }, ids: [1] },
  { name: '1 equals 1.0', docs: [d(1, { a: 1.0 }), d(2, { a: 2 })], query: { a: 1 }, ids: [1] },
  {
    name: 'equality traverses arrays',
    docs: [d(1, { tags: ['a', 'b'] }), d(2, { tags: ['c'] }), d(3, { tags: 'a' })],
    query: { tags: 'a' },
    ids: [1, 3],
  },
  {
    name: 'dotted path through an array of documents',
    docs: [d(1, { a: [{ b: 1 }, { b: 2 }] }), d(2, { a: [{ b: 3 }] }), d(3, { a: { b: 2 } })],
    query: { 'a.b': 2 },
    ids: [1, 3],
  },
  {
    name: 'nested arrays are not traversed for equality',
    docs: [d(1, { a: [[1, 2]] }), d(2, { a: [1] })],
    query: { a: 1 },
    ids: [2],
  },
  {
    name: 'equality with a whole array, in order',
    docs: [d(1, { a: [1, 2] }), d(2, { a: [2, 1] }), d(3, { a: [[1, 2], 3] })],
    query: { a: [1, 2] },
    ids: [1, 3],
  },
  {
    name: 'equality with an embedded document',
    docs: [d(1, { a: { x: 1, y: 2 } }), d(2, { a: { x: 1 } }), d(3, { a: [{ x: 1 }] })],
    query: { a: { x: 1 } },
    ids: [2, 3],
  },
  {
    name: 'numeric path segment is an array index',
    docs: [d(1, { a: [5, 6] }), d(2, { a: [6, 5] }), d(3, { a: { '0': 5 } })],
    query: { 'a.0': 5 },
    ids: [1, 3],
  },
  {
    name: 'numeric path segment as a field of array elements',
    docs: [d(1, { a: [{ '0': 5 }] }), d(2, { a: [7] })],
    query: { 'a.0': 5 },
    ids: [1],
  },
  {
    name: 'index then field',
    docs: [d(1, { a: [{ b: 1 }, { b: 2 }] }), d(2, { a: [{ b: 2 }, { b: 1 }] })],
    query: { 'a.1.b': 2 },
    ids: [1],
  },
  {
    name: 'string equality is case-sensitive',
    docs: [d(1, { s: 'a' }), d(2, { s: 'A' })],
    query: { s: 'A' },
    ids: [2],
  },
  { name: 'boolean is not 1', docs: [d(1, { a: true }), d(2, { a: 1 })], query: { a: true }, ids: [1] },
  { name: 'string "1" is not 1', docs: [d(1, { a: '1' }), d(2, { a: 1 })], query: { a: 1 }, ids: [2] },
  { name: '$eq', docs: [d(1, { a: 1 }), d(2, { a: 2 })], query: { a: { $eq: 2 } }, ids: [2] },
  { name: 'empty query matches all', docs: [d(1), d(2)], query: {}, ids: [1, 2] },
  {
    name: 'implicit $and of fields',
    docs: [d(1, { a: 1, b: 1 }), d(2, { a: 1, b: 2 })],
    query: { a: 1, b: 2 },
    ids: [2],
  },
  // null and missing
  {
    name: 'null matches null and missing',
    docs: [d(1, { a: null }), d(2), d(3, { a: 0 }), d(4, { a: [null, 1] }), d(5, { a: [] })],
    query: { a: null },
    ids: [1, 2, 4],
  },
  {
    name: 'dotted null matches a missing field inside array elements',
    docs: [
      d(1, { a: [{ b: 1 }, { c: 1 }] }),
      d(2, { a: [{ b: 1 }] }),
      d(3, { a: 5 }),
      d(4),
      d(5, { a: { b: null } }),
    ],
    query: { 'a.b': null },
    ids: [1, 3, 4, 5],
  },
  {
    name: 'dotted null: scalars inside an array reach nothing',
    docs: [d(1, { a: [1, 2] }), d(2, { a: [] })],
    query: { 'a.b': null },
    ids: [],
  },
  {
    name: '$ne matches missing',
    docs: [d(1, { a: 1 }), d(2, { a: 2 }), d(3), d(4, { a: [1, 2] })],
    query: { a: { $ne: 1 } },
    ids: [2, 3],
  },
  {
    name: '$ne null means present and not null',
    docs: [d(1, { a: null }), d(2), d(3, { a: 0 })],
    query: { a: { $ne: null } },
    ids: [3],
  },
  // comparisons are type-bracketed
  {
    name: '$gt compares numbers numerically, never strings or booleans',
    docs: [d(1, { a: 10 }), d(2, { a: 5 }), d(3, { a: '10' }), d(4, { a: true }), d(5, { a: [1, 7] }), d(6)],
    query: { a: { $gt: 5 } },
    ids: [1, 5],
  },
  {
    name: '$gte / $lt range',
    docs: [d(1, { a: 1 }), d(2, { a: 2 }), d(3, { a: 3 }), d(4, { a: 2.5 })],
    query: { a: { $gte: 2, $lt: 3 } },
    ids: [2, 4],
  },
  {
    name: 'range on an array: elements may satisfy different bounds',
    docs: [d(1, { a: [1, 10] }), d(2, { a: [5] })],
    query: { a: { $gt: 3, $lt: 6 } },
    ids: [1, 2],
  },
  {
    name: 'string comparison is bytewise',
    docs: [d(1, { s: 'B' }), d(2, { s: 'a' }), d(3, { s: 'b' }), d(4, { s: 'é' })],
    query: { s: { $gt: 'Z' } },
    ids: [2, 3, 4],
  },
  {
    name: '$lt on strings',
    docs: [d(1, { s: 'abc' }), d(2, { s: 'abd' })],
    query: { s: { $lt: 'abd' } },
    ids: [1],
  },
  {
    name: '$lte on booleans',
    docs: [d(1, { a: false }), d(2, { a: true }), d(3, { a: 0 })],
    query: { a: { $lte: false } },
    ids: [1],
  },
  {
    name: '$gte null is null or missing',
    docs: [d(1, { a: null }), d(2), d(3, { a: 1 })],
    query: { a: { $gte: null } },
    ids: [1, 2],
  },
  {
    name: '$gt null matches nothing',
    docs: [d(1, { a: null }), d(2, { a: 1 })],
    query: { a: { $gt: null } },
    ids: [],
  },
  {
    name: 'negative and fractional numbers',
    docs: [d(1, { a: -1.5 }), d(2, { a: -1 }), d(3, { a: 0 })],
    query: { a: { $lt: -1 } },
    ids: [1],
  },
  // $in / $nin
  {
    name: '$in with scalars and arrays in documents',
    docs: [d(1, { a: 1 }), d(2, { a: [2, 9] }), d(3, { a: 3 }), d(4)],
    query: { a: { $in: [1, 2] } },
    ids: [1, 2],
  },
  {
    name: '$in with null matches missing',
    docs: [d(1, { a: 1 }), d(2), d(3, { a: 2 })],
    query: { a: { $in: [null, 1] } },
    ids: [1, 2],
  },
  {
    name: '$in with an array value',
    docs: [d(1, { a: [1, 2] }), d(2, { a: 1 })],
    query: { a: { $in: [[1, 2]] } },
    ids: [1],
  },
  { name: '$in empty matches nothing', docs: [d(1, { a: 1 })], query: { a: { $in: [] } }, ids: [] },
  {
    name: '$nin matches missing',
    docs: [d(1, { a: 1 }), d(2, { a: 2 }), d(3), d(4, { a: [1, 3] })],
    query: { a: { $nin: [1] } },
    ids: [2, 3],
  },
  // logical
  {
    name: '$or',
    docs: [d(1, { a: 1 }), d(2, { b: 2 }), d(3, { a: 3 })],
    query: { $or: [{ a: 1 }, { b: 2 }] },
    ids: [1, 2],
  },
  {
    name: '$and',
    docs: [d(1, { a: 1, b: 1 }), d(2, { a: 1 })],
    query: { $and: [{ a: 1 }, { b: 1 }] },
    ids: [1],
  },
  {
    name: '$nor',
    docs: [d(1, { a: 1 }), d(2, { b: 2 }), d(3, { a: 3 })],
    query: { $nor: [{ a: 1 }, { b: 2 }] },
    ids: [3],
  },
  {
    name: '$not matches missing and non-matching types',
    docs: [d(1, { a: 10 }), d(2, { a: 1 }), d(3), d(4, { a: 'x' })],
    query: { a: { $not: { $gt: 5 } } },
    ids: [2, 3, 4],
  },
  {
    name: '$not with $regex',
    docs: [d(1, { s: 'abc' }), d(2, { s: 'xyz' }), d(3)],
    query: { s: { $not: { $regex: '^a' } } },
    ids: [2, 3],
  },
  // $exists, $type, $size
  {
    name: '$exists true includes null values',
    docs: [d(1, { a: null }), d(2), d(3, { a: 0 })],
    query: { a: { $exists: true } },
    ids: [1, 3],
  },
  {
    name: '$exists false',
    docs: [d(1, { a: null }), d(2), d(3, { a: 0 })],
    query: { a: { $exists: false } },
    ids: [2],
  },
  {
    name: '$exists through arrays of documents',
    docs: [d(1, { a: [{ b: 1 }, { c: 1 }] }), d(2, { a: [{ c: 1 }] }), d(3, { a: [1] })],
    query: { 'a.b': { $exists: true } },
    ids: [1],
  },
  {
    name: '$type string matches array elements',
    docs: [d(1, { a: 'x' }), d(2, { a: [1, 'y'] }), d(3, { a: 1 })],
    query: { a: { $type: 'string' } },
    ids: [1, 2],
  },
  {
    name: '$type array',
    docs: [d(1, { a: [] }), d(2, { a: [1] }), d(3, { a: 1 })],
    query: { a: { $type: 'array' } },
    ids: [1, 2],
  },
  {
    name: '$type number and null',
    docs: [d(1, { a: 1.5 }), d(2, { a: null }), d(3, { a: 's' }), d(4)],
    query: { a: { $type: ['number', 'null'] } },
    ids: [1, 2],
  },
  {
    name: '$type int vs double',
    docs: [d(1, { a: 1 }), d(2, { a: 1.5 })],
    query: { a: { $type: 'double' } },
    ids: [2],
  },
  {
    name: '$type by number code (2 = string)',
    docs: [d(1, { a: 'x' }), d(2, { a: 1 })],
    query: { a: { $type: 2 } },
    ids: [1],
  },
  {
    name: '$type object and bool',
    docs: [d(1, { a: {} }), d(2, { a: true }), d(3, { a: [] })],
    query: { a: { $type: ['object', 'bool'] } },
    ids: [1, 2],
  },
  {
    name: '$size',
    docs: [d(1, { a: [1, 2] }), d(2, { a: [1] }), d(3, { a: 2 }), d(4, { a: [[1, 2]] })],
    query: { a: { $size: 2 } },
    ids: [1],
  },
  { name: '$size 0', docs: [d(1, { a: [] }), d(2), d(3, { a: [1] })], query: { a: { $size: 0 } }, ids: [1] },
  {
    name: '$size through arrays of documents',
    docs: [d(1, { a: [{ b: [1, 2] }, { b: [1] }] }), d(2, { a: [{ b: [1] }] })],
    query: { 'a.b': { $size: 2 } },
    ids: [1],
  },
  // $all, $elemMatch
  {
    name: '$all',
    docs: [d(1, { t: ['a', 'b', 'c'] }), d(2, { t: ['a', 'c'] }), d(3, { t: 'a' })],
    query: { t: { $all: ['a', 'b'] } },
    ids: [1],
  },
  {
    name: '$all on a scalar field',
    docs: [d(1, { t: 'a' }), d(2, { t: 'b' })],
    query: { t: { $all: ['a'] } },
    ids: [1],
  },
  { name: '$all empty matches nothing', docs: [d(1, { t: ['a'] })], query: { t: { $all: [] } }, ids: [] },
  {
    name: '$elemMatch on documents: one element must satisfy all',
    docs: [
      d(1, {
        a: [
          { x: 1, y: 2 },
          { x: 2, y: 1 },
        ],
      }),
      d(2, { a: [{ x: 1, y: 1 }] }),
    ],
    query: { a: { $elemMatch: { x: 1, y: 1 } } },
    ids: [2],
  },
  {
    name: 'without $elemMatch, conditions may hold on different elements',
    docs: [
      d(1, {
        a: [
          { x: 1, y: 2 },
          { x: 2, y: 1 },
        ],
      }),
      d(2, { a: [{ x: 1, y: 1 }] }),
    ],
    query: { 'a.x': 1, 'a.y': 1 },
    ids: [1, 2],
  },
  {
    name: '$elemMatch with operators on values',
    docs: [d(1, { a: [1, 10] }), d(2, { a: [5] }), d(3, { a: 5 })],
    query: { a: { $elemMatch: { $gt: 3, $lt: 6 } } },
    ids: [2],
  },
  {
    name: '$elemMatch with nested operators',
    docs: [d(1, { a: [{ n: 5, s: 'x' }] }), d(2, { a: [{ n: 1, s: 'x' }] })],
    query: { a: { $elemMatch: { n: { $gte: 5 }, s: { $in: ['x', 'y'] } } } },
    ids: [1],
  },
  {
    name: '$elemMatch on values does not look into elements that are arrays',
    docs: [d(1, { a: [[1]] }), d(2, { a: [1] }), d(3, { a: [[]] })],
    query: { a: { $elemMatch: { $eq: 1 } } },
    ids: [2],
  },
  {
    name: '$elemMatch $size on elements',
    docs: [d(1, { a: [[]] }), d(2, { a: [1] })],
    query: { a: { $elemMatch: { $size: 0 } } },
    ids: [1],
  },
  {
    name: '$elemMatch $ne null on an empty-array element',
    docs: [d(1, { a: [[]] }), d(2, { a: [null] })],
    query: { a: { $elemMatch: { $ne: null } } },
    ids: [1],
  },
  {
    name: 'double negation inside $elemMatch',
    docs: [d(1, { t: [1] }), d(2, { t: [2] })],
    query: { t: { $elemMatch: { $not: { $ne: 1 } } } },
    ids: [1],
  },
  {
    name: '$elemMatch on documents skips elements that are arrays',
    docs: [d(1, { a: [[{ x: 1 }]] }), d(2, { a: [{ x: 1 }] })],
    query: { a: { $elemMatch: { x: 1 } } },
    ids: [2],
  },
  {
    name: '$elemMatch on documents with an embedded-document equality and a nested $elemMatch',
    docs: [d(1, { a: [{ p: { q: 1 }, l: [{ z: 2 }] }] }), d(2, { a: [{ p: { q: 1 }, l: [{ z: 3 }] }] })],
    query: { a: { $elemMatch: { p: { q: 1 }, l: { $elemMatch: { z: 2 } } } } },
    ids: [1],
  },
  {
    name: '$not $exists false inside a query $elemMatch',
    docs: [d(1, { arr: [{ x: 1 }] }), d(2, { arr: [{ y: 1 }] })],
    query: { arr: { $elemMatch: { x: { $not: { $exists: false } } } } },
    ids: [1],
  },
  // $regex: each case is strings s (ids 1, 2, …), a pattern and the ids MongoDB matches
  regexCase('$regex', ['apple', 'banana', 1], '^a', [1]),
  regexCase('$regex case-insensitive', ['Apple', 'banana'], '^a', [1], 'i'),
  regexCase('$regex dot does not match newline', ['a\nb', 'axb'], 'a.b', [2]),
  regexCase('$regex s option', ['a\nb', 'axb'], 'a.b', [1, 2], 's'),
  regexCase('$regex \\b is a word boundary', ['cat dog', 'catdog'], '\\bdog', [1]),
  regexCase('$regex m option anchors lines', ['x\nabc', 'xabc'], '^abc', [1], 'm'),
  regexCase('$regex \\w is ASCII, as in MongoDB', ['é', 'e'], '^\\w$', [2]),
  regexCase('$regex \\b is an ASCII word boundary', ['éb', 'ab'], '\\bb', [1]),
  regexCase('$regex \\d is ASCII digits only', ['٣', '3'], '^\\d$', [2]),
  // x: white space and # comments outside classes are not part of the pattern (PCRE extended)
  regexCase(
    '$regex x option drops white space and comments',
    ['abc', 'a b c', 'ab'],
    'a b\tc # the letters\n',
    [1],
    'x',
  ),
  regexCase(
    '$regex x option keeps escaped white space and classes',
    ['a b', 'ab', 'a#b', 'a\\b'],
    '^a\\ b$ | ^a[# ]b$',
    [1, 3],
    'x',
  ),
  regexCase('$regex x option with i', ['ABC', 'xyz'], '^a b c$', [1], 'ix'),
  regexCase('$regex x option on a pattern with no white space', ['abc', 'xyz'], 'b', [1], 'x'),
  {
    name: '$not with $regex and the x option',
    docs: [d(1, { s: 'ab' }), d(2, { s: 'a b' }), d(3, { s: 1 }), d(4)],
    query: { s: { $not: { $regex: 'a b', $options: 'x' } } },
    ids: [2, 3, 4],
  },
  {
    name: '$elemMatch with $regex and the x option',
    docs: [d(1, { s: ['xy', 'ab'] }), d(2, { s: ['a b'] })],
    query: { s: { $elemMatch: { $regex: '^a b$', $options: 'x' } } },
    ids: [1],
  },
  // PCRE's $ (without m) and \Z match at the end and just before a final newline; \z at the end only
  regexCase('$regex $ matches before a final newline', ['abc\n', 'abc', 'abc\nx', 'abc\n\n'], 'c$', [1, 2]),
  regexCase('$regex ^…$ matches a lone newline', ['\n', '', 'x'], '^$', [1, 2]),
  regexCase(
    '$regex \\Z matches before a final newline',
    ['abc\n', 'abc', 'abc\nx', 'abc\n\n'],
    'c\\Z',
    [1, 2],
  ),
  regexCase('$regex \\z matches only at the end', ['abc\n', 'abc', 'abc\nx'], 'c\\z', [2]),
  regexCase('$regex m option: $ ends every line', ['abc\nx', 'abc\n', 'abx'], 'c$', [1, 2], 'm'),
  regexCase(
    '$regex m option: \\Z still ends the string only',
    ['abc\nx', 'abc\n', 'abc'],
    'c\\Z',
    [2, 3],
    'm',
  ),
  regexCase('$regex $ inside a class is a literal', ['a$', 'a'], 'a[$]', [1]),
  {
    name: '$regex on array elements',
    docs: [d(1, { s: ['xy', 'ab'] }), d(2, { s: ['xy'] })],
    query: { s: { $regex: '^a' } },
    ids: [1],
  },
  {
    name: '$regex with special characters',
    docs: [d(1, { s: 'a.b' }), d(2, { s: 'axb' })],
    query: { s: { $regex: 'a\\.b' } },
    ids: [1],
  },
  // $mod
  {
    name: '$mod',
    docs: [d(1, { n: 8 }), d(2, { n: 9 }), d(3, { n: '8' }), d(4, { n: -8 })],
    query: { n: { $mod: [4, 0] } },
    ids: [1, 4],
  },
  {
    name: '$mod truncates doubles',
    docs: [d(1, { n: 8.5 }), d(2, { n: 9.5 })],
    query: { n: { $mod: [4, 0] } },
    ids: [1],
  },
  {
    name: '$mod negative remainder',
    docs: [d(1, { n: -5 }), d(2, { n: 5 })],
    query: { n: { $mod: [4, -1] } },
    ids: [1],
  },
  // $bitsAllSet, $bitsAnySet, $bitsAllClear, $bitsAnyClear: the manual's examples (54 = 110110,
  // 20 = 10100), then the traps
  ...(
    [
      ['$bitsAllSet', [1, 5], [1]],
      ['$bitsAllSet', 50, [1]],
      ['$bitsAnySet', [1, 5], [1]],
      ['$bitsAnySet', 35, [1]],
      ['$bitsAllClear', [1, 5], [2, 3]],
      ['$bitsAllClear', 35, [2, 3]],
      ['$bitsAnyClear', [1, 5], [2, 3]],
      ['$bitsAnyClear', 35, [1, 2, 3]],
    ] as const
  ).map(
    ([op, mask, ids]): FilterCase => ({
      name: `${op} ${JSON.stringify(mask)} (the manual's example)`,
      docs: [d(1, { a: 54 }), d(2, { a: 20 }), d(3, { a: 20.0 })],
      query: { a: { [op]: mask } },
      ids: [...ids],
    }),
  ),
  {
    name: 'bit tests never match non-numbers, not even $bitsAllClear',
    docs: [
      d(1, { a: '0' }),
      d(2, { a: null }),
      d(3, { a: false }),
      d(4, {}),
      d(5, { a: {} }),
      d(6, { a: 0 }),
    ],
    query: { a: { $bitsAllClear: 1 } },
    ids: [6],
  },
  {
    name: 'bit tests skip numbers with a fraction',
    docs: [d(1, { a: 3.5 }), d(2, { a: 3 }), d(3, { a: -0.5 })],
    query: { a: { $bitsAnyClear: [2] } },
    ids: [2],
  },
  {
    name: 'bit tests skip numbers beyond 64-bit integers',
    docs: [d(1, { a: 1e19 }), d(2, { a: -1e19 }), d(3, { a: 2 ** 53 }), d(4, { a: -(2 ** 53) })],
    query: { a: { $bitsAllClear: [0] } },
    ids: [3, 4],
  },
  {
    name: 'negative numbers are two’s complement, sign-extended past bit 63',
    docs: [d(1, { a: -5 }), d(2, { a: 5 }), d(3, { a: -1 })],
    query: { a: { $bitsAllSet: [0, 3, 63, 200] } },
    ids: [1, 3],
  },
  {
    name: 'a positive number has every bit above 52 clear',
    docs: [d(1, { a: 5 }), d(2, { a: -5 })],
    query: { a: { $bitsAnySet: [53, 62, 63, 200] } },
    ids: [2],
  },
  {
    name: 'bit 2 of -5 (…11011) is clear',
    docs: [d(1, { a: -5 }), d(2, { a: -1 }), d(3, { a: -6 })],
    query: { a: { $bitsAnyClear: [1, 2] } },
    ids: [1, 3],
  },
  {
    name: 'an empty bitmask: all of no bits are set (or clear), none is any',
    docs: [d(1, { a: 7 }), d(2, { a: 'x' }), d(3, { b: 1 })],
    query: { $or: [{ a: { $bitsAllSet: 0 } }, { a: { $bitsAnySet: [] } }, { b: { $bitsAnyClear: 0 } }] },
    ids: [1],
  },
  {
    name: 'bit tests traverse arrays: some element passes',
    docs: [d(1, { a: [20, 54] }), d(2, { a: [20, 'x'] }), d(3, { a: [[54]] }), d(4, { a: [] })],
    query: { a: { $bitsAllSet: [1, 5] } },
    ids: [1],
  },
  {
    name: 'bit tests through an array of documents',
    docs: [d(1, { a: [{ b: 1 }, { b: 2 }] }), d(2, { a: [{ b: 1 }] })],
    query: { 'a.b': { $bitsAnySet: 2 } },
    ids: [1],
  },
  {
    name: '$not of a bit test matches non-numbers and missing fields',
    docs: [d(1, { a: 1 }), d(2, { a: 2 }), d(3, { a: 'x' }), d(4, {})],
    query: { a: { $not: { $bitsAllSet: 1 } } },
    ids: [2, 3, 4],
  },
  {
    name: 'a bit test in $elemMatch, with a range',
    docs: [d(1, { a: [3, 12] }), d(2, { a: [12, 5] })],
    query: { a: { $elemMatch: { $bitsAllSet: 4, $lt: 10 } } },
    ids: [2],
  },
  {
    name: 'a bitmask beyond 2^53 (2^62 + 2^10)',
    docs: [d(1, { a: -1 }), d(2, { a: 2 ** 10 + 1 }), d(3, { a: -512 }), d(4, { a: -1025 })],
    query: { a: { $bitsAllSet: 2 ** 62 + 2 ** 10 } },
    ids: [1, 3],
  },
  // _id
  { name: '_id equality (string)', docs: [d('a'), d('b')], query: { _id: 'b' }, ids: ['b'] },
  {
    name: '_id $in',
    docs: [d('a'), d('b'), d('c')],
    query: { _id: { $in: ['a', 'c', 'z'] } },
    ids: ['a', 'c'],
  },
  { name: '_id range', docs: [d(1), d(2), d(3)], query: { _id: { $gt: 1 } }, ids: [2, 3] },
  // awkward field names
  {
    name: 'field name with a quote',
    docs: [d(1, { 'a"b': 1 }), d(2, { ab: 1 })],
    query: { 'a"b': 1 },
    ids: [1],
  },
  {
    name: 'field name with unicode',
    docs: [d(1, { ключ: 'значение' }), d(2)],
    query: { ключ: 'значение' },
    ids: [1],
  },
  { name: 'field name with a backslash', docs: [d(1, { 'a\\b': 1 }), d(2)], query: { 'a\\b': 1 }, ids: [1] },
  {
    name: 'field name that looks like SQL',
    docs: [d(1, { "x'); drop table t; --": 1 }), d(2)],
    query: { "x'); drop table t; --": 1 },
    ids: [1],
  },
  {
    name: 'field name with jsonpath syntax',
    docs: [d(1, { 'a ? (@ == 1)': 2 }), d(2, { a: 1 })],
    query: { 'a ? (@ == 1)': 2 },
    ids: [1],
  },
];

export interface SortCase {
  name: string;
  docs: Record<string, unknown>[];
  sort: Record<string, 1 | -1>;
  ids: (string | number)[];
}

export const sortCases: SortCase[] = [
  {
    name: 'BSON type order ascending: missing/null < numbers < strings < objects < arrays < booleans',
    docs: [
      d(1, { a: true }),
      d(2, { a: 'x' }),
      d(3, { a: 5 }),
      d(4, { a: null }),
      d(5, { a: { k: 1 } }),
      d(6),
    ],
    sort: { a: 1 },
    ids: [4, 6, 3, 2, 5, 1],
  },
  {
    name: 'descending',
    docs: [d(1, { a: 1 }), d(2, { a: 3 }), d(3, { a: 2 })],
    sort: { a: -1 },
    ids: [2, 3, 1],
  },
  {
    name: 'arrays sort by their smallest element ascending',
    docs: [d(1, { a: [5, 1] }), d(2, { a: 3 }), d(3, { a: [2, 4] })],
    sort: { a: 1 },
    ids: [1, 3, 2],
  },
  {
    name: 'arrays sort by their largest element descending',
    docs: [d(1, { a: [5, 1] }), d(2, { a: 3 }), d(3, { a: [2, 4] })],
    sort: { a: -1 },
    ids: [1, 3, 2],
  },
  {
    name: 'strings bytewise: uppercase before lowercase',
    docs: [d(1, { s: 'b' }), d(2, { s: 'B' }), d(3, { s: 'a' }), d(4, { s: 'A' })],
    sort: { s: 1 },
    ids: [4, 2, 3, 1],
  },
  {
    name: 'numbers numerically, not as text',
    docs: [d(1, { n: 10 }), d(2, { n: 9 }), d(3, { n: -1 }), d(4, { n: 1.5 })],
    sort: { n: 1 },
    ids: [3, 4, 2, 1],
  },
  {
    name: 'several keys',
    docs: [d(1, { a: 1, b: 2 }), d(2, { a: 1, b: 1 }), d(3, { a: 0, b: 9 })],
    sort: { a: 1, b: -1 },
    ids: [3, 1, 2],
  },
  {
    name: 'dotted path',
    docs: [d(1, { p: { n: 2 } }), d(2, { p: { n: 1 } }), d(3, { p: {} })],
    sort: { 'p.n': 1 },
    ids: [3, 2, 1],
  },
  {
    name: 'ties keep _id order',
    docs: [d(3, { a: 1 }), d(1, { a: 1 }), d(2, { a: 1 })],
    sort: { a: 1 },
    ids: [1, 2, 3],
  },
  { name: '_id descending', docs: [d(1), d(3), d(2)], sort: { _id: -1 }, ids: [3, 2, 1] },
  {
    name: 'a document missing the field inside an array sorts as null ascending',
    docs: [d(1, { a: [{ b: 5 }, { c: 1 }] }), d(2, { a: [{ b: 3 }] }), d(3, { a: [{ b: 4 }] })],
    sort: { 'a.b': 1 },
    ids: [1, 2, 3],
  },
  {
    name: '... and by its largest value descending',
    docs: [d(1, { a: [{ b: 5 }, { c: 1 }] }), d(2, { a: [{ b: 3 }] }), d(3, { a: [{ b: 4 }] })],
    sort: { 'a.b': -1 },
    ids: [1, 3, 2],
  },
  {
    name: 'an empty array sorts before null',
    docs: [d(1, { a: null }), d(2, { a: [] }), d(3, { a: 0 })],
    sort: { a: 1 },
    ids: [2, 1, 3],
  },
];
