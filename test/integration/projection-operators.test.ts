/**
 * The projection operators through the API, with the documents and answers of MongoDB's manual
 * pages "$slice (projection)", "$elemMatch (projection)" and "$ (projection)": once on plain
 * collections and once with indexes on the queried paths (the SQL then differs, the documents the
 * projection sees must not).
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

const DOCS = [
  { _id: 1, semester: 1, grades: [70, 87, 90] },
  { _id: 2, semester: 1, grades: [90, 88, 92] },
  { _id: 3, semester: 1, grades: [85, 100, 90] },
  { _id: 4, semester: 2, grades: [79, 85, 80] },
  { _id: 5, semester: 2, grades: [88, 88, 92] },
  { _id: 6, semester: 2, grades: [95, 90, 96] },
  {
    _id: 7,
    semester: 3,
    grades: [
      { grade: 80, mean: 75, std: 8 },
      { grade: 85, mean: 90, std: 5 },
      { grade: 90, mean: 85, std: 3 },
    ],
  },
  {
    _id: 8,
    semester: 3,
    grades: [
      { grade: 92, mean: 88, std: 8 },
      { grade: 78, mean: 90, std: 5 },
      { grade: 88, mean: 85, std: 3 },
    ],
  },
  {
    _id: 10,
    zipcode: '63109',
    students: [
      { name: 'john', school: 102, age: 10 },
      { name: 'jess', school: 102, age: 11 },
      { name: 'jeff', school: 108, age: 15 },
    ],
  },
  {
    _id: 11,
    zipcode: '63110',
    students: [
      { name: 'ajax', school: 100, age: 7 },
      { name: 'achilles', school: 100, age: 8 },
    ],
  },
  {
    _id: 12,
    zipcode: '63109',
    students: [
      { name: 'ajax', school: 100, age: 7 },
      { name: 'achilles', school: 100, age: 8 },
    ],
  },
  {
    _id: 13,
    zipcode: '63109',
    students: [
      { name: 'barney', school: 102, age: 7 },
      { name: 'ruth', school: 102, age: 16 },
    ],
  },
  { _id: 30, a: [{ b: 1 }, { b: 2 }], zz: 1 },
  {
    _id: 20,
    comments: ['c1', 'c2', 'c3', 'c4', 'c5'],
    details: { colors: ['blue', 'red'], sizes: ['S', 'M'] },
    qty: 100,
  },
];

type Read = {
  query?: Record<string, unknown>;
  fields: Record<string, unknown>;
  sort?: Record<string, unknown>;
};

const CASES: [name: string, read: Read, expected: Record<string, unknown>[]][] = [
  // $ (projection)
  [
    '$: the first grade >= 85 of each semester-1 student',
    { query: { semester: 1, grades: { $gte: 85 } }, fields: { 'grades.$': 1 } },
    [
      { _id: 1, grades: [87] },
      { _id: 2, grades: [90] },
      { _id: 3, grades: [85] },
    ],
  ],
  [
    "$: a condition on the elements' field",
    { query: { 'grades.mean': { $gt: 70 } }, fields: { 'grades.$': 1 } },
    [
      { _id: 7, grades: [{ grade: 80, mean: 75, std: 8 }] },
      { _id: 8, grades: [{ grade: 92, mean: 88, std: 8 }] },
    ],
  ],
  [
    '$: an $elemMatch query on several fields',
    {
      query: { grades: { $elemMatch: { mean: { $gt: 70 }, grade: { $gt: 90 } } } },
      fields: { 'grades.$': 1 },
    },
    [{ _id: 8, grades: [{ grade: 92, mean: 88, std: 8 }] }],
  ],
  [
    '$: with another inclusion',
    { query: { semester: 2, grades: { $lt: 85 } }, fields: { semester: 1, 'grades.$': 1 } },
    [{ _id: 4, semester: 2, grades: [79] }],
  ],
  // $elemMatch (projection)
  [
    '$elemMatch: the first student of school 102',
    { query: { zipcode: '63109' }, fields: { students: { $elemMatch: { school: 102 } } } },
    [
      { _id: 10, students: [{ name: 'john', school: 102, age: 10 }] },
      { _id: 12 },
      { _id: 13, students: [{ name: 'barney', school: 102, age: 7 }] },
    ],
  ],
  [
    '$elemMatch: several fields',
    { query: { zipcode: '63109' }, fields: { students: { $elemMatch: { school: 102, age: { $gt: 10 } } } } },
    [
      { _id: 10, students: [{ name: 'jess', school: 102, age: 11 }] },
      { _id: 12 },
      { _id: 13, students: [{ name: 'ruth', school: 102, age: 16 }] },
    ],
  ],
  [
    '$elemMatch: after the included fields',
    { query: { _id: 10 }, fields: { students: { $elemMatch: { age: { $gte: 15 } } }, zipcode: 1 } },
    [{ _id: 10, zipcode: '63109', students: [{ name: 'jeff', school: 108, age: 15 }] }],
  ],
  [
    '$elemMatch: on values',
    { query: { semester: 2 }, fields: { _id: 0, grades: { $elemMatch: { $gte: 90 } } } },
    [{}, { grades: [92] }, { grades: [95] }],
  ],
  // $regex in the conditions: evaluated in TypeScript on the page read, with the regex's JavaScript form
  [
    '$elemMatch: a student whose name matches a $regex',
    { query: { zipcode: '63109' }, fields: { students: { $elemMatch: { name: { $regex: '^j' } } } } },
    [{ _id: 10, students: [{ name: 'john', school: 102, age: 10 }] }, { _id: 12 }, { _id: 13 }],
  ],
  [
    '$elemMatch: on values, with $regex and $options',
    {
      query: { _id: 20 },
      fields: { _id: 0, comments: { $elemMatch: { $regex: 'C[3-9]$', $options: 'i' } } },
    },
    [{ comments: ['c3'] }],
  ],
  [
    '$: a query with $regex',
    { query: { 'students.name': { $regex: '^ach' } }, fields: { 'students.$': 1 } },
    [
      { _id: 11, students: [{ name: 'achilles', school: 100, age: 8 }] },
      { _id: 12, students: [{ name: 'achilles', school: 100, age: 8 }] },
    ],
  ],
  // $slice (projection)
  [
    '$slice: the first three',
    { query: { _id: 20 }, fields: { comments: { $slice: 3 }, details: 0 } },
    [{ _id: 20, comments: ['c1', 'c2', 'c3'], qty: 100 }],
  ],
  [
    '$slice: the last three',
    { query: { _id: 20 }, fields: { comments: { $slice: -3 }, _id: 0, details: 0, qty: 0 } },
    [{ comments: ['c3', 'c4', 'c5'] }],
  ],
  [
    '$slice: skip 1, then 3',
    { query: { _id: 20 }, fields: { comments: { $slice: [1, 3] }, _id: 1 } },
    [{ _id: 20, comments: ['c2', 'c3', 'c4'] }],
  ],
  [
    '$slice: skip from the end',
    { query: { _id: 20 }, fields: { comments: { $slice: [-2, 5] }, _id: 1 } },
    [{ _id: 20, comments: ['c4', 'c5'] }],
  ],
  [
    '$slice: skip past the end',
    { query: { _id: 20 }, fields: { comments: { $slice: [10, 1] }, _id: 1 } },
    [{ _id: 20, comments: [] }],
  ],
  [
    '$slice: an embedded array in an inclusion keeps only it',
    { query: { _id: 20 }, fields: { qty: 1, 'details.colors': { $slice: 1 } } },
    [{ _id: 20, qty: 100, details: { colors: ['blue'] } }],
  ],
  [
    '$slice: an embedded array alone keeps the rest',
    { query: { _id: 20 }, fields: { 'details.colors': { $slice: -1 }, comments: 0 } },
    [{ _id: 20, details: { colors: ['red'], sizes: ['S', 'M'] }, qty: 100 }],
  ],
];

const ERRORS: [name: string, read: Read, detail: RegExp][] = [
  [
    '$ without a condition on the array',
    { query: { semester: 1 }, fields: { 'grades.$': 1 } },
    /Positional projection 'grades\.\$' does not match the query document/,
  ],
  [
    'two $',
    { query: { grades: 90, students: 1 }, fields: { 'grades.$': 1, 'students.$': 1 } },
    /more than one positional projection/,
  ],
  [
    '$ not at the end',
    { query: { grades: 90 }, fields: { 'grades.$.mean': 1 } },
    /may only be used at the end/,
  ],
  [
    '$ excluded',
    { query: { grades: 90 }, fields: { 'grades.$': 0 } },
    /Cannot exclude array elements with the positional operator/,
  ],
  [
    '$ with $slice',
    { query: { grades: 90 }, fields: { 'grades.$': { $slice: 1 } } },
    /positional projection grades\.\$/,
  ],
  [
    '$ and $elemMatch',
    { query: { grades: 90 }, fields: { 'grades.$': 1, students: { $elemMatch: { age: 1 } } } },
    /Cannot specify positional operator and \$elemMatch/,
  ],
  [
    '$ with no element recorded',
    { query: { grades: { $size: 3 } }, fields: { 'grades.$': 1 } },
    /found no array element the query matched/,
  ],
  [
    '$elemMatch on a nested field',
    { fields: { 'students.name': { $elemMatch: { $eq: 'x' } } } },
    /Cannot use \$elemMatch projection on a nested field/,
  ],
  [
    '$elemMatch with a number',
    { fields: { students: { $elemMatch: 1 } } },
    /\$elemMatch \(projection\) needs an object/,
  ],
  [
    '$elemMatch in an exclusion',
    { fields: { zipcode: 0, students: { $elemMatch: { age: 1 } } } },
    /Cannot do inclusion on field students in exclusion projection/,
  ],
  [
    '$elemMatch with an invalid $regex',
    { query: { _id: 10 }, fields: { students: { $elemMatch: { name: { $regex: 'a{2,1}' } } } } },
    /\$regex on 'name' is not a valid regular expression/,
  ],
  [
    '$slice with a limit of 0',
    { fields: { comments: { $slice: [1, 0] } } },
    /\$slice limit must be positive, got 0 \(at path comments\)/,
  ],
  [
    '$meta without $text',
    { fields: { score: { $meta: 'textScore' } } },
    /text score metadata, but it is not available/,
  ],
];

for (const indexed of [false, true]) {
  describe(`projection operators${indexed ? ' with indexes on the queried paths' : ''}`, () => {
    let col: Awaited<ReturnType<typeof freshCollection>>;
    beforeAll(async () => {
      col = await freshCollection(t);
      if (indexed)
        for (const key of ['grades', 'grades.mean', 'semester', 'zipcode', 'students.name', 'comments'])
          await col.index([key]);
      await col.insert(DOCS);
    });

    it.each(CASES)('%s', async (_name, read, expected) => {
      const docs = await col.read({ sort: { _id: 1 }, ...read });
      // Key order aside: JSONB keeps its own (docs/storage.md, Deviations).
      expect(docs).toStrictEqual(expected);
    });

    it('puts the $elemMatch field after the included fields (MongoDB 4.4+)', async () => {
      // JSONB stores `a` before `zz`; the projection's order wins.
      const [doc] = await col.read({ query: { _id: 30 }, fields: { a: { $elemMatch: { b: 2 } }, zz: 1 } });
      expect(JSON.stringify(doc)).toBe('{"_id":30,"zz":1,"a":[{"b":2}]}');
    });

    it.each(ERRORS)('400 INVALID_QUERY: %s', async (_name, read, detail) => {
      const res = await col.call('read', read);
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail).toMatch(detail);
    });
  });
}
