import { QueryError } from '../../errors.js';
import type { Expr } from '../expr/ast.js';
import { compileExpression, truthySql } from '../expr/sql.js';
import type { Json } from '../value/json.js';
import { Params } from '../value/params.js';
import { type FieldPath, full, type Nav, navs, nullOrMissing, rootNavs } from '../value/path.js';
import type { TypeName } from '../value/types.js';
import { compileSchema } from './json-schema.js';
import type { Cond, Filter, Scalar } from './parse.js';
import { compileTextMatch, type TextIndexRef } from './text-search.js';

/** Where an indexed path's keys live: generated columns on the collection table, or the primary key. */
export interface IndexedPath {
  /** SQL for the ascending key column (already quoted), e.g. `"i3_0_a"` or `id`. */
  key: string;
  /** Whether keys are cut at 1,024 bytes (index columns) or exact (the primary key). */
  truncated: boolean;
  /**
   * Present once some document's path has crossed an array (absent for `_id`): SQL for the column
   * that is true for such documents, and for their GIN-indexed array of all their keys.
   */
  multikey?: string;
  elementKeys?: string;
}

export interface FilterContext {
  params: Params;
  indexed(path: string): IndexedPath | undefined;
  /** The collection's text index, which `$text` needs. */
  text?: TextIndexRef | undefined;
}

/**
 * MongoDB's error for `$text` on a collection without a text index. Its own class: a cached
 * catalog entry may predate a text index another process created (db/storage/catalog-cache.ts).
 */
export class TextIndexRequired extends QueryError {}

function textIndexRequired(): QueryError {
  return new TextIndexRequired(
    'text index required for $text query: create an index with "text" fields first.',
  );
}

const FALSE = '(1 == 0)';
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/**
 * jsonpath variables shared by every predicate of one statement, bound as one jsonb parameter on
 * first use and filled in at the end (`bind`).
 */
class Vars {
  readonly values: Record<string, Json> = {};
  #n = 0;
  #index = -1;
  #ref = '';
  constructor(private readonly params: Params) {}

  add(value: Json): string {
    const name = `v${this.#n++}`;
    this.values[name] = value;
    return `$${name}`;
  }

  /** The SQL reference to the variables' parameter. */
  ref(): string {
    if (this.#index < 0) {
      this.#ref = this.params.json({});
      this.#index = this.params.values.length - 1;
    }
    return this.#ref;
  }

  bind(): void {
    if (this.#index >= 0) this.params.values[this.#index] = JSON.stringify(this.values);
  }
}

function isCompound(v: Json): boolean {
  return typeof v === 'object' && v !== null;
}

function hasCompoundOperand(cond: Cond): boolean {
  switch (cond.op) {
    case 'eq':
    case 'cmp':
      return isCompound(cond.value);
    case 'in':
      return cond.values.some(isCompound);
    case 'and':
      return cond.conds.some(hasCompoundOperand);
    case 'not':
      return hasCompoundOperand(cond.cond);
    default:
      return false;
  }
}

/** `x` (jsonb SQL) compared with an object or array operand: only values of its type compare. */
function bsonCompare(x: string, cond: Cond & { op: 'cmp' }, params: Params): string {
  const type = Array.isArray(cond.value) ? 'array' : 'object';
  return `(jsonb_typeof(${x}) = '${type}' and mdb.bson_key(${x}) ${cond.cmp} (select mdb.bson_key(${params.jsonValue(cond.value)})))`;
}

/**
 * Compiles a parsed filter into a SQL boolean over the row (`doc`, and the catalog's key columns).
 *
 * Each condition is exact on its own: a jsonpath predicate (lax mode) evaluated with
 * jsonb_path_match, which walks arrays the way MongoDB does. Where an index covers the path, a
 * superset condition on its key column is ANDed in front so the planner can use the btree; the
 * multikey column adds the documents whose path crosses an array, which the keys cannot describe.
 */
export function compileFilter(filter: Filter, ctx: FilterContext): string {
  const vars = new Vars(ctx.params);
  const sql = new SqlCompiler(ctx, vars).filter(filter);
  vars.bind();
  return sql;
}

/**
 * A filter over a jsonb value other than the row's document (`doc`: SQL of it), such as a new
 * document a write is about to store: no index columns describe it.
 */
export function compileFilterOn(filter: Filter, doc: string, params: Params): string {
  const vars = new Vars(params);
  const sql = new SqlCompiler({ params, indexed: () => undefined }, vars, doc).filter(filter);
  vars.bind();
  return sql;
}

/**
 * A filter as one jsonpath predicate (lax mode) and its variables, for SQL that cannot take bound
 * parameters: a partial index's predicate column (db/storage/catalog.ts quotes both with format()).
 * Equality with objects and arrays has no jsonpath form; mongo/filter/index-predicate.ts refuses it.
 */
export function compileJsonpathPredicate(filter: Filter): { path: string; vars: Record<string, Json> } {
  const vars = new Vars(new Params());
  return { path: `lax ${new JsonpathCompiler(vars).filter('$', filter)}`, vars: vars.values };
}

// A note for the functions below: nothing in a statement's compilation is a named function created
// per call (`const f = () => ...`). Under tsx (npm run dev, the tests, the bench), esbuild's
// `keepNames` wraps each such function in a call that defines its `name` property, a cost every
// request would pay again.

class SqlCompiler {
  readonly jp: JsonpathCompiler;
  constructor(
    private readonly ctx: FilterContext,
    private readonly vars: Vars,
    /** The document the filter applies to: the row's, or an array element inside $elemMatch. */
    private readonly doc = 'doc',
    private readonly aliases = { n: 0 },
  ) {
    this.jp = new JsonpathCompiler(vars);
  }

  filter(f: Filter): string {
    switch (f.kind) {
      case 'all':
        return 'true';
      case 'and':
        return `(${f.children.map((c) => this.filter(c)).join(' and ')})`;
      case 'or':
        return `(${f.children.map((c) => this.filter(c)).join(' or ')})`;
      case 'nor':
        return `not (${f.children.map((c) => this.filter(c)).join(' or ')})`;
      case 'field':
        return this.cond(f.path, f.cond);
      case 'jsonSchema':
        return compileSchema(f.schema, this.doc, this.ctx.params, this.aliases);
      case 'expr': {
        // Only ever on the row's document: parseFilter refuses $expr inside $elemMatch.
        if (f.alsoField && !f.guard && this.doc === 'doc') {
          const idx = this.ctx.indexed(f.alsoField.path.text);
          if (idx && !idx.multikey && keyIsExact(idx, f.alsoField.value)) return 'true';
        }
        const ctx = { params: this.ctx.params, current: this.doc };
        const equality = scalarEquality(f.expr);
        const truthy = equality
          ? `coalesce(${compileExpression(equality.of, ctx)} = ${this.ctx.params.json(equality.value)}, false)`
          : truthySql(compileExpression(f.expr, ctx));
        // A CASE evaluates its condition first, and its result only where that holds: the one
        // construct whose order of evaluation PostgreSQL promises.
        return f.guard ? `(case when ${this.filter(f.guard)} then ${truthy} else false end)` : truthy;
      }
      case 'text':
        if (!this.ctx.text) throw textIndexRequired();
        return compileTextMatch(f.search, this.ctx.text, this.ctx.params);
    }
  }

  private match(jsonpath: string): string {
    return `jsonb_path_match(${this.doc}, ${this.ctx.params.jsonpath(`lax ${jsonpath}`)}, ${this.vars.ref()})`;
  }

  private cond(path: FieldPath, cond: Cond, useIndex = true): string {
    switch (cond.op) {
      case 'not':
        // An index condition cannot help a negation: the matches are the documents outside it.
        return `not ${this.cond(path, cond.cond, false)}`;
      case 'and':
        // One key condition for the whole conjunction, so $gte and $lt form one range.
        return this.indexed(
          path,
          cond,
          useIndex,
          () => `(${cond.conds.map((c) => this.cond(path, c, false)).join(' and ')})`,
        );
      case 'eq':
        if (isCompound(cond.value))
          return this.indexed(path, cond, useIndex, () => this.compoundEq(path, [cond.value]));
        return this.indexed(path, cond, useIndex, () => this.match(this.jp.cond('$', path.segments, cond)));
      case 'in': {
        const compound = cond.values.filter(isCompound);
        const plain = cond.values.filter((v) => !isCompound(v));
        if (plain.length + compound.length === 0) return 'false';
        return this.indexed(path, cond, useIndex, () => {
          const parts: string[] = [];
          if (plain.length > 0)
            parts.push(this.match(this.jp.cond('$', path.segments, { op: 'in', values: plain })));
          if (compound.length > 0) parts.push(this.compoundEq(path, compound));
          return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' or ')})`;
        });
      }
      case 'elemMatch':
      case 'elemMatchValue':
        return this.elemMatch(path, cond);
      case 'cmp':
        if (isCompound(cond.value))
          return this.indexed(path, cond, useIndex, () => this.compoundCmp(path, cond));
        return this.indexed(path, cond, useIndex, () => this.match(this.jp.cond('$', path.segments, cond)));
      default:
        return this.indexed(path, cond, useIndex, () => this.match(this.jp.cond('$', path.segments, cond)));
    }
  }

  /** The exact predicate is built only when it is used: building it binds parameters. */
  private indexed(path: FieldPath, cond: Cond, useIndex: boolean, exact: () => string): string {
    return useIndex ? this.withSuperset(path, cond, exact) : exact();
  }

  /**
   * $elemMatch in SQL, over each element of the arrays the path reaches: lax jsonpath would unwrap
   * elements that are themselves arrays, which MongoDB tests as they are. A query on documents is
   * compiled again with the element as its document, so it may use everything a filter can.
   */
  private elemMatch(path: FieldPath, cond: Cond & { op: 'elemMatch' | 'elemMatchValue' }): string {
    const p = this.ctx.params;
    const a = ++this.aliases.n;
    const element = `e${a}.v`;
    const test =
      cond.op === 'elemMatch'
        ? `jsonb_typeof(${element}) = 'object' and ${new SqlCompiler(this.ctx, this.vars, element, this.aliases).filter(cond.filter)}`
        : this.elementTest(element, cond.cond);
    return `exists (select 1 from unnest(${p.jsonpathArray(rootNavs(path))}) as n${a}(p)
      cross join lateral jsonb_path_query(${this.doc}, n${a}.p) as t${a}(v)
      cross join lateral jsonb_array_elements(case when jsonb_typeof(t${a}.v) = 'array' then t${a}.v else '[]'::jsonb end) as e${a}(v)
      where ${test})`;
  }

  /**
   * A value-form $elemMatch condition on one element, as it is (no traversal into it). Conditions
   * with object or array operands are SQL, since jsonpath cannot compare those; the rest is jsonpath.
   */
  private elementTest(element: string, cond: Cond): string {
    const p = this.ctx.params;
    switch (cond.op) {
      case 'and':
        if (!cond.conds.some(hasCompoundOperand)) break;
        return `(${cond.conds.map((c) => this.elementTest(element, c)).join(' and ')})`;
      case 'not':
        if (!hasCompoundOperand(cond.cond)) break;
        return `not (${this.elementTest(element, cond.cond)})`;
      case 'eq':
        if (!isCompound(cond.value)) break;
        return `(${element} = ${p.json(cond.value)})`;
      case 'in': {
        const compound = cond.values.filter(isCompound);
        if (compound.length === 0) break;
        const plain = cond.values.filter((v) => !isCompound(v));
        const inCompound = `${element} in (select jsonb_array_elements(${p.json(compound)}))`;
        return plain.length === 0
          ? `(${inCompound})`
          : `(${inCompound} or ${this.elementTest(element, { op: 'in', values: plain })})`;
      }
      case 'cmp':
        if (!isCompound(cond.value)) break;
        return `(${bsonCompare(element, cond, p)})`;
    }
    return `jsonb_path_match(${element}, ${p.jsonpath(`lax ${this.jp.cond('$', [], cond)}`)}, ${this.vars.ref()})`;
  }

  /**
   * A comparison with an object or array, in BSON order (mdb.bson_key, migration 0010) within the
   * operand's type bracket: each value the path reaches, and each element of one that is an array
   * (so `[[3]]` is greater than `[2]` both as a whole and by its element `[3]`).
   */
  private compoundCmp(path: FieldPath, cond: Cond & { op: 'cmp' }): string {
    const p = this.ctx.params;
    const navsRef = p.jsonpathArray(rootNavs(path));
    const a = ++this.aliases.n;
    return `exists (select 1 from unnest(${navsRef}) as n${a}(p) cross join lateral jsonb_path_query(${this.doc}, n${a}.p) as t${a}(v)
      where ${bsonCompare(`t${a}.v`, cond, p)}
         or (jsonb_typeof(t${a}.v) = 'array' and exists (
              select 1 from jsonb_array_elements(t${a}.v) as e(v) where ${bsonCompare('e.v', cond, p)})))`;
  }

  /** Equality with objects and arrays: jsonpath cannot compare them, jsonb `=` can (key order aside). */
  private compoundEq(path: FieldPath, values: Json[]): string {
    const p = this.ctx.params;
    const navsRef = p.jsonpathArray(rootNavs(path));
    const valuesRef = p.json(values);
    const a = ++this.aliases.n;
    return `exists (select 1 from unnest(${navsRef}) as n${a}(p) cross join lateral jsonb_path_query(${this.doc}, n${a}.p) as t${a}(v)
      where t${a}.v in (select jsonb_array_elements(${valuesRef}))
         or (jsonb_typeof(t${a}.v) = 'array' and exists (
              select 1 from jsonb_array_elements(t${a}.v) as e(v) where e.v in (select jsonb_array_elements(${valuesRef})))))`;
  }

  private withSuperset(path: FieldPath, cond: Cond, exact: () => string): string {
    // Index columns describe the row's document, not an $elemMatch element.
    const idx = this.doc === 'doc' ? this.ctx.indexed(path.text) : undefined;
    if (!idx) return exact();
    const sup = superset(idx, cond, this.ctx.params);
    if (!sup) return exact();
    // Where the key condition is already exact, the document need not be read to decide
    // (counts can then be answered from the index).
    return keyConditionIsExact(idx, cond) ? sup : `(${sup} and ${exact()})`;
  }
}

/**
 * `{$eq: [x, <string, number or boolean>]}` (either order): true exactly where x is that value,
 * which jsonb's own `=` decides as MongoDB's $eq does for such a value (numbers by value, `1` =
 * `1.0`; a missing x, null, an array or a document is never equal). Compiled so, a rule's
 * `$$AUTH.sub` equality costs no call of the general comparison (mdb.expr_cmp) per row.
 */
function scalarEquality(e: Expr): { of: Expr; value: Json } | undefined {
  if (e.kind !== 'op' || e.op !== '$eq') return undefined;
  const [a, b] = e.args;
  const scalar = (x: Expr | undefined) =>
    x?.kind === 'literal' &&
    (typeof x.value === 'string' ||
      typeof x.value === 'boolean' ||
      (typeof x.value === 'number' && Number.isFinite(x.value)));
  if (scalar(b) && a) return { of: a, value: (b as Expr & { kind: 'literal' }).value };
  if (scalar(a) && b) return { of: b, value: (a as Expr & { kind: 'literal' }).value };
  return undefined;
}

/** Type-bracket bounds of the keys mdb.key() produces (see migration 0002). */
const BRACKETS: Record<string, [string, string]> = {
  number: ["'\\x14'::bytea", "'\\x15'::bytea"],
  string: ["'\\x1e'::bytea", "'\\x1f'::bytea"],
  boolean: ["'\\x3c'::bytea", "'\\x3d'::bytea"],
  object: ["'\\x28'::bytea", "'\\x29'::bytea"],
  array: ["'\\x32'::bytea", "'\\x33'::bytea"],
};

/** Where the key columns cut keys (migration 0002's sort_key and the key columns). */
const KEY_BYTES = 1024;

/** Strings up to this many bytes have keys well under the 1,024-byte cut. */
const EXACT_STRING_BYTES = 1000;

/**
 * Whether a value's key stands for it exactly: numbers (documents hold doubles, as the keys do),
 * booleans, null, and strings short enough not to be cut. Objects and arrays compare as text.
 */
export function keyIsExact(idx: Pick<IndexedPath, 'truncated'>, value: Json): boolean {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return true;
  if (typeof value === 'string') return !idx.truncated || Buffer.byteLength(value) <= EXACT_STRING_BYTES;
  return false;
}

/**
 * Whether the key condition alone decides the condition: the path never crossed an array (so each
 * document has one key on it) and every operand's key is exact.
 */
function keyConditionIsExact(idx: IndexedPath, cond: Cond): boolean {
  if (idx.multikey) return false;
  switch (cond.op) {
    case 'eq':
      return keyIsExact(idx, cond.value);
    case 'in':
      return cond.values.length > 0 && cond.values.every((v) => keyIsExact(idx, v));
    case 'cmp':
      return cond.value === null ? cond.cmp === '>=' || cond.cmp === '<=' : keyIsExact(idx, cond.value);
    case 'and':
      return cond.conds.every((c) => keyConditionIsExact(idx, c));
    default:
      return false;
  }
}

function bracketOf(v: Json): string {
  return Array.isArray(v) ? 'array' : typeof v;
}

function keyOf(idx: IndexedPath, params: Params, value: Json): string {
  return params.key(value, idx.truncated ? KEY_BYTES : undefined);
}

/** Documents whose path crosses an array are found by any of their keys; `orMulti` otherwise. */
function orElement(idx: IndexedPath, keys: string[], orMulti: string): string {
  return idx.elementKeys
    ? ` or (${idx.multikey} and ${idx.elementKeys} && array[${keys.join(', ')}])`
    : orMulti;
}

/** A condition on the index key columns that every matching document satisfies, or undefined. */
function superset(idx: IndexedPath, cond: Cond, params: Params): string | undefined {
  const orMulti = idx.multikey ? ` or ${idx.multikey}` : '';
  switch (cond.op) {
    case 'eq': {
      const k = keyOf(idx, params, cond.value);
      return `(${idx.key} = ${k}${orElement(idx, [k], orMulti)})`;
    }
    case 'in': {
      if (cond.values.length === 0) return undefined;
      const keys = cond.values.map((v) => keyOf(idx, params, v));
      return `(${idx.key} in (${keys.join(', ')})${orElement(idx, keys, orMulti)})`;
    }
    case 'cmp': {
      if (cond.value === null) {
        return cond.cmp === '>=' || cond.cmp === '<='
          ? `(${idx.key} = ${keyOf(idx, params, null)}${orMulti})`
          : undefined;
      }
      const [lo, hi] = BRACKETS[bracketOf(cond.value)] as [string, string];
      // Keys order objects and arrays by their JSON text, not by BSON's order: only the bracket
      // narrows. Documents whose path crosses an array (arrays among them) come through the
      // multikey flag.
      if (isCompound(cond.value)) return `((${idx.key} >= ${lo} and ${idx.key} < ${hi})${orMulti})`;
      const k = keyOf(idx, params, cond.value);
      // A cut key cannot tell where the bound falls, so then the bound is inclusive and the
      // exact predicate decides.
      const strict = keyIsExact(idx, cond.value);
      const gt = cond.cmp === '>' && strict ? '>' : '>=';
      const lt = cond.cmp === '<' && strict ? '<' : '<=';
      return cond.cmp === '>' || cond.cmp === '>='
        ? `((${idx.key} ${gt} ${k} and ${idx.key} < ${hi})${orMulti})`
        : `((${idx.key} >= ${lo} and ${idx.key} ${lt} ${k})${orMulti})`;
    }
    case 'and': {
      // One `or multikey` around the conjunction, so the bounds of $gte and $lt form one range.
      const { multikey: _multikey, elementKeys: _elementKeys, ...exact } = idx;
      const parts = cond.conds
        .map((c) => superset(exact, c, params))
        .filter((s): s is string => s !== undefined);
      return parts.length > 0 ? `(${parts.join(' and ')}${orMulti})` : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * Builds jsonpath predicates (lax mode) with MongoDB's semantics. Every predicate it returns is
 * two-valued (built from exists(), type tests and guarded comparisons), so `!` is safe.
 */
export class JsonpathCompiler {
  constructor(private readonly vars: Vars) {}

  filter(root: string, f: Filter): string {
    switch (f.kind) {
      case 'all':
        return '(1 == 1)';
      case 'and':
        return `(${f.children.map((c) => this.filter(root, c)).join(' && ')})`;
      case 'or':
        return `(${f.children.map((c) => this.filter(root, c)).join(' || ')})`;
      case 'nor':
        return `!(${f.children.map((c) => this.filter(root, c)).join(' || ')})`;
      case 'field':
        return this.cond(root, f.path.segments, f.cond);
      case 'jsonSchema':
        // Reached only in a query $elemMatch nested in a value one: the others are SQL.
        throw new QueryError(
          "$jsonSchema is not supported in an $elemMatch inside another $elemMatch's value condition.",
        );
      case 'expr':
        throw new QueryError('$expr can only be applied to the top-level document.');
      case 'text':
        // parseFilter keeps $text out of $elemMatch, the only filter compiled to jsonpath.
        throw new QueryError('$text is not allowed inside $elemMatch.');
    }
  }

  cond(root: string, segments: string[], cond: Cond): string {
    const walks = navs(root, segments);
    switch (cond.op) {
      case 'none':
        return FALSE;
      case 'not':
        // `!!(…)` is a jsonpath syntax error; `!(!(…))` is not.
        return `!(${this.cond(root, segments, cond.cond)})`;
      case 'and':
        return `(${cond.conds.map((c) => this.cond(root, segments, c)).join(' && ')})`;
      case 'eq':
        return this.inValues(root, segments, walks, [cond.value]);
      case 'in':
        return this.inValues(root, segments, walks, cond.values);
      case 'cmp': {
        if (cond.value === null)
          return cond.cmp === '>=' || cond.cmp === '<='
            ? this.inValues(root, segments, walks, [null])
            : FALSE;
        if (isCompound(cond.value))
          // Reached only in an $elemMatch nested in a value-form one: the others are SQL.
          throw new QueryError(
            `Comparing with an object or array is not supported in an $elemMatch inside another $elemMatch's value condition.`,
          );
        const v = this.vars.add(cond.value);
        return anyOf(walks, (n) =>
          each(n, (x) => `${x}.type() == "${typeof cond.value}" && ${x} ${cond.cmp} ${v}`),
        );
      }
      case 'exists': {
        const test = anyOf(walks, (n) => `exists(${full(n)})`);
        return cond.value ? test : `!(${test})`;
      }
      case 'type':
        return `(${cond.types.map((t) => anyOf(walks, (n) => this.typeTest(n, t))).join(' || ')})`;
      case 'size': {
        const v = this.vars.add(cond.n);
        return anyOf(walks, (n) => onValue(n, (x) => `(${x}.type() == "array" && ${x}.size() == ${v})`));
      }
      case 'elemMatch':
        return anyOf(walks, (n) =>
          onValue(
            n,
            (x) =>
              `(${x}.type() == "array" && exists(${x}[*] ? (@.type() == "object" && ${this.filter('@', cond.filter)})))`,
          ),
        );
      case 'elemMatchValue':
        return anyOf(walks, (n) =>
          onValue(
            n,
            (x) => `(${x}.type() == "array" && exists(${x}[*] ? (${this.cond('@', [], cond.cond)})))`,
          ),
        );
      case 'regex': {
        const flags = cond.flags ? ` flag ${JSON.stringify(cond.flags)}` : '';
        return anyOf(walks, (n) =>
          each(
            n,
            (x) => `${x}.type() == "string" && ${x} like_regex ${JSON.stringify(cond.pattern)}${flags}`,
          ),
        );
      }
      case 'mod': {
        const d = this.vars.add(cond.divisor);
        const r = this.vars.add(cond.remainder);
        // MongoDB truncates the value to an integer before taking the remainder. Numbers beyond
        // 2^53 in size are stored as the shortest decimal that reads back as their double, whose
        // remainders are not the double's: they are not tested (as in the bit tests).
        const limit = this.pow2(53);
        return anyOf(walks, (n) =>
          each(
            n,
            (x) =>
              `${x}.type() == "number" && ${x} > -${limit} - 1 && ${x} < ${limit} + 1 && (${x} - ${x} % 1) % ${d} == ${r}`,
          ),
        );
      }
      case 'bits':
        return anyOf(walks, (n) => each(n, (x) => this.bitTest(x, cond)));
    }
  }

  /**
   * MongoDB tests the bits of numbers that are 64-bit integers, negative ones in two's complement.
   * jsonpath has no bitwise operators, but its arithmetic is exact numeric: bit k of x is set when
   * x mod 2^(k+1), moved into [0, 2^(k+1)), is at least 2^k. A remainder takes the sign of x, so
   * for a negative x that is a remainder in [-2^k, 0). Bit 63 (and all above it) is the sign.
   * Numbers beyond 2^53 in size are stored as the shortest decimal that reads back as their
   * double, whose low bits are not the double's: they are not tested, rather than tested wrongly.
   */
  private bitTest(x: string, cond: Cond & { op: 'bits' }): string {
    const limit = this.pow2(53);
    const parts = cond.positions.map((k) => {
      if (k >= 63) return cond.test.endsWith('Set') ? `${x} < 0` : `${x} >= 0`;
      const half = this.pow2(k);
      const r = `(${x} % ${this.pow2(k + 1)})`;
      return cond.test.endsWith('Set')
        ? `(${r} >= ${half} || (${r} < 0 && ${r} >= -${half}))`
        : `((${r} >= 0 && ${r} < ${half}) || ${r} < -${half})`;
    });
    const all = cond.test.startsWith('all');
    const combined =
      parts.length === 0 ? (all ? '(1 == 1)' : FALSE) : `(${parts.join(all ? ' && ' : ' || ')})`;
    return `${x}.type() == "number" && ${x} == ${x}.floor() && ${x} >= -${limit} && ${x} <= ${limit} && ${combined}`;
  }

  /** 2^k as jsonpath: JSON numbers print powers above 2^53 inexactly, so those are a product. */
  private pow2(k: number): string {
    return k <= 52 ? this.vars.add(2 ** k) : `(${this.vars.add(2 ** 52)} * ${this.vars.add(2 ** (k - 52))})`;
  }

  private inValues(root: string, segments: string[], walks: Nav[], values: Json[]): string {
    const parts: string[] = [];
    const scalars = values.filter((v) => v !== null && !isCompound(v)) as Exclude<Scalar, null>[];
    if (scalars.length > 0) {
      // Each comparison is guarded by its type: a comparison across types is unknown in jsonpath,
      // and an unknown would not turn true under `!`.
      const refs = scalars.map((s) => [typeof s, this.vars.add(s)] as const);
      for (const n of walks) parts.push(each(n, (x) => equalsAny(x, refs)));
    }
    if (values.includes(null)) {
      parts.push(nullOrMissing(root, segments));
      for (const n of walks.filter((w) => w.positional)) parts.push(each(n, (x) => `${x}.type() == "null"`));
    }
    if (values.some(isCompound)) {
      // Reached only inside $elemMatch: top-level equality with objects and arrays is compiled to SQL.
      throw new QueryError(
        'Equality with an object or array inside $elemMatch is not supported; compare its fields instead.',
      );
    }
    return parts.length > 0 ? `(${parts.join(' || ')})` : FALSE;
  }

  private typeTest(n: Nav, t: TypeName): string {
    switch (t) {
      case 'array':
        return onValue(n, (x) => `${x}.type() == "array"`);
      case 'number':
        return each(n, (x) => `${x}.type() == "number"`);
      case 'int':
        return each(n, (x) => `${x}.type() == "number" && ${isInt(x)}`);
      case 'double':
        return each(n, (x) => `${x}.type() == "number" && !${isInt(x)}`);
      case 'long':
      case 'decimal':
      case 'noJsonForm':
        return FALSE;
      case 'bool':
        return each(n, (x) => `${x}.type() == "boolean"`);
      default:
        return each(n, (x) => `${x}.type() == "${t}"`);
    }
  }
}

/** The predicate over any of the navigations. */
function anyOf(walks: Nav[], pred: (nav: Nav) => string): string {
  return `(${walks.map(pred).join(' || ')})`;
}

/** `x` equals one of the values, each compared only with values of its own type. */
function equalsAny(x: string, refs: readonly (readonly [string, string])[]): string {
  return refs.map(([t, v]) => `(${x}.type() == "${t}" && ${x} == ${v})`).join(' || ');
}

function isInt(x: string): string {
  return `(${x} == ${x}.floor() && ${x} >= ${INT32_MIN} && ${x} <= ${INT32_MAX})`;
}

/**
 * A predicate on `@` that holds for some value a walk reaches, or for an element of it when it is
 * an array (MongoDB's implicit traversal: lax mode's filter unwraps one level). A walk that is the
 * current item itself (an $elemMatch element) is tested as it is: elements that are arrays are not
 * looked into.
 */
function each(n: Nav, pred: (x: string) => string): string {
  return n.last === '' ? `(${pred(full(n))})` : `exists(${full(n)} ? (${pred('@')}))`;
}

/**
 * Applies a predicate to the value a walk reaches, without lax mode unwrapping it: through a
 * filter on the parent, whose items are single objects.
 */
function onValue(n: Nav, pred: (x: string) => string): string {
  if (n.last === '') return pred(n.parent);
  return `exists(${n.parent} ? (${pred(`@${n.last}`)}))`;
}
