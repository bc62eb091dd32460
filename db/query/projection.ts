import { isPlainObject, type Json, type JsonObject, QueryError } from './errors.js';
import { cloneJson, describeValue, idFirst, setOwn } from './json.js';
import { MAX_PATH_LENGTH, splitPath } from './path.js';

/**
 * MongoDB's find() projection (the request's `fields`), applied in memory to JSON documents.
 *
 * The semantics follow MongoDB 5+ (projection_parser.cpp and the projection executor): the first
 * boolean field other than a top-level `_id` decides between an inclusion and an exclusion
 * projection, `$slice` never decides, and dotted paths traverse arrays (nested arrays too).
 */

export const MAX_PROJECTION_FIELDS = 100;

/** Which fields the projection tree names, one level per path segment; `true` marks a named path. */
export type ProjectionTree = ReadonlyMap<string, ProjectionTree | true>;

export interface SliceSpec {
  readonly path: readonly string[];
  /** Absent for `{$slice: n}`, where a negative `limit` counts from the end. */
  readonly skip?: number;
  readonly limit: number;
}

export interface Projection {
  /** `inclusion`: the output holds only the tree's paths. `exclusion`: everything but them. */
  readonly mode: 'inclusion' | 'exclusion';
  readonly tree: ProjectionTree;
  /** Applied after the tree, to its output: MongoDB slices the projection's post-image. */
  readonly slices: readonly SliceSpec[];
}

type Leaf = { kind: 'include' } | { kind: 'exclude' } | { kind: 'slice'; skip?: number; limit: number };
type ParseNode = Map<string, ParseNode | Leaf>;

interface ParseContext {
  root: ParseNode;
  mode: Projection['mode'] | undefined;
  fields: number;
  /** A top-level `_id` or `_id.x` field turns off the implicit `_id` inclusion. */
  idSpecified: boolean;
  /** A top-level `{_id: 1}`: with no other boolean field it makes the projection an inclusion. */
  idIncluded: boolean;
}

/** Strings are shown as sent: a projection value or $slice argument is short, and seeing it helps. */
function describe(value: unknown): string {
  return describeValue(value, true);
}

/** Validates a request's `fields` (undefined or {} = everything). Throws QueryError. */
export function parseProjection(fields: unknown): Projection {
  if (fields === undefined) return { mode: 'exclusion', tree: new Map(), slices: [] };
  if (!isPlainObject(fields))
    throw new QueryError(`The projection (fields) must be a JSON object, got ${describe(fields)}.`);
  const ctx: ParseContext = {
    root: new Map(),
    mode: undefined,
    fields: 0,
    idSpecified: false,
    idIncluded: false,
  };
  for (const [key, value] of Object.entries(fields)) parseElement(ctx, [], key, value, true);

  // With only _id and $slice fields nothing has decided yet; MongoDB then lets {_id: 1} make an
  // inclusion and defaults to exclusion otherwise.
  const mode = ctx.mode ?? (ctx.idIncluded ? 'inclusion' : 'exclusion');
  const slices: SliceSpec[] = [];
  const tree = buildTree(ctx.root, mode, [], slices);
  if (mode === 'inclusion' && !ctx.idSpecified) tree.set('_id', true);
  return { mode, tree, slices };
}

/** Whether the projection keeps every field as it is (no `fields`, or `{}`): then there is nothing to apply. */
export function projectsEverything(projection: Projection): boolean {
  return projection.mode === 'exclusion' && projection.tree.size === 0 && projection.slices.length === 0;
}

/** Returns a NEW document shaped by the projection, with `_id` (when present in the output) as the FIRST key. */
export function applyProjection(doc: JsonObject, projection: Projection): JsonObject {
  const out =
    projection.mode === 'inclusion'
      ? includeObject(doc, projection.tree)
      : excludeObject(doc, projection.tree);
  // `out` shares nothing with `doc`, so slicing it in place cannot touch the caller's document.
  for (const slice of projection.slices) sliceAt(out, slice, 0);
  return idFirst(out);
}

function parseElement(
  ctx: ParseContext,
  parent: string[],
  key: string,
  value: unknown,
  topLevel: boolean,
): void {
  const path = [...parent, ...splitKey(parent, key)];
  const text = path.join('.');
  if (text.length > MAX_PATH_LENGTH)
    throw new QueryError(
      `The projection path '${text.slice(0, 64)}…' is longer than ${MAX_PATH_LENGTH} characters.`,
    );
  if (topLevel && path[0] === '_id') ctx.idSpecified = true;

  if (typeof value === 'boolean' || typeof value === 'number') {
    const include = value !== false && value !== 0;
    addLeaf(ctx, path, { kind: include ? 'include' : 'exclude' });
    // _id is exempt from the inclusion/exclusion rule, but only as a whole top-level field.
    if (topLevel && key === '_id') {
      if (include) ctx.idIncluded = true;
    } else {
      setMode(ctx, include ? 'inclusion' : 'exclusion', text);
    }
    return;
  }

  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (keys.length === 0)
      throw new QueryError(
        `An empty sub-projection is not a valid value. Found empty object at path ${text}.`,
      );
    const operators = keys.filter((k) => k.startsWith('$'));
    if (operators.length === 0) {
      // MongoDB 4.4+ reads {a: {b: 1}} as {'a.b': 1}.
      for (const [k, v] of Object.entries(value)) parseElement(ctx, path, k, v, false);
      return;
    }
    if (keys.length > 1)
      throw new QueryError(
        `The projection of ${text} must be either one operator or a sub-projection of fields, got ${keys.join(', ')}.`,
      );
    const op = keys[0] as string;
    if (op !== '$slice')
      throw new QueryError(
        `The projection operator ${op} (at path ${text}) is not supported; only $slice is.`,
      );
    addLeaf(ctx, path, parseSlice(value[op], text));
    return;
  }

  throw new QueryError(
    `Invalid projection value for field ${text}: ${describe(value)}. ` +
      'Use 1 or true to include, 0 or false to exclude, or {$slice: ...}.',
  );
}

/** The length limit applies to the whole path, parent included (parseElement checks it). */
function splitKey(parent: string[], key: string): string[] {
  const text = [...parent, key].join('.');
  return splitPath(key, {
    empty: () => `An empty field name is not allowed in a projection (at '${text}').`,
    emptySegment: () => `The projection path '${text}' has an empty segment.`,
    dollarSegment: (s) =>
      s === '$'
        ? `The positional projection operator in '${text}' is not supported.`
        : `The projection path '${text}' has a segment starting with '$' ('${s}'); $-prefixed fields and operators other than $slice are not supported.`,
  });
}

function parseSlice(arg: Json | undefined, text: string): Leaf {
  if (typeof arg === 'number') return { kind: 'slice', limit: toInt(arg) };
  if (Array.isArray(arg)) {
    if (arg.length !== 2)
      throw new QueryError(`$slice array argument should be of form [skip, limit] (at path ${text}).`);
    const [skip, limit] = arg;
    if (typeof skip !== 'number')
      throw new QueryError(
        `$slice expects the skip argument to be a number, got ${describe(skip)} (at path ${text}).`,
      );
    if (typeof limit !== 'number')
      throw new QueryError(
        `$slice expects the limit argument to be a number, got ${describe(limit)} (at path ${text}).`,
      );
    if (toInt(limit) <= 0)
      throw new QueryError(`$slice limit must be positive, got ${toInt(limit)} (at path ${text}).`);
    return { kind: 'slice', skip: toInt(skip), limit: toInt(limit) };
  }
  throw new QueryError(
    `$slice only supports numbers and [skip, limit] arrays, got ${describe(arg)} (at path ${text}).`,
  );
}

/** MongoDB reads $slice arguments with numberInt(): fractions truncate toward zero. */
function toInt(n: number): number {
  if (Number.isNaN(n)) return 0;
  return Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, Math.trunc(n)));
}

function setMode(ctx: ParseContext, mode: Projection['mode'], text: string): void {
  if (ctx.mode !== undefined && ctx.mode !== mode)
    throw new QueryError(
      mode === 'inclusion'
        ? `Cannot do inclusion on field ${text} in exclusion projection`
        : `Cannot do exclusion on field ${text} in inclusion projection`,
    );
  ctx.mode = mode;
}

function addLeaf(ctx: ParseContext, path: string[], leaf: Leaf): void {
  if (++ctx.fields > MAX_PROJECTION_FIELDS)
    throw new QueryError(`A projection may name at most ${MAX_PROJECTION_FIELDS} fields.`);
  const text = path.join('.');
  let node = ctx.root;
  for (const [i, seg] of path.entries()) {
    const child = node.get(seg);
    if (i === path.length - 1) {
      // Two fields on one path would each claim the whole value; MongoDB refuses rather than pick.
      if (child !== undefined)
        throw new QueryError(`Path collision at ${text} (overlaps ${someLeaf(child, text)})`);
      node.set(seg, leaf);
    } else if (child === undefined) {
      const next: ParseNode = new Map();
      node.set(seg, next);
      node = next;
    } else if (child instanceof Map) {
      node = child;
    } else {
      throw new QueryError(`Path collision at ${text} remaining portion ${path.slice(i + 1).join('.')}`);
    }
  }
}

/** A path already in the tree at or under `at`, to name the other side of a collision. */
function someLeaf(node: ParseNode | Leaf, at: string): string {
  if (!(node instanceof Map)) return at;
  const first = node.entries().next();
  return first.done ? at : someLeaf(first.value[1], `${at}.${first.value[0]}`);
}

function buildTree(
  node: ParseNode,
  mode: Projection['mode'],
  prefix: string[],
  slices: SliceSpec[],
): Map<string, ProjectionTree | true> {
  const tree = new Map<string, ProjectionTree | true>();
  for (const [key, child] of node) {
    if (child instanceof Map) {
      const sub = buildTree(child, mode, [...prefix, key], slices);
      // In an exclusion, a branch holding only slices drops nothing.
      if (sub.size > 0) tree.set(key, sub);
      continue;
    }
    switch (child.kind) {
      case 'slice':
        slices.push({ path: [...prefix, key], skip: child.skip, limit: child.limit });
        // An inclusion must keep the sliced array to have something to slice.
        if (mode === 'inclusion') tree.set(key, true);
        break;
      case 'include':
        // The only include in an exclusion is the top-level {_id: 1}, which the default already keeps.
        if (mode === 'inclusion') tree.set(key, true);
        break;
      case 'exclude':
        // Likewise the only exclude in an inclusion is {_id: 0}: leaving it out of the tree drops _id.
        if (mode === 'exclusion') tree.set(key, true);
        break;
    }
  }
  return tree;
}

function includeObject(obj: JsonObject, tree: ProjectionTree): JsonObject {
  const out: JsonObject = {};
  // Iterating the document, not the projection, keeps MongoDB's output order: the document's.
  for (const [key, value] of Object.entries(obj)) {
    const node = tree.get(key);
    if (node === undefined) continue;
    if (node === true) {
      setOwn(out, key, cloneJson(value));
    } else {
      const projected = includeValue(value, node);
      if (projected !== undefined) setOwn(out, key, projected);
    }
  }
  return out;
}

/** Projects sub-paths into a value: scalars have none, so an inclusion drops them, even in arrays. */
function includeValue(value: Json, tree: ProjectionTree): Json | undefined {
  if (Array.isArray(value)) {
    const out: Json[] = [];
    for (const item of value) {
      const projected = includeValue(item, tree);
      if (projected !== undefined) out.push(projected);
    }
    return out;
  }
  return isPlainObject(value) ? includeObject(value, tree) : undefined;
}

function excludeObject(obj: JsonObject, tree: ProjectionTree): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(obj)) {
    const node = tree.get(key);
    if (node === true) continue;
    setOwn(out, key, node === undefined ? cloneJson(value) : excludeValue(value, node));
  }
  return out;
}

function excludeValue(value: Json, tree: ProjectionTree): Json {
  if (Array.isArray(value)) return value.map((item) => excludeValue(item, tree));
  return isPlainObject(value) ? excludeObject(value, tree) : value;
}

/**
 * MongoDB's find $slice walk: through objects, and through arrays into their object elements only
 * (arrays nested in arrays are left alone). A non-array at the end of the path stays as it is.
 */
function sliceAt(obj: JsonObject, slice: SliceSpec, index: number): void {
  const key = slice.path[index];
  if (key === undefined || !Object.hasOwn(obj, key)) return;
  const value = obj[key];
  const last = index === slice.path.length - 1;
  if (Array.isArray(value)) {
    if (last) {
      setOwn(obj, key, sliceArray(value, slice));
    } else {
      for (const item of value) if (isPlainObject(item)) sliceAt(item, slice, index + 1);
    }
  } else if (isPlainObject(value) && !last) {
    sliceAt(value, slice, index + 1);
  }
}

function sliceArray(array: Json[], { skip, limit }: SliceSpec): Json[] {
  const len = array.length;
  if (skip === undefined) return limit < 0 ? array.slice(Math.max(0, len + limit)) : array.slice(0, limit);
  const start = skip < 0 ? Math.max(0, len + skip) : Math.min(len, skip);
  return array.slice(start, start + limit);
}
