import { QueryError } from '../../errors.js';
import type { Expr } from '../expr/ast.js';
import { parseExpression } from '../expr/parse.js';
import { type Filter, parseFilter } from '../filter/parse.js';
import { parseSort, type SortKey } from '../sort.js';
import { describeValue, getOwn, isPlainObject, type Json, type JsonObject } from '../value/json.js';
import { type FieldPath, parsePath } from '../value/path.js';
import {
  fieldPathSegments,
  parseAddFields,
  parseProject,
  parseUnset,
  type StageProjection,
} from './projection.js';

/**
 * MongoDB's aggregation pipeline, parsed (a whitelist of stages and options: anything else is a
 * QueryError naming it) into stages that pipeline/sql.ts compiles into one statement.
 */
export type Stage =
  | { kind: 'match'; filter: Filter }
  | { kind: 'project'; stage: string; projection: StageProjection }
  | { kind: 'group'; id: Expr; accumulators: Accumulator[] }
  | { kind: 'sort'; keys: SortKey[] }
  | { kind: 'skip'; n: number }
  | { kind: 'limit'; n: number }
  | { kind: 'unwind'; path: string[]; preserve: boolean; index?: string[] }
  | { kind: 'count'; field: string }
  | { kind: 'replaceRoot'; root: Expr }
  | { kind: 'lookup'; from: string; localField: FieldPath; foreignField: FieldPath; as: string[] }
  | { kind: 'facet'; facets: [name: string, stages: Stage[]][] };

export type AccumulatorOp =
  | '$sum'
  | '$avg'
  | '$min'
  | '$max'
  | '$count'
  | '$first'
  | '$last'
  | '$push'
  | '$addToSet';

export interface Accumulator {
  field: string;
  op: AccumulatorOp;
  arg: Expr;
}

const ACCUMULATORS: ReadonlySet<string> = new Set([
  '$sum',
  '$avg',
  '$min',
  '$max',
  '$count',
  '$first',
  '$last',
  '$push',
  '$addToSet',
]);

/** Stages per request, those inside $facet included. */
export const MAX_PIPELINE_STAGES = 50;

export const SUPPORTED_STAGES = [
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$group',
  '$sort',
  '$skip',
  '$limit',
  '$unwind',
  '$count',
  '$sortByCount',
  '$replaceRoot',
  '$replaceWith',
  '$lookup',
  '$facet',
] as const;

/** MongoDB stages we know of and refuse by name, rather than as unknown. */
const UNSUPPORTED_STAGES = new Set([
  '$bucket',
  '$bucketAuto',
  '$changeStream',
  '$collStats',
  '$densify',
  '$fill',
  '$geoNear',
  '$graphLookup',
  '$indexStats',
  '$merge',
  '$out',
  '$planCacheStats',
  '$redact',
  '$sample',
  '$search',
  '$searchMeta',
  '$setWindowFields',
  '$unionWith',
  '$documents',
  '$listSessions',
  '$currentOp',
]);

interface ParseState {
  stages: number;
}

export function parsePipeline(raw: unknown): Stage[] {
  if (!Array.isArray(raw)) throw new QueryError('The pipeline must be an array of stages.');
  return parseStages(raw as Json[], { stages: 0 }, false);
}

function parseStages(raw: Json[], state: ParseState, inFacet: boolean): Stage[] {
  const out: Stage[] = [];
  for (const spec of raw) {
    if (++state.stages > MAX_PIPELINE_STAGES)
      throw new QueryError(
        `The pipeline has more than ${MAX_PIPELINE_STAGES} stages (stages inside $facet count too).`,
      );
    out.push(...parseStage(spec, state, inFacet));
  }
  return out;
}

function parseStage(spec: Json, state: ParseState, inFacet: boolean): Stage[] {
  if (!isPlainObject(spec))
    throw new QueryError(`Each pipeline stage must be an object, not ${describeValue(spec)}.`);
  const keys = Object.keys(spec);
  if (keys.length !== 1)
    throw new QueryError(
      `A pipeline stage specification object must contain exactly one field; this one has ${keys.length}${keys.length ? ` (${keys.join(', ')})` : ''}.`,
    );
  const name = keys[0] as string;
  const arg = getOwn(spec, name) as Json;
  switch (name) {
    case '$match':
      if (!isPlainObject(arg)) throw new QueryError('The $match filter must be an expression in an object.');
      return [{ kind: 'match', filter: parseFilter(arg) }];
    case '$project':
      return [{ kind: 'project', stage: name, projection: parseProject(arg) }];
    case '$addFields':
    case '$set':
      return [{ kind: 'project', stage: name, projection: parseAddFields(arg, name) }];
    case '$unset':
      return [{ kind: 'project', stage: name, projection: parseUnset(arg) }];
    case '$group':
      return [parseGroup(arg)];
    case '$sort':
      if (!isPlainObject(arg)) throw new QueryError('The $sort key specification must be an object.');
      if (Object.keys(arg).length === 0) throw new QueryError('$sort stage must have at least one sort key.');
      return [{ kind: 'sort', keys: parseSort(arg) }];
    case '$skip':
      return [{ kind: 'skip', n: count(arg, '$skip', 0) }];
    case '$limit':
      return [{ kind: 'limit', n: count(arg, '$limit', 1) }];
    case '$unwind':
      return [parseUnwind(arg)];
    case '$count':
      return [{ kind: 'count', field: outputField(arg, '$count', 'the count field') }];
    case '$sortByCount':
      return parseSortByCount(arg);
    case '$replaceRoot': {
      if (!isPlainObject(arg)) throw new QueryError('$replaceRoot stage must be an object.');
      for (const k of Object.keys(arg))
        if (k !== 'newRoot') throw new QueryError(`Unrecognized option to $replaceRoot stage: '${k}'.`);
      const root = getOwn(arg, 'newRoot');
      if (root === undefined) throw new QueryError('no newRoot specified for the $replaceRoot stage.');
      return [{ kind: 'replaceRoot', root: parseExpression(root, '$replaceRoot.newRoot') }];
    }
    case '$replaceWith':
      return [{ kind: 'replaceRoot', root: parseExpression(arg, '$replaceWith') }];
    case '$lookup':
      return [parseLookup(arg)];
    case '$facet':
      if (inFacet) throw new QueryError('$facet is not allowed to be used within a $facet stage.');
      return [parseFacet(arg, state)];
  }
  if (UNSUPPORTED_STAGES.has(name))
    throw new QueryError(
      `The pipeline stage '${name}' is not supported. Supported: ${SUPPORTED_STAGES.join(', ')}.`,
    );
  throw new QueryError(
    `Unrecognized pipeline stage name: '${name}'. Supported: ${SUPPORTED_STAGES.join(', ')}.`,
  );
}

/** $skip's and $limit's argument: a whole number, at least `min`. */
function count(arg: Json, stage: string, min: number): number {
  if (typeof arg !== 'number' || !Number.isInteger(arg))
    throw new QueryError(`The argument to ${stage} must be an integer, not ${describeValue(arg, true)}.`);
  if (arg < min)
    throw new QueryError(
      min === 0
        ? `The argument to ${stage} must not be negative (it is ${arg}).`
        : `The ${stage} must be positive (it is ${arg}).`,
    );
  if (!Number.isSafeInteger(arg)) throw new QueryError(`The argument to ${stage} is too large.`);
  return arg;
}

/** A top-level output field name ($count, accumulators, $unwind's index, facets). */
function outputField(arg: Json, stage: string, what: string): string {
  if (typeof arg !== 'string' || arg === '')
    throw new QueryError(`${stage}: ${what} must be a non-empty string.`);
  if (arg.startsWith('$')) throw new QueryError(`${stage}: ${what} cannot be a $-prefixed path ('${arg}').`);
  if (arg.includes('.')) throw new QueryError(`${stage}: ${what} cannot contain '.' ('${arg}').`);
  return arg;
}

function parseGroup(arg: Json): Stage {
  if (!isPlainObject(arg)) throw new QueryError('A group stage specification must be an object.');
  let id: Expr | undefined;
  const accumulators: Accumulator[] = [];
  for (const field of Object.keys(arg)) {
    const value = getOwn(arg, field) as Json;
    if (field === '_id') {
      id = parseExpression(value, '$group._id');
      continue;
    }
    outputField(field, '$group', `the field name '${field}'`);
    if (!isPlainObject(value))
      throw new QueryError(`$group: the field '${field}' must be an accumulator object.`);
    const ops = Object.keys(value);
    if (ops.length !== 1) throw new QueryError(`$group: the field '${field}' must specify one accumulator.`);
    const op = ops[0] as string;
    if (!ACCUMULATORS.has(op))
      throw new QueryError(
        `$group: unknown group operator '${op}' (field '${field}'). Supported: ${[...ACCUMULATORS].join(', ')}.`,
      );
    const operand = getOwn(value, op) as Json;
    if (op === '$count') {
      if (!isPlainObject(operand) || Object.keys(operand).length !== 0)
        throw new QueryError(`$group: $count takes no arguments, i.e. $count: {} (field '${field}').`);
      accumulators.push({ field, op: '$count', arg: { kind: 'literal', value: 1 } });
      continue;
    }
    if (Array.isArray(operand))
      throw new QueryError(`$group: the ${op} accumulator is a unary operator (field '${field}').`);
    accumulators.push({
      field,
      op: op as AccumulatorOp,
      arg: parseExpression(operand, `$group.${field}.${op}`),
    });
  }
  if (!id) throw new QueryError('A $group specification must include an _id.');
  return { kind: 'group', id, accumulators };
}

function parseSortByCount(arg: Json): Stage[] {
  const isPath = typeof arg === 'string' && arg.startsWith('$');
  const isOperator = isPlainObject(arg) && Object.keys(arg)[0]?.startsWith('$') === true;
  if (!isPath && !isOperator)
    throw new QueryError(
      'The argument to $sortByCount must be a $-prefixed path or an expression object, such as "$tags".',
    );
  return [
    {
      kind: 'group',
      id: parseExpression(arg, '$sortByCount'),
      accumulators: [{ field: 'count', op: '$sum', arg: { kind: 'literal', value: 1 } }],
    },
    { kind: 'sort', keys: [{ path: 'count', dir: -1 }] },
  ];
}

function parseUnwind(arg: Json): Stage {
  const spec: JsonObject = typeof arg === 'string' ? { path: arg } : isPlainObject(arg) ? arg : {};
  if (typeof arg !== 'string' && !isPlainObject(arg))
    throw new QueryError('$unwind expects a string or an object as its argument.');
  let path: string[] | undefined;
  let preserve = false;
  let index: string[] | undefined;
  for (const key of Object.keys(spec)) {
    const v = getOwn(spec, key) as Json;
    if (key === 'path') {
      if (typeof v !== 'string') throw new QueryError('The path option to $unwind must be a string.');
      if (!v.startsWith('$') || v.startsWith('$$'))
        throw new QueryError(`The path option to $unwind stage should be prefixed with a '$': '${v}'.`);
      path = fieldPathSegments(v.slice(1), '$unwind');
    } else if (key === 'preserveNullAndEmptyArrays') {
      if (typeof v !== 'boolean')
        throw new QueryError('The preserveNullAndEmptyArrays option to $unwind must be a boolean.');
      preserve = v;
    } else if (key === 'includeArrayIndex') {
      if (typeof v !== 'string' || v === '')
        throw new QueryError('The includeArrayIndex option to $unwind must be a non-empty string.');
      if (v.startsWith('$'))
        throw new QueryError(
          `The includeArrayIndex option to $unwind stage should not be prefixed with a '$': '${v}'.`,
        );
      index = fieldPathSegments(v, '$unwind.includeArrayIndex');
    } else throw new QueryError(`Unrecognized option to $unwind stage: '${key}'.`);
  }
  if (!path) throw new QueryError('No path specified to $unwind stage.');
  return { kind: 'unwind', path, preserve, ...(index ? { index } : {}) };
}

function parseLookup(arg: Json): Stage {
  if (!isPlainObject(arg)) throw new QueryError('The $lookup argument must be an object.');
  const strings: Record<string, string> = {};
  for (const key of Object.keys(arg)) {
    const v = getOwn(arg, key) as Json;
    if (key === 'pipeline' || key === 'let')
      throw new QueryError(
        `$lookup's '${key}' is not supported: only the equality form (from, localField, foreignField, as) is.`,
      );
    if (!['from', 'localField', 'foreignField', 'as'].includes(key))
      throw new QueryError(`Unknown argument to $lookup: '${key}'.`);
    if (typeof v !== 'string')
      throw new QueryError(`$lookup argument '${key}' must be a string, not ${describeValue(v)}.`);
    strings[key] = v;
  }
  const { from, localField, foreignField, as } = strings;
  if (from === undefined) throw new QueryError("Must specify 'from' field for a $lookup.");
  if (as === undefined) throw new QueryError("Must specify 'as' field for a $lookup.");
  if (localField === undefined || foreignField === undefined)
    throw new QueryError("$lookup requires both 'localField' and 'foreignField' to be specified.");
  return {
    kind: 'lookup',
    from,
    localField: parsePath(localField, '$lookup localField'),
    foreignField: parsePath(foreignField, '$lookup foreignField'),
    as: fieldPathSegments(as, '$lookup as'),
  };
}

function parseFacet(arg: Json, state: ParseState): Stage {
  if (!isPlainObject(arg) || Object.keys(arg).length === 0)
    throw new QueryError('The $facet specification must be a non-empty object.');
  const facets: [string, Stage[]][] = [];
  for (const name of Object.keys(arg)) {
    outputField(name, '$facet', `the facet name '${name}'`);
    const sub = getOwn(arg, name) as Json;
    if (!Array.isArray(sub))
      throw new QueryError(`Arguments to $facet must be arrays; '${name}' is ${describeValue(sub)}.`);
    if (sub.length === 0) throw new QueryError(`Sub-pipeline in $facet stage cannot be empty ('${name}').`);
    facets.push([name, parseStages(sub, state, true)]);
  }
  return { kind: 'facet', facets };
}
