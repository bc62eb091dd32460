import { QueryError } from '../../errors.js';
import { testRegex } from '../regex/run.js';
import { compileRegexJs, translateRegex } from '../regex/translate.js';
import { canonicalJson, jsonEqual } from '../value/compare.js';
import { modDecimal } from '../value/decimal.js';
import { describeValue, getOwn, isPlainObject, type Json, type JsonObject } from '../value/json.js';
import { type Params, toArrayLiteral } from '../value/params.js';
import { hasType, type TypeName, typeAlias } from '../value/types.js';
import { MAX_IN_VALUES, MAX_QUERY_DEPTH, MAX_QUERY_NODES } from './limits.js';

/**
 * MongoDB's `$jsonSchema` (JSON Schema draft 4 with `bsonType`): parsed into checks, compiled to one
 * SQL boolean over a jsonb value, and evaluated in TypeScript with the same answers.
 *
 * As in MongoDB, a keyword applies only to values of its type (`minimum` passes strings, `required`
 * passes non-objects), a property that is missing passes its schema unless it is `required`, and
 * nothing traverses arrays implicitly: `{properties: {a: {type: "number"}}}` fails `{a: [1]}`. The
 * root is the document, an object, so keywords of other types pass there and a root `type` without
 * `object` matches nothing, which is what MongoDB's special cases for the top level amount to.
 */

/** A parsed schema: every check must hold. The empty schema matches everything. */
export type Schema = Check[];

type Regex = { pattern: string; flags: string; js: RegExp };
type Bound = '>=' | '>' | '<=' | '<';

export type Check =
  | { k: 'never' }
  | { k: 'type'; types: TypeName[] }
  | { k: 'number'; op: Bound; value: number }
  | { k: 'multipleOf'; divisor: number }
  | { k: 'stringLength'; op: '>=' | '<='; n: number }
  | { k: 'pattern'; regex: Regex }
  | { k: 'arrayLength'; op: '>=' | '<='; n: number }
  | { k: 'uniqueItems' }
  /** The schema for the elements at `index` and after (`items` as a schema, `additionalItems`). */
  | { k: 'itemsFrom'; index: number; schema: Schema }
  /** The schema for the element at `index`, if the array has one (`items` as an array). */
  | { k: 'itemAt'; index: number; schema: Schema }
  | { k: 'objectSize'; op: '>=' | '<='; n: number }
  | { k: 'required'; names: string[] }
  | { k: 'properties'; props: [name: string, schema: Schema][] }
  /** `patternProperties` and `additionalProperties`: each field's value against the schemas its name selects. */
  | { k: 'allowed'; names: string[]; patterns: [regex: Regex, schema: Schema][]; otherwise: Schema }
  /** `dependencies`: when the object has `name`, it must match `schema`. */
  | { k: 'dependency'; name: string; schema: Schema }
  | { k: 'enum'; values: Json[] }
  | { k: 'allOf' | 'anyOf' | 'oneOf'; schemas: Schema[] }
  | { k: 'not'; schema: Schema };

const NEVER: Schema = [{ k: 'never' }];

/** The keywords MongoDB accepts; `encrypt` and `encryptMetadata` need BinData, which JSON has not. */
const KEYWORDS = new Set([
  'additionalItems',
  'additionalProperties',
  'allOf',
  'anyOf',
  'bsonType',
  'dependencies',
  'description',
  'enum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'items',
  'maxItems',
  'maxLength',
  'maxProperties',
  'maximum',
  'minItems',
  'minLength',
  'minProperties',
  'minimum',
  'multipleOf',
  'not',
  'oneOf',
  'pattern',
  'patternProperties',
  'properties',
  'required',
  'title',
  'type',
  'uniqueItems',
]);
/** In JSON Schema draft 4 but refused by MongoDB ("is not currently supported"). */
const UNSUPPORTED = new Set(['$ref', '$schema', 'default', 'definitions', 'format', 'id']);
const NO_JSON_FORM = new Set(['encrypt', 'encryptMetadata']);

/** JSON Schema's `type` names; MongoDB refuses `integer`, and the BSON names belong to `bsonType`. */
const JSON_TYPES = new Map<string, TypeName>([
  ['object', 'object'],
  ['array', 'array'],
  ['number', 'number'],
  ['boolean', 'bool'],
  ['string', 'string'],
  ['null', 'null'],
]);

interface ParseState {
  nodes: number;
}

/** Parses the argument of `$jsonSchema`, with MongoDB's errors (worded "$jsonSchema keyword '…' …"). */
export function parseJsonSchema(arg: Json, state: ParseState, depth: number): Schema {
  if (!isPlainObject(arg)) throw new QueryError(`$jsonSchema must be an object, not ${describeValue(arg)}.`);
  return parseSchema(arg, '', state, depth);
}

function fail(at: string, message: string): never {
  throw new QueryError(`${message}${at ? ` (in $jsonSchema at '${at}')` : ''}.`);
}

function keywordError(at: string, keyword: string, message: string): never {
  return fail(at, `$jsonSchema keyword '${keyword}' ${message}`);
}

function join(at: string, step: string): string {
  return at ? `${at}.${step}` : step;
}

function tick(state: ParseState): void {
  if (++state.nodes > MAX_QUERY_NODES)
    throw new QueryError(`The query has more than ${MAX_QUERY_NODES} conditions (in $jsonSchema).`);
}

function parseSchema(schema: JsonObject, at: string, state: ParseState, depth: number): Schema {
  if (depth > MAX_QUERY_DEPTH)
    throw new QueryError(`The query is nested deeper than ${MAX_QUERY_DEPTH} levels (in $jsonSchema).`);
  // Each schema and each of its keywords counts as a condition: the SQL grows with both.
  tick(state);
  for (const key of Object.keys(schema)) {
    tick(state);
    if (KEYWORDS.has(key)) continue;
    if (UNSUPPORTED.has(key)) keywordError(at, key, 'is not currently supported');
    if (NO_JSON_FORM.has(key))
      keywordError(
        at,
        key,
        'is not supported: it describes encrypted BinData, which JSON documents cannot hold',
      );
    fail(at, `Unknown $jsonSchema keyword: ${key}`);
  }
  const kw = (name: string): Json | undefined => getOwn(schema, name);
  for (const name of ['description', 'title'])
    if (kw(name) !== undefined && typeof kw(name) !== 'string')
      keywordError(at, name, 'must be of type string');

  const checks: Check[] = [];
  const type = kw('type');
  const bsonType = kw('bsonType');
  if (type !== undefined && bsonType !== undefined)
    fail(at, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
  if (type !== undefined) checks.push({ k: 'type', types: parseTypes(at, 'type', type, JSON_TYPES) });
  if (bsonType !== undefined) checks.push({ k: 'type', types: parseTypes(at, 'bsonType', bsonType) });

  // Scalar keywords.
  const pattern = kw('pattern');
  if (pattern !== undefined) {
    if (typeof pattern !== 'string') keywordError(at, 'pattern', 'must be a string');
    checks.push({ k: 'pattern', regex: parseRegex(join(at, 'pattern'), pattern) });
  }
  for (const [name, op] of [
    ['maxLength', '<='],
    ['minLength', '>='],
  ] as const) {
    const n = kw(name);
    if (n !== undefined) checks.push({ k: 'stringLength', op, n: count(at, name, n) });
  }
  const multipleOf = kw('multipleOf');
  if (multipleOf !== undefined) {
    if (typeof multipleOf !== 'number') keywordError(at, 'multipleOf', 'must be a number');
    if (!(multipleOf > 0)) keywordError(at, 'multipleOf', 'must have a positive value');
    checks.push({ k: 'multipleOf', divisor: multipleOf });
  }
  for (const [name, exclusive, inclusiveOp, exclusiveOp] of [
    ['maximum', 'exclusiveMaximum', '<=', '<'],
    ['minimum', 'exclusiveMinimum', '>=', '>'],
  ] as const) {
    const bound = kw(name);
    const isExclusive = kw(exclusive);
    if (isExclusive !== undefined && typeof isExclusive !== 'boolean')
      keywordError(at, exclusive, 'must be a boolean');
    if (bound === undefined) {
      if (isExclusive !== undefined) keywordError(at, name, `must be present if ${exclusive} is present`);
      continue;
    }
    if (typeof bound !== 'number') keywordError(at, name, 'must be a number');
    checks.push({ k: 'number', op: isExclusive ? exclusiveOp : inclusiveOp, value: bound });
  }

  // Array keywords.
  for (const [name, op] of [
    ['minItems', '>='],
    ['maxItems', '<='],
  ] as const) {
    const n = kw(name);
    if (n !== undefined) checks.push({ k: 'arrayLength', op, n: count(at, name, n) });
  }
  const uniqueItems = kw('uniqueItems');
  if (uniqueItems !== undefined) {
    if (typeof uniqueItems !== 'boolean') keywordError(at, 'uniqueItems', 'must be a boolean');
    if (uniqueItems) checks.push({ k: 'uniqueItems' });
  }
  const items = kw('items');
  let additionalFrom: number | undefined;
  if (items !== undefined) {
    if (Array.isArray(items)) {
      items.forEach((item, i) => {
        const where = join(at, `items.${i}`);
        if (!isPlainObject(item))
          keywordError(
            at,
            'items',
            `requires that each element of the array is an object, not ${describeValue(item)}`,
          );
        checks.push({ k: 'itemAt', index: i, schema: parseSchema(item, where, state, depth + 1) });
      });
      additionalFrom = items.length;
    } else if (isPlainObject(items)) {
      checks.push({
        k: 'itemsFrom',
        index: 0,
        schema: parseSchema(items, join(at, 'items'), state, depth + 1),
      });
    } else {
      keywordError(at, 'items', `must be an array or an object, not ${describeValue(items)}`);
    }
  }
  const additionalItems = kw('additionalItems');
  if (additionalItems !== undefined) {
    const schema = booleanOrSchema(at, 'additionalItems', additionalItems, state, depth);
    // Only `items` as an array leaves elements to it.
    if (additionalFrom !== undefined && schema.length > 0)
      checks.push({ k: 'itemsFrom', index: additionalFrom, schema });
  }

  // Object keywords.
  const required = kw('required');
  if (required !== undefined) checks.push({ k: 'required', names: names(at, 'required', required) });
  const properties = kw('properties');
  const propertyNames: string[] = [];
  if (properties !== undefined) {
    if (!isPlainObject(properties)) keywordError(at, 'properties', 'must be an object');
    const props: [string, Schema][] = [];
    for (const [name, sub] of Object.entries(properties)) {
      if (!isPlainObject(sub)) fail(at, `Nested schema for $jsonSchema property '${name}' must be an object`);
      propertyNames.push(name);
      props.push([name, parseSchema(sub, join(at, `properties.${name}`), state, depth + 1)]);
    }
    checks.push({ k: 'properties', props });
  }
  const patternProperties = kw('patternProperties');
  const additionalProperties = kw('additionalProperties');
  if (patternProperties !== undefined || additionalProperties !== undefined) {
    const patterns: [Regex, Schema][] = [];
    if (patternProperties !== undefined) {
      if (!isPlainObject(patternProperties)) keywordError(at, 'patternProperties', 'must be an object');
      for (const [source, sub] of Object.entries(patternProperties)) {
        const where = join(at, `patternProperties.${source}`);
        if (!isPlainObject(sub))
          keywordError(at, 'patternProperties', `has property '${source}' which is not an object`);
        patterns.push([parseRegex(where, source), parseSchema(sub, where, state, depth + 1)]);
      }
    }
    const otherwise =
      additionalProperties === undefined
        ? []
        : booleanOrSchema(at, 'additionalProperties', additionalProperties, state, depth);
    if (patterns.length > 0 || otherwise.length > 0)
      checks.push({ k: 'allowed', names: propertyNames, patterns, otherwise });
  }
  for (const [name, op] of [
    ['minProperties', '>='],
    ['maxProperties', '<='],
  ] as const) {
    const n = kw(name);
    if (n !== undefined) checks.push({ k: 'objectSize', op, n: count(at, name, n) });
  }
  const dependencies = kw('dependencies');
  if (dependencies !== undefined) {
    if (!isPlainObject(dependencies)) keywordError(at, 'dependencies', 'must be an object');
    for (const [name, dep] of Object.entries(dependencies)) {
      if (Array.isArray(dep)) {
        const list = names(join(at, `dependencies.${name}`), 'dependencies', dep);
        checks.push({ k: 'dependency', name, schema: [{ k: 'required', names: list }] });
      } else if (isPlainObject(dep)) {
        const schema = parseSchema(dep, join(at, `dependencies.${name}`), state, depth + 1);
        checks.push({ k: 'dependency', name, schema });
      } else {
        fail(
          at,
          `property '${name}' in $jsonSchema keyword 'dependencies' must be either an object or an array`,
        );
      }
    }
  }

  // Logical keywords.
  for (const name of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = kw(name);
    if (list === undefined) continue;
    if (!Array.isArray(list)) keywordError(at, name, 'must be an array');
    if (list.length === 0) keywordError(at, name, 'must be a non-empty array');
    const schemas = list.map((sub, i) => {
      if (!isPlainObject(sub))
        keywordError(at, name, `must be an array of objects, but found ${describeValue(sub)}`);
      return parseSchema(sub, join(at, `${name}.${i}`), state, depth + 1);
    });
    checks.push({ k: name, schemas });
  }
  const not = kw('not');
  if (not !== undefined) {
    if (!isPlainObject(not)) keywordError(at, 'not', `must be an object, not ${describeValue(not)}`);
    checks.push({ k: 'not', schema: parseSchema(not, join(at, 'not'), state, depth + 1) });
  }
  const values = kw('enum');
  if (values !== undefined) checks.push({ k: 'enum', values: parseEnum(at, values) });
  return checks;
}

function parseTypes(at: string, keyword: string, arg: Json, aliases?: Map<string, TypeName>): TypeName[] {
  const list = Array.isArray(arg) ? arg : [arg];
  if (typeof arg !== 'string' && !Array.isArray(arg))
    keywordError(at, keyword, 'must be either a string or an array of strings');
  if (list.length === 0) keywordError(at, keyword, 'must name at least one type');
  const seen = new Set<string>();
  return list.map((t) => {
    if (typeof t !== 'string') keywordError(at, keyword, 'array elements must be strings');
    if (t === 'integer') fail(at, "$jsonSchema type 'integer' is not currently supported");
    if (seen.has(t)) keywordError(at, keyword, `has duplicate value: ${t}`);
    seen.add(t);
    const name = aliases ? aliases.get(t) : typeAlias(t);
    if (name === undefined)
      fail(
        at,
        `Unknown type name alias: ${t} (for '${keyword}': ${[...(aliases?.keys() ?? ['the $type aliases'])].join(', ')})`,
      );
    return name;
  });
}

/** MongoDB's parseIntegerElementToNonNegativeLong: a number that is a non-negative integer. */
function count(at: string, keyword: string, n: Json): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    keywordError(
      at,
      keyword,
      `must be a non-negative integer, not ${typeof n === 'number' ? n : describeValue(n)}`,
    );
  return n;
}

function names(at: string, keyword: string, list: Json): string[] {
  if (!Array.isArray(list)) keywordError(at, keyword, `must be an array, not ${describeValue(list)}`);
  if (list.length === 0) keywordError(at, keyword, 'cannot be an empty array');
  if (list.length > MAX_IN_VALUES) keywordError(at, keyword, `has more than ${MAX_IN_VALUES} names`);
  const seen = new Set<string>();
  for (const name of list) {
    if (typeof name !== 'string')
      keywordError(at, keyword, `must be an array of strings, but found ${describeValue(name)}`);
    if (seen.has(name))
      keywordError(at, keyword, `array cannot contain duplicate values (${JSON.stringify(name)})`);
    seen.add(name);
  }
  return list as string[];
}

function booleanOrSchema(at: string, keyword: string, arg: Json, state: ParseState, depth: number): Schema {
  if (typeof arg === 'boolean') return arg ? [] : NEVER;
  if (!isPlainObject(arg))
    keywordError(at, keyword, `must be an object or a boolean, not ${describeValue(arg)}`);
  return parseSchema(arg, join(at, keyword), state, depth + 1);
}

function parseEnum(at: string, values: Json): Json[] {
  if (!Array.isArray(values)) keywordError(at, 'enum', `must be an array, not ${describeValue(values)}`);
  if (values.length === 0) keywordError(at, 'enum', 'cannot be an empty array');
  if (values.length > MAX_IN_VALUES) keywordError(at, 'enum', `has more than ${MAX_IN_VALUES} values`);
  // Duplicates as MongoDB sees them: key order aside, 1 equal to 1.0. Hashing the canonical form
  // keeps a large enum from costing its square.
  const seen = new Set<string>();
  for (const v of values) {
    const key = canonicalJson(v);
    if (seen.has(key)) keywordError(at, 'enum', 'array cannot contain duplicate values');
    seen.add(key);
  }
  return values;
}

/** A `pattern` or a `patternProperties` name: PCRE without options, as the filters' `$regex`. */
function parseRegex(at: string, source: string): Regex {
  try {
    return { ...translateRegex(source, '', at), js: compileRegexJs(source, '', at) };
  } catch (err) {
    if (err instanceof QueryError) throw new QueryError(`In $jsonSchema: ${err.message}`);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// TypeScript evaluation (filter/match.ts).

function jsonType(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** Whether the JSON value `v` matches the schema. */
export function matchSchema(v: Json, schema: Schema): boolean {
  return schema.every((c) => matchCheck(v, c));
}

function compare(a: number, op: Bound, b: number): boolean {
  return op === '>=' ? a >= b : op === '>' ? a > b : op === '<=' ? a <= b : a < b;
}

function matchCheck(v: Json, c: Check): boolean {
  const type = jsonType(v);
  switch (c.k) {
    case 'never':
      return false;
    case 'type':
      return c.types.some((t) => hasType(v, t));
    case 'number':
      return type !== 'number' || compare(v as number, c.op, c.value);
    case 'multipleOf':
      return type !== 'number' || isMultiple(v as number, c.divisor);
    case 'stringLength':
      return type !== 'string' || compare(codePoints(v as string), c.op, c.n);
    case 'pattern':
      return type !== 'string' || testRegex(c.regex.js, v as string);
    case 'arrayLength':
      return type !== 'array' || compare((v as Json[]).length, c.op, c.n);
    case 'uniqueItems': {
      if (type !== 'array') return true;
      const seen = new Set((v as Json[]).map(canonicalJson));
      return seen.size === (v as Json[]).length;
    }
    case 'itemsFrom':
      return type !== 'array' || (v as Json[]).every((e, i) => i < c.index || matchSchema(e, c.schema));
    case 'itemAt':
      return (
        type !== 'array' ||
        (v as Json[]).length <= c.index ||
        matchSchema((v as Json[])[c.index] as Json, c.schema)
      );
    case 'objectSize':
      return type !== 'object' || compare(Object.keys(v as JsonObject).length, c.op, c.n);
    case 'required':
      return type !== 'object' || c.names.every((n) => Object.hasOwn(v as JsonObject, n));
    case 'properties':
      return (
        type !== 'object' ||
        c.props.every(([name, schema]) => {
          const value = getOwn(v as JsonObject, name);
          return value === undefined || matchSchema(value, schema);
        })
      );
    case 'allowed':
      return (
        type !== 'object' ||
        Object.entries(v as JsonObject).every(([name, value]) => {
          let listed = c.names.includes(name);
          for (const [regex, schema] of c.patterns) {
            if (!testRegex(regex.js, name)) continue;
            listed = true;
            if (!matchSchema(value, schema)) return false;
          }
          return listed || matchSchema(value, c.otherwise);
        })
      );
    case 'dependency':
      return type !== 'object' || !Object.hasOwn(v as JsonObject, c.name) || matchSchema(v, c.schema);
    case 'enum':
      return c.values.some((e) => jsonEqual(v, e));
    case 'allOf':
      return c.schemas.every((s) => matchSchema(v, s));
    case 'anyOf':
      return c.schemas.some((s) => matchSchema(v, s));
    case 'oneOf':
      return c.schemas.filter((s) => matchSchema(v, s)).length === 1;
    case 'not':
      return !matchSchema(v, c.schema);
  }
}

/** Lengths count code points, as MongoDB's (UTF-8) and PostgreSQL's char_length do. */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Whether `v` is an integer multiple of `d`, exactly in decimal as the SQL's numeric `mod`: both are
 * read as the shortest decimal that is their double (what JSONB holds), not as binary fractions
 * (`0.3` is a multiple of `0.1`).
 */
function isMultiple(v: number, d: number): boolean {
  return modDecimal(v, d) === 0;
}

// ---------------------------------------------------------------------------------------------
// SQL (filter/sql.ts).

/**
 * The schema as a SQL boolean over the jsonb expression `v` (the row's `doc`, or an element inside
 * $elemMatch). Every name, value and pattern is a bound parameter. Each check is two-valued: the
 * values it reads are never SQL NULL (present fields, array elements), and type tests guard every
 * cast. `aliases` numbers the subqueries so nested ones do not shadow each other.
 */
export function compileSchema(schema: Schema, v: string, params: Params, aliases: { n: number }): string {
  return new SchemaCompiler(params, aliases).schema(schema, v);
}

class SchemaCompiler {
  constructor(
    private readonly p: Params,
    private readonly aliases: { n: number },
  ) {}

  schema(schema: Schema, v: string): string {
    if (schema.length === 0) return 'true';
    const parts = schema.map((c) => this.check(c, v));
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' and ')})`;
  }

  /**
   * `test` where `v` is of the JSON type, true for other values. A CASE, since only it orders the
   * evaluation: jsonb_array_length, jsonb_each and the numeric cast raise errors on other types.
   */
  private onType(v: string, type: string, test: string): string {
    return `(case when jsonb_typeof(${v}) = '${type}' then ${test} else true end)`;
  }

  private regex(subject: string, regex: Regex): string {
    const flags = regex.flags ? ` flag ${JSON.stringify(regex.flags)}` : '';
    const path = this.p.jsonpath(`lax $ like_regex ${JSON.stringify(regex.pattern)}${flags}`);
    return `jsonb_path_match(${subject}, ${path})`;
  }

  private names(names: string[]): string {
    return this.p.typed(toArrayLiteral(names), 'text[]');
  }

  private check(c: Check, v: string): string {
    switch (c.k) {
      case 'never':
        return 'false';
      case 'type':
        return `(${c.types.map((t) => typeTest(v, t)).join(' or ')})`;
      case 'number':
        return this.onType(v, 'number', `${v} ${c.op} ${this.p.json(c.value)}`);
      case 'multipleOf':
        return this.onType(
          v,
          'number',
          `mod((${v})::numeric, ${this.p.typed(String(c.divisor), 'numeric')}) = 0`,
        );
      case 'stringLength':
        return this.onType(v, 'string', `char_length(${v} #>> '{}') ${c.op} ${this.p.int(c.n)}`);
      case 'pattern':
        return this.onType(v, 'string', this.regex(v, c.regex));
      case 'arrayLength':
        return this.onType(v, 'array', `jsonb_array_length(${v}) ${c.op} ${this.p.int(c.n)}`);
      case 'uniqueItems': {
        // jsonb equality is MongoDB's here: key order aside, 1 equal to 1.0.
        const a = ++this.aliases.n;
        return this.onType(
          v,
          'array',
          `(select count(distinct u${a}.x) from jsonb_array_elements(${v}) as u${a}(x)) = jsonb_array_length(${v})`,
        );
      }
      case 'itemsFrom': {
        const a = ++this.aliases.n;
        const from = c.index > 0 ? ` and i${a}.i > ${this.p.int(c.index)}` : '';
        return this.onType(
          v,
          'array',
          `not exists (select 1 from jsonb_array_elements(${v}) with ordinality as i${a}(x, i) where not ${this.schema(c.schema, `i${a}.x`)}${from})`,
        );
      }
      case 'itemAt': {
        const index = this.p.int(c.index);
        return this.onType(
          v,
          'array',
          `(case when jsonb_array_length(${v}) > ${index} then ${this.schema(c.schema, `(${v} -> ${index}::int)`)} else true end)`,
        );
      }
      case 'objectSize': {
        const a = ++this.aliases.n;
        return this.onType(
          v,
          'object',
          `(select count(*) from jsonb_object_keys(${v}) as o${a}(k)) ${c.op} ${this.p.int(c.n)}`,
        );
      }
      case 'required':
        return this.onType(v, 'object', `${v} ?& ${this.names(c.names)}`);
      case 'properties': {
        const parts = c.props.map(([name, schema]) => {
          const key = this.p.text(name);
          return `(case when ${v} ? ${key} then ${this.schema(schema, `(${v} -> ${key})`)} else true end)`;
        });
        return parts.length === 0 ? 'true' : this.onType(v, 'object', `(${parts.join(' and ')})`);
      }
      case 'allowed': {
        const a = ++this.aliases.n;
        const key = `mdb.jsonb_of(f${a}.k)`;
        const value = `f${a}.v`;
        const patterns = c.patterns.map(([regex, schema]) => ({
          matches: this.regex(key, regex),
          schema: this.schema(schema, value),
        }));
        const listed = [
          ...(c.names.length > 0 ? [`f${a}.k = any(${this.names(c.names)})`] : []),
          ...patterns.map((pp) => pp.matches),
        ];
        const ok = [
          ...patterns.map((pp) => `(not ${pp.matches} or ${pp.schema})`),
          listed.length > 0
            ? `(${listed.join(' or ')} or ${this.schema(c.otherwise, value)})`
            : this.schema(c.otherwise, value),
        ];
        return this.onType(
          v,
          'object',
          `not exists (select 1 from jsonb_each(${v}) as f${a}(k, v) where not (${ok.join(' and ')}))`,
        );
      }
      case 'dependency':
        return this.onType(
          v,
          'object',
          `(case when ${v} ? ${this.p.text(c.name)} then ${this.schema(c.schema, v)} else true end)`,
        );
      case 'enum':
        return `${v} in (select jsonb_array_elements(${this.p.json(c.values)}))`;
      case 'allOf':
        return `(${c.schemas.map((s) => this.schema(s, v)).join(' and ')})`;
      case 'anyOf':
        return `(${c.schemas.map((s) => this.schema(s, v)).join(' or ')})`;
      case 'oneOf':
        return `((${c.schemas.map((s) => `(case when ${this.schema(s, v)} then 1 else 0 end)`).join(' + ')}) = 1)`;
      case 'not':
        return `not ${this.schema(c.schema, v)}`;
    }
  }
}

/** The $type test as SQL on one value, as it is (no array traversal): filter/sql.ts's rules. */
function typeTest(v: string, t: TypeName): string {
  switch (t) {
    case 'bool':
      return `jsonb_typeof(${v}) = 'boolean'`;
    case 'int':
    case 'double': {
      const int = `((${v})::numeric = floor((${v})::numeric) and (${v})::numeric between -2147483648 and 2147483647)`;
      // jsonb casts only numbers to numeric: the type test guards the cast.
      return `(case when jsonb_typeof(${v}) = 'number' then ${t === 'int' ? int : `not ${int}`} else false end)`;
    }
    case 'long':
    case 'decimal':
    case 'noJsonForm':
      return 'false';
    default:
      return `jsonb_typeof(${v}) = '${t}'`;
  }
}
