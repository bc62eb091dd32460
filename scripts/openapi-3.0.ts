/**
 * Writes generated/openapi-3.0.json, the OpenAPI 3.0.3 rendition of openapi.yaml, for the SDK
 * generators that cannot read 3.1 (part of `npm run gen`; never edit the output by hand).
 *
 * @apiture/openapi-down-convert does the conversion (3.0.3 header, `examples` in schemas to
 * `example`, `const` to `enum`, `type: [T, 'null']` to `nullable`, keywords 3.0 lacks dropped,
 * `$ref` siblings). The passes below cover what it leaves that this contract uses, so that the
 * result is valid 3.0: test/integration/openapi-3.0.test.ts lints it and fails on any 3.1 construct left.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Converter } from '@apiture/openapi-down-convert';
import { parse } from 'yaml';
import { OPENAPI_30_PATH, SPEC_PATH } from '../http/spec.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isNullType = (v: Json): boolean => isObject(v) && Object.keys(v).length === 1 && v.type === 'null';

/**
 * `oneOf`/`anyOf` with a `{type: 'null'}` member is how 3.1 says "or null"; 3.0 has no null type,
 * only `nullable: true`, which 3.0.3 lets act only beside a `type`. The null moves into one other
 * alternative: an inline one with a `type` takes `nullable` itself; a `$ref` (which ignores its
 * siblings) becomes `allOf: [$ref]` with the referenced schema's `type`, the form 3.0 generators
 * read as a nullable reference. A single alternative left replaces the `oneOf`.
 */
function nullableAlternatives(schema: JsonObject, typeOf: (ref: Json) => Json | undefined): void {
  for (const key of ['oneOf', 'anyOf'] as const) {
    const alternatives = schema[key];
    if (!Array.isArray(alternatives) || !alternatives.some(isNullType)) continue;
    const rest = alternatives.filter((a) => !isNullType(a));
    const at = Math.max(
      0,
      rest.findIndex((a) => isObject(a) && typeof a.type === 'string'),
    );
    const chosen = rest[at];
    if (!isObject(chosen)) continue;
    const type = '$ref' in chosen ? typeOf(chosen.$ref) : undefined;
    rest[at] =
      '$ref' in chosen
        ? { ...(type === undefined ? {} : { type }), nullable: true, allOf: [chosen] }
        : { ...chosen, nullable: true };
    const only = rest.length === 1 ? rest[0] : undefined;
    if (isObject(only) && Object.keys(only).every((k) => !(k in schema))) {
      delete schema[key];
      Object.assign(schema, only);
    } else schema[key] = rest;
  }
}

/** Every schema-like object of the document, depth first; example values are data, not schemas. */
function walk(node: Json, visit: (o: JsonObject) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit);
  } else if (isObject(node)) {
    visit(node);
    for (const [key, value] of Object.entries(node)) {
      if (key !== 'example' && key !== 'examples' && !key.startsWith('x-')) walk(value, visit);
    }
  }
}

function toOpenApi30(spec: JsonObject): JsonObject {
  const converted = new Converter(spec, {
    convertSchemaComments: true,
    allOfTransform: true,
  }).convert() as JsonObject;
  const info = converted.info;
  // 3.0's Info has no summary: it leads the description instead of being lost.
  if (isObject(info) && typeof info.summary === 'string') {
    info.description = `${info.summary}\n\n${typeof info.description === 'string' ? info.description : ''}`;
    delete info.summary;
  }
  const schemas = isObject(converted.components) ? converted.components.schemas : undefined;
  const typeOf = (ref: Json) => {
    const name = typeof ref === 'string' ? ref.replace('#/components/schemas/', '') : undefined;
    const target = name !== undefined && isObject(schemas) ? schemas[name] : undefined;
    return isObject(target) && typeof target.type === 'string' ? target.type : undefined;
  };
  walk(converted, (o) => {
    nullableAlternatives(o, typeOf);
    // The converter turns only a truthy `const` into an `enum`.
    if ('const' in o && !isObject(o.const) && !('$ref' in o)) {
      o.enum = [o.const as Json];
      delete o.const;
    }
  });
  return converted;
}

/** The text of generated/openapi-3.0.json for openapi.yaml as it is now. */
export function renderOpenApi30(): string {
  const spec = parse(readFileSync(SPEC_PATH, 'utf8')) as JsonObject;
  return `${JSON.stringify(toOpenApi30(spec), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(OPENAPI_30_PATH, renderOpenApi30());
