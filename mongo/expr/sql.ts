import { QueryError } from '../../errors.js';
import { toArrayLiteral } from '../value/params.js';
import type { Expr, ExprContext } from './ast.js';

/**
 * The expression operators in SQL. Every argument appears once in the SQL text (an argument
 * written twice would double the text at each level of nesting): operators that inspect their
 * arguments are plpgsql functions of migration 0016 taking them as jsonb; the others are a CASE
 * or a comparison. Each operator's name is passed as our own SQL literal, never a request value.
 */

/** SQL boolean: MongoDB's truthiness (false, null, 0 and missing are false; everything else true). */
export function truthySql(x: string): string {
  return `coalesce(${x} <> all (array['false', 'null', '0']::jsonb[]), false)`;
}

const COMPARISONS: Record<string, string> = {
  $eq: '=',
  $ne: '<>',
  $gt: '>',
  $gte: '>=',
  $lt: '<',
  $lte: '<=',
};

const ONE_NUMBER = new Set(['$abs', '$ceil', '$floor', '$sqrt', '$exp', '$ln', '$log10']);
const TWO_NUMBERS = new Set(['$subtract', '$divide', '$mod', '$pow']);

/** SQL for an operator; `compile` compiles an argument in the same context. */
export function compileOperator(
  e: Expr & { kind: 'op' },
  ctx: ExprContext,
  compile: (e: Expr) => string,
): string {
  const op = e.op;
  const name = `'${op}'`;
  const args = e.args.map(compile);
  const [a, b, c, d] = args;
  const list = () => `array[${args.join(', ')}]::jsonb[]`;
  if (ONE_NUMBER.has(op)) return `mdb.expr_math(${name}, ${a})`;
  if (TWO_NUMBERS.has(op)) return `mdb.expr_arith(${name}, ${a}, ${b})`;
  const cmp = COMPARISONS[op];
  if (cmp) return `mdb.jsonb_of(mdb.expr_cmp(${a}, ${b}) ${cmp} 0)`;
  switch (op) {
    case '$add':
    case '$multiply':
      return `mdb.expr_fold(${name}, ${list()})`;
    case '$round':
    case '$trunc':
      return `mdb.expr_round(${name}, ${a}, ${b ?? `'0'::jsonb`})`;
    case '$cmp':
      return `mdb.jsonb_of(mdb.expr_cmp(${a}, ${b}))`;
    case '$and':
      if (args.length === 0) return `'true'::jsonb`;
      // A CASE evaluates in order and stops at the first false, as MongoDB does.
      return `mdb.jsonb_of(case ${args.map((x) => `when not ${truthySql(x)} then false`).join(' ')} else true end)`;
    case '$or':
      if (args.length === 0) return `'false'::jsonb`;
      return `mdb.jsonb_of(case ${args.map((x) => `when ${truthySql(x)} then true`).join(' ')} else false end)`;
    case '$not':
      return `mdb.jsonb_of(not ${truthySql(a as string)})`;
    case '$cond':
      return `(case when ${truthySql(a as string)} then ${b} else ${c} end)`;
    case '$ifNull':
      // Every argument but the last counts only when neither missing nor null; the last as it is.
      return `coalesce(${args
        .slice(0, -1)
        .map((x) => `nullif(${x}, 'null'::jsonb)`)
        .join(', ')}, ${args[args.length - 1]})`;
    case '$switch': {
      const whens: string[] = [];
      for (let i = 0; i + 1 < args.length; i += 2)
        whens.push(`when ${truthySql(args[i] as string)} then ${args[i + 1]}`);
      const otherwise =
        args.length % 2 === 1
          ? args[args.length - 1]
          : `mdb.expr_fail(${ctx.params.text('$switch could not find a matching branch for an input, and no default was specified.')})`;
      return `(case ${whens.join(' ')} else ${otherwise} end)`;
    }
    case '$concat':
      return `mdb.expr_concat(${list()})`;
    case '$toLower':
    case '$toUpper': {
      // MongoDB changes the case of ASCII letters only.
      const [from, to] = op === '$toLower' ? [UPPER, LOWER] : [LOWER, UPPER];
      return `mdb.jsonb_of(translate(mdb.expr_string(${name}, ${a}), '${from}', '${to}'))`;
    }
    case '$substrCP':
      return `mdb.expr_substr_cp(${a}, ${b}, ${c})`;
    case '$strLenCP':
      return `mdb.expr_str_len_cp(${a})`;
    case '$trim':
    case '$ltrim':
    case '$rtrim':
      return `mdb.expr_trim(${name}, ${a}, ${b ?? 'null::jsonb'}, ${b !== undefined})`;
    case '$split':
      return `mdb.expr_split(${a}, ${b})`;
    case '$indexOfCP':
      return `mdb.expr_index_of_cp(${a}, ${b}, ${c ?? 'null::jsonb'}, ${d ?? 'null::jsonb'})`;
    case '$size':
      return `mdb.expr_size(${a})`;
    case '$arrayElemAt':
      return `mdb.expr_elem_at(${a}, ${b})`;
    case '$in':
      return `mdb.expr_in(${a}, ${b})`;
    case '$isArray':
      return `mdb.jsonb_of(coalesce(jsonb_typeof(${a}) = 'array', false))`;
    case '$concatArrays':
      return `mdb.expr_concat_arrays(${list()})`;
    case '$type':
      return `mdb.jsonb_of(mdb.expr_type(${a}))`;
  }
  throw new Error(`The expression operator '${op}' has no SQL form.`);
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';

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
