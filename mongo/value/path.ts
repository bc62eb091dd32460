import { QueryError } from '../../errors.js';

/** A dotted field path, split into segments. */
export interface FieldPath {
  text: string;
  segments: string[];
}

export const MAX_PATH_LENGTH = 1024;
export const MAX_PATH_SEGMENTS = 32;
/** Each numeric segment doubles the jsonpath alternatives (array index or field name). */
export const MAX_NUMERIC_SEGMENTS = 4;

const NUMERIC = /^(0|[1-9][0-9]{0,8})$/;

/**
 * The checks a dotted path goes through, each with the message its refusal gives. Filters, updates
 * and projections word their messages differently and users see them, so the words are the
 * caller's; a limit a caller leaves out does not apply to its paths.
 */
export interface PathChecks {
  empty: () => string;
  emptySegment: () => string;
  /**
   * A segment starting with '$' (positional operators among them): the refusal's message, or
   * undefined where the caller accepts the segment (the update paths' positional operators).
   */
  dollarSegment: (segment: string) => string | undefined;
  length?: [max: number, message: () => string];
  segments?: [max: number, message: () => string];
  numericSegments?: [max: number, message: () => string];
}

/** Splits a dotted path into its segments, or throws the QueryError of the first check it fails. */
export function splitPath(text: string, checks: PathChecks): string[] {
  if (text.length === 0) throw new QueryError(checks.empty());
  if (checks.length && text.length > checks.length[0]) throw new QueryError(checks.length[1]());
  const segments = text.split('.');
  if (checks.segments && segments.length > checks.segments[0]) throw new QueryError(checks.segments[1]());
  for (const s of segments) {
    if (s === '') throw new QueryError(checks.emptySegment());
    if (s.startsWith('$')) {
      const refusal = checks.dollarSegment(s);
      if (refusal !== undefined) throw new QueryError(refusal);
    }
  }
  const numeric = checks.numericSegments;
  if (numeric && segments.filter((s) => NUMERIC.test(s)).length > numeric[0])
    throw new QueryError(numeric[1]());
  return segments;
}

export function parsePath(text: string, where = 'field path'): FieldPath {
  const segments = splitPath(text, {
    empty: () => `An empty ${where} is not allowed.`,
    length: [
      MAX_PATH_LENGTH,
      () => `The ${where} '${text.slice(0, 64)}…' is longer than ${MAX_PATH_LENGTH} characters.`,
    ],
    segments: [
      MAX_PATH_SEGMENTS,
      () => `The ${where} '${text}' has more than ${MAX_PATH_SEGMENTS} segments.`,
    ],
    emptySegment: () => `The ${where} '${text}' has an empty segment.`,
    dollarSegment: (s) =>
      `The ${where} '${text}' has a segment starting with '$' ('${s}'); positional and $-prefixed paths are not supported.`,
    numericSegments: [
      MAX_NUMERIC_SEGMENTS,
      () => `The ${where} '${text}' has more than ${MAX_NUMERIC_SEGMENTS} numeric segments.`,
    ],
  });
  return { text, segments };
}

/** A jsonpath member accessor for any key: JSON string syntax is jsonpath string syntax. */
export function accessor(key: string): string {
  return `.${JSON.stringify(key)}`;
}

/** One way a path can be walked: `parent + last` is the jsonpath of the values it reaches. */
export interface Nav {
  parent: string;
  last: string;
  positional: boolean;
}

export function full(nav: Nav): string {
  return nav.parent + nav.last;
}

/**
 * The jsonpath walks (lax mode) that reach MongoDB's values for `segments` from `root`.
 *
 * Lax member access already traverses one level of arrays and skips non-objects, which is
 * MongoDB's implicit array traversal. A numeric segment is both a field name and, on an array,
 * an index; the index walk guards on the parent so that lax mode cannot wrap a non-array.
 */
export function navs(root: string, segments: string[]): Nav[] {
  let alts: Nav[] = [{ parent: root, last: '', positional: false }];
  for (const seg of segments) {
    const next: Nav[] = [];
    for (const alt of alts) {
      next.push({ parent: full(alt), last: accessor(seg), positional: false });
      if (NUMERIC.test(seg) && alt.last !== '' && !alt.positional) {
        next.push({
          parent: `${alt.parent} ? (@${alt.last}.type() == "array")`,
          last: `${alt.last}[${seg}]`,
          positional: true,
        });
      }
    }
    alts = next;
  }
  return alts;
}

/** The jsonpath walks of a path from the document root, as standalone jsonpath texts. */
export function rootNavs(path: FieldPath): string[] {
  return navs('$', path.segments).map((n) => `lax ${full(n)}`);
}

/** A jsonpath predicate: true when walking the path meets an array anywhere (MongoDB's multikey). */
export function multikeyPredicate(path: FieldPath): string {
  const parts: string[] = [];
  for (let i = 1; i <= path.segments.length; i++) {
    for (const nav of navs('$', path.segments.slice(0, i))) parts.push(`${full(nav)}.type() == "array"`);
  }
  return `lax ${parts.join(' || ')}`;
}

/**
 * MongoDB's `{path: null}`: some walk reaches null, or the path is missing where it could have
 * been: a field absent from an object (also one inside an array), or a scalar in the way. Scalars
 * that are elements of an array reach nothing and do not count.
 */
export function nullOrMissing(root: string, segments: string[]): string {
  const [s, ...rest] = segments;
  // Only an $elemMatch element is tested with no path left: the element itself, not unwrapped.
  if (s === undefined) return `(${root}.type() == "null")`;
  const a = accessor(s);
  const inner = rest.length === 0 ? `@${a} == null` : nullOrMissing(`@${a}`, rest);
  const objects = `exists(${root} ? (@.type() == "object" && (!exists(@${a}) || ${inner})))`;
  if (root === '$') return objects;
  const scalars = ['null', 'number', 'string', 'boolean'].map((t) => `${root}.type() == "${t}"`).join(' || ');
  return `(${objects} || ${scalars})`;
}

/**
 * For sorts: true when walking the path meets an object without the next field (MongoDB then
 * counts null among the values), or undefined for a one-segment path, where that is the same as
 * reaching nothing.
 */
export function missingPredicate(path: FieldPath): string | undefined {
  return path.segments.length > 1 ? `lax ${nullOrMissing('$', path.segments)}` : undefined;
}
