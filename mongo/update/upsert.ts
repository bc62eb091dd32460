import { QueryError } from '../../errors.js';
import {
  cloneJson,
  getOwn,
  idFirst,
  isPlainObject,
  type Json,
  type JsonObject,
  setOwn,
} from '../value/json.js';
import { checkStorable, isModifierObject, MAX_VALUE_DEPTH, type ParsedUpdate, PathClaims } from './parse.js';
import { parseUpdatePath, type UpdatePath } from './path.js';

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
