import { QueryError } from '../errors.js';
import { applyProjection, type Projection, parseProjection } from './projection.js';
import { applyUpdate, parseUpdate } from './update/update.js';
import { isPlainObject, type Json, type JsonObject } from './value/json.js';
import type { FieldPath } from './value/path.js';

/**
 * A collection's hidden fields (its rules' `fields.hidden`): never shown to end users, and never
 * named in what they send, so that no filter, sort, group or expression can probe them (the way
 * Parse's protected fields were bypassed, GHSA-j7mm-f4rv-6q6q). Pure: no I/O.
 *
 * What a request names is read from its JSON as sent, conservatively, by one walk for every part
 * of the grammar (filters, sorts, projections, updates, pipelines): each key that is not an
 * operator, dotted onto the keys above it; each string that is a field path (`"$a.b"`); and
 * `$$ROOT`/`$$CURRENT`, whole or dotted. A name that reaches a hidden field, or holds one (a
 * parent), is a 400, whichever part of the grammar it is in. Numeric segments are left out before
 * comparing: `a.0.b` may reach `a.b`. What the walk cannot follow is refused outright:
 * `$jsonSchema` and `$text` (whose index may cover a hidden field).
 */

/** Segments without the numeric ones, which may index arrays on the way to the same field. */
function namedSegments(segments: readonly string[]): string[] {
  return segments.filter((s) => !/^\d+$/.test(s));
}

export class HiddenFields {
  readonly #hidden: string[][];
  readonly #exclusion: Projection;

  constructor(readonly paths: readonly FieldPath[]) {
    this.#hidden = paths.map((p) => namedSegments(p.segments.map(String)));
    this.#exclusion = parseProjection(Object.fromEntries(paths.map((p) => [p.text, 0])));
  }

  get any(): boolean {
    return this.paths.length > 0;
  }

  /** The document without its hidden fields. */
  strip(doc: JsonObject): JsonObject {
    return this.any ? applyProjection(doc, this.#exclusion) : doc;
  }

  /**
   * `after` with the hidden fields `before` holds, as a replacement by an end user keeps them: the
   * user cannot see them, so cannot be asked to send them back.
   */
  keep(before: JsonObject, after: JsonObject): JsonObject {
    const set: JsonObject = {};
    for (const path of this.paths) {
      let value: Json | undefined = before;
      for (const s of path.segments) value = isPlainObject(value) ? value[s] : undefined;
      if (value !== undefined) set[path.text] = value;
    }
    if (Object.keys(set).length === 0) return after;
    return applyUpdate(after, parseUpdate({ $set: set }), { now: new Date(), isInsert: false });
  }

  /** Throws a 400 when `raw` (a part of a request, named by `where`) names a hidden field. */
  check(raw: unknown, where: string): void {
    if (this.any && raw !== undefined) this.#walk(raw as Json, [], where);
  }

  /** Throws a 400 when the dotted `path` (a distinct key, a $lookup field) reaches a hidden field. */
  checkPath(path: string, where: string): void {
    if (this.any) this.#name(path.split('.'), where);
  }

  #walk(value: Json, prefix: string[], where: string): void {
    if (typeof value === 'string') {
      if (value === '$$ROOT' || value === '$$CURRENT')
        throw new QueryError(
          `${where} names ${value}, the whole document, and this collection hides fields.`,
        );
      const root = /^\$\$(ROOT|CURRENT)\./.exec(value);
      if (root) this.#name(value.slice(root[0].length).split('.'), where);
      else if (value.startsWith('$') && !value.startsWith('$$')) this.#name(value.slice(1).split('.'), where);
      return;
    }
    if (Array.isArray(value)) {
      for (const v of value) this.#walk(v, prefix, where);
      return;
    }
    if (!isPlainObject(value)) return;
    for (const [key, v] of Object.entries(value)) {
      if (key === '$jsonSchema' || key === '$text')
        throw new QueryError(`${key} is not available to end users on a collection that hides fields.`);
      if (key.startsWith('$')) {
        // $lookup's and $rename's field names are plain strings.
        if (key === '$lookup' && isPlainObject(v)) {
          for (const f of ['localField', 'foreignField'] as const)
            if (typeof v[f] === 'string') this.#name((v[f] as string).split('.'), where);
        }
        if (key === '$rename' && isPlainObject(v))
          for (const to of Object.values(v)) if (typeof to === 'string') this.#name(to.split('.'), where);
        this.#walk(v as Json, prefix, where);
        continue;
      }
      const path = [...prefix, ...key.split('.')];
      this.#name(path, where);
      this.#walk(v as Json, path, where);
    }
  }

  #name(segments: string[], where: string): void {
    const named = namedSegments(segments);
    if (named.length === 0) return;
    for (const hidden of this.#hidden) {
      const n = Math.min(named.length, hidden.length);
      if (named.slice(0, n).every((s, i) => s === hidden[i]))
        throw new QueryError(
          `${where} names '${segments.join('.')}', which reaches the hidden field '${hidden.join('.')}'.`,
        );
    }
  }
}
