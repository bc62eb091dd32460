import { QueryError } from '../errors.js';
import { parsePartialFilter, sparseFilter } from './filter/index-predicate.js';
import type { Filter } from './filter/parse.js';

/** The largest expireAfterSeconds MongoDB accepts (a signed 32-bit integer). */
export const MAX_EXPIRE_AFTER_SECONDS = 2147483647;

/** The options of an index besides its key and uniqueness, as stored (migration 0014): as given. */
export interface IndexOptionsInput {
  partialFilterExpression?: unknown;
  sparse?: boolean;
  expireAfterSeconds?: number;
}

/** What the data layer builds from the options. */
export interface IndexKind {
  /** The documents the index holds, when not all: a partial or sparse index. */
  predicate?: Filter;
  /** A TTL index: documents expire this long after the date on its one field. */
  expireAfterSeconds?: number;
}

/**
 * Checks the options against each other and the key, with MongoDB's rules (and its words where it
 * has them). The schema has checked types and ranges; this checks again for callers that skip it.
 */
export function parseIndexKind(paths: string[], options: IndexOptionsInput): IndexKind {
  const kind: IndexKind = {};
  if (options.partialFilterExpression !== undefined && options.sparse === true)
    throw new QueryError('cannot mix "partialFilterExpression" and "sparse" options.');
  if (options.partialFilterExpression !== undefined)
    kind.predicate = parsePartialFilter(options.partialFilterExpression);
  else if (options.sparse === true) kind.predicate = sparseFilter(paths);
  const ttl = options.expireAfterSeconds;
  if (ttl !== undefined) {
    if (!Number.isInteger(ttl) || ttl < 0 || ttl > MAX_EXPIRE_AFTER_SECONDS)
      throw new QueryError(
        `TTL index 'expireAfterSeconds' option must be an integer from 0 to ${MAX_EXPIRE_AFTER_SECONDS}.`,
      );
    if (paths.length !== 1)
      throw new QueryError('TTL indexes are single-field indexes, compound indexes do not support TTL.');
    kind.expireAfterSeconds = ttl;
  }
  return kind;
}
