import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSpec, OPENAPI_30_PATH } from '../../http/spec.js';
import { renderOpenApi30 } from '../../scripts/openapi-3.0.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const REDOCLY = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const file = readFileSync(OPENAPI_30_PATH);
const doc = JSON.parse(file.toString('utf8')) as { [key: string]: Json };

/** JSON Schema keywords of 3.1 (2020-12) that an OpenAPI 3.0 Schema Object does not have. */
const ONLY_31 = [
  'const',
  'examples',
  'prefixItems',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  '$defs',
  '$schema',
  '$id',
  '$anchor',
  '$comment',
  'contentMediaType',
  'contentEncoding',
];

/** Every schema of the document, with where it is: components, and those inline in operations. */
function schemasOf(node: Json, at: string, out: [string, { [key: string]: Json }][] = [], inSchema = false) {
  if (Array.isArray(node)) {
    for (const [i, n] of node.entries()) schemasOf(n, `${at}/${i}`, out, inSchema);
  } else if (node !== null && typeof node === 'object') {
    if (inSchema) out.push([at, node]);
    for (const [key, value] of Object.entries(node)) {
      if (key === 'example' || key === 'examples' || key.startsWith('x-')) continue;
      // A schema's children are schemas, except the names in `properties` and the list in `required`.
      const child =
        key === 'schema' || (inSchema && key !== 'properties' && key !== 'required' && key !== 'enum');
      const isMap = value !== null && typeof value === 'object' && !Array.isArray(value);
      if (isMap && ((inSchema && key === 'properties') || (at === '#/components' && key === 'schemas'))) {
        for (const [name, s] of Object.entries(value)) schemasOf(s, `${at}/${key}/${name}`, out, true);
      } else schemasOf(value, `${at}/${key}`, out, child);
    }
  }
  return out;
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('the OpenAPI 3.0 rendition (generated/openapi-3.0.json)', () => {
  it('is served at /openapi-3.0.json without a token, byte for byte the file', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi-3.0.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.rawPayload.equals(file)).toBe(true);
  });

  it('is what `npm run gen` makes of openapi.yaml today', () => {
    expect(file.toString('utf8')).toBe(renderOpenApi30());
  });

  it('declares 3.0.3 and keeps every operation, the servers and the security alternatives', () => {
    const spec = loadSpec() as unknown as { [key: string]: Json };
    expect(doc.openapi).toBe('3.0.3');
    const ids = (d: { [key: string]: Json }) =>
      Object.values(d.paths as { [p: string]: { [m: string]: { operationId?: string } } }).flatMap((item) =>
        Object.values(item).flatMap((op) => (op?.operationId ? [op.operationId] : [])),
      );
    expect(ids(doc).sort()).toEqual(ids(spec).sort());
    expect(doc.servers).toEqual(spec.servers);
    const paths = doc.paths as { [p: string]: { [m: string]: { security?: Json } } };
    expect(paths['/oidc/{name}/registration']?.get?.security).toEqual([
      { OidcToken: [] },
      { OidcTokenAuthorization: [] },
    ]);
  });

  it('has no construct of 3.1 left', () => {
    expect(doc).not.toHaveProperty('webhooks');
    expect(doc).not.toHaveProperty('jsonSchemaDialect');
    expect(doc.info).not.toHaveProperty('summary');
    expect(doc.info).not.toHaveProperty('license.identifier');
    expect(doc.components).not.toHaveProperty('pathItems');
    const schemas = schemasOf(doc, '#');
    expect(schemas.length).toBeGreaterThan(100);
    const left = schemas.flatMap(([at, s]) => [
      ...ONLY_31.filter((k) => k in s).map((k) => `${at}: ${k}`),
      ...(Array.isArray(s.type) || s.type === 'null' ? [`${at}: type ${JSON.stringify(s.type)}`] : []),
      ...(typeof s.exclusiveMinimum === 'number' || typeof s.exclusiveMaximum === 'number'
        ? [`${at}: numeric exclusiveMinimum/exclusiveMaximum`]
        : []),
      // 3.0.3: `nullable` acts only beside a `type`.
      ...(s.nullable === true && typeof s.type !== 'string' ? [`${at}: nullable without type`] : []),
      ...('$ref' in s && Object.keys(s).length > 1 ? [`${at}: $ref with siblings`] : []),
    ]);
    expect(left).toEqual([]);
    // What was "or null" in 3.1 is still nullable (one of them, as a spot check).
    const expiresAt = schemas.find(([at]) => at.endsWith('/schemas/Token/properties/expires_at'))?.[1];
    expect(expiresAt).toMatchObject({ type: 'string', nullable: true });
  });

  it('passes the OpenAPI 3.0 structural lint of Redocly without an error', async () => {
    const { stdout } = await promisify(execFile)(REDOCLY, ['lint', OPENAPI_30_PATH, '--format=json'], {
      timeout: 60_000,
    }).catch((err: { stdout: string }) => err);
    const report = JSON.parse(stdout) as {
      totals: { errors: number };
      problems: { ruleId: string; severity: string; message: string }[];
    };
    const errors = report.problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.ruleId}: ${p.message}`);
    expect(errors).toEqual([]);
    expect(report.totals.errors).toBe(0);
  }, 60_000);
});
