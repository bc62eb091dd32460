/**
 * MongoDB's update documents (update operators or a whole replacement) on JSON documents, as a pure
 * module: parseUpdate() validates a request once, applyUpdate() runs it against each matched document.
 *
 * Where JSON differs from BSON, these are the choices made:
 * - JSON has no Date or Timestamp type, so $currentDate writes what a JSON client can round-trip:
 *   `true` and `{$type: "date"}` store `now.toISOString()` (ISO 8601, UTC, with milliseconds), and
 *   `{$type: "timestamp"}` stores the integer milliseconds since the Unix epoch.
 * - Ints and doubles are one number type, so $inc and $mul never change or overflow a number's type.
 * - Documents live in jsonb, which does not keep object key order, so every equality here ($addToSet,
 *   $pull, $pullAll, the _id checks) ignores key order, where BSON comparison would not.
 * - Values written into documents may not hold field names starting with '$' or containing '.', at
 *   any depth: no path could address them afterwards.
 */
import { isPlainObject, type Json, type JsonObject, QueryError } from './errors.js';
import { MAX_PATH_LENGTH, MAX_PATH_SEGMENTS } from './path.js';

/** A dotted update path, split into segments. */
export interface UpdatePath {
  text: string;
  segments: string[];
}

/** One condition of a $pull, tested against an array element or one of its fields. */
export type PullCond =
  | { op: '$eq' | '$ne'; value: Json }
  | { op: '$gt' | '$gte' | '$lt' | '$lte'; value: Json }
  | { op: '$in' | '$nin'; values: Json[] };

/**
 * MongoDB's three $pull forms: a plain value removes equal elements; an object of operators is applied
 * to each element; any other object is a query on elements that are documents.
 */
export type PullMatcher =
  | { kind: 'equal'; value: Json }
  | { kind: 'conds'; conds: PullCond[] }
  | { kind: 'fields'; fields: { path: UpdatePath; conds: PullCond[] }[] };

export type PushSort = 1 | -1 | { path: UpdatePath; dir: 1 | -1 }[];

export type UpdateOp =
  | { op: '$set' | '$setOnInsert'; path: UpdatePath; value: Json }
  | { op: '$min' | '$max'; path: UpdatePath; value: Json }
  | { op: '$unset'; path: UpdatePath }
  | { op: '$inc' | '$mul'; path: UpdatePath; by: number }
  | { op: '$rename'; path: UpdatePath; to: UpdatePath }
  | { op: '$currentDate'; path: UpdatePath; type: 'date' | 'timestamp' }
  | { op: '$push'; path: UpdatePath; each: Json[]; position?: number; sort?: PushSort; slice?: number }
  | { op: '$addToSet'; path: UpdatePath; each: Json[] }
  | { op: '$pull'; path: UpdatePath; match: PullMatcher }
  | { op: '$pullAll'; path: UpdatePath; values: Json[] }
  | { op: '$pop'; path: UpdatePath; end: 1 | -1 };

export type ParsedUpdate = { kind: 'replacement'; doc: JsonObject } | { kind: 'operators'; ops: UpdateOp[] };

export const SUPPORTED_UPDATE_OPERATORS = [
  '$set',
  '$unset',
  '$inc',
  '$mul',
  '$min',
  '$max',
  '$rename',
  '$currentDate',
  '$setOnInsert',
  '$push',
  '$addToSet',
  '$pull',
  '$pullAll',
  '$pop',
] as const;
type OperatorName = (typeof SUPPORTED_UPDATE_OPERATORS)[number];

const PULL_OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin'] as const;
const PUSH_MODIFIERS = ['$each', '$position', '$sort', '$slice'];

/** MongoDB refuses documents nested deeper than 100 levels; it also bounds our recursion. */
export const MAX_VALUE_DEPTH = 100;
/** MongoDB's limit on the nulls one update may add to pad an array up to an index. */
export const MAX_ARRAY_PADDING = 1_500_000;

// ---------------------------------------------------------------------------------------------
// Parsing

export function parseUpdate(doc: unknown): ParsedUpdate {
  if (Array.isArray(doc))
    throw new QueryError(
      'Pipeline-style updates (an array of stages) are not supported; use update operators.',
    );
  if (!isPlainObject(doc)) throw new QueryError(`The update must be a JSON object, not ${describe(doc)}.`);
  const first = Object.keys(doc)[0];
  if (first === undefined || !first.startsWith('$'))
    return { kind: 'replacement', doc: parseReplacement(doc) };
  return { kind: 'operators', ops: parseOperators(doc) };
}

function mixedError(key: string): QueryError {
  const role = key.startsWith('$')
    ? 'an update operator among plain fields'
    : 'a plain field among update operators';
  return new QueryError(
    `The update mixes update operators and plain fields: '${key}' is ${role}. Use only operators ({"$set": {...}}) or a whole replacement document.`,
  );
}

function parseReplacement(doc: JsonObject): JsonObject {
  const dollar = Object.keys(doc).find((k) => k.startsWith('$'));
  if (dollar !== undefined) throw mixedError(dollar);
  checkStorable(doc, '', 'a replacement document');
  return cloneJson(doc);
}

function parseOperators(doc: JsonObject): UpdateOp[] {
  const ops: UpdateOp[] = [];
  for (const [name, arg] of Object.entries(doc)) {
    if (!name.startsWith('$')) throw mixedError(name);
    if (!isOperatorName(name))
      throw new QueryError(
        `Unknown update operator '${name}'. Supported: ${SUPPORTED_UPDATE_OPERATORS.join(', ')}.`,
      );
    if (!isPlainObject(arg))
      throw new QueryError(
        `The value of ${name} must be an object of {"path": argument}, not ${describe(arg)}.`,
      );
    for (const [path, value] of Object.entries(arg))
      ops.push(parseOp(name, parseUpdatePath(path, name), value));
  }
  checkPaths(ops);
  return ops;
}

function isOperatorName(name: string): name is OperatorName {
  return (SUPPORTED_UPDATE_OPERATORS as readonly string[]).includes(name);
}

function parseOp(op: OperatorName, path: UpdatePath, arg: Json): UpdateOp {
  switch (op) {
    case '$set':
    case '$setOnInsert':
      checkStorable(arg, path.text, op);
      return { op, path, value: cloneJson(arg) };
    case '$min':
    case '$max':
      checkStorable(arg, path.text, op);
      return { op, path, value: cloneJson(arg) };
    case '$unset':
      return { op, path };
    case '$inc':
    case '$mul':
      return { op, path, by: numberArg(op, path, arg) };
    case '$rename':
      return { op, path, to: renameTarget(path, arg) };
    case '$currentDate':
      return { op, path, type: dateType(path, arg) };
    case '$push':
      return { op, path, ...parsePush(path, arg) };
    case '$addToSet':
      return { op, path, each: parseAddToSet(path, arg) };
    case '$pull':
      return { op, path, match: parsePullMatcher(path, arg) };
    case '$pullAll':
      return { op, path, values: pullAllValues(path, arg) };
    case '$pop':
      return { op, path, end: popEnd(path, arg) };
  }
}

/** Positional paths would need the query's match positions, which the store does not report. */
export function parseUpdatePath(text: string, where: string): UpdatePath {
  if (text.length === 0) throw new QueryError(`An empty field path is not allowed (in ${where}).`);
  if (text.length > MAX_PATH_LENGTH)
    throw new QueryError(
      `The path '${text.slice(0, 64)}…' in ${where} is longer than ${MAX_PATH_LENGTH} characters.`,
    );
  const segments = text.split('.');
  if (segments.length > MAX_PATH_SEGMENTS)
    throw new QueryError(`The path '${text}' in ${where} has more than ${MAX_PATH_SEGMENTS} segments.`);
  for (const s of segments) {
    if (s === '') throw new QueryError(`The path '${text}' in ${where} contains an empty field name.`);
    if (s === '$' || s.startsWith('$['))
      throw new QueryError(
        `The path '${text}' in ${where} uses the positional operator '${s}'; positional operators are unsupported.`,
      );
    if (s.startsWith('$'))
      throw new QueryError(`The path '${text}' in ${where} has a field name starting with '$' ('${s}').`);
  }
  return { text, segments };
}

function numberArg(op: '$inc' | '$mul', path: UpdatePath, arg: Json): number {
  if (typeof arg === 'number') return arg;
  const verb = op === '$inc' ? 'increment' : 'multiply';
  throw new QueryError(`Cannot ${verb} with non-numeric argument: {${path.text}: ${preview(arg)}} (${op}).`);
}

function renameTarget(path: UpdatePath, arg: Json): UpdatePath {
  if (typeof arg !== 'string')
    throw new QueryError(
      `The 'to' field for $rename of '${path.text}' must be a string path, not ${describe(arg)}.`,
    );
  const to = parseUpdatePath(arg, '$rename');
  if (to.text === path.text)
    throw new QueryError(`The source and target field for $rename must differ: '${path.text}'.`);
  if (isPrefix(path.segments, to.segments) || isPrefix(to.segments, path.segments))
    throw new QueryError(
      `The source and target field for $rename must not be on the same path: '${path.text}' and '${to.text}'.`,
    );
  return to;
}

function dateType(path: UpdatePath, arg: Json): 'date' | 'timestamp' {
  if (arg === true) return 'date';
  if (isPlainObject(arg) && Object.keys(arg).length === 1) {
    const type = getOwn(arg, '$type');
    if (type === 'date' || type === 'timestamp') return type;
  }
  throw new QueryError(
    `$currentDate on '${path.text}' takes true or {"$type": "date"|"timestamp"}, not ${preview(arg)}.`,
  );
}

/** MongoDB reads an object with '$' keys as modifiers; any other value is the one element to add. */
function isModifierObject(arg: Json): arg is JsonObject {
  return isPlainObject(arg) && Object.keys(arg).some((k) => k.startsWith('$'));
}

function parsePush(path: UpdatePath, arg: Json): Omit<Extract<UpdateOp, { op: '$push' }>, 'op' | 'path'> {
  if (!isModifierObject(arg)) {
    checkStorable(arg, path.text, '$push');
    return { each: [cloneJson(arg)] };
  }
  for (const key of Object.keys(arg)) {
    if (!PUSH_MODIFIERS.includes(key))
      throw new QueryError(
        `Unrecognized clause '${key}' in $push on '${path.text}'. Supported: ${PUSH_MODIFIERS.join(', ')}.`,
      );
  }
  const spec: Omit<Extract<UpdateOp, { op: '$push' }>, 'op' | 'path'> = { each: eachArg('$push', path, arg) };
  const position = getOwn(arg, '$position');
  const sort = getOwn(arg, '$sort');
  const slice = getOwn(arg, '$slice');
  if (position !== undefined) spec.position = integerArg('$position', path, position);
  if (sort !== undefined) spec.sort = parsePushSort(path, sort);
  if (slice !== undefined) spec.slice = integerArg('$slice', path, slice);
  return spec;
}

function parseAddToSet(path: UpdatePath, arg: Json): Json[] {
  if (!isModifierObject(arg)) {
    checkStorable(arg, path.text, '$addToSet');
    return [cloneJson(arg)];
  }
  for (const key of Object.keys(arg)) {
    if (key !== '$each')
      throw new QueryError(`Unrecognized clause '${key}' in $addToSet on '${path.text}'. Supported: $each.`);
  }
  return eachArg('$addToSet', path, arg);
}

function eachArg(op: '$push' | '$addToSet', path: UpdatePath, mods: JsonObject): Json[] {
  const each = getOwn(mods, '$each');
  if (each === undefined) throw new QueryError(`${op} on '${path.text}' has modifiers but no $each.`);
  if (!Array.isArray(each))
    throw new QueryError(`$each in ${op} on '${path.text}' must be an array, not ${describe(each)}.`);
  checkStorable(each, path.text, op);
  return cloneJson(each);
}

function integerArg(modifier: string, path: UpdatePath, arg: Json): number {
  if (typeof arg === 'number' && Number.isInteger(arg)) return arg;
  throw new QueryError(`${modifier} in $push on '${path.text}' must be an integer, not ${preview(arg)}.`);
}

function parsePushSort(path: UpdatePath, arg: Json): PushSort {
  if (arg === 1 || arg === -1) return arg;
  if (!isPlainObject(arg) || Object.keys(arg).length === 0)
    throw new QueryError(
      `$sort in $push on '${path.text}' must be 1, -1 or an object such as {"score": -1}, not ${preview(arg)}.`,
    );
  return Object.entries(arg).map(([field, dir]) => {
    if (dir !== 1 && dir !== -1)
      throw new QueryError(
        `$sort in $push on '${path.text}': '${field}' must be 1 or -1, not ${preview(dir)}.`,
      );
    return { path: parseUpdatePath(field, `the $sort of $push on '${path.text}'`), dir };
  });
}

function parsePullMatcher(path: UpdatePath, arg: Json): PullMatcher {
  if (!isPlainObject(arg)) return { kind: 'equal', value: cloneJson(arg) };
  const keys = Object.keys(arg);
  if (keys.length > 0 && keys.every((k) => k.startsWith('$')))
    return { kind: 'conds', conds: parseConds(path, arg) };
  const fields = Object.entries(arg).map(([field, value]) => {
    if (field.startsWith('$'))
      throw new QueryError(
        `$pull on '${path.text}' mixes operators ('${field}') and fields; use one or the other.`,
      );
    const where = `the $pull on '${path.text}'`;
    const conds: PullCond[] = isModifierObject(value)
      ? parseConds(path, value)
      : [{ op: '$eq', value: cloneJson(value) }];
    return { path: parseUpdatePath(field, where), conds };
  });
  return { kind: 'fields', fields };
}

function parseConds(path: UpdatePath, ops: JsonObject): PullCond[] {
  return Object.entries(ops).map(([op, value]): PullCond => {
    if (!op.startsWith('$'))
      throw new QueryError(
        `$pull on '${path.text}' mixes operators and fields ('${op}'); use one or the other.`,
      );
    switch (op) {
      case '$eq':
      case '$ne':
        return { op, value: cloneJson(value) };
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        return { op, value: cloneJson(value) };
      case '$in':
      case '$nin':
        if (!Array.isArray(value)) throw new QueryError(`${op} in $pull on '${path.text}' needs an array.`);
        return { op, values: cloneJson(value) };
      default:
        throw new QueryError(
          `Unsupported operator '${op}' in $pull on '${path.text}'. Supported: ${PULL_OPERATORS.join(', ')}.`,
        );
    }
  });
}

function pullAllValues(path: UpdatePath, arg: Json): Json[] {
  if (Array.isArray(arg)) return cloneJson(arg);
  throw new QueryError(`$pullAll on '${path.text}' requires an array argument, not ${describe(arg)}.`);
}

function popEnd(path: UpdatePath, arg: Json): 1 | -1 {
  if (arg === 1 || arg === -1) return arg;
  throw new QueryError(`$pop on '${path.text}' expects 1 or -1, found: ${preview(arg)}.`);
}

interface Claim {
  op: string;
  text: string;
}

/** MongoDB refuses an update whose paths overlap, since the outcome would depend on their order. */
function checkPaths(ops: UpdateOp[]): void {
  const claims = new PathClaims<Claim>();
  for (const op of ops) {
    for (const path of op.op === '$rename' ? [op.path, op.to] : [op.path]) {
      // $set may repeat _id's value (checked against each document when it is applied).
      if (path.segments[0] === '_id' && op.op !== '$setOnInsert' && op.op !== '$set')
        throw new QueryError(
          `Performing an update on the path '${path.text}' would modify the immutable field '_id' (${op.op}).`,
        );
      const clash = claims.claim(path, { op: op.op, text: path.text });
      if (clash)
        throw new QueryError(
          `Updating the path '${path.text}' would create a conflict at '${clash.at}' (${op.op} on '${path.text}', ${clash.other.op} on '${clash.other.text}').`,
        );
    }
  }
}

/** Finds overlapping paths (equal, or one a segment-wise prefix of the other) without comparing all pairs. */
class PathClaims<T> {
  private readonly whole = new Map<string, T>();
  private readonly within = new Map<string, T>();

  /** Returns the earlier claim the path collides with and the shorter path where they meet. */
  claim(path: UpdatePath, tag: T): { at: string; other: T } | undefined {
    const prefixes = path.segments.slice(1).map((_, i) => path.segments.slice(0, i + 1).join('.'));
    const clash = this.find(path.text, prefixes);
    if (clash) return clash;
    this.whole.set(path.text, tag);
    for (const p of prefixes) if (!this.within.has(p)) this.within.set(p, tag);
    return undefined;
  }

  private find(text: string, prefixes: string[]): { at: string; other: T } | undefined {
    const same = this.whole.get(text) ?? this.within.get(text);
    if (same !== undefined) return { at: text, other: same };
    for (const p of prefixes) {
      const other = this.whole.get(p);
      if (other !== undefined) return { at: p, other };
    }
    return undefined;
  }
}

/** Field names that no path could address later are refused before they reach storage. */
function checkStorable(value: Json, path: string, where: string, depth = 0): void {
  if (depth > MAX_VALUE_DEPTH)
    throw new QueryError(
      `The value at '${path}' in ${where} is nested deeper than ${MAX_VALUE_DEPTH} levels.`,
    );
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) checkStorable(v, join(path, String(i)), where, depth + 1);
  } else if (isPlainObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      const at = join(path, key);
      if (key.startsWith('$'))
        throw new QueryError(`The dollar ($) prefixed field '${key}' in '${at}' is not allowed in ${where}.`);
      if (key.includes('.'))
        throw new QueryError(
          `The dotted field '${key}' in '${at}' is not allowed in ${where}: paths could not address it.`,
        );
      checkStorable(v, at, where, depth + 1);
    }
  }
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

// ---------------------------------------------------------------------------------------------
// Applying

export function applyUpdate(
  doc: JsonObject,
  update: ParsedUpdate,
  opts: { now: Date; isInsert: boolean },
): JsonObject {
  const result =
    update.kind === 'replacement' ? replaceDocument(doc, update.doc) : applyOperators(doc, update.ops, opts);
  checkIdKept(doc, result);
  return idFirst(result);
}

function replaceDocument(doc: JsonObject, replacement: JsonObject): JsonObject {
  const out = cloneJson(replacement);
  const id = getOwn(doc, '_id');
  if (id === undefined) return out;
  const replacementId = getOwn(out, '_id');
  if (replacementId !== undefined && !jsonEqual(replacementId, id))
    throw new QueryError(
      `The replacement document would modify the immutable field '_id' (from ${preview(id)} to ${preview(replacementId)}).`,
    );
  setOwn(out, '_id', cloneJson(id));
  return out;
}

/** Only $setOnInsert may write _id, and on an upsert whose query fixed _id it must keep that value. */
function checkIdKept(before: JsonObject, after: JsonObject): void {
  const was = getOwn(before, '_id');
  const is = getOwn(after, '_id');
  if (was !== undefined && (is === undefined || !jsonEqual(was, is)))
    throw new QueryError(
      `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${preview(is ?? null)}.`,
    );
  if (Array.isArray(is)) throw new QueryError(`The '_id' value cannot be of type array: ${preview(is)}.`);
}

/** Where one operator works: the document root, and what error messages should name. */
interface Target {
  root: JsonObject;
  op: string;
  path: UpdatePath;
  id: Json | undefined;
}

function applyOperators(
  doc: JsonObject,
  ops: UpdateOp[],
  opts: { now: Date; isInsert: boolean },
): JsonObject {
  const root = cloneJson(doc);
  const id = getOwn(doc, '_id');
  for (const op of ops) {
    if (op.op === '$setOnInsert' && !opts.isInsert) continue;
    applyOp({ root, op: op.op, path: op.path, id }, op, opts.now);
    if (op.op === '$set' && op.path.segments[0] === '_id' && id !== undefined) {
      const after = getOwn(root, '_id');
      if (after === undefined || !jsonEqual(after, id))
        throw new QueryError(
          `Performing an update on the path '${op.path.text}' would modify the immutable field '_id' ($set: from ${preview(id)} to ${preview(after ?? null)}).`,
        );
    }
  }
  return root;
}

function applyOp(t: Target, op: UpdateOp, now: Date): void {
  switch (op.op) {
    case '$set':
    case '$setOnInsert':
      write(t, () => cloneJson(op.value));
      break;
    case '$unset':
      unset(t);
      break;
    case '$inc':
      write(t, (cur) => (cur === undefined ? op.by : numeric(t, cur) + op.by));
      break;
    case '$mul':
      write(t, (cur) => (cur === undefined ? 0 : numeric(t, cur) * op.by));
      break;
    case '$min':
    case '$max':
      write(t, (cur) =>
        cur === undefined || improves(op.op, op.value, cur) ? cloneJson(op.value) : undefined,
      );
      break;
    case '$currentDate':
      write(t, () => (op.type === 'timestamp' ? now.getTime() : now.toISOString()));
      break;
    case '$push':
      write(t, (cur) => push(cur === undefined ? [] : arrayValue(t, cur), op));
      break;
    case '$addToSet':
      write(t, (cur) => addToSet(cur === undefined ? [] : arrayValue(t, cur), op.each));
      break;
    case '$pull':
      modifyExisting(t, (cur) => arrayValue(t, cur).filter((e) => !pullMatches(op.match, e)));
      break;
    case '$pullAll':
      modifyExisting(t, (cur) => arrayValue(t, cur).filter((e) => !op.values.some((v) => jsonEqual(e, v))));
      break;
    case '$pop':
      modifyExisting(t, (cur) => pop(arrayValue(t, cur), op.end));
      break;
    case '$rename':
      rename(t, op.to);
      break;
  }
}

function improves(op: '$min' | '$max', value: Json, cur: Json): boolean {
  const c = bsonCompare(value, cur);
  return op === '$min' ? c < 0 : c > 0;
}

/** The place a path's last segment names: a field of an object, or an index of an array. */
interface Slot {
  parent: JsonObject | Json[];
  key: string;
}

type ArrayRule = 'allowed' | 'source' | 'destination';

/**
 * What a path that cannot be walked to its end means. 'create': missing intermediates become
 * objects, and a scalar in the way is an error (the setting operators). 'viable': nothing to do if
 * a part is missing, but an error if a scalar, or a field name on an array, blocks the path
 * (MongoDB's PathNotViable, for $pop, $pull and $pullAll). 'lenient': nothing to do either way
 * ($unset, and $rename's source).
 */
type Walk = 'create' | 'viable' | 'lenient';

/** Walks to the slot of the path's last segment, or undefined when there is nothing to do. */
function locate(t: Target, walk: Walk, arrays: ArrayRule = 'allowed'): Slot | undefined {
  const segs = t.path.segments;
  let parent: JsonObject | Json[] = t.root;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i] as string;
    const owner = segs[i - 1] as string;
    if (Array.isArray(parent)) {
      if (arrays !== 'allowed') throw renameThroughArray(t, arrays, owner);
      if (!isIndex(seg)) {
        if (walk === 'create') throw cannotCreate(t, seg, owner, parent);
        if (walk === 'viable') throw notViable(t, seg, owner, parent);
        return undefined;
      }
    }
    const slot: Slot = { parent, key: seg };
    if (i === segs.length - 1) return slot;
    let child = readSlot(slot);
    if (child === undefined) {
      if (walk !== 'create') return undefined;
      child = writeSlot(t, slot, {});
    }
    if (child === null || typeof child !== 'object') {
      if (walk === 'create') throw cannotCreate(t, segs[i + 1] as string, seg, child);
      if (walk === 'viable') throw notViable(t, segs[i + 1] as string, seg, child);
      return undefined;
    }
    parent = child;
  }
  return undefined;
}

/** MongoDB accepts only canonical indexes ("01" is a field name, and a field name on an array is an error). */
function isIndex(seg: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(seg);
}

function readSlot(slot: Slot): Json | undefined {
  return Array.isArray(slot.parent) ? slot.parent[Number(slot.key)] : getOwn(slot.parent, slot.key);
}

function writeSlot<T extends Json>(t: Target, slot: Slot, value: T): T {
  if (!Array.isArray(slot.parent)) {
    setOwn(slot.parent, slot.key, value);
    return value;
  }
  const index = Number(slot.key);
  if (index - slot.parent.length > MAX_ARRAY_PADDING)
    throw new QueryError(
      `${t.op} on '${t.path.text}' would pad an array with more than ${MAX_ARRAY_PADDING} nulls to reach index ${index}.`,
    );
  while (slot.parent.length < index) slot.parent.push(null);
  slot.parent[index] = value;
  return value;
}

/** `next` returns the new value, or undefined to leave the document as it is. */
function write(t: Target, next: (cur: Json | undefined) => Json | undefined): void {
  const slot = locate(t, 'create');
  if (slot === undefined) return;
  const value = next(readSlot(slot));
  if (value !== undefined) writeSlot(t, slot, value);
}

function modifyExisting(t: Target, next: (cur: Json) => Json): void {
  const slot = locate(t, 'viable');
  const cur = slot && readSlot(slot);
  if (slot !== undefined && cur !== undefined) writeSlot(t, slot, next(cur));
}

/** MongoDB keeps array positions stable: an unset element becomes null. */
function unset(t: Target): void {
  const slot = locate(t, 'lenient');
  if (slot === undefined || readSlot(slot) === undefined) return;
  if (Array.isArray(slot.parent)) slot.parent[Number(slot.key)] = null;
  else Reflect.deleteProperty(slot.parent, slot.key);
}

function rename(t: Target, to: UpdatePath): void {
  const from = locate(t, 'lenient', 'source');
  const value = from && readSlot(from);
  if (from === undefined || value === undefined) return;
  const dest = { ...t, path: to };
  const slot = locate(dest, 'create', 'destination') as Slot;
  Reflect.deleteProperty(from.parent, from.key);
  writeSlot(dest, slot, value);
}

function numeric(t: Target, cur: Json): number {
  if (typeof cur === 'number') return cur;
  throw new QueryError(
    `Cannot apply ${t.op} to a value of non-numeric type: field '${t.path.text}'${ofDocument(t)} is ${describe(cur)}.`,
  );
}

function arrayValue(t: Target, cur: Json): Json[] {
  if (Array.isArray(cur)) return cur;
  throw new QueryError(
    `Cannot apply ${t.op} to a non-array value: field '${t.path.text}'${ofDocument(t)} is ${describe(cur)}.`,
  );
}

function cannotCreate(t: Target, field: string, owner: string, element: Json): QueryError {
  return new QueryError(
    `Cannot create field '${field}' in element {${owner}: ${preview(element)}} (${t.op} on '${t.path.text}'${ofDocument(t)}).`,
  );
}

function notViable(t: Target, field: string, owner: string, element: Json): QueryError {
  return new QueryError(
    `Cannot use the part (${field}) of (${t.path.text}) to traverse the element {${owner}: ${preview(element)}} (${t.op}${ofDocument(t)}).`,
  );
}

function renameThroughArray(t: Target, role: 'source' | 'destination', owner: string): QueryError {
  return new QueryError(
    `The ${role} field for $rename cannot be an array element: '${t.path.text}'${ofDocument(t)} has an array field called '${owner}'.`,
  );
}

function ofDocument(t: Target): string {
  return t.id === undefined ? '' : ` of document with _id ${preview(t.id)}`;
}

/** MongoDB's order: insert at $position, then $sort the whole array, then $slice it. */
function push(arr: Json[], op: Extract<UpdateOp, { op: '$push' }>): Json[] {
  const at = op.position === undefined ? arr.length : clampPosition(op.position, arr.length);
  let out = [...arr.slice(0, at), ...op.each.map(cloneJson), ...arr.slice(at)];
  if (op.sort !== undefined) out = sortElements(out, op.sort);
  if (op.slice !== undefined) out = op.slice >= 0 ? out.slice(0, op.slice) : out.slice(op.slice);
  return out;
}

function clampPosition(position: number, length: number): number {
  return position < 0 ? Math.max(0, length + position) : Math.min(position, length);
}

function addToSet(arr: Json[], each: Json[]): Json[] {
  const out = [...arr];
  for (const item of each) if (!out.some((e) => jsonEqual(e, item))) out.push(cloneJson(item));
  return out;
}

function pop(arr: Json[], end: 1 | -1): Json[] {
  return end === 1 ? arr.slice(0, -1) : arr.slice(1);
}

// ---------------------------------------------------------------------------------------------
// Sorting and matching array elements

/** An empty array sorts below null in MongoDB; undefined stands for it among sort keys. */
type SortKey = Json | undefined;

function sortElements(arr: Json[], sort: PushSort): Json[] {
  if (typeof sort === 'number') return [...arr].sort((a, b) => sort * bsonCompare(a, b));
  const keyed = arr.map((value) => ({ value, keys: sort.map((s) => sortKey(value, s.path, s.dir)) }));
  keyed.sort((a, b) => {
    for (const [i, s] of sort.entries()) {
      const c = compareSortKeys(a.keys[i], b.keys[i]);
      if (c !== 0) return s.dir * c;
    }
    return 0;
  });
  return keyed.map((k) => k.value);
}

/** As in find's sort: an array field sorts by its smallest element ascending and its largest descending. */
function sortKey(element: Json, path: UpdatePath, dir: 1 | -1): SortKey {
  const keys: SortKey[] = [];
  for (const v of valuesAt(element, path.segments)) {
    if (!Array.isArray(v)) keys.push(v);
    else if (v.length === 0) keys.push(undefined);
    else keys.push(...v);
  }
  if (keys.length === 0) return null;
  return keys.reduce((best, k) => (dir * compareSortKeys(k, best) < 0 ? k : best));
}

function compareSortKeys(a: SortKey, b: SortKey): number {
  if (a === undefined || b === undefined) return (a === undefined ? 0 : 1) - (b === undefined ? 0 : 1);
  return bsonCompare(a, b);
}

/**
 * The values a dotted path reaches, with MongoDB's implicit traversal of arrays of documents. A field
 * missing from a document counts as null, as it does for query equality.
 */
function valuesAt(value: Json, segs: string[], i = 0, out: Json[] = []): Json[] {
  if (i === segs.length) {
    out.push(value);
    return out;
  }
  const seg = segs[i] as string;
  if (Array.isArray(value)) {
    const indexed = isIndex(seg) ? value[Number(seg)] : undefined;
    if (indexed !== undefined) valuesAt(indexed, segs, i + 1, out);
    for (const e of value) if (isPlainObject(e)) valuesAt(e, segs, i, out);
  } else if (isPlainObject(value)) {
    valuesAt(getOwn(value, seg) ?? null, segs, i + 1, out);
  }
  return out;
}

function pullMatches(matcher: PullMatcher, element: Json): boolean {
  switch (matcher.kind) {
    case 'equal':
      return jsonEqual(element, matcher.value);
    case 'conds':
      return condsMatch(matcher.conds, withElements([element]));
    case 'fields':
      return (
        isPlainObject(element) &&
        matcher.fields.every((f) => {
          const values = valuesAt(element, f.path.segments);
          return condsMatch(f.conds, withElements(values.length === 0 ? [null] : values));
        })
      );
  }
}

/** A query condition on an array holds if it holds for the array itself or for any of its elements. */
function withElements(values: Json[]): Json[] {
  return values.flatMap((v) => (Array.isArray(v) ? [v, ...v] : [v]));
}

function condsMatch(conds: PullCond[], candidates: Json[]): boolean {
  return conds.every((c) => condMatches(c, candidates));
}

function condMatches(cond: PullCond, candidates: Json[]): boolean {
  const equals = (v: Json) => candidates.some((c) => jsonEqual(c, v));
  switch (cond.op) {
    case '$eq':
      return equals(cond.value);
    case '$ne':
      return !equals(cond.value);
    case '$in':
      return cond.values.some(equals);
    case '$nin':
      return !cond.values.some(equals);
    default:
      return candidates.some((c) => comparisonHolds(cond.op, c, cond.value));
  }
}

/** Query comparisons are type-bracketed: a number is neither less nor greater than a string. */
function comparisonHolds(op: '$gt' | '$gte' | '$lt' | '$lte', candidate: Json, value: Json): boolean {
  if (typeRank(candidate) !== typeRank(value)) return false;
  const c = bsonCompare(candidate, value);
  if (op === '$gt') return c > 0;
  if (op === '$gte') return c >= 0;
  if (op === '$lt') return c < 0;
  return c <= 0;
}

// ---------------------------------------------------------------------------------------------
// Upsert seed

/**
 * A query condition that fixes a path's value, so an upsert's inserted document can start with it;
 * or, with `refused`, one that would fix it to two values at once.
 */
interface Equality {
  path: UpdatePath;
  value: Json;
  refused?: string;
}

/**
 * The document an upsert inserts before its update is applied, from the query's equalities
 * (MongoDB's rules, jstests/core/upsert_fields.js): fields, `$eq`, one-value `$in` and `$all`,
 * inside `$and` and inside an `$or` of one clause. A path fixed twice, or by a `$all` of several
 * values, is an error. A replacement document takes only `_id` from the query, and only from
 * conditions on `_id` itself.
 */
export function upsertSeed(query: JsonObject, update: ParsedUpdate): JsonObject {
  if (!isPlainObject(query)) throw new QueryError('The query must be a JSON object.');
  const replacement = update.kind === 'replacement';
  const seed: JsonObject = {};
  const claims = new PathClaims<string>();
  for (const { path, value, refused } of equalities(query, 0)) {
    if (replacement && path.segments[0] !== '_id') continue;
    if (refused !== undefined)
      throw new QueryError(`Cannot infer the upsert's fields from the query: ${refused}.`);
    const clash = claims.claim(path, path.text);
    if (clash !== undefined)
      throw new QueryError(
        clash.other === path.text
          ? `Cannot infer the upsert's fields from the query: path '${path.text}' is matched twice.`
          : `Cannot infer the upsert's fields from the query: both paths '${path.text}' and '${clash.other}' are matched.`,
      );
    if (replacement && path.segments.length > 1)
      throw new QueryError(
        `Cannot infer the upsert's _id from the query: a replacement document takes _id from a condition on '_id' itself, not on '${path.text}'.`,
      );
    checkStorable(value, path.text, 'an upsert query equality');
    setPath(seed, path.segments, cloneJson(value));
  }
  return idFirst(seed);
}

function equalities(query: JsonObject, depth: number): Equality[] {
  if (depth > MAX_VALUE_DEPTH)
    throw new QueryError(`The query is nested deeper than ${MAX_VALUE_DEPTH} levels.`);
  const out: Equality[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (key === '$and') out.push(...clauseEqualities(key, value, depth));
    // An $or of several clauses fixes nothing, even when they agree.
    else if (key === '$or' && Array.isArray(value) && value.length === 1)
      out.push(...clauseEqualities(key, value, depth));
    else if (!key.startsWith('$')) out.push(...fieldEqualities(key, value));
  }
  return out;
}

function clauseEqualities(op: '$and' | '$or', clauses: Json, depth: number): Equality[] {
  if (!Array.isArray(clauses)) throw new QueryError(`${op} must be an array of query objects.`);
  return clauses.flatMap((clause, i) => {
    if (!isPlainObject(clause)) throw new QueryError(`${op}[${i}] must be a query object.`);
    return equalities(clause, depth + 1);
  });
}

/** $eq and a one-value $in or $all fix a value; ranges and the rest leave the field to the update. */
function fieldEqualities(key: string, value: Json): Equality[] {
  const path = parseUpdatePath(key, 'the upsert query');
  if (!isModifierObject(value)) return [{ path, value }];
  const out: Equality[] = [];
  const eq = getOwn(value, '$eq');
  const oneOf = getOwn(value, '$in');
  const all = getOwn(value, '$all');
  if (eq !== undefined) out.push({ path, value: eq });
  if (Array.isArray(oneOf) && oneOf.length === 1) out.push({ path, value: oneOf[0] as Json });
  if (Array.isArray(all) && all.length === 1) out.push({ path, value: all[0] as Json });
  if (Array.isArray(all) && all.length > 1)
    out.push({ path, value: null, refused: `$all on '${path.text}' holds several values` });
  return out;
}

/** The seed's paths never overlap, so every intermediate found is an object this function made. */
function setPath(root: JsonObject, segs: string[], value: Json): void {
  let parent = root;
  for (const seg of segs.slice(0, -1)) {
    const child = getOwn(parent, seg);
    if (isPlainObject(child)) parent = child;
    else parent = setOwn(parent, seg, {});
  }
  setOwn(parent, segs[segs.length - 1] as string, value);
}

// ---------------------------------------------------------------------------------------------
// JSON values

export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i] as Json));
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => {
    const other = getOwn(b, k);
    return other !== undefined && jsonEqual(a[k] as Json, other);
  });
}

/** BSON's order of types; within a type, values compare by content. */
function typeRank(v: Json): number {
  if (v === null) return 1;
  switch (typeof v) {
    case 'number':
      return 2;
    case 'string':
      return 3;
    case 'boolean':
      return 6;
    default:
      return Array.isArray(v) ? 5 : 4;
  }
}

/** MongoDB's total order of values: null < numbers < strings < objects < arrays < booleans. */
export function bsonCompare(a: Json, b: Json): number {
  const rank = typeRank(a) - typeRank(b);
  if (rank !== 0) return Math.sign(rank);
  if (typeof a === 'number') return Math.sign(a - (b as number));
  if (typeof a === 'string') return compareStrings(a, b as string);
  if (typeof a === 'boolean') return Number(a) - Number(b);
  if (Array.isArray(a)) return compareArrays(a, b as Json[]);
  if (isPlainObject(a)) return compareObjects(a, b as JsonObject);
  return 0;
}

function compareArrays(a: Json[], b: Json[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = bsonCompare(a[i] as Json, b[i] as Json);
    if (c !== 0) return c;
  }
  return Math.sign(a.length - b.length);
}

/** BSON compares documents field by field: the value's type, then the field name, then the value. */
function compareObjects(a: JsonObject, b: JsonObject): number {
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  for (let i = 0; i < Math.min(ak.length, bk.length); i++) {
    const ka = ak[i] as string;
    const kb = bk[i] as string;
    const va = a[ka] as Json;
    const vb = b[kb] as Json;
    const c = Math.sign(typeRank(va) - typeRank(vb)) || compareStrings(ka, kb) || bsonCompare(va, vb);
    if (c !== 0) return c;
  }
  return Math.sign(ak.length - bk.length);
}

/**
 * MongoDB compares strings by their UTF-8 bytes, which is code point order. UTF-16 code units agree
 * except that surrogates (code points above U+FFFF) must sort after U+E000..U+FFFF.
 */
function compareStrings(a: string, b: string): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return Math.sign(utf8Order(x) - utf8Order(y));
  }
  return Math.sign(a.length - b.length);
}

function utf8Order(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

function cloneJson<T extends Json>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => cloneJson(v)) as T;
  if (!isPlainObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, cloneJson(v));
  return out as T;
}

/** Own properties only: a field named '__proto__' or 'constructor' must not reach Object.prototype. */
function getOwn(obj: JsonObject, key: string): Json | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

function setOwn<T extends Json>(obj: JsonObject, key: string, value: T): T {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
  return value;
}

function idFirst(doc: JsonObject): JsonObject {
  const id = getOwn(doc, '_id');
  if (id === undefined || Object.keys(doc)[0] === '_id') return doc;
  const out: JsonObject = { _id: id };
  for (const [k, v] of Object.entries(doc)) if (k !== '_id') setOwn(out, k, v);
  return out;
}

function isPrefix(prefix: string[], of: string[]): boolean {
  return prefix.length < of.length && prefix.every((s, i) => s === of[i]);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return typeof v;
  }
}

function preview(v: Json): string {
  const text = JSON.stringify(v);
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
