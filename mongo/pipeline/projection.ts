import { QueryError } from '../../errors.js';
import type { Expr } from '../expr/ast.js';
import { parseExpression } from '../expr/parse.js';
import { getOwn, isPlainObject, type Json } from '../value/json.js';
import { MAX_PATH_LENGTH, MAX_PATH_SEGMENTS, splitPath } from '../value/path.js';

/**
 * The projections of aggregation stages ($project, $addFields/$set, $unset, and the fields that
 * $lookup and $unwind set) as one shape: a tree of field names that mdb.agg_project (migration
 * 0017) applies to a document, with the computed fields' expressions beside it. The tree is JSON:
 * a leaf `true` keeps a field, `false` removes it, `{"$v": i}` sets it to `computed[i]`; an inner
 * node holds its children, and `"$c": true` when a computed leaf is below it (MongoDB then turns
 * a scalar or a missing value on the way into a document).
 */
export interface StageProjection {
  mode: 'include' | 'exclude' | 'add';
  tree: SpecNode;
  computed: Expr[];
}

export type SpecNode = { [name: string]: SpecNode | boolean | { $v: number } };

type Leaf = { kind: 'include' } | { kind: 'exclude' } | { kind: 'computed'; expr: Expr };

/** A dotted field name of a projection: MongoDB's FieldPath rules. */
export function fieldPathSegments(text: string, where: string): string[] {
  return splitPath(text, {
    empty: () => `An empty field name in ${where} is not allowed.`,
    emptySegment: () => `The field path '${text}' in ${where} has an empty segment.`,
    dollarSegment: (s) => `The field path '${text}' in ${where} has a segment starting with '$' ('${s}').`,
    length: [MAX_PATH_LENGTH, () => `A field path in ${where} is longer than ${MAX_PATH_LENGTH} characters.`],
    segments: [
      MAX_PATH_SEGMENTS,
      () => `The field path '${text}' in ${where} has more than ${MAX_PATH_SEGMENTS} segments.`,
    ],
  });
}

class TreeBuilder {
  readonly root: Map<string, unknown> = new Map();
  readonly computed: Expr[] = [];

  add(segments: string[], leaf: Leaf): void {
    let node = this.root;
    for (let i = 0; i < segments.length - 1; i++) {
      const seg = segments[i] as string;
      const next = node.get(seg);
      if (next === undefined) {
        const child = new Map<string, unknown>();
        node.set(seg, child);
        node = child;
      } else if (next instanceof Map) node = next;
      else
        throw new QueryError(
          `Invalid projection: path collision at ${segments.join('.')} remaining portion ${segments.slice(i + 1).join('.')}.`,
        );
    }
    const last = segments.at(-1) as string;
    if (node.has(last)) throw new QueryError(`Invalid projection: path collision at ${segments.join('.')}.`);
    node.set(last, leaf);
  }

  build(): SpecNode {
    const toJson = (node: Map<string, unknown>): { spec: SpecNode; computed: boolean } => {
      const spec: SpecNode = {};
      let computed = false;
      for (const [name, value] of node) {
        if (value instanceof Map) {
          const child = toJson(value);
          if (child.computed) {
            child.spec.$c = true;
            computed = true;
          }
          spec[name] = child.spec;
        } else {
          const leaf = value as Leaf;
          if (leaf.kind === 'computed') {
            spec[name] = { $v: this.computed.length };
            this.computed.push(leaf.expr);
            computed = true;
          } else spec[name] = leaf.kind === 'include';
        }
      }
      return { spec, computed };
    };
    return toJson(this.root).spec;
  }
}

/** An object that is a sub-specification rather than an expression: no `$` first key. */
function isSubSpec(v: Json | undefined): v is { [k: string]: Json } {
  if (!isPlainObject(v)) return false;
  const first = Object.keys(v)[0];
  return first !== undefined && !first.startsWith('$');
}

/** `$project`: inclusion (with computed fields) or exclusion, and MongoDB's `_id` rules. */
export function parseProject(raw: Json): StageProjection {
  if (!isPlainObject(raw)) throw new QueryError('$project specification must be an object.');
  if (Object.keys(raw).length === 0)
    throw new QueryError(
      'Invalid $project :: caused by :: projection specification must have at least one field.',
    );
  const b = new TreeBuilder();
  let mode: 'include' | 'exclude' | undefined;
  let idSpecified = false;
  const decide = (want: 'include' | 'exclude', path: string, computed: boolean) => {
    if (mode === undefined) mode = want;
    else if (mode !== want) {
      if (computed)
        throw new QueryError(
          `Invalid $project :: caused by :: Cannot use expression other than $meta in exclusion projection (field '${path}').`,
        );
      throw new QueryError(
        `Invalid $project :: caused by :: Cannot do ${want === 'include' ? 'inclusion' : 'exclusion'} on field ${path} in ${mode === 'include' ? 'inclusion' : 'exclusion'} projection.`,
      );
    }
  };
  const walk = (spec: { [k: string]: Json }, prefix: string[]) => {
    for (const key of Object.keys(spec)) {
      const value = getOwn(spec, key) as Json;
      const segments = [...prefix, ...fieldPathSegments(key, '$project')];
      const path = segments.join('.');
      if (segments[0] === '_id') idSpecified = true;
      if (typeof value === 'boolean' || typeof value === 'number') {
        const include = value !== false && value !== 0;
        // A top-level _id flag never decides the kind of projection.
        if (path !== '_id') decide(include ? 'include' : 'exclude', path, false);
        if (path === '_id' && !include) b.add(segments, { kind: 'exclude' });
        else if (include) b.add(segments, { kind: 'include' });
        else b.add(segments, { kind: 'exclude' });
      } else if (isSubSpec(value)) {
        walk(value, segments);
      } else if (isPlainObject(value) && Object.keys(value).length === 0) {
        throw new QueryError(
          `Invalid $project :: caused by :: An empty sub-projection is not a valid value. Found empty object at path ${path}.`,
        );
      } else {
        decide('include', path, true);
        b.add(segments, { kind: 'computed', expr: parseExpression(value, `$project.${path}`) });
      }
    }
  };
  walk(raw, []);
  // {_id: 0} or {_id: 1} alone: MongoDB's projection is then an exclusion or an inclusion of _id.
  const resolved =
    mode ?? (b.root.get('_id') && (b.root.get('_id') as Leaf).kind === 'exclude' ? 'exclude' : 'include');
  if (resolved === 'include') {
    if (!idSpecified) b.add(['_id'], { kind: 'include' });
    // In an inclusion an excluded _id is simply not included.
    const id = b.root.get('_id');
    if (id && !(id instanceof Map) && (id as Leaf).kind === 'exclude') b.root.delete('_id');
  } else {
    const id = b.root.get('_id');
    if (id && !(id instanceof Map) && (id as Leaf).kind === 'include') b.root.delete('_id');
  }
  const tree = b.build();
  return { mode: resolved, tree, computed: b.computed };
}

/** `$addFields`/`$set`: every value is an expression; a nested document names nested fields. */
export function parseAddFields(raw: Json, stage: string): StageProjection {
  if (!isPlainObject(raw)) throw new QueryError(`${stage} specification stage must be an object.`);
  if (Object.keys(raw).length === 0)
    throw new QueryError(`Invalid ${stage} :: caused by :: specification must have at least one field.`);
  const b = new TreeBuilder();
  const walk = (spec: { [k: string]: Json }, prefix: string[]) => {
    for (const key of Object.keys(spec)) {
      const value = getOwn(spec, key) as Json;
      const segments = [...prefix, ...fieldPathSegments(key, stage)];
      // MongoDB's projection validator refuses it; {"$literal": {}} sets an empty document.
      if (isPlainObject(value) && Object.keys(value).length === 0)
        throw new QueryError(
          `Invalid ${stage} :: caused by :: an empty object is not a valid value. Found empty object at path ${segments.join('.')}.`,
        );
      if (isSubSpec(value)) walk(value, segments);
      else
        b.add(segments, {
          kind: 'computed',
          expr: parseExpression(value, `${stage}.${segments.join('.')}`),
        });
    }
  };
  walk(raw, []);
  return { mode: 'add', tree: b.build(), computed: b.computed };
}

/** `$unset`: a field path or a non-empty array of them, removed. */
export function parseUnset(raw: Json): StageProjection {
  const fields = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(fields) || fields.length === 0)
    throw new QueryError('$unset specification must be a string or an array with at least one field.');
  const b = new TreeBuilder();
  for (const f of fields) {
    if (typeof f !== 'string')
      throw new QueryError(
        '$unset specification must be a string or an array containing only string values.',
      );
    b.add(fieldPathSegments(f, '$unset'), { kind: 'exclude' });
  }
  return { mode: 'exclude', tree: b.build(), computed: [] };
}

/**
 * The tree that sets one field at a dotted path to the first computed value, as $lookup's `as` and
 * $unwind's `includeArrayIndex` set theirs (the value is SQL the stage computes, not an expression).
 */
export function setFieldTree(segments: string[]): SpecNode {
  const b = new TreeBuilder();
  b.add(segments, { kind: 'computed', expr: { kind: 'literal', value: null } });
  return b.build();
}
