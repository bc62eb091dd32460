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

export function translateRegex(source: string, options: string, path: string): TranslatedRegex {
  if (source.length > MAX_REGEX_LENGTH)
    throw new QueryError(`$regex on '${path}' is longer than ${MAX_REGEX_LENGTH} characters.`);
  if (!OPTIONS.test(options))
    throw new QueryError(
      `$options on '${path}' may only hold the letters i, m, s, x and u; got '${options}'.`,
    );
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const rest = source.slice(i);
    const ch = source[i] as string;
    if (!inClass && !rest.startsWith('(?:') && !rest.startsWith('(?=') && !rest.startsWith('(?!')) {
      for (const [re, what] of UNSUPPORTED) {
        if (!rest.startsWith('(?<=') && !rest.startsWith('(?<!') && re.test(rest))
          throw new QueryError(
            `$regex on '${path}' uses ${what}, which is not supported (at '${rest.slice(0, 12)}').`,
          );
      }
    }
    if (ch === '\\') {
      const next = source[i + 1];
      if (next === undefined) throw new QueryError(`$regex on '${path}' ends with a lone backslash.`);
      out += translateEscape(next, inClass, path);
      i++;
      continue;
    }
    if (ch === '[' && !inClass) inClass = true;
    else if (ch === ']' && inClass && !out.endsWith('[') && !out.endsWith('[^')) inClass = false;
    out += ch;
  }
  // like_regex flags: i, s (dot matches newline), m (multiline), x (extended). MongoDB's default
  // (no s) already matches: like_regex's dot does not match a newline unless s is given.
  const flags = [...new Set(options.replace(/u/g, '').split(''))].join('');
  return { pattern: out, flags };
}
