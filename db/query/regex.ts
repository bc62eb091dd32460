import { QueryError } from './errors.js';

export const MAX_REGEX_LENGTH = 4096;

/**
 * MongoDB regexes are PCRE; jsonpath's like_regex is PostgreSQL's ARE. The common syntax is the
 * same; the class escapes and word boundaries are rewritten (see OUTSIDE), and constructs ARE
 * lacks are refused rather than silently meaning something else.
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

// MongoDB's PCRE runs without Unicode properties: \w, \d, \s and \b are ASCII. PostgreSQL's are
// Unicode-aware ('é' is a word character there), so they are spelled out.
const WORD = 'A-Za-z0-9_';
const SPACE = ' \\t\\n\\v\\f\\r';
const OUTSIDE: Record<string, string> = {
  w: `[${WORD}]`,
  W: `[^${WORD}]`,
  d: '[0-9]',
  D: '[^0-9]',
  s: `[${SPACE}]`,
  S: `[^${SPACE}]`,
  b: `(?:(?<=[${WORD}])(?![${WORD}])|(?<![${WORD}])(?=[${WORD}]))`,
  B: `(?:(?<=[${WORD}])(?=[${WORD}])|(?<![${WORD}])(?![${WORD}]))`,
  z: '\\Z',
};
const INSIDE: Record<string, string> = { w: WORD, d: '0-9', s: SPACE };

function translateEscape(next: string, inClass: boolean, path: string): string {
  if (inClass) {
    if (next in INSIDE) return INSIDE[next] as string;
    if (/[WDSpP]/.test(next))
      throw new QueryError(
        `$regex on '${path}' uses \\${next} inside a character class, which is not supported.`,
      );
    return `\\${next}`;
  }
  return OUTSIDE[next] ?? `\\${next}`;
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

export function translateRegex(source: string, options: string, path: string): TranslatedRegex {
  if (source.length > MAX_REGEX_LENGTH)
    throw new QueryError(`$regex on '${path}' is longer than ${MAX_REGEX_LENGTH} characters.`);
  if (!OPTIONS.test(options))
    throw new QueryError(
      `$options on '${path}' may only hold the letters i, m, s, x and u; got '${options}'.`,
    );
  const pcre = options.includes('x') ? stripExtended(source, path) : source;
  // PCRE's $ (without m) and \Z match at the end and also just before a final newline; ARE's $
  // (without m) and \Z only at the very end.
  const end = '(?=\\n?\\Z)';
  const multiline = options.includes('m');
  let out = '';
  for (let i = 0; i < pcre.length; i++) {
    const rest = pcre.slice(i);
    const ch = pcre[i] as string;
    if (!rest.startsWith('(?:') && !rest.startsWith('(?=') && !rest.startsWith('(?!')) {
      for (const [re, what] of UNSUPPORTED) {
        if (!rest.startsWith('(?<=') && !rest.startsWith('(?<!') && re.test(rest))
          throw new QueryError(
            `$regex on '${path}' uses ${what}, which is not supported (at '${rest.slice(0, 12)}').`,
          );
      }
    }
    if (ch === '\\') {
      const next = pcre[i + 1];
      if (next === undefined) throw new QueryError(`$regex on '${path}' ends with a lone backslash.`);
      out += next === 'Z' ? end : translateEscape(next, false, path);
      i++;
    } else if (ch === '[') {
      const close = classAt(pcre, i, path);
      out += translateClass(pcre.slice(i, close + 1), path);
      i = close;
    } else if (ch === '$' && !multiline) {
      out += end;
    } else {
      out += ch;
    }
  }
  // like_regex flags: i, s (dot matches newline), m (multiline). MongoDB's default (no s) already
  // matches: like_regex's dot does not match a newline unless s is given. x was applied above.
  const flags = [...new Set(options.replace(/[ux]/g, '').split(''))].join('');
  return { pattern: out, flags };
}

/** A whole character class, '[' to ']', with its escapes rewritten. */
function translateClass(cls: string, path: string): string {
  let out = '';
  for (let i = 0; i < cls.length; i++) {
    const ch = cls[i] as string;
    if (ch === '\\') {
      out += translateEscape(cls[i + 1] as string, true, path);
      i++;
    } else {
      out += ch;
    }
  }
  return out;
}
