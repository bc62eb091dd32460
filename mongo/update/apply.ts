/** Running a parsed update against one document: a copy is changed, the original never is. */

import { QueryError } from '../../errors.js';
import type { Filter } from '../filter/parse.js';
import { bsonCompare, jsonEqual, preview } from '../value/compare.js';
import {
  cloneJson,
  describeValue,
  getOwn,
  idFirst,
  type Json,
  type JsonObject,
  setOwn,
} from '../value/json.js';
import { pullMatches, sortElements } from './array-elements.js';
import { type BitOp, type ParsedUpdate, PathClaims, type UpdateOp } from './parse.js';
import { isIndex, isPositionalPath, type UpdatePath } from './path.js';
import { matchedIndexOf, resolvePaths } from './positional.js';

/** MongoDB's limit on the nulls one update may add to pad an array up to an index. */
export const MAX_ARRAY_PADDING = 1_500_000;

/** `filter` is the parsed query that matched `doc`: the positional `$` stands for its match. */
export interface ApplyOptions {
  now: Date;
  isInsert: boolean;
  filter?: Filter;
}

export function applyUpdate(doc: JsonObject, update: ParsedUpdate, opts: ApplyOptions): JsonObject {
  const result =
    update.kind === 'replacement' ? replaceDocument(doc, update.doc) : applyOperators(doc, update, opts);
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
  update: Extract<ParsedUpdate, { kind: 'operators' }>,
  opts: ApplyOptions,
): JsonObject {
  const root = cloneJson(doc);
  const id = getOwn(doc, '_id');
  const targets = resolveTargets(doc, root, update, opts);
  for (const { op, path } of targets) {
    applyOp({ root, op: op.op, path, id }, op, opts.now);
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

/**
 * Every operator with the concrete paths it changes in this document, all found before any is
 * applied. Positional paths that meet in this document are MongoDB's "Update created a conflict".
 * A $setOnInsert that an update skips still has its positional paths resolved, as MongoDB walks
 * its whole update tree before a leaf decides to do nothing: their errors are errors on updates too.
 */
function resolveTargets(
  doc: JsonObject,
  root: JsonObject,
  update: Extract<ParsedUpdate, { kind: 'operators' }>,
  opts: ApplyOptions,
): { op: UpdateOp; path: UpdatePath }[] {
  const ctx = {
    root,
    arrayFilters: update.arrayFilters,
    matchedIndex: matchedIndexOf(doc, opts.filter, opts.isInsert),
  };
  const targets: { op: UpdateOp; path: UpdatePath }[] = [];
  let positional = false;
  for (const op of update.ops) {
    if (isPositionalPath(op.path)) positional = true;
    else if (op.op === '$setOnInsert' && !opts.isInsert) continue;
    for (const path of resolvePaths(op.path, ctx)) targets.push({ op, path });
  }
  // One operator's concrete paths are distinct elements, so only several operators can meet.
  if (positional && update.ops.length > 1) {
    const claims = new PathClaims<string>();
    const written = targets.flatMap(({ op, path }) => (op.op === '$rename' ? [path, op.to] : [path]));
    for (const path of written) {
      const clash = claims.claim(path, path.text);
      if (clash) throw new QueryError(`Update created a conflict at '${clash.at}'.`);
    }
  }
  return opts.isInsert ? targets : targets.filter((t) => t.op.op !== '$setOnInsert');
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
    case '$bit':
      write(t, (cur) => bitwise(t, cur === undefined ? 0 : cur, op.ops));
      break;
  }
}

/**
 * In 64-bit two's complement, as MongoDB computes. JSON numbers are doubles: a field counts as an
 * integer when it holds a 64-bit one, and a result a double cannot hold exactly is refused rather
 * than rounded.
 */
function bitwise(t: Target, cur: Json, ops: BitOp[]): number {
  if (typeof cur !== 'number' || !Number.isInteger(cur) || cur < -(2 ** 63) || cur >= 2 ** 63)
    throw new QueryError(
      `Cannot apply $bit to a value of non-integral type: field '${t.path.text}'${ofDocument(t)} is ${typeof cur === 'number' ? `the number ${cur}, not a 64-bit integer` : describeValue(cur)}.`,
    );
  let value = BigInt(cur);
  for (const { kind, operand } of ops) {
    const b = BigInt(operand);
    value = BigInt.asIntN(64, kind === 'and' ? value & b : kind === 'or' ? value | b : value ^ b);
  }
  const result = Number(value);
  if (BigInt(result) !== value)
    throw new QueryError(
      `$bit on '${t.path.text}'${ofDocument(t)} would give ${value}, an integer a JSON number (a double) cannot hold exactly.`,
    );
  return result;
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
    `Cannot apply ${t.op} to a value of non-numeric type: field '${t.path.text}'${ofDocument(t)} is ${describeValue(cur)}.`,
  );
}

function arrayValue(t: Target, cur: Json): Json[] {
  if (Array.isArray(cur)) return cur;
  throw new QueryError(
    `Cannot apply ${t.op} to a non-array value: field '${t.path.text}'${ofDocument(t)} is ${describeValue(cur)}.`,
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
