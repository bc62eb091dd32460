/**
 * Positional updates ($, $[], $[<id>] with arrayFilters) and $pull's query conditions through the
 * API, with the documents and answers of MongoDB's manual pages "$ (update)", "$[]",
 * "$[<identifier>]" and "$pull", and its errors: once on plain collections and once with indexes
 * on the array paths (the SQL that picks the documents then differs; the updates must not).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

type Doc = Record<string, unknown>;

interface Case {
  name: string;
  docs: Doc[];
  request: { query: Doc; doc: Doc; arrayFilters?: unknown[]; upsert?: boolean };
  /** Every document afterwards, by _id; or the error, after which the documents are unchanged. */
  expected: Doc[] | RegExp;
  counts?: { matchedCount: number; modifiedCount: number };
}

const INDEXED = [
  'grades',
  'grades.grade',
  'grades.type',
  'a',
  'a.b',
  'results',
  'votes',
  'myArray',
  'degrees',
  'a.n',
  'tags',
  'items.name',
];

const students = [
  { _id: 1, grades: [85, 80, 80] },
  { _id: 2, grades: [88, 90, 92] },
  { _id: 3, grades: [85, 100, 90] },
];

const CASES: Case[] = [
  {
    name: '$ updates the first element the query matched',
    docs: students,
    request: { query: { _id: 1, grades: 80 }, doc: { $set: { 'grades.$': 82 } } },
    expected: [{ _id: 1, grades: [85, 82, 80] }, students[1] as Doc, students[2] as Doc],
    counts: { matchedCount: 1, modifiedCount: 1 },
  },
  {
    name: '$ in documents of the array, on every matching document',
    docs: [
      {
        _id: 4,
        grades: [
          { grade: 80, std: 8 },
          { grade: 85, std: 5 },
          { grade: 85, std: 8 },
        ],
      },
      { _id: 5, grades: [{ grade: 85, std: 1 }] },
    ],
    request: { query: { 'grades.grade': 85 }, doc: { $set: { 'grades.$.std': 6 } } },
    expected: [
      {
        _id: 4,
        grades: [
          { grade: 80, std: 8 },
          { grade: 85, std: 6 },
          { grade: 85, std: 8 },
        ],
      },
      { _id: 5, grades: [{ grade: 85, std: 6 }] },
    ],
    counts: { matchedCount: 2, modifiedCount: 2 },
  },
  {
    name: '$ with an $elemMatch query',
    docs: [
      {
        _id: 5,
        grades: [
          { grade: 80, mean: 75, std: 8 },
          { grade: 85, mean: 90, std: 5 },
          { grade: 90, mean: 85, std: 3 },
        ],
      },
    ],
    request: {
      query: { _id: 5, grades: { $elemMatch: { grade: { $lte: 90 }, mean: { $gt: 80 } } } },
      doc: { $set: { 'grades.$.std': 6 } },
    },
    expected: [
      {
        _id: 5,
        grades: [
          { grade: 80, mean: 75, std: 8 },
          { grade: 85, mean: 90, std: 6 },
          { grade: 90, mean: 85, std: 3 },
        ],
      },
    ],
  },
  {
    name: '$ without an array condition in the query',
    docs: students,
    request: { query: { _id: 1 }, doc: { $set: { 'grades.$': 82 } } },
    expected: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    name: '$ on an inserting upsert',
    docs: [],
    request: { query: { grades: 80 }, doc: { $set: { 'grades.$': 82 } }, upsert: true },
    expected: /^The positional operator did not find the match needed from the query\.$/,
  },
  {
    // The match $ needs is computed in TypeScript, with the regex's JavaScript form.
    name: '$ on a query with $regex',
    docs: [
      { _id: 1, a: ['b', 'ab', 'ac'] },
      { _id: 2, a: ['b'] },
    ],
    request: { query: { a: { $regex: '^a' } }, doc: { $set: { 'a.$': 'y' } } },
    expected: [
      { _id: 1, a: ['b', 'y', 'ac'] },
      { _id: 2, a: ['b'] },
    ],
  },
  {
    name: '$ on a query with $regex and $options inside $elemMatch',
    docs: [{ _id: 1, a: [{ n: 'Bob' }, { n: 'alice' }, { n: 'ALAN' }] }],
    request: {
      query: { a: { $elemMatch: { n: { $regex: '^a', $options: 'i' } } } },
      doc: { $set: { 'a.$.hit': true } },
    },
    expected: [{ _id: 1, a: [{ n: 'Bob' }, { n: 'alice', hit: true }, { n: 'ALAN' }] }],
  },
  {
    // PCRE's $ also matches before a final newline; \z only at the very end.
    name: 'arrayFilters with $regex',
    docs: [{ _id: 1, a: ['ax', 'b', 'cx\n', 'dx\ny'] }],
    request: { query: {}, doc: { $set: { 'a.$[e]': 'z' } }, arrayFilters: [{ e: { $regex: 'x$' } }] },
    expected: [{ _id: 1, a: ['z', 'b', 'z', 'dx\ny'] }],
  },
  {
    name: 'arrayFilters with $regex on a field of the elements, and \\z',
    docs: [{ _id: 1, a: [{ s: 'ax' }, { s: 'ax\n' }, { s: 1 }] }],
    request: {
      query: {},
      doc: { $set: { 'a.$[e].hit': true } },
      arrayFilters: [{ 'e.s': { $regex: 'x\\z' } }],
    },
    expected: [{ _id: 1, a: [{ s: 'ax', hit: true }, { s: 'ax\n' }, { s: 1 }] }],
  },
  {
    name: 'arrayFilters with an invalid $regex',
    docs: [{ _id: 1, a: ['x'] }],
    request: { query: {}, doc: { $set: { 'a.$[e]': 'z' } }, arrayFilters: [{ e: { $regex: '(' } }] },
    expected: /^arrayFilters\[0\]: \$regex on 'e' is not a valid regular expression/,
  },
  {
    name: '$[] updates every element of every matching document',
    docs: students,
    request: { query: {}, doc: { $inc: { 'grades.$[]': 10 } } },
    expected: [
      { _id: 1, grades: [95, 90, 90] },
      { _id: 2, grades: [98, 100, 102] },
      { _id: 3, grades: [95, 110, 100] },
    ],
    counts: { matchedCount: 3, modifiedCount: 3 },
  },
  {
    name: '$[] on an upsert whose query fixed the array',
    docs: [],
    request: { query: { _id: 9, myArray: [5, 8] }, doc: { $set: { 'myArray.$[]': 10 } }, upsert: true },
    expected: [{ _id: 9, myArray: [10, 10] }],
  },
  {
    name: '$[] on an upsert whose query did not fix the array',
    docs: [],
    request: { query: { _id: 9 }, doc: { $set: { 'myArray.$[]': 10 } }, upsert: true },
    expected: /^The path 'myArray' must exist in the document in order to apply array updates\.$/,
  },
  {
    name: '$[] nested with $[<id>]',
    docs: [
      {
        _id: 1,
        grades: [
          { type: 'quiz', questions: [10, 8, 5] },
          { type: 'quiz', questions: [8, 9, 6] },
          { type: 'hw', questions: [5, 4, 3] },
          { type: 'exam', questions: [25, 10, 23, 0] },
        ],
      },
    ],
    request: {
      query: {},
      doc: { $inc: { 'grades.$[t].questions.$[score]': 2 } },
      arrayFilters: [{ 't.type': 'quiz' }, { score: { $gte: 8 } }],
    },
    expected: [
      {
        _id: 1,
        grades: [
          { type: 'quiz', questions: [12, 10, 5] },
          { type: 'quiz', questions: [10, 11, 6] },
          { type: 'hw', questions: [5, 4, 3] },
          { type: 'exam', questions: [25, 10, 23, 0] },
        ],
      },
    ],
  },
  {
    name: '$[<id>] updates the elements the filter matches',
    docs: [
      { _id: 1, grades: [95, 92, 90] },
      { _id: 2, grades: [98, 100, 102] },
      { _id: 3, grades: [95, 110, 100] },
    ],
    request: {
      query: {},
      doc: { $set: { 'grades.$[element]': 100 } },
      arrayFilters: [{ element: { $gte: 100 } }],
    },
    expected: [
      { _id: 1, grades: [95, 92, 90] },
      { _id: 2, grades: [98, 100, 100] },
      { _id: 3, grades: [95, 100, 100] },
    ],
    counts: { matchedCount: 3, modifiedCount: 2 },
  },
  {
    name: '$[<id>] with a negation in the filter',
    docs: [
      { _id: 1, degrees: [{ level: 'Master' }, { level: 'Bachelor' }] },
      { _id: 2, degrees: [{ level: 'Bachelor' }] },
    ],
    request: {
      query: {},
      doc: { $set: { 'degrees.$[degree].gradcampaign': 1 } },
      arrayFilters: [{ 'degree.level': { $ne: 'Bachelor' } }],
    },
    expected: [
      { _id: 1, degrees: [{ level: 'Master', gradcampaign: 1 }, { level: 'Bachelor' }] },
      { _id: 2, degrees: [{ level: 'Bachelor' }] },
    ],
  },
  {
    name: 'an error in one document writes nothing, not even to the others',
    docs: [
      { _id: 1, a: [1] },
      { _id: 2, a: 'x' },
    ],
    request: { query: {}, doc: { $set: { 'a.$[]': 0 } } },
    expected: /^Cannot apply array updates to non-array element a: "x"\.$/,
  },
  {
    name: 'conflicting elements found in a document',
    docs: [{ _id: 1, a: [0, 1] }],
    request: {
      query: {},
      doc: { $set: { 'a.$[i]': 1, 'a.$[j]': 2 } },
      arrayFilters: [{ i: 0 }, { j: { $lt: 1 } }],
    },
    expected: /^Update created a conflict at 'a\.0'\.$/,
  },
  {
    name: 'an identifier without its array filter',
    docs: [{ _id: 1, a: [0] }],
    request: { query: {}, doc: { $set: { 'a.$[i]': 0 } } },
    expected: /^No array filter found for identifier 'i' in path 'a\.\$\[i\]'/,
  },
  {
    name: 'an unused array filter',
    docs: [{ _id: 1, a: [0] }],
    request: { query: {}, doc: { $set: { 'a.$[i]': 5 } }, arrayFilters: [{ i: 0 }, { j: 0 }] },
    expected: /^The array filter for identifier 'j' was not used in the update/,
  },
  {
    name: 'a bad array filter, named by its index',
    docs: [{ _id: 1, a: [0] }],
    request: { query: {}, doc: { $set: { 'a.$[i]': 5 } }, arrayFilters: [{ i: { $size: -1 } }] },
    expected: /^arrayFilters\[0\]: \$size on 'i' needs a non-negative integer/,
  },
  {
    name: '$[] and an index of the same array',
    docs: [{ _id: 1, a: [0] }],
    request: { query: {}, doc: { $set: { 'a.$[]': 5, 'a.0': 1 } } },
    expected: /^Updating the path 'a\.0' would create a conflict at 'a'/,
  },
  {
    name: '$rename of a positional path',
    docs: [{ _id: 1, a: [0] }],
    request: { query: {}, doc: { $rename: { 'a.$[]': 'b' } } },
    expected: /^The source field for \$rename may not be dynamic: a\.\$\[\]/,
  },
  {
    name: '$pull $in and a value',
    docs: [
      {
        _id: 1,
        fruits: ['apples', 'pears', 'oranges', 'grapes', 'bananas'],
        vegetables: ['carrots', 'celery', 'squash', 'carrots'],
      },
      {
        _id: 2,
        fruits: ['plums', 'kiwis', 'oranges', 'bananas', 'apples'],
        vegetables: ['broccoli', 'zucchini', 'carrots', 'onions'],
      },
    ],
    request: {
      query: {},
      doc: { $pull: { fruits: { $in: ['apples', 'oranges'] }, vegetables: 'carrots' } },
    },
    expected: [
      { _id: 1, fruits: ['pears', 'grapes', 'bananas'], vegetables: ['celery', 'squash'] },
      { _id: 2, fruits: ['plums', 'kiwis', 'bananas'], vegetables: ['broccoli', 'zucchini', 'onions'] },
    ],
  },
  {
    name: '$pull $gte',
    docs: [{ _id: 1, votes: [3, 5, 6, 7, 7, 8] }],
    request: { query: { _id: 1 }, doc: { $pull: { votes: { $gte: 6 } } } },
    expected: [{ _id: 1, votes: [3, 5] }],
  },
  {
    name: '$pull documents by two of their fields',
    docs: [
      {
        _id: 1,
        results: [
          { item: 'A', score: 5 },
          { item: 'B', score: 8 },
        ],
      },
      {
        _id: 2,
        results: [
          { item: 'C', score: 8 },
          { item: 'B', score: 4 },
        ],
      },
    ],
    request: { query: {}, doc: { $pull: { results: { score: 8, item: 'B' } } } },
    expected: [
      { _id: 1, results: [{ item: 'A', score: 5 }] },
      {
        _id: 2,
        results: [
          { item: 'C', score: 8 },
          { item: 'B', score: 4 },
        ],
      },
    ],
    counts: { matchedCount: 2, modifiedCount: 1 },
  },
  {
    name: '$pull with $elemMatch on a nested array',
    docs: [
      {
        _id: 1,
        results: [
          {
            item: 'A',
            score: 5,
            answers: [
              { q: 1, a: 4 },
              { q: 2, a: 6 },
            ],
          },
          {
            item: 'B',
            score: 8,
            answers: [
              { q: 1, a: 8 },
              { q: 2, a: 9 },
            ],
          },
        ],
      },
      {
        _id: 2,
        results: [
          {
            item: 'C',
            score: 8,
            answers: [
              { q: 1, a: 8 },
              { q: 2, a: 7 },
            ],
          },
          {
            item: 'B',
            score: 4,
            answers: [
              { q: 1, a: 0 },
              { q: 2, a: 8 },
            ],
          },
        ],
      },
    ],
    request: {
      query: {},
      doc: { $pull: { results: { answers: { $elemMatch: { q: 2, a: { $gte: 8 } } } } } },
    },
    expected: [
      {
        _id: 1,
        results: [
          {
            item: 'A',
            score: 5,
            answers: [
              { q: 1, a: 4 },
              { q: 2, a: 6 },
            ],
          },
        ],
      },
      {
        _id: 2,
        results: [
          {
            item: 'C',
            score: 8,
            answers: [
              { q: 1, a: 8 },
              { q: 2, a: 7 },
            ],
          },
        ],
      },
    ],
  },
  {
    name: '$pull $or of field conditions, $exists and $type',
    docs: [{ _id: 1, a: [{ b: 1 }, { c: 2 }, { b: 'x', c: 3 }, { d: 1 }] }],
    request: {
      query: {},
      doc: { $pull: { a: { $or: [{ b: { $type: 'number' } }, { c: 2 }, { d: { $exists: true } }] } } },
    },
    expected: [{ _id: 1, a: [{ b: 'x', c: 3 }] }],
  },
  {
    name: '$pull with $[<id>]',
    docs: [
      {
        _id: 0,
        a: [
          [0, 1],
          [1, 2],
        ],
      },
    ],
    request: { query: {}, doc: { $pull: { 'a.$[i]': 1 } }, arrayFilters: [{ i: 2 }] },
    expected: [{ _id: 0, a: [[0, 1], [2]] }],
  },
  {
    // The manual's form {$pull: {tags: {$regex: "^a"}}}: case-sensitive, on strings; an element
    // that is an array is matched as {tags: element} is, through its own elements (MongoDB's
    // PullNode wraps the element and matches it as a document).
    name: '$pull $regex',
    docs: [{ _id: 1, tags: ['apple', 'banana', 'avocado', 'Apricot', 1, ['apple'], ['b']] }],
    request: { query: {}, doc: { $pull: { tags: { $regex: '^a' } } } },
    expected: [{ _id: 1, tags: ['banana', 'Apricot', 1, ['b']] }],
  },
  {
    name: '$pull $regex with $options on a field of document elements',
    docs: [{ _id: 1, items: [{ name: 'Apple' }, { name: 'pear' }, { name: 'apricot' }, {}] }],
    request: { query: {}, doc: { $pull: { items: { name: { $regex: '^a', $options: 'i' } } } } },
    expected: [{ _id: 1, items: [{ name: 'pear' }, {}] }],
  },
  {
    name: '$pull $not $regex',
    docs: [{ _id: 1, a: ['ab', 'b', 'ac'] }],
    request: { query: {}, doc: { $pull: { a: { $not: { $regex: '^a' } } } } },
    expected: [{ _id: 1, a: ['ab', 'ac'] }],
  },
  {
    // JavaScript's engine would backtrack for years on this string: the test is stopped, and
    // nothing is written.
    name: '$pull with a runaway $regex',
    docs: [{ _id: 1, a: ['ab', `${'a'.repeat(40)}b`] }],
    request: { query: {}, doc: { $pull: { a: { $regex: '(a+)+$' } } } },
    expected: /^A \$regex ran for more than \d+ ms in all, and was stopped/,
  },
  {
    name: '$pull with an invalid $regex',
    docs: [{ _id: 1, a: ['x'] }],
    request: { query: {}, doc: { $pull: { a: { $regex: '[' } } } },
    expected: /^In the condition of \$pull on 'a': \$regex on 'a' has a character class that is never closed/,
  },
];

describe.each([false, true])('positional updates and $pull conditions (indexed: %s)', (indexed) => {
  let col: Awaited<ReturnType<typeof freshCollection>>;
  beforeAll(async () => {
    col = await freshCollection(t);
    if (indexed) for (const key of INDEXED) await col.index([key]);
  });

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const cleared = await col.call('delete', { query: {} });
    expect(cleared.status, cleared.text).toBe(200);
    if (c.docs.length > 0) await col.insert(c.docs);
    const res = await col.call('update', c.request);
    if (c.expected instanceof RegExp) {
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail).toMatch(c.expected);
      expect(await col.read({ sort: { _id: 1 } })).toStrictEqual(c.docs);
      return;
    }
    expect(res.status, res.text).toBe(200);
    if (c.counts) expect(res.body.result).toMatchObject(c.counts);
    expect(await col.read({ sort: { _id: 1 } })).toStrictEqual(c.expected);
  });
});

it('refuses arrayFilters that are not an array of objects before parsing the update', async () => {
  const col = await freshCollection(t);
  for (const arrayFilters of [{ i: 0 }, ['bad']]) {
    const res = await col.call('update', { query: {}, doc: { $set: { 'a.$[i]': 5 } }, arrayFilters });
    expect(res.status, res.text).toBe(400);
  }
});
