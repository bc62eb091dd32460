import { QueryError } from '../../errors.js';
import { getOwn, isPlainObject, type Json, type JsonObject } from '../value/json.js';
import { type Params, toArrayLiteral } from '../value/params.js';
import { splitPath } from '../value/path.js';
import { evaluateOperator } from './evaluate.js';
import { EXPRESSION_OPERATORS } from './operators.js';
import { compileOperator } from './sql.js';

/**
 * MongoDB's aggregation expression language: parsed once (a whitelist: an unknown operator is a
 * QueryError naming it), compiled to a SQL jsonb expression for pipelines and `$expr`, and
 * evaluated in TypeScript where a filter is evaluated there (filter/match.ts).
 *
 * Missing and null differ, as in MongoDB: a compiled expression is SQL NULL where the value is
 * missing (`$project` then leaves the field out) and jsonb `null` where it is null; `evaluate`
 * returns `undefined` for missing.
 */
export type Expr =
  | { kind: 'literal'; value: Json }
  /** `$a.b` (from the current document) or `$$ROOT.a.b`/`$$CURRENT.a.b`, or `$$<variable>.a`. */
  | { kind: 'path'; variable: string; segments: string[] }
  /** `{a: <expr>, b: <expr>}`: a document whose field values are expressions. */
  | { kind: 'object'; fields: [name: string, value: Expr][] }
  | { kind: 'array'; items: Expr[] }
  /** `{$op: args}`: args are the parsed operands, in the operator's order. */
  | { kind: 'op'; op: string; args: Expr[] };

export const MAX_EXPRESSION_NODES = 1000;
export const MAX_EXPRESSION_DEPTH = 32;

/** The variables every expression may name; `$$ROOT` and `$$CURRENT` are the document. */
const SYSTEM_VARIABLES = new Set(['ROOT', 'CURRENT']);

interface ParseState {
  nodes: number;
  /** Variables bound by an enclosing operator (`$let`, `$map`, `$filter`, …). */
  variables: ReadonlySet<string>;
}

/** Parses an expression; `where` names its place in the request for error messages. */
export function parseExpression(
  raw: unknown,
  where: string,
  variables: ReadonlySet<string> = new Set(),
): Expr {
  return parse(raw, where, { nodes: 0, variables }, 0);
}

function parse(raw: unknown, where: string, state: ParseState, depth: number): Expr {
  if (++state.nodes > MAX_EXPRESSION_NODES)
    throw new QueryError(`The expression in ${where} has more than ${MAX_EXPRESSION_NODES} parts.`);
  if (depth > MAX_EXPRESSION_DEPTH)
    throw new QueryError(
      `The expression in ${where} is nested more than ${MAX_EXPRESSION_DEPTH} levels deep.`,
    );
  if (typeof raw === 'string' && raw.startsWith('$')) return parseFieldPath(raw, where, state);
  if (Array.isArray(raw)) return { kind: 'array', items: raw.map((r) => parse(r, where, state, depth + 1)) };
  if (isPlainObject(raw)) {
    const keys = Object.keys(raw);
    const first = keys[0];
    if (first?.startsWith('$')) {
      if (keys.length > 1)
        throw new QueryError(
          `An expression object in ${where} with an operator ('${first}') must have exactly one field; it has ${keys.length}.`,
        );
      return parseOperator(first, getOwn(raw, first) as Json, where, state, depth);
    }
    const fields: [string, Expr][] = [];
    for (const name of keys) {
      if (name.startsWith('$'))
        throw new QueryError(
          `The field name '${name}' in ${where} must not start with '$' beside other fields.`,
        );
      if (name.includes('.'))
        throw new QueryError(`The field name '${name}' in ${where} must not contain '.'.`);
      fields.push([name, parse(getOwn(raw, name), where, state, depth + 1)]);
    }
    return { kind: 'object', fields };
  }
  if (raw === undefined) throw new QueryError(`A value is missing in ${where}.`);
  return { kind: 'literal', value: raw as Json };
}

function parseFieldPath(text: string, where: string, state: ParseState): Expr {
  if (text === '$') throw new QueryError(`'$' in ${where} is not a valid field path.`);
  let variable = 'CURRENT';
  let rest = text.slice(1);
  if (rest.startsWith('$')) {
    const dot = rest.indexOf('.');
    variable = dot < 0 ? rest.slice(1) : rest.slice(1, dot);
    rest = dot < 0 ? '' : rest.slice(dot + 1);
    if (!SYSTEM_VARIABLES.has(variable) && !state.variables.has(variable))
      throw new QueryError(`Use of undefined variable '$$${variable}' in ${where}.`);
    if (variable === 'ROOT') variable = 'CURRENT';
  }
  const segments =
    rest === ''
      ? []
      : splitPath(rest, {
          empty: () => `'${text}' in ${where} is not a valid field path.`,
          emptySegment: () => `The field path '${text}' in ${where} has an empty segment.`,
          dollarSegment: (s) =>
            `The field path '${text}' in ${where} has a segment starting with '$' ('${s}').`,
        });
  return { kind: 'path', variable, segments };
}

function parseOperator(op: string, operand: Json, where: string, state: ParseState, depth: number): Expr {
  if (op === '$literal') return { kind: 'literal', value: operand };
  const parseArgs = EXPRESSION_OPERATORS.get(op);
  if (!parseArgs)
    throw new QueryError(
      `Unknown or unsupported expression operator '${op}' in ${where}. Supported: $literal, ${[...EXPRESSION_OPERATORS.keys()].join(', ')}.`,
    );
  return {
    kind: 'op',
    op,
    args: parseArgs<Expr>(operand, where, (r) => parse(r, where, state, depth + 1), op),
  };
}

export interface ExprContext {
  params: Params;
  /** SQL jsonb of `$$CURRENT` (the document the expression applies to), e.g. `doc`. */
  current: string;
  /** SQL jsonb of each variable bound by an enclosing operator. */
  variables?: ReadonlyMap<string, string>;
}

/** SQL (jsonb, NULL when missing) for an expression. */
export function compileExpression(e: Expr, ctx: ExprContext): string {
  switch (e.kind) {
    case 'literal':
      return ctx.params.json(e.value);
    case 'path': {
      const base = e.variable === 'CURRENT' ? ctx.current : ctx.variables?.get(e.variable);
      if (base === undefined) throw new QueryError(`Use of undefined variable '$$${e.variable}'.`);
      if (e.segments.length === 0) return base;
      // One segment cannot cross an array below the document, so `->` is exact there.
      if (e.segments.length === 1 && e.variable === 'CURRENT')
        return `(${base} -> ${ctx.params.text(e.segments[0] as string)})`;
      return `mdb.expr_get(${base}, ${ctx.params.typed(toArrayLiteral(e.segments), 'text[]')})`;
    }
    case 'object': {
      if (e.fields.length === 0) return `'{}'::jsonb`;
      // A field whose value is missing is left out (jsonb_build_object would store null).
      const rows = e.fields.map(
        ([name, value]) => `(${ctx.params.text(name)}, ${compileExpression(value, ctx)})`,
      );
      return `coalesce((select jsonb_object_agg(f.k, f.v) from (values ${rows.join(', ')}) as f(k, v) where f.v is not null), '{}'::jsonb)`;
    }
    case 'array':
      // A missing element is null in an array, as in MongoDB.
      return `jsonb_build_array(${e.items.map((i) => `coalesce(${compileExpression(i, ctx)}, 'null'::jsonb)`).join(', ')})`;
    case 'op':
      return compileOperator(e, ctx, (arg) => compileExpression(arg, ctx));
  }
}

/** The value of an expression over a document; `undefined` where it is missing. */
export function evaluateExpression(
  e: Expr,
  current: Json,
  variables: ReadonlyMap<string, Json> = new Map(),
): Json | undefined {
  switch (e.kind) {
    case 'literal':
      return e.value;
    case 'path': {
      const base = e.variable === 'CURRENT' ? current : variables.get(e.variable);
      return base === undefined ? undefined : getPath(base, e.segments);
    }
    case 'object': {
      const out: JsonObject = {};
      for (const [name, value] of e.fields) {
        const v = evaluateExpression(value, current, variables);
        if (v !== undefined) out[name] = v;
      }
      return out;
    }
    case 'array':
      return e.items.map((i) => evaluateExpression(i, current, variables) ?? null);
    case 'op':
      return evaluateOperator(e, (arg) => evaluateExpression(arg, current, variables));
  }
}

/**
 * MongoDB's field path in expressions: through a document, the field; through an array, the path
 * from each element that is a document (or, nested, an array), collected into an array; other
 * elements give nothing. Numeric segments name fields, never array positions.
 */
export function getPath(value: Json, segments: string[]): Json | undefined {
  if (segments.length === 0) return value;
  if (Array.isArray(value)) {
    const out: Json[] = [];
    for (const element of value) {
      if (typeof element !== 'object' || element === null) continue;
      const v = getPath(element, segments);
      if (v !== undefined) out.push(v);
    }
    return out;
  }
  if (isPlainObject(value)) {
    const next = getOwn(value, segments[0] as string);
    return next === undefined ? undefined : getPath(next, segments.slice(1));
  }
  return undefined;
}
