/**
 * Update paths: dotted, split into segments, with the positional segments (`$`, `$[]`,
 * `$[<id>]`) MongoDB allows where an operator updates, and canonical array indexes.
 */
import { MAX_PATH_LENGTH, MAX_PATH_SEGMENTS, splitPath } from '../value/path.js';

/** A dotted update path, split into segments. */
export interface UpdatePath {
  text: string;
  segments: string[];
}

export type Positional = { kind: 'first' } | { kind: 'all' } | { kind: 'filtered'; id: string };

/** The positional operator a path segment is, if it is one. */
export function positional(segment: string): Positional | undefined {
  if (segment === '$') return { kind: 'first' };
  if (!segment.startsWith('$[') || !segment.endsWith(']')) return undefined;
  const id = segment.slice(2, -1);
  return id === '' ? { kind: 'all' } : { kind: 'filtered', id };
}

export function isPositionalPath(path: UpdatePath): boolean {
  return path.segments.some((s) => positional(s) !== undefined);
}

/** Only the paths an operator updates may hold positional segments (`$`, `$[]`, `$[<id>]`). */
export function parseUpdatePath(text: string, where: string, allowPositional = false): UpdatePath {
  const segments = splitPath(text, {
    empty: () => `An empty field path is not allowed (in ${where}).`,
    length: [
      MAX_PATH_LENGTH,
      () => `The path '${text.slice(0, 64)}…' in ${where} is longer than ${MAX_PATH_LENGTH} characters.`,
    ],
    segments: [
      MAX_PATH_SEGMENTS,
      () => `The path '${text}' in ${where} has more than ${MAX_PATH_SEGMENTS} segments.`,
    ],
    emptySegment: () => `The path '${text}' in ${where} contains an empty field name.`,
    dollarSegment: (s) => {
      if (positional(s) === undefined)
        return `The path '${text}' in ${where} has a field name starting with '$' ('${s}').`;
      if (allowPositional) return undefined;
      return `The path '${text}' in ${where} uses the positional operator '${s}', which only the paths an update operator updates may hold.`;
    },
  });
  return { text, segments };
}

/** MongoDB accepts only canonical indexes ("01" is a field name, and a field name on an array is an error). */
export function isIndex(seg: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(seg);
}
