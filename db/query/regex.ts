import { QueryError } from './errors.js';

export const MAX_REGEX_LENGTH = 4096;

/**
 * MongoDB regexes are PCRE; jsonpath's like_regex is PostgreSQL's ARE. The common syntax is the
 * same; these differ: `\b`/`\B` (word boundary in PCRE, backspace in ARE) become `\y`/`\Y`, `\z`
 * becomes `\Z`. Constructs ARE lacks are refused rather than silently meaning something else.
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
      if (!inClass && next === 'b') out += '\\y';
      else if (!inClass && next === 'B') out += '\\Y';
      else if (!inClass && next === 'z') out += '\\Z';
      else if (inClass && /[pP]/.test(next))
        throw new QueryError(`$regex on '${path}' uses Unicode property classes, which are not supported.`);
      else out += `\\${next}`;
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
