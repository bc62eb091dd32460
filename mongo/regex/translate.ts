import { QueryError } from '../../errors.js';

export const MAX_REGEX_LENGTH = 4096;

/**
 * MongoDB regexes are PCRE; jsonpath's like_regex is PostgreSQL's ARE, and conditions evaluated in
 * TypeScript run JavaScript's RegExp. One tokenizer reads the PCRE pattern and writes it for either
 * engine (see Dialect): the class escapes, anchors, dot and POSIX classes are rewritten to keep
 * PCRE's meaning, and constructs either engine lacks are refused rather than silently meaning
 * something else.
 */
const UNSUPPORTED: [RegExp, string][] = [
  [/^\(\?</, 'named groups (?<name>…)'],
  [/^\(\?P/, 'named groups (?P…)'],
  [/^\(\?>/, 'atomic groups (?>…)'],
  [/^\(\?#/, 'comments (?#…)'],
  [/^\(\?[a-zA-Z-]+[:)]/, 'inline options (?i) inside the pattern; use $options'],
  [/^\\[pPXRKGhHvVNQE]/, 'this escape'],
  [/^[*+?}]\+/, 'possessive quantifiers'],
];

const OPTIONS = /^[imsxu]*$/;

export interface TranslatedRegex {
  pattern: string;
  flags: string;
}

// MongoDB's PCRE runs without Unicode properties: \w, \d, \s, \b and the POSIX classes are ASCII.
// PostgreSQL's are Unicode- or locale-aware ('é' is a word character there), and JavaScript's \s
// is Unicode, so both targets get them spelled out.
const WORD = 'A-Za-z0-9_';
const SPACE = ' \\t\\n\\v\\f\\r';
const boundary = (w: string) => `(?:(?<=${w})(?!${w})|(?<!${w})(?=${w}))`;
const notBoundary = (w: string) => `(?:(?<=${w})(?=${w})|(?<!${w})(?!${w}))`;
const CLASS_ESCAPES: Record<string, string> = {
  w: `[${WORD}]`,
  W: `[^${WORD}]`,
  b: boundary(`[${WORD}]`),
  B: notBoundary(`[${WORD}]`),
  d: '[0-9]',
  D: '[^0-9]',
  s: `[${SPACE}]`,
  S: `[^${SPACE}]`,
};
const INSIDE: Record<string, string> = { w: WORD, d: '0-9', s: SPACE };
const POSIX: Record<string, string> = {
  alpha: 'A-Za-z',
  digit: '0-9',
  alnum: 'A-Za-z0-9',
  upper: 'A-Z',
  lower: 'a-z',
  space: SPACE,
  blank: ' \\t',
  punct: '!-/:-@\\[-`{-~',
  print: ' -~',
  graph: '!-~',
  // From U+0001: JSONB holds no NUL. \u and four digits, the one code form both engines read alike.
  cntrl: '\\u0001-\\u001f\\u007f',
  xdigit: '0-9A-Fa-f',
  word: WORD,
  ascii: '\\u0001-\\u007f',
};

/**
 * What differs between the two engines a MongoDB regex is rewritten for: like_regex (PostgreSQL's
 * ARE, for filters run in SQL) and JavaScript's RegExp (for conditions evaluated on a document in
 * TypeScript: $pull, arrayFilters, positional and $elemMatch projections). Everything else is the
 * one tokenizer below, so both read a pattern the same way.
 */
interface Dialect {
  /** Escapes whose meaning is PCRE's on one engine and something else on the other. */
  escapes: Record<string, string>;
  /** PCRE's `$` without m, and `\Z`: the end, or just before a final newline. */
  end: string;
  /** PCRE's `^` with m: the start, or after a newline that is not the last character. */
  lineStart: string;
  /** PCRE's `$` with m: before any newline, or the end. */
  lineEnd: string;
  /** PCRE's `.` without and with s. */
  dot: string;
  dotAll: string;
  /** A PCRE escape of a character that is not a letter or digit: that character, literally. */
  literal(ch: string, inClass: boolean): string;
  /** A character given by its code (\x, \0, \c, \a, \e). */
  code(cp: number): string;
  /** A negated class never matches a newline unless the newline is written as an alternative. */
  negationSkipsNewline: boolean;
  /** With i, an ASCII class would also take 'ſ' (see FOLDS_TO_WORD). */
  classFoldsBeyondAscii: boolean;
}

// like_regex runs ARE with REG_NLSTOP unless its s flag is given: '.' and every negated class then
// skip the newline, where PCRE's negated classes (and \W, \D) match it whatever the options.
const ARE: Dialect = {
  escapes: {
    ...CLASS_ESCAPES,
    W: `(?:${CLASS_ESCAPES.W}|\\n)`,
    D: `(?:${CLASS_ESCAPES.D}|\\n)`,
    z: '\\Z',
    A: '\\A',
  },
  end: '(?=\\n?\\Z)',
  lineStart: '(?:\\A|(?<=\\n)(?!\\Z))',
  // With like_regex's m flag, $ is PCRE's multiline $ already.
  lineEnd: '$',
  // like_regex's dot excludes only the newline unless its s flag is given, as PCRE's.
  dot: '.',
  dotAll: '.',
  // ARE reads a backslash before a letter or digit as an escape: one before any other letter
  // (PCRE's \é is é) is left out.
  literal: (ch) => (/\p{L}|\p{N}/u.test(ch) ? ch : `\\${ch}`),
  code: (cp) => `\\U${cp.toString(16).padStart(8, '0')}`,
  negationSkipsNewline: true,
  classFoldsBeyondAscii: false,
};

// JavaScript runs with its u flag: the pattern then reads code points (an astral character is one
// character for '.', a class and a quantifier, as in MongoDB's UTF-8 PCRE), and the stricter u
// syntax is what this dialect emits (every escape of a non-letter is one u accepts). Its own m and s
// flags are not used: its line terminators include \r, U+2028 and U+2029, PCRE's only \n.
// With i and u, JavaScript folds the long s 'ſ' into [A-Za-z] (it folds to s); like_regex does
// not, nor does PCRE's \w. (Both engines fold the Kelvin sign into k, as PCRE2's ranges do.)
const FOLDS_TO_WORD = '\\u{17f}';
const JS_WORD = `(?:(?!${FOLDS_TO_WORD})[${WORD}])`;
const SYNTAX = new Set('^$\\.*+?()[]{}|/-');
const JS: Dialect = {
  // Without JavaScript's m flag, its ^ and $ are the very start and end.
  escapes: {
    ...CLASS_ESCAPES,
    w: JS_WORD,
    W: `(?:${FOLDS_TO_WORD}|[^${WORD}])`,
    b: boundary(JS_WORD),
    B: notBoundary(JS_WORD),
    z: '$',
    A: '^',
  },
  end: '(?=\\n?$)',
  lineStart: '(?:^|(?<=\\n)(?!$))',
  lineEnd: '(?=\\n|$)',
  dot: '[^\\n]',
  dotAll: '[^]',
  literal: (ch, inClass) =>
    SYNTAX.has(ch) && (inClass || ch !== '-')
      ? `\\${ch}`
      : `\\u{${(ch.codePointAt(0) as number).toString(16)}}`,
  code: (cp) => `\\u{${cp.toString(16)}}`,
  negationSkipsNewline: false,
  classFoldsBeyondAscii: true,
};

// PCRE2's escapes of letters; any other letter is an error in PCRE2, and means something else (or
// nothing) on the engines here, so it is refused rather than read another way.
const KNOWN_LETTERS = new Set('abBcdDefnrsStwWxzZA');

function refuse(path: string, rest: string, what: string): never {
  throw new QueryError(
    `$regex on '${path}' uses ${what}, which is not supported (at '${rest.slice(0, 12)}').`,
  );
}

/**
 * The escape at `at` (the backslash) and how many characters it spans. Characters given by a code
 * (\x, \0, \c, \a, \e) go through the dialect; class escapes inside a class are spelled inline.
 */
function translateEscape(
  pcre: string,
  at: number,
  inClass: boolean,
  dialect: Dialect,
  path: string,
): [string, number] {
  const next = pcre[at + 1];
  if (next === undefined) throw new QueryError(`$regex on '${path}' ends with a lone backslash.`);
  const rest = pcre.slice(at);
  if (/[0-9]/.test(next)) {
    if (next === '0') {
      // \0 and up to two more octal digits: a character.
      const digits = /^0[0-7]{0,2}/.exec(pcre.slice(at + 1))?.[0] as string;
      return [dialect.code(Number.parseInt(digits, 8)), 1 + digits.length];
    }
    if (inClass) refuse(path, rest, 'a back reference or octal escape inside a character class');
    const digits = /^[0-9]+/.exec(pcre.slice(at + 1))?.[0] as string;
    return [`\\${digits}`, 1 + digits.length];
  }
  if (!/[A-Za-z]/.test(next)) return [dialect.literal(next, inClass), 2];
  if (!KNOWN_LETTERS.has(next)) refuse(path, rest, `the escape \\${next}`);
  switch (next) {
    case 'a':
      return [dialect.code(7), 2];
    case 'e':
      return [dialect.code(0x1b), 2];
    case 'c': {
      const ch = pcre[at + 2];
      if (ch === undefined || ch.charCodeAt(0) > 0x7e || ch.charCodeAt(0) < 0x20)
        refuse(path, rest, '\\c without a printable ASCII character after it');
      return [dialect.code(ch.toUpperCase().charCodeAt(0) ^ 0x40), 3];
    }
    case 'x': {
      const braced = /^x\{([0-9A-Fa-f]+)\}/.exec(pcre.slice(at + 1));
      if (braced) {
        const cp = Number.parseInt(braced[1] as string, 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
          refuse(path, rest, 'a \\x{…} escape that is not a Unicode character');
        return [dialect.code(cp), 1 + braced[0].length];
      }
      if (pcre[at + 2] === '{') refuse(path, rest, 'a \\x{…} escape without hexadecimal digits');
      const hex = /^x([0-9A-Fa-f]{0,2})/.exec(pcre.slice(at + 1))?.[1] as string;
      return [dialect.code(hex === '' ? 0 : Number.parseInt(hex, 16)), 2 + hex.length];
    }
    case 'n':
    case 'r':
    case 't':
    case 'f':
      return [`\\${next}`, 2];
  }
  if (inClass) {
    if (next in INSIDE) return [INSIDE[next] as string, 2];
    // A backspace, in PCRE and in both engines.
    if (next === 'b') return ['\\b', 2];
    refuse(path, rest, `\\${next} inside a character class`);
  }
  if (next === 'Z') return [dialect.end, 2];
  return [dialect.escapes[next] as string, 2];
}

/**
 * The index of the ']' that closes the character class opened at `open`, or -1. A ']' right after
 * '[' or '[^' is a literal, and so is one closing a POSIX class such as [:alpha:].
 */
function classEnd(source: string, open: number): number {
  let i = open + 1;
  if (source[i] === '^') i++;
  if (source[i] === ']') i++;
  for (; i < source.length; i++) {
    const ch = source[i];
    if (ch === '\\') i++;
    else if (ch === '[' && /^\[([:.=])[^\]]*\1\]/.test(source.slice(i))) i = source.indexOf(']', i);
    else if (ch === ']') return i;
  }
  return -1;
}

function classAt(source: string, open: number, path: string): number {
  const end = classEnd(source, open);
  if (end < 0)
    throw new QueryError(
      `$regex on '${path}' has a character class that is never closed (at '${source.slice(open, open + 12)}').`,
    );
  return end;
}

// PCRE's white space for the x option.
const EXTENDED_SPACE = new Set([' ', '\t', '\n', '\v', '\f', '\r']);

/**
 * PCRE's extended mode (the x option): white space and '#' comments up to the end of the line are
 * not part of the pattern, except when escaped or inside a character class. like_regex has no such
 * mode (PostgreSQL raises 0A000 for its x flag once a string is tested), so they are removed here.
 */
function stripExtended(source: string, path: string): string {
  let out = '';
  for (let i = 0; i < source.length; i++) {
    const ch = source[i] as string;
    if (ch === '\\') {
      out += source.slice(i, i + 2);
      i++;
    } else if (ch === '[') {
      const end = classAt(source, i, path);
      out += source.slice(i, end + 1);
      i = end;
    } else if (ch === '#') {
      const eol = source.indexOf('\n', i);
      i = eol < 0 ? source.length : eol;
    } else if (!EXTENDED_SPACE.has(ch)) {
      out += ch;
    }
  }
  return out;
}

function checkOptions(source: string, options: string, path: string): void {
  if (source.length > MAX_REGEX_LENGTH)
    throw new QueryError(`$regex on '${path}' is longer than ${MAX_REGEX_LENGTH} characters.`);
  if (!OPTIONS.test(options))
    throw new QueryError(
      `$options on '${path}' may only hold the letters i, m, s, x and u; got '${options}'.`,
    );
}

/** The one reading of a PCRE pattern, written out for `dialect`. */
function translate(source: string, options: string, path: string, dialect: Dialect): string {
  return translateWithReferences(source, options, path, dialect).text;
}

function translateWithReferences(
  source: string,
  options: string,
  path: string,
  dialect: Dialect,
): { text: string; backReferences: boolean } {
  checkOptions(source, options, path);
  const pcre = options.includes('x') ? stripExtended(source, path) : source;
  const multiline = options.includes('m');
  const dotAll = options.includes('s');
  const caseless = options.includes('i');
  let out = '';
  let backReferences = false;
  for (let i = 0; i < pcre.length; i++) {
    const rest = pcre.slice(i);
    const ch = pcre[i] as string;
    if (!rest.startsWith('(?:') && !rest.startsWith('(?=') && !rest.startsWith('(?!')) {
      for (const [re, what] of UNSUPPORTED) {
        if (!rest.startsWith('(?<=') && !rest.startsWith('(?<!') && re.test(rest)) refuse(path, rest, what);
      }
    }
    if (ch === '\\') {
      backReferences ||= /[1-9]/.test(pcre[i + 1] ?? '');
      const [text, length] = translateEscape(pcre, i, false, dialect, path);
      out += text;
      i += length - 1;
    } else if (ch === '[') {
      const close = classAt(pcre, i, path);
      const cls = translateClass(pcre, i, close, dialect, path);
      const negated = pcre[i + 1] === '^';
      if (dialect.negationSkipsNewline && negated && negationHasNewline(pcre, i, close, path))
        out += `(?:${cls}|\\n)`;
      else if (dialect.classFoldsBeyondAscii && caseless && !/\P{ASCII}/u.test(pcre.slice(i, close)))
        out += negated ? `(?:${FOLDS_TO_WORD}|${cls})` : `(?:(?!${FOLDS_TO_WORD})${cls})`;
      else out += cls;
      i = close;
    } else if (ch === '$') {
      out += multiline ? dialect.lineEnd : dialect.end;
    } else if (ch === '^') {
      out += multiline ? dialect.lineStart : '^';
    } else if (ch === '.') {
      out += dotAll ? dialect.dotAll : dialect.dot;
    } else if (ch === '{') {
      // A repetition count is copied whole; any other '{' is a literal in PCRE, and so are a
      // lone '}' and ']' (JavaScript's u syntax and ARE want them escaped).
      const count = /^\{[0-9]+(,[0-9]*)?\}/.exec(rest)?.[0];
      out += count ?? '\\{';
      i += count ? count.length - 1 : 0;
    } else if (ch === '}' || ch === ']') {
      out += `\\${ch}`;
    } else {
      out += ch;
    }
  }
  return { text: out, backReferences };
}

export function translateRegex(source: string, options: string, path: string): TranslatedRegex {
  const { text, backReferences } = translateWithReferences(source, options, path, ARE);
  // With a back reference PostgreSQL runs another engine, whose unanchored search misses matches
  // that an alternative of zero width finds: '123' ~ '$|(.)\1' is false on PostgreSQL 15 and 17.
  // Anchored at the start with a lazy prefix the same pattern is found wherever it starts, and
  // the engine answers truly; the group numbers stay, the prefix captures nothing.
  const pattern = backReferences ? `\\A(?:.|\\n)*?(?:${text})` : text;
  // like_regex flags: i, s (dot matches newline), m (multiline). MongoDB's default (no s) already
  // matches: like_regex's dot does not match a newline unless s is given. x was applied above.
  const flags = [...new Set(options.replace(/[ux]/g, '').split(''))].join('');
  return { pattern, flags };
}

const BOUNDED = new WeakSet<RegExp>();
const BOUNDED_LENGTH = 256;

/** Whether `re` runs in time linear in the string it tests (see regex/run.ts). */
export function isBoundedRegex(re: RegExp): boolean {
  return BOUNDED.has(re);
}

/**
 * The same pattern as a JavaScript RegExp, compiled once (per request) for the conditions evaluated
 * in TypeScript. m and s are spelled out by the translation; only i remains a flag.
 */
export function compileRegexJs(source: string, options: string, path: string): RegExp {
  // V8 also tries a match between the two halves of an astral character, where a pattern of
  // lookarounds alone could hold; starting from ^ over whole code points ([^] under the u flag)
  // keeps every attempt on a character boundary, as PCRE's are.
  const translated = translate(source, options, path, JS);
  try {
    const re = new RegExp(`^[^]*?(?:${translated})`, options.includes('i') ? 'iu' : 'u');
    // No repetition, alternation or back reference in a short pattern: it matches one way from
    // each start, at a small cost bounded by its length.
    const pcre = options.includes('x') ? stripExtended(source, path) : source;
    if (translated.length <= BOUNDED_LENGTH && !/[*+?{|]|\\[1-9]/.test(pcre)) BOUNDED.add(re);
    return re;
  } catch (err) {
    const reason = err instanceof SyntaxError ? err.message.replace(/^.*: /, '') : String(err);
    throw new QueryError(`$regex on '${path}' is not a valid regular expression: ${reason}.`);
  }
}

/**
 * Whether the negated class at `open` matches a newline in PCRE (it does unless it lists one),
 * asked of the class's JavaScript form, which the u flag reads as PCRE does. A class JavaScript
 * cannot compile is left to the engines to refuse.
 */
function negationHasNewline(pcre: string, open: number, close: number, path: string): boolean {
  try {
    return new RegExp(translateClass(pcre, open, close, JS, path), 'u').test('\n');
  } catch {
    return false;
  }
}

/** A whole character class, '[' at `open` to ']' at `close`, with its escapes rewritten. */
function translateClass(pcre: string, open: number, close: number, dialect: Dialect, path: string): string {
  let out = '[';
  let i = open + 1;
  if (pcre[i] === '^') {
    out += '^';
    i++;
  }
  // A ']' first in the class is a literal.
  if (pcre[i] === ']') {
    out += dialect.literal(']', true);
    i++;
  }
  // After a set such as \w or [:alpha:], '-' is a literal in PCRE, not a range.
  let afterSet = false;
  for (; i < close; i++) {
    const ch = pcre[i] as string;
    const wasSet = afterSet;
    afterSet = false;
    const posix = /^\[([:.=])(\^?)([^\]]*)\1\]/.exec(pcre.slice(i, close + 1));
    if (ch === '\\') {
      const [text, length] = translateEscape(pcre, i, true, dialect, path);
      out += text;
      afterSet = (pcre[i + 1] as string) in INSIDE;
      i += length - 1;
    } else if (posix) {
      const ascii = POSIX[posix[3] as string];
      if (posix[1] !== ':' || posix[2] || ascii === undefined)
        refuse(path, pcre.slice(i), `the class ${posix[0]}`);
      out += ascii;
      afterSet = true;
      i += posix[0].length - 1;
    } else if (ch === '[' || (ch === '-' && wasSet)) {
      out += dialect.literal(ch, true);
    } else {
      out += ch;
    }
  }
  return `${out}]`;
}
