/**
 * Parsing an update document once per request: the operator whitelist, each operator's argument
 * checks, and the path rules every operator shares (no positional paths, no overlapping paths, no
 * field names a path could not address later).
 */
import { isPlainObject, type Json, type JsonObject, QueryError } from './errors.js';
import { cloneJson, describeValue, getOwn } from './json.js';
import { MAX_PATH_LENGTH, MAX_PATH_SEGMENTS, splitPath } from './path.js';
import { isPrefix, preview } from './update-values.js';

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
  | { op: '$pop'; path: UpdatePath; end: 1 | -1 }
  | { op: '$bit'; path: UpdatePath; ops: BitOp[] };

/** One operation of a $bit, applied in the order written. */
export interface BitOp {
  kind: 'and' | 'or' | 'xor';
  operand: number;
}

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
  '$bit',
] as const;
type OperatorName = (typeof SUPPORTED_UPDATE_OPERATORS)[number];

const PULL_OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin'] as const;
const PUSH_MODIFIERS = ['$each', '$position', '$sort', '$slice'];

/** MongoDB refuses documents nested deeper than 100 levels; it also bounds our recursion. */
export const MAX_VALUE_DEPTH = 100;

export function parseUpdate(doc: unknown): ParsedUpdate {
  if (Array.isArray(doc))
    throw new QueryError(
      'Pipeline-style updates (an array of stages) are not supported; use update operators.',
    );
  if (!isPlainObject(doc))
    throw new QueryError(`The update must be a JSON object, not ${describeValue(doc)}.`);
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
        `The value of ${name} must be an object of {"path": argument}, not ${describeValue(arg)}.`,
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
    case '$bit':
      return { op, path, ops: bitOps(path, arg) };
  }
}

/** Positional paths would need the query's match positions, which the store does not report. */
export function parseUpdatePath(text: string, where: string): UpdatePath {
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
    dollarSegment: (s) =>
      s === '$' || s.startsWith('$[')
        ? `The path '${text}' in ${where} uses the positional operator '${s}'; positional operators are unsupported.`
        : `The path '${text}' in ${where} has a field name starting with '$' ('${s}').`,
  });
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
      `The 'to' field for $rename of '${path.text}' must be a string path, not ${describeValue(arg)}.`,
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

/** MongoDB accepts only canonical indexes ("01" is a field name, and a field name on an array is an error). */
export function isIndex(seg: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(seg);
}
