// What SDK generators need from the contract's names and shapes: a generator that emits one type
// per component name writes `type ConnectorId = ConnectorId` when a parameter and a schema share
// one; an inline enum under a property named by a reserved word becomes `enum in`; an inline result
// object gets a made-up name (or none); an array without `items` is `unknown[]` at best.
import { describe, expect, it } from 'vitest';
import { loadSpec } from '../../http/spec.js';

type Node = Record<string, unknown>;

const spec = loadSpec() as unknown as Node;
const components = spec.components as Node;
const schemas = components.schemas as Node;

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reserved words of the languages clients are most often generated in (TypeScript, Go, Java, Python). */
const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false ' +
    'finally for function if import in instanceof new null return super switch this throw true try ' +
    'typeof var void while with yield let static implements interface package private protected ' +
    'public type chan defer fallthrough func go goto map range select struct abstract assert boolean ' +
    'byte char double final float int long native short synchronized throws transient volatile and as ' +
    'def del elif except from global is lambda nonlocal not or pass raise'
  ).split(' '),
);

/** Every schema below a component schema (not the component itself), with its path of keywords. */
function nestedSchemas(): [string, Node][] {
  const out: [string, Node][] = [];
  const walk = (n: Node, path: string[]) => {
    if (path.length > 1) out.push([path.join('.'), n]);
    for (const [name, child] of Object.entries(isNode(n.properties) ? n.properties : {}))
      if (isNode(child)) walk(child, [...path, name]);
    for (const key of ['items', 'additionalProperties'])
      if (isNode(n[key])) walk(n[key] as Node, [...path, key]);
    for (const key of ['oneOf', 'anyOf', 'allOf']) {
      if (!Array.isArray(n[key])) continue;
      (n[key] as unknown[]).forEach((child, i) => {
        if (isNode(child)) walk(child, [...path, key, String(i)]);
      });
    }
  };
  for (const [name, schema] of Object.entries(schemas)) walk(schema as Node, [name]);
  return out;
}

function operations(): [string, Node][] {
  return Object.entries(spec.paths as Node).flatMap(([path, item]) =>
    Object.entries(item as Node)
      .filter(([, op]) => isNode(op) && 'operationId' in op)
      .map(([method, op]) => [`${method.toUpperCase()} ${path}`, op as Node] as [string, Node]),
  );
}

describe('names and shapes in openapi.yaml for SDK generators', () => {
  it('give no two kinds of component the same name', () => {
    const kinds = ['schemas', 'parameters', 'responses', 'requestBodies', 'headers'];
    const seen = new Map<string, string>();
    const shared: string[] = [];
    for (const kind of kinds) {
      for (const name of Object.keys((components[kind] as Node | undefined) ?? {})) {
        const other = seen.get(name);
        if (other) shared.push(`${name}: ${other} and ${kind}`);
        seen.set(name, kind);
      }
    }
    expect(shared).toEqual([]);
  });

  it('leave no enum inline under a property named by a reserved word', () => {
    const inline = nestedSchemas()
      .filter(([path, n]) => Array.isArray(n.enum) && RESERVED.has(path.split('.').at(-1) as string))
      .map(([path]) => path);
    expect(inline).toEqual([]);
  });

  it('name every object with properties: none inline below a schema but an allOf extension', () => {
    const inline = nestedSchemas()
      .filter(([path, n]) => isNode(n.properties) && !/\.allOf\.\d+$/.test(path))
      .map(([path]) => path);
    expect(inline).toEqual([]);
  });

  it('give every response body a named schema (or a choice of named schemas)', () => {
    const inline: string[] = [];
    const check = (where: string, response: Node) => {
      for (const [type, media] of Object.entries((response.content as Node | undefined) ?? {})) {
        const schema = (media as Node).schema as Node;
        const refs = Array.isArray(schema.oneOf) ? (schema.oneOf as Node[]) : [schema];
        if (!refs.every((s) => typeof s.$ref === 'string')) inline.push(`${where} ${type}`);
      }
    };
    for (const [where, op] of operations())
      for (const [status, r] of Object.entries(op.responses as Node)) check(`${where} ${status}`, r as Node);
    for (const [name, r] of Object.entries(components.responses as Node)) check(name, r as Node);
    expect(inline).toEqual([]);
  });

  it('give every array its items', () => {
    const bare = nestedSchemas()
      .filter(([, n]) => n.type === 'array' && !('items' in n))
      .map(([path]) => path);
    const top = Object.entries(schemas)
      .filter(([, n]) => (n as Node).type === 'array' && !('items' in (n as Node)))
      .map(([name]) => name);
    expect([...top, ...bare]).toEqual([]);
  });

  it('type inserted and upserted ids as DocumentId', () => {
    const id = { $ref: '#/components/schemas/DocumentId' };
    const props = (name: string) => (schemas[name] as Node).properties as Node;
    expect((props('InsertResult').insertedIds as Node).items).toEqual(id);
    expect(props('UpdateResult').upsertedId).toMatchObject(id);
  });

  it('give every operation a summary and a description', () => {
    const missing = operations()
      .filter(([, op]) => !op.summary || !op.description)
      .map(([where]) => where);
    expect(missing).toEqual([]);
  });
});
