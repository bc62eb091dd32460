import type { Json } from '../value/json.js';
import type { Params } from '../value/params.js';

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

export interface ExprContext {
  params: Params;
  /** SQL jsonb of `$$CURRENT` (the document the expression applies to), e.g. `doc`. */
  current: string;
  /** SQL jsonb of each variable bound by an enclosing operator. */
  variables?: ReadonlyMap<string, string>;
}
