import { QueryError } from '../errors.js';
import { elemMatchIndex, type MatchDetails, matchFilter } from './filter/match.js';
import { type Cond, type Filter, parseFilter, textSearchOf } from './filter/parse.js';
import { textScoreUnavailable } from './sort.js';
import {
  cloneJson,
  describeValue,
  getOwn,
  idFirst,
  isPlainObject,
  type Json,
  type JsonObject,
  setOwn,
} from './value/json.js';
import { MAX_PATH_LENGTH, splitPath } from './value/path.js';

/**
 * MongoDB's find() projection (the request's `fields`), applied in memory to JSON documents.
 *
 * The semantics follow MongoDB 5+ (projection_parser.cpp and the projection executor): the first
 * boolean field other than a top-level `_id` decides between an inclusion and an exclusion
 * projection, `$slice` never decides, `$elemMatch` and the positional `a.$` are inclusions, and
 * dotted paths traverse arrays (nested arrays too).
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

export interface ElemMatchSpec {
  /** A top-level field: MongoDB refuses `$elemMatch` on a dotted path. */
  readonly field: string;
  /** The condition on each element, as the filter `{field: {$elemMatch: …}}` parses it. */
  readonly cond: Cond & { op: 'elemMatch' | 'elemMatchValue' };
}

export interface PositionalSpec {
  /** The path before `.$`; its first array keeps only the element the query matched. */
  readonly path: readonly string[];
  readonly text: string;
  /** The read's query: the element is the one its match recorded. */
  readonly query: Filter;
}

export interface Projection {
  /** `inclusion`: the output holds only the tree's paths. `exclusion`: everything but them. */
  readonly mode: 'inclusion' | 'exclusion';
  readonly tree: ProjectionTree;
  /** Applied after the tree, to its output: MongoDB slices the projection's post-image. */
  readonly slices: readonly SliceSpec[];
  /** Added after the tree's fields, as MongoDB 4.4+ places them. */
  readonly elemMatches?: readonly ElemMatchSpec[];
  readonly positional?: PositionalSpec;
  /** Top-level fields that get the `$text` score (`{"$meta": "textScore"}`), added last. */
  readonly textScores?: readonly string[];
}

/** What a projection may add that is not in the document. */
export interface DocumentMeta {
  textScore?: number;
}

type Leaf =
  | { kind: 'include' }
  | { kind: 'exclude' }
  | { kind: 'slice'; skip?: number; limit: number }
  | { kind: 'elemMatch'; cond: ElemMatchSpec['cond'] }
  | { kind: 'textScore' };
type ParseNode = Map<string, ParseNode | Leaf>;

interface ParseContext {
  root: ParseNode;
  mode: Projection['mode'] | undefined;
  fields: number;
  /** A top-level `_id` or `_id.x` field turns off the implicit `_id` inclusion. */
  idSpecified: boolean;
  /** A top-level `{_id: 1}`: with no other boolean field it makes the projection an inclusion. */
  idIncluded: boolean;
  query: Filter | undefined;
  positional: PositionalSpec | undefined;
  elemMatch: boolean;
}

/** Strings are shown as sent: a projection value or $slice argument is short, and seeing it helps. */
function describe(value: unknown): string {
  return describeValue(value, true);
}

/**
 * Validates a request's `fields` (undefined or {} = everything). Throws QueryError. A positional
 * `a.$` needs the read's `query`: it must hold a condition on `a`.
 */
export function parseProjection(fields: unknown, query?: Filter): Projection {
  if (fields === undefined) return { mode: 'exclusion', tree: new Map(), slices: [] };
  if (!isPlainObject(fields))
    throw new QueryError(`The projection (fields) must be a JSON object, got ${describe(fields)}.`);
  const ctx: ParseContext = {
    root: new Map(),
    mode: undefined,
    fields: 0,
    idSpecified: false,
    idIncluded: false,
    query,
    positional: undefined,
    elemMatch: false,
  };
  for (const [key, value] of Object.entries(fields)) parseElement(ctx, [], key, value, true);

  // With only _id and $slice fields nothing has decided yet; MongoDB then lets {_id: 1} make an
  // inclusion and defaults to exclusion otherwise.
  const mode = ctx.mode ?? (ctx.idIncluded ? 'inclusion' : 'exclusion');
  const slices: SliceSpec[] = [];
  const elemMatches: ElemMatchSpec[] = [];
  const textScores: string[] = [];
  const tree = buildTree(ctx.root, mode, [], slices, elemMatches, textScores);
  if (mode === 'inclusion' && !ctx.idSpecified) tree.set('_id', true);
  return {
    mode,
    tree,
    slices,
    ...(elemMatches.length > 0 && { elemMatches }),
    ...(textScores.length > 0 && { textScores }),
    ...(ctx.positional && { positional: ctx.positional }),
  };
}

/** Whether the projection keeps every field as it is (no `fields`, or `{}`): then there is nothing to apply. */
export function projectsEverything(projection: Projection): boolean {
  return (
    projection.mode === 'exclusion' &&
    projection.tree.size === 0 &&
    projection.slices.length === 0 &&
    projection.textScores === undefined
  );
}

/**
 * Returns a NEW document shaped by the projection, with `_id` (when present in the output) as the
 * FIRST key. Throws QueryError when a positional projection finds no element the query matched.
 */
export function applyProjection(
  doc: JsonObject,
  projection: Projection,
  meta: DocumentMeta = {},
): JsonObject {
  const source = projection.positional ? positionalCut(doc, projection.positional) : doc;
  const out =
    projection.mode === 'inclusion'
      ? includeObject(source, projection.tree)
      : excludeObject(source, projection.tree);
  // `out` shares nothing with `doc`, so slicing it in place cannot touch the caller's document.
  for (const slice of projection.slices) sliceAt(out, slice, 0);
  for (const { field, cond } of projection.elemMatches ?? []) {
    const value = getOwn(doc, field);
    if (!Array.isArray(value)) continue;
    const i = elemMatchIndex(value, cond);
    // No matching element: the field is left out, as MongoDB does.
    if (i >= 0) setOwn(out, field, [cloneJson(value[i] as Json)]);
  }
  for (const field of projection.textScores ?? []) {
    if (meta.textScore === undefined) throw textScoreUnavailable(`the projection of '${field}'`);
    setOwn(out, field, meta.textScore);
  }
  return idFirst(out);
}

/**
 * The document with the first array on the positional path cut to the element the query matched
 * (MongoDB's elemMatchKey), before the inclusion: inclusion drops scalar elements under a
 * sub-path, which would shift the offset. Only the objects on the path are copied.
 */
function positionalCut(doc: JsonObject, positional: PositionalSpec): JsonObject {
  const details: MatchDetails = {};
  matchFilter(doc, positional.query, details);
  const key = details.elemMatchKey;
  if (key === undefined)
    throw new QueryError(
      `The positional projection '${positional.text}.$' found no array element the query matched in a document ` +
        `(MongoDB: positional operator '.$' couldn't find a matching element in the array). ` +
        `Put a condition on an element of '${positional.path[0]}' in the query.`,
    );
  return cutAt(doc, positional.path, positional.text, 0, key);
}

function cutAt(
  obj: JsonObject,
  path: readonly string[],
  text: string,
  index: number,
  key: number,
): JsonObject {
  const seg = path[index] as string;
  const value = getOwn(obj, seg);
  const copy: JsonObject = { ...obj };
  if (Array.isArray(value)) {
    if (key >= value.length)
      throw new QueryError(
        `The positional projection '${text}.$': the query matched element ${key} of an array, but the array on '${path.slice(0, index + 1).join('.')}' is shorter (MongoDB: positional operator '.$' element mismatch).`,
      );
    setOwn(copy, seg, [value[key] as Json]);
  } else if (isPlainObject(value) && index < path.length - 1) {
    setOwn(copy, seg, cutAt(value, path, text, index + 1, key));
  }
  return copy;
}

function parseElement(
  ctx: ParseContext,
  parent: string[],
  key: string,
  value: unknown,
  topLevel: boolean,
): void {
  const dollar = positionalSuffix(parent, key);
  const path = [...parent, ...splitKey(parent, dollar === undefined ? key : key.slice(0, -2))];
  const text = path.join('.');
  if (text.length > MAX_PATH_LENGTH)
    throw new QueryError(
      `The projection path '${text.slice(0, 64)}…' is longer than ${MAX_PATH_LENGTH} characters.`,
    );
  if (topLevel && path[0] === '_id') ctx.idSpecified = true;

  if (dollar !== undefined) {
    parsePositional(ctx, path, `${text}.$`, value);
    return;
  }

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
    if (op === '$slice') {
      addLeaf(ctx, path, parseSlice(value[op], text));
    } else if (op === '$elemMatch') {
      addLeaf(ctx, path, parseElemMatch(ctx, path, value[op]));
      setMode(ctx, 'inclusion', text);
    } else if (op === '$meta') {
      addLeaf(ctx, path, parseMeta(ctx, path, value[op]));
    } else {
      throw new QueryError(
        `The projection operator ${op} (at path ${text}) is not supported; only $slice, $elemMatch and $meta are.`,
      );
    }
    return;
  }

  throw new QueryError(
    `Invalid projection value for field ${text}: ${describe(value)}. ` +
      'Use 1 or true to include, 0 or false to exclude, {$slice: ...} or {$elemMatch: ...}.',
  );
}

/**
 * Whether the key ends in a positional `.$`: undefined when it does not, or the `$` otherwise.
 * Any other `$` segment is refused with MongoDB's words for the positional operator's rules.
 */
function positionalSuffix(parent: string[], key: string): '$' | undefined {
  const segments = key.split('.');
  const at = segments.indexOf('$');
  if (at < 0) return undefined;
  const text = [...parent, key].join('.');
  if (segments.indexOf('$', at + 1) >= 0)
    throw new QueryError(`Positional projection '${text}' contains the positional operator more than once.`);
  if (at !== segments.length - 1)
    throw new QueryError(
      `Positional projection '${text}': the positional operator may only be used at the end of the path, ` +
        `for example a.b.$; remove the parts following the '$' and the results will be equivalent.`,
    );
  if (at === 0) throw new QueryError(`Positional projection '${text}' needs an array field before the '$'.`);
  return '$';
}

function parsePositional(ctx: ParseContext, path: string[], text: string, value: unknown): void {
  if (typeof value !== 'boolean' && typeof value !== 'number')
    throw new QueryError(
      `Invalid projection value for the positional projection ${text}: ${describe(value)}. ` +
        'Use 1 or true ($slice and other operators cannot be combined with a positional projection).',
    );
  if (value === false || value === 0)
    throw new QueryError(`Cannot exclude array elements with the positional operator (at ${text}).`);
  addLeaf(ctx, path, { kind: 'include' });
  setMode(ctx, 'inclusion', text);
  if (ctx.positional)
    throw new QueryError(
      `Cannot specify more than one positional projection per query (${ctx.positional.text}.$ and ${text}).`,
    );
  if (ctx.elemMatch) throw new QueryError(`Cannot specify positional operator and $elemMatch (at ${text}).`);
  const matchField = path[0] as string;
  if (ctx.query === undefined || !conditionOn(ctx.query, matchField))
    throw new QueryError(
      `Positional projection '${text}' does not match the query document: the query needs a condition on '${matchField}'.`,
    );
  ctx.positional = { path, text: path.join('.'), query: ctx.query };
}

/** `{"$meta": "textScore"}` on a top-level field: the query's `$text` score. It decides no mode. */
function parseMeta(ctx: ParseContext, path: string[], arg: Json | undefined): Leaf {
  const text = path.join('.');
  if (arg !== 'textScore')
    throw new QueryError(
      `The projection $meta (at path ${text}) supports only "textScore", not ${describe(arg)}.`,
    );
  if (path.length > 1)
    throw new QueryError(`The projection $meta "textScore" goes on a top-level field, not on '${text}'.`);
  if (ctx.query === undefined || textSearchOf(ctx.query) === undefined)
    throw textScoreUnavailable(`the projection of '${text}'`);
  return { kind: 'textScore' };
}

/** MongoDB's rule: some condition anywhere in the query (also under $or, $nor) on a path starting with the field. */
function conditionOn(filter: Filter, field: string): boolean {
  switch (filter.kind) {
    case 'all':
    case 'expr':
      return false;
    case 'field':
      return filter.path.segments[0] === field;
    case 'jsonSchema':
    case 'text':
      return false;
    default:
      return filter.children.some((c) => conditionOn(c, field));
  }
}

function parseElemMatch(ctx: ParseContext, path: string[], arg: Json | undefined): Leaf {
  const text = path.join('.');
  if (!isPlainObject(arg))
    throw new QueryError(
      `$elemMatch (projection) needs an object, the condition on the elements; got ${describe(arg)} (at path ${text}).`,
    );
  if (path.length > 1)
    throw new QueryError(`Cannot use $elemMatch projection on a nested field (at path ${text}).`);
  if (ctx.positional)
    throw new QueryError(`Cannot specify positional operator and $elemMatch (at path ${text}).`);
  ctx.elemMatch = true;
  // The condition is the filter {field: {$elemMatch: arg}}: same grammar, same limits, same errors.
  const filter = parseFilter({ [text]: { $elemMatch: arg } }, { banSpecial: true });
  if (filter.kind !== 'field' || (filter.cond.op !== 'elemMatch' && filter.cond.op !== 'elemMatchValue'))
    throw new QueryError(`$elemMatch (projection) at path ${text} has an invalid condition.`);
  return { kind: 'elemMatch', cond: filter.cond };
}

/** The length limit applies to the whole path, parent included (parseElement checks it). */
function splitKey(parent: string[], key: string): string[] {
  const text = [...parent, key].join('.');
  return splitPath(key, {
    empty: () => `An empty field name is not allowed in a projection (at '${text}').`,
    emptySegment: () => `The projection path '${text}' has an empty segment.`,
    // A positional '$' never gets here: positionalSuffix takes it off or refuses it first.
    dollarSegment: (s) =>
      `The projection path '${text}' has a segment starting with '$' ('${s}'); $-prefixed fields are not supported.`,
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
  elemMatches: ElemMatchSpec[],
  textScores: string[],
): Map<string, ProjectionTree | true> {
  const tree = new Map<string, ProjectionTree | true>();
  for (const [key, child] of node) {
    if (child instanceof Map) {
      const sub = buildTree(child, mode, [...prefix, key], slices, elemMatches, textScores);
      // In an exclusion, a branch holding only slices drops nothing.
      if (sub.size > 0) tree.set(key, sub);
      continue;
    }
    switch (child.kind) {
      case 'elemMatch':
        // Not in the tree: applyProjection adds the field after the others.
        elemMatches.push({ field: key, cond: child.cond });
        break;
      case 'textScore':
        // Likewise; in an exclusion the field is set over whatever the document holds there.
        textScores.push(key);
        break;
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
