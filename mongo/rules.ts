import { QueryError } from '../errors.js';
import type { Expr } from './expr/ast.js';
import { evaluateExpression } from './expr/evaluate.js';
import { type Filter, parseFilter } from './filter/parse.js';
import { HiddenFields } from './hidden-fields.js';
import { applyUpdate, parseUpdate } from './update/update.js';
import { jsonEqual } from './value/compare.js';
import { getOwn, isPlainObject, type Json, type JsonObject } from './value/json.js';
import { type FieldPath, parsePath } from './value/path.js';

/**
 * A collection's rules: what the workplace's end users may do in it, each kind a MongoDB filter
 * whose `$expr` may name the caller's variables. Parsed once per catalog entry; bound to a caller
 * per request (bindRule), which gives a plain Filter the query compiler compiles like any other.
 * Pure: no I/O.
 */

export const RULE_KINDS = ['read', 'create', 'update', 'delete'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

/** The variables a rule may name: the verified claims, the caller's user document, the time. */
export const RULE_VARIABLES: ReadonlySet<string> = new Set(['AUTH', 'USER', 'NOW']);

/** The rules as stored and shown: every kind present, `null` where end users are refused. */
export interface StoredRules {
  read: JsonObject | null;
  create: JsonObject | null;
  update: JsonObject | null;
  delete: JsonObject | null;
  fields: { hidden: string[]; immutable: string[]; presets: JsonObject };
}

/** A preset's value: a constant, or a variable (`"$$AUTH.sub"`) read at each request. */
export type Preset = { constant: Json } | { variable: Expr & { kind: 'path' } };

export interface Rules {
  stored: StoredRules;
  filters: Record<RuleKind, Filter | undefined>;
  hidden: HiddenFields;
  immutable: FieldPath[];
  presets: [FieldPath, Preset][];
  /** Whether anything names `$$USER`, which costs a read of the user's document per request. */
  namesUser: boolean;
  /** Whether a binding may differ between two requests with the same claims ($$USER, $$NOW). */
  varies: boolean;
  /**
   * Each caller's bound rules, by their claims object (the verifier hands the same one to every
   * request of a token): rules that name neither `$$USER` nor `$$NOW` bind the same way each time.
   */
  bound: WeakMap<object, Map<RuleKind, Filter | undefined>>;
}

/** What a rule's variables hold for one request. */
export interface RuleVariables {
  AUTH: JsonObject;
  /** Missing for a client's own token, or a user whose document is gone. */
  USER: JsonObject | undefined;
  NOW: string;
}

export const NO_RULES: StoredRules = Object.freeze({
  read: null,
  create: null,
  update: null,
  delete: null,
  fields: Object.freeze({ hidden: [], immutable: [], presets: {} }),
}) as StoredRules;

/** A rules document as PUT sends it (the contract's schema checked its shape), parsed and normalized. */
export function parseRules(raw: unknown): Rules {
  if (!isPlainObject(raw)) throw new QueryError('The rules must be a JSON object.');
  const filters = {} as Record<RuleKind, Filter | undefined>;
  const stored: StoredRules = {
    read: null,
    create: null,
    update: null,
    delete: null,
    fields: { hidden: [], immutable: [], presets: {} },
  };
  let namesUser = false;
  for (const kind of RULE_KINDS) {
    const rule = getOwn(raw, kind);
    if (rule === undefined || rule === null) continue;
    if (!isPlainObject(rule)) throw new QueryError(`The ${kind} rule must be a query object or null.`);
    try {
      filters[kind] = parseFilter(rule, { variables: RULE_VARIABLES, text: false });
    } catch (err) {
      if (err instanceof QueryError) throw new QueryError(`The ${kind} rule: ${err.message}`);
      throw err;
    }
    namesUser ||= JSON.stringify(rule).includes('$$USER');
    stored[kind] = rule;
  }
  const fields = getOwn(raw, 'fields');
  const paths = (name: 'hidden' | 'immutable'): FieldPath[] => {
    const list = isPlainObject(fields) ? getOwn(fields, name) : undefined;
    if (list === undefined) return [];
    if (!Array.isArray(list)) throw new QueryError(`fields.${name} must be an array of field paths.`);
    const parsed = list.map((p) => parsePath(String(p), `fields.${name}`));
    stored.fields[name] = parsed.map((p) => p.text);
    return parsed;
  };
  const hidden = paths('hidden');
  const immutable = paths('immutable');
  if (hidden.some((p) => p.text === '_id' || p.text.startsWith('_id.')))
    throw new QueryError('fields.hidden cannot hide _id.');
  const presets: [FieldPath, Preset][] = [];
  const rawPresets = isPlainObject(fields) ? getOwn(fields, 'presets') : undefined;
  if (rawPresets !== undefined) {
    if (!isPlainObject(rawPresets))
      throw new QueryError('fields.presets must be an object of paths to values.');
    for (const [text, value] of Object.entries(rawPresets)) {
      const path = parsePath(text, 'fields.presets');
      if (path.text === '_id' || path.text.startsWith('_id.'))
        throw new QueryError('fields.presets cannot set _id.');
      presets.push([path, parsePreset(text, value as Json)]);
      namesUser ||= typeof value === 'string' && value.startsWith('$$USER');
    }
    stored.fields.presets = rawPresets;
  }
  return {
    stored,
    filters,
    hidden: new HiddenFields(hidden),
    immutable,
    presets,
    namesUser,
    varies: namesUser || JSON.stringify(raw).includes('$$NOW'),
    bound: new WeakMap(),
  };
}

function parsePreset(path: string, value: Json): Preset {
  if (typeof value !== 'string' || !value.startsWith('$')) return { constant: value };
  if (!value.startsWith('$$'))
    throw new QueryError(
      `fields.presets.${path}: '${value}' is neither a variable ($$AUTH, $$USER, $$NOW) nor a constant; write {"$literal": ...} in a rule for a string starting with '$'.`,
    );
  const variable = parseVariablePath(value, `fields.presets.${path}`);
  return { variable };
}

function parseVariablePath(text: string, where: string): Expr & { kind: 'path' } {
  const dot = text.indexOf('.');
  const name = text.slice(2, dot < 0 ? undefined : dot);
  if (!RULE_VARIABLES.has(name))
    throw new QueryError(`${where}: '${text}' names no variable; use $$AUTH, $$USER or $$NOW.`);
  const segments = dot < 0 ? [] : parsePath(text.slice(dot + 1), where).segments.map(String);
  return { kind: 'path', variable: name, segments };
}

function variableMap(vars: RuleVariables): Map<string, Json> {
  const map = new Map<string, Json>([
    ['AUTH', vars.AUTH],
    ['NOW', vars.NOW],
  ]);
  if (vars.USER !== undefined) map.set('USER', vars.USER);
  return map;
}

/** A preset's value for the caller; undefined when its variable is missing (the preset then unsets). */
export function presetValue(preset: Preset, vars: RuleVariables): Json | undefined {
  if ('constant' in preset) return preset.constant;
  return evaluateExpression(preset.variable, {}, variableMap(vars));
}

/**
 * The rule of `kind` for one caller, as a plain filter: every variable replaced by its value (a
 * literal, which the compiler binds as a parameter), and every `$expr` that names a variable the
 * caller lacks replaced by false, so that a rule that cannot be evaluated for the caller refuses
 * rather than errs. Undefined when the kind has no rule: end users are refused.
 */
export function bindRule(rules: Rules | undefined, kind: RuleKind, vars: RuleVariables): Filter | undefined {
  const rule = rules?.filters[kind];
  if (!rule) return undefined;
  if (rules.varies) return withImpliedEqualities(bindFilter(rule, variableMap(vars)));
  let byKind = rules.bound.get(vars.AUTH);
  if (!byKind) {
    byKind = new Map();
    rules.bound.set(vars.AUTH, byKind);
  }
  if (!byKind.has(kind)) byKind.set(kind, withImpliedEqualities(bindFilter(rule, variableMap(vars))));
  return byKind.get(kind);
}

const FALSE: Filter = { kind: 'expr', expr: { kind: 'literal', value: false } };

function bindFilter(f: Filter, vars: Map<string, Json>): Filter {
  switch (f.kind) {
    case 'and':
    case 'or':
    case 'nor':
      return { kind: f.kind, children: f.children.map((c) => bindFilter(c, vars)) };
    case 'expr': {
      const expr = bindExpr(f.expr, vars);
      return expr === undefined ? FALSE : { kind: 'expr', expr };
    }
    default:
      // Field conditions take constants only; `$expr` is the one place a variable can be named.
      return f;
  }
}

/** The expression with its variables replaced by their values; undefined when one is missing. */
function bindExpr(e: Expr, vars: Map<string, Json>): Expr | undefined {
  switch (e.kind) {
    case 'literal':
      return e;
    case 'path': {
      if (e.variable === 'CURRENT') return e;
      const value = evaluateExpression(e, {}, vars);
      return value === undefined ? undefined : { kind: 'literal', value };
    }
    case 'array': {
      const items: Expr[] = [];
      for (const item of e.items) {
        const b = bindExpr(item, vars);
        if (b === undefined) return undefined;
        items.push(b);
      }
      return { kind: 'array', items };
    }
    case 'object': {
      const fields: [string, Expr][] = [];
      for (const [name, value] of e.fields) {
        const b = bindExpr(value, vars);
        if (b === undefined) return undefined;
        fields.push([name, b]);
      }
      return { kind: 'object', fields };
    }
    case 'op': {
      const args: Expr[] = [];
      for (const arg of e.args) {
        const b = bindExpr(arg, vars);
        if (b === undefined) return undefined;
        args.push(b);
      }
      return { kind: 'op', op: e.op, args };
    }
  }
}

/**
 * The bound rule with the field equalities it implies ANDed in front, so that an index on the
 * field serves it: `{$expr: {$eq: ["$owner", <scalar>]}}` holds only where `owner` is that very
 * value, where `{owner: <scalar>}` holds too (which also admits arrays holding it: the `$expr`
 * stays, marked `alsoField`, and keeps the rule exact; the compiler leaves it out where the index
 * shows that no document holds an array there). Only the rule's top-level conjuncts; null and
 * compound values are left alone (`$expr` tells null from missing, and compares compound values
 * whole).
 */
function withImpliedEqualities(f: Filter): Filter {
  const conjuncts = f.kind === 'and' ? f.children : [f];
  const implied: Filter[] = [];
  const marked = conjuncts.map((c): Filter => {
    if (c.kind !== 'expr' || c.expr.kind !== 'op' || c.expr.op !== '$eq') return c;
    const [a, b] = c.expr.args;
    const pair = fieldAndScalar(a, b) ?? fieldAndScalar(b, a);
    if (!pair) return c;
    implied.push({ kind: 'field', path: pair.path, cond: { op: 'eq', value: pair.value } });
    // The compiler leaves the expression out where the index makes the equality exact.
    return { ...c, alsoField: pair };
  });
  return implied.length === 0 ? f : { kind: 'and', children: [...implied, ...marked] };
}

function fieldAndScalar(
  field: Expr | undefined,
  value: Expr | undefined,
): { path: FieldPath; value: Json } | undefined {
  if (field?.kind !== 'path' || field.variable !== 'CURRENT' || field.segments.length === 0) return undefined;
  if (value?.kind !== 'literal') return undefined;
  const v = value.value;
  if (v === null || typeof v === 'object') return undefined;
  // Numeric segments index arrays in a filter but name fields in an expression: left alone.
  if (field.segments.some((s) => /^\d+$/.test(s))) return undefined;
  return { path: parsePath(field.segments.join('.')), value: v };
}

/**
 * What an end user's request may match: `filter` ANDed with the rule, every `$expr` of `filter`
 * guarded by the rule (evaluated only on documents the rule admits), so that no expression of the
 * request, which may raise (a division, a conversion), ever runs on a document the rule hides:
 * whether a request errs must not tell anything about those.
 */
export function restrict(filter: Filter, rule: Filter): Filter {
  const guarded = guardExpressions(filter, rule);
  if (guarded.kind === 'all') return rule;
  return { kind: 'and', children: [rule, guarded] };
}

function guardExpressions(f: Filter, guard: Filter): Filter {
  switch (f.kind) {
    case 'and':
    case 'or':
    case 'nor':
      return { kind: f.kind, children: f.children.map((c) => guardExpressions(c, guard)) };
    case 'expr':
      return { ...f, guard };
    default:
      // $elemMatch cannot hold $expr (parseFilter refuses it); nothing else can raise.
      return f;
  }
}

/** The document with the presets set (or unset, where a variable is missing), as a new copy. */
export function withPresets(doc: JsonObject, rules: Rules | undefined, vars: RuleVariables): JsonObject {
  if (!rules || rules.presets.length === 0) return doc;
  const set: JsonObject = {};
  const unset: JsonObject = {};
  for (const [path, preset] of rules.presets) {
    const value = presetValue(preset, vars);
    if (value === undefined) unset[path.text] = '';
    else set[path.text] = value;
  }
  const update = parseUpdate({
    ...(Object.keys(set).length ? { $set: set } : {}),
    ...(Object.keys(unset).length ? { $unset: unset } : {}),
  });
  return applyUpdate(doc, update, { now: new Date(vars.NOW), isInsert: true });
}

/** The first immutable path whose value an update changes, if any. */
export function changedImmutable(
  rules: Rules | undefined,
  before: JsonObject,
  after: JsonObject,
): string | undefined {
  for (const path of rules?.immutable ?? []) {
    const at: Expr = { kind: 'path', variable: 'CURRENT', segments: path.segments.map(String) };
    if (!jsonEqualOrMissing(evaluateExpression(at, before), evaluateExpression(at, after))) return path.text;
  }
  return undefined;
}

function jsonEqualOrMissing(a: Json | undefined, b: Json | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return jsonEqual(a, b);
}
