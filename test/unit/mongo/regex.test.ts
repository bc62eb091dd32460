/**
 * The JavaScript form of a MongoDB regex (mongo/regex/translate.ts compileRegexJs): MongoDB's answer for
 * every row of the shared table, what the translation writes, and the constructs it refuses. The
 * same table runs against like_regex and through the API in regex-agreement.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { QueryError } from '../../../errors.js';
import { matchFilter } from '../../../mongo/filter/match.js';
import { parseFilter } from '../../../mongo/filter/parse.js';
import { REGEX_TIME_LIMIT_MS, RegexSession } from '../../../mongo/regex/run.js';
import { compileRegexJs, isBoundedRegex, translateRegex } from '../../../mongo/regex/translate.js';
import { REFUSED_REGEXES, REGEX_CASES } from '../../helpers/regex-cases.js';

describe('compileRegexJs gives MongoDB’s answer', () => {
  it.each(REGEX_CASES)('%j (options %j) on %j: %s', (pattern, options, subject, matches) => {
    expect(compileRegexJs(pattern, options, 's').test(subject)).toBe(matches);
  });
});

describe('what the JavaScript form is', () => {
  const W = 'A-Za-z0-9_';
  it.each([
    // The long s folds into [A-Za-z] under JavaScript's i: kept out of \w and ASCII classes.
    ['\\w\\W\\d', '', `(?:(?!\\u{17f})[${W}])(?:\\u{17f}|[^${W}])[0-9]`],
    ['[a-z][^0-9é]', 'i', '(?:(?!\\u{17f})[a-z])[^0-9é]', 'iu'],
    ['\\s', '', '[ \\t\\n\\v\\f\\r]'],
    ['a.b', '', 'a[^\\n]b'],
    ['a.b', 's', 'a[^]b'],
    ['^a$', '', '^a(?=\\n?$)'],
    ['^a$', 'm', '(?:^|(?<=\\n)(?!$))a(?=\\n|$)'],
    ['\\Aa\\z\\Z', '', '^a$(?=\\n?$)'],
    ['A', 'imsx', 'A', 'iu'],
    ['[[:alpha:][:digit:]]', '', '[A-Za-z0-9]'],
    ['\\x{1F600}\\x41\\e\\a\\cA\\0', '', '\\u{1f600}\\u{41}\\u{1b}\\u{7}\\u{1}\\u{0}'],
    ['\\-\\#\\/', '', '\\u{2d}\\u{23}\\/'],
    ['[\\-\\#]', '', '[\\-\\u{23}]'],
    ['a{1,2}{x}]', '', 'a{1,2}\\{x\\}\\]'],
    ['[]a]', '', '[\\]a]'],
  ])('%j with options %j → %s', (pattern, options, js, flags = 'u') => {
    // Every match starts on a character boundary: see compileRegexJs.
    expect(String(compileRegexJs(pattern, options, 'f'))).toBe(`/^[^]*?(?:${js})/${flags}`);
  });

  it('reads the pattern as the SQL translation does: x strips the same white space and comments', () => {
    const source = 'a b # c\n[ #]\\ d';
    expect(compileRegexJs(source, 'x', 'f').test('ab# d')).toBe(true);
    expect(translateRegex(source, 'x', 'f').pattern).toBe('ab[ #]\\ d');
  });
});

describe('refusals are the same for both engines', () => {
  it.each(REFUSED_REGEXES)('%j', (pattern, options, detail) => {
    expect(() => compileRegexJs(pattern, options, 's')).toThrow(QueryError);
    expect(() => compileRegexJs(pattern, options, 's')).toThrow(detail);
  });
  it.each(['(?>a)', 'a*+', '(?i)a', '\\K', '(?#c)', '[\\W]', '[a', '\\', '\\g1', '\\k<a>'])(
    'refuses %s before either engine sees it',
    (pattern) => {
      expect(() => compileRegexJs(pattern, '', 's')).toThrow(QueryError);
      expect(() => translateRegex(pattern, '', 's')).toThrow(QueryError);
    },
  );
  it('names the path and refuses bad options', () => {
    expect(() => parseFilter({ 'a.b': { $regex: '(' } })).toThrow(/^\$regex on 'a\.b' is not a valid/);
    expect(() => compileRegexJs('a', 'g', 's')).toThrow(/\$options on 's' may only hold/);
  });
});

describe('$regex in filter/match.ts', () => {
  it.each([
    [{ s: { $regex: '^a' } }, { s: 'ab' }, true],
    [{ s: { $regex: '^a' } }, { s: ['b', 'ab'] }, true],
    [{ s: { $regex: '^a' } }, { s: [['ab']] }, false],
    [{ s: { $regex: '^a' } }, { s: 1 }, false],
    [{ s: { $regex: '' } }, { s: null }, false],
    [{ s: { $regex: '' } }, {}, false],
    [{ s: { $regex: '^a' } }, { s: { a: 1 } }, false],
    [{ 's.t': { $regex: 'x' } }, { s: [{ t: 'x' }, { t: 1 }] }, true],
    [{ s: { $not: { $regex: '^a' } } }, { s: ['b', 'c'] }, true],
    [{ s: { $not: { $regex: '^a' } } }, { s: ['b', 'ab'] }, false],
    [{ s: { $not: { $regex: '^a' } } }, {}, true],
    [{ s: { $elemMatch: { $regex: '^a', $options: 'i' } } }, { s: ['b', 'Ab'] }, true],
    [{ s: { $regex: '^a', $ne: 'ab' } }, { s: 'ab' }, false],
  ])('%j on %j: %s', (query, doc, matches) => {
    expect(matchFilter(doc, parseFilter(query))).toBe(matches);
  });

  it('records the element a $regex matched for $', () => {
    const details: { elemMatchKey?: number } = {};
    expect(matchFilter({ a: ['b', 'ab', 'ac'] }, parseFilter({ a: { $regex: '^a' } }), details)).toBe(true);
    expect(details.elemMatchKey).toBe(1);
  });
});

describe('a runaway pattern does not hold the process (regex/run.ts)', () => {
  it.each([
    ['^abc\\b[a-z]$', '', true],
    ['a b', 'x', true],
    ['a+', '', false],
    ['a|b', '', false],
    ['(a)\\1', '', false],
    ['a{2}', '', false],
    // Long enough that one start could cost much on a long string.
    ['a'.repeat(300), '', false],
  ])('%j (options %j) runs in this thread: %s', (pattern, options, bounded) => {
    expect(isBoundedRegex(compileRegexJs(pattern, options, 's'))).toBe(bounded);
  });

  // A request's matching runs in its regex session, which sends what may backtrack to a worker.
  const inSession = <R>(compute: () => R, session = new RegexSession()) => session.run(compute);

  it('gives the same answers on the worker thread, which long strings go to', async () => {
    const long = `${'x'.repeat(1_000_000)}ab\n`;
    expect(await inSession(() => matchFilter({ s: long }, parseFilter({ s: { $regex: 'ab$' } })))).toBe(true);
    expect(await inSession(() => matchFilter({ s: long }, parseFilter({ s: { $regex: 'ab\\z' } })))).toBe(
      false,
    );
    expect(
      await inSession(() => matchFilter({ s: long }, parseFilter({ s: { $regex: '^X', $options: 'i' } }))),
    ).toBe(true);
  });

  it('refuses to test a pattern that may backtrack outside a session', () => {
    expect(() => matchFilter({ s: `${'a'.repeat(40)}b` }, parseFilter({ s: { $regex: '(a+)+$' } }))).toThrow(
      /outside a RegexSession/,
    );
  });

  it('stops a catastrophic backtrack with a QueryError, and the next pattern still runs', async () => {
    const runaway = parseFilter({ s: { $regex: '(a+)+$' } });
    const started = Date.now();
    await expect(inSession(() => matchFilter({ s: `${'a'.repeat(40)}b` }, runaway))).rejects.toThrow(
      /ran for more than \d+ ms in all/,
    );
    expect(Date.now() - started).toBeLessThan(REGEX_TIME_LIMIT_MS + 5000);
    expect(await inSession(() => matchFilter({ s: 'aab' }, parseFilter({ s: { $regex: '^a+b$' } })))).toBe(
      true,
    );
    expect(await inSession(() => matchFilter({ s: 'aac' }, parseFilter({ s: { $regex: '^a+b$' } })))).toBe(
      false,
    );
  });

  it('stops a pattern whose strings each take part of the limit once they add up to it', async () => {
    // Each string backtracks for a while (milliseconds) and then fails; one alone stays far under
    // the limit. The fastest of a few timings, each in a session of its own with the worker warm,
    // is a floor for each string's time, so that enough strings are sent to pass the budget
    // several times over however loaded the machine is.
    const slow = parseFilter({ s: { $regex: '(a+)+$' } });
    const subject = `${'a'.repeat(20)}b`;
    let each = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      const one = Date.now();
      expect(await inSession(() => matchFilter({ s: subject }, slow))).toBe(false);
      each = Math.min(each, Math.max(1, Date.now() - one));
    }
    // Different strings: a session answers a string it has tested once from what it learnt.
    const strings = Array.from(
      { length: Math.ceil((3 * REGEX_TIME_LIMIT_MS) / each) + 1 },
      (_, i) => `${'a'.repeat(20)}${'c'.repeat(i % 50)}b${i}`,
    );
    const started = Date.now();
    await expect(inSession(() => matchFilter({ s: strings }, slow))).rejects.toThrow(
      /ran for more than \d+ ms in all/,
    );
    // Far less than the strings' total (3 x the limit): the budget is the request's, not each string's.
    expect(Date.now() - started).toBeLessThan(2 * REGEX_TIME_LIMIT_MS + 5000);
  });
});
