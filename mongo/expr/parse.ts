import { QueryError } from '../../errors.js';
import { getOwn, isPlainObject, type Json } from '../value/json.js';
import { splitPath } from '../value/path.js';
import { type Expr, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_NODES } from './ast.js';
import { EXPRESSION_OPERATORS } from './operators.js';

/** Parsing an expression once per request: a whitelist, an unknown operator is a QueryError naming it. */

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
