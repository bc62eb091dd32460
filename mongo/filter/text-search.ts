import { QueryError } from '../../errors.js';
import { isPlainObject, type Json } from '../value/json.js';
import type { Params } from '../value/params.js';

/**
 * MongoDB's `$text` over a text index: the search string's grammar (fts_query_impl.cpp), its
 * languages, and the SQL over the index's tsvector column (migration 0020).
 *
 * A document matches as in MongoDB's FTSMatcher: it holds one of the positive terms (the words
 * outside quotes and inside positive phrases, stemmed, stop words dropped), none of the negated
 * terms, every positive phrase and no negated phrase. Terms are decided by the tsvector (and its
 * GIN index); phrases by a substring test on the indexed strings, case and diacritics aside, as
 * MongoDB tests them.
 */

/** MongoDB's text search languages (names and ISO codes) and the configurations that stem them. */
const LANGUAGES: Readonly<Record<string, string>> = {
  danish: 'danish',
  da: 'danish',
  dutch: 'dutch',
  nl: 'dutch',
  english: 'english',
  en: 'english',
  finnish: 'finnish',
  fi: 'finnish',
  french: 'french',
  fr: 'french',
  german: 'german',
  de: 'german',
  hungarian: 'hungarian',
  hu: 'hungarian',
  italian: 'italian',
  it: 'italian',
  norwegian: 'norwegian',
  nb: 'norwegian',
  portuguese: 'portuguese',
  pt: 'portuguese',
  romanian: 'romanian',
  ro: 'romanian',
  russian: 'russian',
  ru: 'russian',
  spanish: 'spanish',
  es: 'spanish',
  swedish: 'swedish',
  sv: 'swedish',
  turkish: 'turkish',
  tr: 'turkish',
  none: 'simple',
};

/** The mapping as the index's generated column reads it for a document's language override. */
export function textLanguageMap(): Record<string, string> {
  return { ...LANGUAGES };
}

/** The text search configuration for a MongoDB language name (case aside), or a QueryError. */
export function textConfiguration(language: string, where: string): string {
  const config = Object.hasOwn(LANGUAGES, language.toLowerCase())
    ? LANGUAGES[language.toLowerCase()]
    : undefined;
  if (config === undefined)
    throw new QueryError(
      `${where}: unsupported language ${JSON.stringify(language)}. Supported: ${Object.keys(LANGUAGES).join(', ')}.`,
    );
  return config;
}

export interface TextSearch {
  terms: string[];
  negatedTerms: string[];
  phrases: string[];
  negatedPhrases: string[];
  /** From `$language`; the index's default language otherwise. */
  config?: string;
}

/** Terms and phrases in one `$search`; each is bound as a parameter. */
export const MAX_TEXT_TERMS = 256;
/** Characters in one `$search`: reading it costs time per token, and a search is words, not a document. */
export const MAX_SEARCH_LENGTH = 100_000;

/** MongoDB's tokenizer splits on what is not a letter or a digit (combining marks stay with letters). */
const WORD = /[\p{L}\p{N}\p{M}]+/gu;

function tooManyTerms(): QueryError {
  return new QueryError(`$text: $search has more than ${MAX_TEXT_TERMS} terms and phrases.`);
}

const TOKEN = /(\s+)|["-]|[^\s"-]+/g;

/** `{"$search", "$language"?, "$caseSensitive"?, "$diacriticSensitive"?}`, with MongoDB's errors. */
export function parseTextOperator(arg: Json): TextSearch {
  if (!isPlainObject(arg)) throw new QueryError('$text needs an object, such as {"$search": "coffee"}.');
  for (const key of Object.keys(arg))
    if (!['$search', '$language', '$caseSensitive', '$diacriticSensitive'].includes(key))
      throw new QueryError(
        `extra fields in $text: '${key}'. $text takes $search, $language, $caseSensitive and $diacriticSensitive.`,
      );
  const { $search: search, $language: language, $caseSensitive: cs, $diacriticSensitive: ds } = arg;
  if (typeof search !== 'string') throw new QueryError('$text: $search needs a String.');
  if (search.length > MAX_SEARCH_LENGTH)
    throw new QueryError(`$text: $search is longer than ${MAX_SEARCH_LENGTH} characters.`);
  if (language !== undefined && typeof language !== 'string')
    throw new QueryError('$text: $language needs a String.');
  for (const [name, value] of [
    ['$caseSensitive', cs],
    ['$diacriticSensitive', ds],
  ] as const) {
    if (value !== undefined && typeof value !== 'boolean')
      throw new QueryError(`$text: ${name} needs a Boolean.`);
    // The tsvector holds words lower-cased and without accents; telling them apart would need
    // the documents' strings read again for every term.
    if (value === true)
      throw new QueryError(
        `$text: ${name}: true is not supported; text search here is case and diacritic insensitive.`,
      );
  }
  const parsed = parseSearch(search);
  const count = [parsed.terms, parsed.negatedTerms, parsed.phrases, parsed.negatedPhrases].flat().length;
  if (count > MAX_TEXT_TERMS) throw tooManyTerms();
  return {
    ...parsed,
    ...(language !== undefined && language !== '' ? { config: textConfiguration(language, '$text') } : {}),
  };
}

/**
 * The search string as MongoDB's FTSQueryImpl::parse reads it: `"` opens and closes a phrase,
 * `-` after whitespace (or at the start) negates the next term or phrase until the next
 * whitespace; words of positive phrases are positive terms too; words of negated phrases are not
 * terms. An unclosed phrase gives its words as terms and no phrase.
 */
function parseSearch(search: string): Omit<TextSearch, 'config'> {
  let positive = '';
  let negative = '';
  const phrases: string[] = [];
  const negatedPhrases: string[] = [];
  let inNegation = false;
  let inPhrase = false;
  let quoteAt = 0;
  let previousWhiteSpace = true;
  // One token per match: white space, a delimiter, or a run of anything else.
  for (const m of search.matchAll(TOKEN)) {
    const [token] = m;
    const at = m.index;
    if (m[1] !== undefined) {
      previousWhiteSpace = true;
      continue;
    }
    if (token === '-') {
      if (!inPhrase && previousWhiteSpace) inNegation = true;
    } else if (token === '"') {
      if (inPhrase) {
        (inNegation ? negatedPhrases : phrases).push(search.slice(quoteAt + 1, at));
        if (phrases.length + negatedPhrases.length > MAX_TEXT_TERMS) throw tooManyTerms();
        inPhrase = false;
      } else {
        inPhrase = true;
        if (inNegation && previousWhiteSpace) inNegation = false;
        quoteAt = at;
      }
    } else if (!(inPhrase && inNegation)) {
      if (inNegation && previousWhiteSpace) inNegation = false;
      if (inNegation) negative += `${token} `;
      else positive += `${token} `;
    }
    previousWhiteSpace = false;
  }
  const words = (s: string) => [...new Set(s.match(WORD) ?? [])];
  return { terms: words(positive), negatedTerms: words(negative), phrases, negatedPhrases };
}

/** Where a collection's text index is, as the SQL needs it (built from the catalog). */
export interface TextIndexRef {
  /** The tsvector column, quoted: `"t12"`. */
  column: string;
  /** The default language's configuration. */
  config: string;
  /** The jsonpath walks of every indexed field: the strings phrases are looked for in. */
  walks: string[];
  /** ts_rank's weights for D, C, B, A (see textWeights). */
  rankWeights: [number, number, number, number];
}

/**
 * A tsquery of terms ORed, in to_tsquery's syntax: each term quoted (a term holds only letters,
 * digits and marks, but quoting keeps any text an operand), stemmed and stop-word filtered by the
 * configuration.
 */
function anyOf(terms: string[]): string {
  return terms.map((t) => `'${t.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`).join(' | ');
}

function configRef(search: TextSearch, index: TextIndexRef, params: Params): string {
  return params.typed(search.config ?? index.config, 'regconfig');
}

/** The query positive terms make: what the GIN index finds, and what the score ranks. */
function positiveQuery(search: TextSearch, index: TextIndexRef, params: Params): string {
  // Words of negated phrases are no terms; with no positive term nothing matches (MongoDB).
  return tsquery(configRef(search, index, params), params.text(anyOf(search.terms)));
}

/** A tsquery made once per execution: as an expression of parameters, a generic plan would make it per row. */
function tsquery(config: string, terms: string): string {
  return `(select to_tsquery(${config}, mdb.fold_text(${terms})))`;
}

/** The SQL condition of a `$text` on the row's document. */
export function compileTextMatch(search: TextSearch, index: TextIndexRef, params: Params): string {
  if (search.terms.length === 0) return 'false';
  const parts = [`${index.column} @@ ${positiveQuery(search, index, params)}`];
  if (search.negatedTerms.length > 0)
    parts.push(
      `not (${index.column} @@ ${tsquery(configRef(search, index, params), params.text(anyOf(search.negatedTerms)))})`,
    );
  const walks =
    search.phrases.length + search.negatedPhrases.length > 0 ? params.jsonpathArray(index.walks) : '';
  const holds = (phrase: string) =>
    `exists (select 1 from unnest(mdb.text_strings(doc, ${walks})) as s(v)
      where strpos(lower(mdb.fold_text(s.v)), (select lower(mdb.fold_text(${params.text(phrase)})))) > 0)`;
  for (const phrase of search.phrases) parts.push(holds(phrase));
  for (const phrase of search.negatedPhrases) parts.push(`not ${holds(phrase)}`);
  return `(${parts.join(' and ')})`;
}

/**
 * The score of `$meta: "textScore"`: ts_rank of the positive terms, with the index's weights. Not
 * MongoDB's numbers, but the same intent: more of the terms, in heavier fields, scores higher.
 */
export function compileTextScore(search: TextSearch, index: TextIndexRef, params: Params): string {
  const weights = params.typed(`{${index.rankWeights.join(',')}}`, 'float4[]');
  return `ts_rank(${weights}, ${index.column}, ${positiveQuery(search, index, params)})`;
}

/** MongoDB's weights are 1 to 99,999 (exclusive bounds 0 and 100,000); a field without one weighs 1. */
export const MAX_TEXT_WEIGHT = 100_000;

export type WeightLetter = 'A' | 'B' | 'C' | 'D';

/**
 * PostgreSQL marks a word with one of four weights (A-D), and ts_rank multiplies each by a number
 * of our choosing up to 1. The heaviest three distinct weights get A, B and C, every lighter one
 * D, and ts_rank's numbers are the weights divided by the heaviest (D's the heaviest of its
 * fields): with at most four distinct weights, scores keep MongoDB's weights' proportions.
 */
export function textWeights(weights: number[]): {
  letters: WeightLetter[];
  rankWeights: [number, number, number, number];
} {
  const distinct = [...new Set(weights)].sort((a, b) => b - a);
  const letterOf = (w: number): WeightLetter => (['A', 'B', 'C'] as const)[distinct.indexOf(w)] ?? 'D';
  const top = distinct[0] ?? 1;
  const share = (rank: number) => (distinct[Math.min(rank, distinct.length - 1)] ?? 1) / top;
  return {
    letters: weights.map(letterOf),
    rankWeights: [share(3), share(2), share(1), share(0)],
  };
}

/** A text index's creation options, as the request gives them. */
export interface TextIndexOptions {
  default_language?: string;
  weights?: Record<string, number>;
  language_override?: string;
}

/**
 * Checks a text index's key and options with MongoDB's rules (and words), where they hold here:
 * only text fields (MongoDB's compound text indexes, with plain fields before or after, are not
 * supported), not unique, a known language, weights above 0 and below 100,000 for its own fields.
 * Options of text indexes on another index are refused rather than ignored.
 */
export function checkTextIndex(
  key: [path: string, dir: 1 | -1 | 'text'][],
  unique: boolean,
  options: TextIndexOptions,
): void {
  const text = key.filter(([, dir]) => dir === 'text');
  const given = (['default_language', 'weights', 'language_override'] as const).filter(
    (o) => options[o] !== undefined,
  );
  if (text.length === 0) {
    if (given.length > 0)
      throw new QueryError(
        `${given.join(', ')} ${given.length > 1 ? 'apply' : 'applies'} to text indexes only.`,
      );
    return;
  }
  if (text.length < key.length)
    throw new QueryError(
      'A text index holds only "text" fields here: compound text indexes with ascending or descending fields are not supported.',
    );
  if (unique) throw new QueryError('A text index cannot be unique.');
  if (options.default_language !== undefined) textConfiguration(options.default_language, 'default_language');
  for (const [field, weight] of Object.entries(options.weights ?? {})) {
    if (!key.some(([path]) => path === field))
      throw new QueryError(
        `weights names '${field}', which is not a field of the text index; list it in key as {"${field}": "text"}.`,
      );
    if (!(weight > 0 && weight < MAX_TEXT_WEIGHT))
      throw new QueryError(
        `text index weight must be in the exclusive interval (0,${MAX_TEXT_WEIGHT}) but found: ${weight} (for '${field}').`,
      );
  }
  const override = options.language_override;
  if (override !== undefined && (override.includes('.') || override.startsWith('$')))
    throw new QueryError(
      `language_override must be a top-level field name, without '.' and not starting with '$': '${override}'.`,
    );
}
