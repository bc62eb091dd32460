/**
 * Parsing an update document once per request: the operator whitelist, each operator's argument
 * checks, and the path rules every operator shares (positional segments as MongoDB allows them,
 * no overlapping paths, no field names a path could not address later).
 */

import { QueryError } from '../../errors.js';
import { type Filter, parseFilter } from '../filter/parse.js';
import { isPrefix, preview } from '../value/compare.js';
import {
  cloneJson,
  describeValue,
  getOwn,
  isPlainObject,
  type Json,
  type JsonObject,
} from '../value/json.js';
import { isPositionalPath, parseUpdatePath, positional, type UpdatePath } from './path.js';
import { checkFiltersUsed, checkPositionalPath, parseArrayFilters } from './positional.js';

/**
 * MongoDB's three $pull forms: a plain value removes equal elements; an object whose first key is
 * a query operator is a condition on each element, as `{<key>: element}` is matched by
 * `{<key>: condition}`; any other object is a query on elements that are documents.
 */
export type PullMatcher =
  | { kind: 'equal'; value: Json }
  | { kind: 'element'; key: string; filter: Filter }
  | { kind: 'document'; filter: Filter };

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
  | { op: '$pop'; path: UpdatePath; end: 1 | -1 }
  | { op: '$bit'; path: UpdatePath; ops: BitOp[] };

/** One operation of a $bit, applied in the order written. */
export interface BitOp {
  kind: 'and' | 'or' | 'xor';
  operand: number;
}

export type ParsedUpdate =
  | { kind: 'replacement'; doc: JsonObject }
  | { kind: 'operators'; ops: UpdateOp[]; arrayFilters: ReadonlyMap<string, Filter> };

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
  '$bit',
] as const;
type OperatorName = (typeof SUPPORTED_UPDATE_OPERATORS)[number];

/** The keys that make a $pull argument a query on documents rather than a condition on elements. */
const TOP_LEVEL_QUERY_OPERATORS = ['$and', '$or', '$nor', '$comment'];
const PUSH_MODIFIERS = ['$each', '$position', '$sort', '$slice'];

/** MongoDB refuses documents nested deeper than 100 levels; it also bounds our recursion. */
export const MAX_VALUE_DEPTH = 100;

export function parseUpdate(doc: unknown, options: { arrayFilters?: unknown } = {}): ParsedUpdate {
  if (Array.isArray(doc))
    throw new QueryError(
      'Pipeline-style updates (an array of stages) are not supported; use update operators.',
    );
  if (!isPlainObject(doc))
    throw new QueryError(`The update must be a JSON object, not ${describeValue(doc)}.`);
  const arrayFilters = parseArrayFilters(options.arrayFilters);
  const first = Object.keys(doc)[0];
  if (first === undefined || !first.startsWith('$')) {
    const replacement = parseReplacement(doc);
    checkFiltersUsed(arrayFilters, [], doc);
    return { kind: 'replacement', doc: replacement };
  }
  const ops = parseOperators(doc, arrayFilters);
  checkFiltersUsed(
    arrayFilters,
    ops.map((op) => op.path),
    doc,
  );
  return { kind: 'operators', ops, arrayFilters };
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

function parseOperators(doc: JsonObject, arrayFilters: ReadonlyMap<string, Filter>): UpdateOp[] {
  const ops: UpdateOp[] = [];
  for (const [name, arg] of Object.entries(doc)) {
    if (!name.startsWith('$')) throw mixedError(name);
    if (!isOperatorName(name))
      throw new QueryError(
        `Unknown update operator '${name}'. Supported: ${SUPPORTED_UPDATE_OPERATORS.join(', ')}.`,
      );
    if (!isPlainObject(arg))
      throw new QueryError(
        `The value of ${name} must be an object of {"path": argument}, not ${describeValue(arg)}.`,
      );
    for (const [text, value] of Object.entries(arg)) {
      const path = parseUpdatePath(text, name, true);
      checkPositionalPath(path, arrayFilters);
      ops.push(parseOp(name, path, value));
    }
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
      if (isPositionalPath(path))
        throw new QueryError(`The source field for $rename may not be dynamic: ${path.text}.`);
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
    case '$bit':
      return { op, path, ops: bitOps(path, arg) };
  }
}

function numberArg(op: '$inc' | '$mul', path: UpdatePath, arg: Json): number {
  if (typeof arg === 'number') return arg;
  const verb = op === '$inc' ? 'increment' : 'multiply';
  throw new QueryError(`Cannot ${verb} with non-numeric argument: {${path.text}: ${preview(arg)}} (${op}).`);
}

function renameTarget(path: UpdatePath, arg: Json): UpdatePath {
  if (typeof arg !== 'string')
    throw new QueryError(
      `The 'to' field for $rename of '${path.text}' must be a string path, not ${describeValue(arg)}.`,
    );
  const to = parseUpdatePath(arg, '$rename', true);
  if (isPositionalPath(to))
    throw new QueryError(`The destination field for $rename may not be dynamic: ${to.text}.`);
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
export function isModifierObject(arg: Json): arg is JsonObject {
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
    throw new QueryError(`$each in ${op} on '${path.text}' must be an array, not ${describeValue(each)}.`);
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
  const first = Object.keys(arg)[0];
  if (first === undefined || !first.startsWith('$') || TOP_LEVEL_QUERY_OPERATORS.includes(first))
    return { kind: 'document', filter: pullFilter(path, arg) };
  // The element is matched under the name of the array's field, so errors name it.
  const key = [...path.segments].reverse().find((s) => positional(s) === undefined) as string;
  return { kind: 'element', key, filter: pullFilter(path, { [key]: arg }) };
}

function pullFilter(path: UpdatePath, query: JsonObject): Filter {
  try {
    return parseFilter(query, {
      banSpecial: true,
      noExpr: "in $pull's condition, which applies to array elements",
      text: false,
    });
  } catch (err) {
    if (err instanceof QueryError)
      throw new QueryError(`In the condition of $pull on '${path.text}': ${err.message}`);
    throw err;
  }
}

function pullAllValues(path: UpdatePath, arg: Json): Json[] {
  if (Array.isArray(arg)) return cloneJson(arg);
  throw new QueryError(`$pullAll on '${path.text}' requires an array argument, not ${describeValue(arg)}.`);
}

function popEnd(path: UpdatePath, arg: Json): 1 | -1 {
  if (arg === 1 || arg === -1) return arg;
  throw new QueryError(`$pop on '${path.text}' expects 1 or -1, found: ${preview(arg)}.`);
}

/**
 * MongoDB's form, {and|or|xor: <integer>, ...}, each applied in turn. An operand is exact: the
 * request parser refuses integers a double cannot hold.
 */
function bitOps(path: UpdatePath, arg: Json): BitOp[] {
  if (!isPlainObject(arg))
    throw new QueryError(
      `The $bit modifier is not compatible with ${describeValue(arg)} (on '${path.text}'). You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}}.`,
    );
  const entries = Object.entries(arg);
  if (entries.length === 0)
    throw new QueryError(
      `You must pass in at least one bitwise operation (on '${path.text}'). The format is: {$bit: {field: {and/or/xor: #}}}.`,
    );
  return entries.map(([kind, operand]) => {
    if (kind !== 'and' && kind !== 'or' && kind !== 'xor')
      throw new QueryError(
        `The $bit modifier only supports 'and', 'or', and 'xor', not '${kind}' which is an unknown operator (on '${path.text}').`,
      );
    if (typeof operand !== 'number' || !Number.isInteger(operand))
      throw new QueryError(
        `The $bit modifier field must be an integer; ${preview(operand)} is not supported here: {${kind}: ${preview(operand)}} (on '${path.text}').`,
      );
    if (operand < -(2 ** 63) || operand >= 2 ** 63)
      throw new QueryError(
        `The $bit operand {${kind}: ${operand}} on '${path.text}' is not a 64-bit integer.`,
      );
    return { kind, operand };
  });
}

interface Claim {
  op: string;
  text: string;
}

/** MongoDB refuses an update whose paths overlap, since the outcome would depend on their order. */
function checkPaths(ops: UpdateOp[]): void {
  const claims = new PathClaims<Claim>();
  // What each path needs at each of its prefixes: an array (a `$[]` or `$[<id>]` follows) or a
  // document (a field name, an index or `$` follows); MongoDB refuses paths that need both.
  const shapes = new Map<string, 'array' | 'document'>();
  for (const op of ops) {
    for (const path of op.op === '$rename' ? [op.path, op.to] : [op.path])
      for (let i = 1; i < path.segments.length; i++) {
        const at = path.segments.slice(0, i).join('.');
        const kind = positional(path.segments[i] as string)?.kind;
        const shape = kind === 'all' || kind === 'filtered' ? 'array' : 'document';
        const other = shapes.get(at);
        if (other === undefined) shapes.set(at, shape);
        else if (other !== shape)
          throw new QueryError(
            `Updating the path '${path.text}' would create a conflict at '${at}' (${op.op} on '${path.text}').`,
          );
      }
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
export class PathClaims<T> {
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
export function checkStorable(value: Json, path: string, where: string, depth = 0): void {
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
