/**
 * One $regex, two engines: filters run it in SQL (like_regex, PostgreSQL's ARE), while $pull,
 * arrayFilters, positional $ and the $elemMatch projection run it in TypeScript (JavaScript's
 * RegExp). mongo/regex/translate.ts writes both from one reading of the PCRE pattern; here both are held
 * to MongoDB's answer for every row of the shared table, through the API, with and without indexes
 * on the paths, and a property compares the two engines on random patterns from a small grammar.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { propertyRuns } from '../helpers/property-runs.js';
import {
  DIFFERENTIAL_REGEX_OPTIONS,
  DIFFERENTIAL_REGEXES,
  REFUSED_REGEXES,
  REGEX_CASES,
} from '../helpers/regex-cases.js';
import { freshCollection } from './storage-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const regex = (pattern: string, options: string) =>
  options ? { $regex: pattern, $options: options } : { $regex: pattern };

describe.each([false, true])('SQL and TypeScript give MongoDB’s answer (indexed: %s)', (indexed) => {
  let col: Awaited<ReturnType<typeof freshCollection>>;
  beforeAll(async () => {
    col = await freshCollection(t);
    if (indexed) for (const key of ['s', 'arr']) await col.index([key]);
    await col.insert(REGEX_CASES.map(([, , subject], i) => ({ _id: i, s: subject, arr: [subject] })));
  });

  it.each(REGEX_CASES.map((c, i) => [i, ...c] as const))(
    '#%i %j (options %j) on %j: %s',
    async (i, pattern, options, _subject, matches) => {
      const cond = regex(pattern, options);
      const sql = (await col.ids({ query: { _id: i, s: cond } })).length === 1;
      const [projected] = await col.read({ query: { _id: i }, fields: { arr: { $elemMatch: cond } } });
      const res = await col.call('update', { query: { _id: i }, doc: { $pull: { arr: cond } } });
      expect(res.status, res.text).toBe(200);
      const [after] = await col.read({ query: { _id: i } });
      expect({
        sql,
        elemMatchProjection: projected !== undefined && 'arr' in projected,
        pull: Array.isArray(after?.arr) && after.arr.length === 0,
      }).toStrictEqual({ sql: matches, elemMatchProjection: matches, pull: matches });
    },
  );
});

describe('patterns refused for one engine are refused for both', () => {
  it.each(REFUSED_REGEXES)('%j', async (pattern, options, detail) => {
    const col = await freshCollection(t);
    await col.insert([{ _id: 1, s: 'x', arr: ['x'] }]);
    const cond = regex(pattern, options);
    for (const [op, body] of [
      ['read', { query: { s: cond } }],
      ['read', { fields: { arr: { $elemMatch: cond } } }],
      ['update', { query: {}, doc: { $pull: { arr: cond } } }],
      ['update', { query: {}, doc: { $set: { 'arr.$[e]': 'y' } }, arrayFilters: [{ e: cond }] }],
    ] as const) {
      const res = await col.call(op, body);
      expect(res.status, `${op} ${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body.code).toBe('INVALID_QUERY');
      expect(res.body.detail).toMatch(detail);
    }
    expect(await col.read({})).toStrictEqual([{ _id: 1, s: 'x', arr: ['x'] }]);
  });
});

// Pieces whose meaning differs between PCRE, ARE and JavaScript unless translated.
const PIECES = [
  '^',
  '$',
  '.',
  'a',
  'A',
  'é',
  '😀',
  '\\n',
  '\\w',
  '\\W',
  '\\s',
  '\\S',
  '\\d',
  '\\b',
  '\\B',
  '\\z',
  '\\Z',
  '\\A',
  '[^a]',
  '[[:alpha:]]',
  '[[:punct:]\\d]',
  '(?=a)',
  '(?<!a)',
  '(a|\\n)',
  '(.)\\1',
  '|',
  'É',
  '[à-ÿ]',
  '[^\\n]',
  '\\x{1F600}',
  '[\\w-]',
  '[a-z]',
  '[^s]',
  '*',
  '+',
  '?',
  '{2}',
  ' ',
  '#x\n',
];
const SUBJECTS = [
  ...new Set([
    ...REGEX_CASES.map(([, , s]) => s),
    'a\n',
    '\na',
    'a\r\n',
    'A\u2028a',
    'aé😀',
    ' a',
    'x\na\n',
    'é\né',
    '😀\n😀',
    'a1!',
    'aa',
  ]),
];
// A quantifier right after an anchor or another quantifier is a syntax error on every engine;
// the grammar keeps to patterns they compile, so the property compares answers.
const QUANTIFIERS = new Set(['*', '+', '?', '{2}']);
const ZERO_WIDTH = new Set(['^', '$', '\\b', '\\B', '\\z', '\\Z', '\\A', '(?=a)', '(?<!a)', ' ', '#x\n']);
const patternArb = fc
  .array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 5 })
  .filter((pieces) =>
    pieces.every(
      (p, i) =>
        !QUANTIFIERS.has(p) ||
        (i > 0 && !QUANTIFIERS.has(pieces[i - 1] as string) && !ZERO_WIDTH.has(pieces[i - 1] as string)),
    ),
  )
  .map((pieces) => pieces.join(''));
const optionsArb = fc.subarray(['i', 'm', 's', 'x']).map((o) => o.join(''));

describe('property: like_regex and RegExp agree on random patterns', () => {
  let col: Awaited<ReturnType<typeof freshCollection>>;
  beforeAll(async () => {
    col = await freshCollection(t);
    await col.insert(SUBJECTS.map((s, i) => ({ _id: i, s, arr: [s] })));
  });

  const agree = async (pattern: string, options: string) => {
    const cond = regex(pattern, options);
    const sql = await col.call('read', { query: { s: cond }, limit: 1000 });
    const ts = await col.call('read', { fields: { arr: { $elemMatch: cond } }, limit: 1000 });
    expect(ts.status, ts.text).toBe(sql.status);
    if (sql.status !== 200) return;
    const bySql = (sql.body.result as { _id: number }[]).map((d) => SUBJECTS[d._id]);
    const byTs = (ts.body.result as { _id: number; arr?: unknown }[])
      .filter((d) => 'arr' in d)
      .map((d) => SUBJECTS[d._id]);
    expect(byTs.sort(), `${pattern} (options ${options})`).toStrictEqual(bySql.sort());
  };

  it('on the storage differential’s patterns, with each of its options', async () => {
    for (const pattern of DIFFERENTIAL_REGEXES)
      for (const options of ['', ...DIFFERENTIAL_REGEX_OPTIONS]) await agree(pattern, options);
  });

  it('the documents a filter reads in SQL are those the $elemMatch projection keeps', async () => {
    await fc.assert(fc.asyncProperty(patternArb, optionsArb, agree), { numRuns: propertyRuns(150) });
  });
});
