import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Sql } from '../../db/connection/sql.js';
import { WORKPLACE_NAME } from '../../db/platform/workplaces.js';
import { CatalogCache } from '../../db/storage/catalog-cache.js';
import { Statistics } from '../../db/storage/statistics.js';
import { createHandlers } from '../../handlers/index.js';
import { loadSpec, SPEC_PATH, specOperations } from '../../http/spec.js';

const spec = loadSpec();
const ops = specOperations(spec);

/** Every row of SPEC.md's endpoint tables, with its path written as OpenAPI writes it. */
const SPEC_ROUTES: [string, string][] = [
  ['POST', '/v1/workplaces'],
  ['GET', '/v1/workplaces/{name}'],
  ['DELETE', '/v1/workplaces/{name}'],
  ['GET', '/v1/workplaces/{name}/oidc'],
  ['POST', '/v1/workplaces/{name}/oidc'],
  ['POST', '/v1/workplaces/{name}/oidc/token'],
  ['GET', '/oidc/{name}/registration'],
  ['POST', '/oidc/{name}/oidc/registration'],
  ['DELETE', '/oidc/{name}/registration'],
  ['GET', '/v1/workplaces/{name}/storages'],
  ['POST', '/v1/workplaces/{name}/storages'],
  ['DELETE', '/v1/workplaces/{name}/storages/{storage_name}'],
  ['GET', '/v1/workplaces/{name}/storages/{storage_name}/indexes'],
  ['POST', '/v1/workplaces/{name}/storages/{storage_name}/indexes'],
  ['DELETE', '/v1/workplaces/{name}/storages/{storage_name}/indexes/{index_name}'],
  ['POST', '/v1/workplaces/{name}/storages/{storage_name}/read'],
  ['POST', '/v1/workplaces/{name}/storages/{storage_name}/create'],
  ['POST', '/v1/workplaces/{name}/storages/{storage_name}/update'],
  ['POST', '/v1/workplaces/{name}/storages/{storage_name}/count'],
  ['POST', '/v1/workplaces/{name}/storages/{storage_name}/delete'],
  ['GET', '/v1/workplaces/{name}/connectors'],
  ['POST', '/v1/workplaces/{name}/connectors'],
  ['POST', '/v1/workplaces/{name}/connectors/{id}'],
  ['DELETE', '/v1/workplaces/{name}/connectors/{id}'],
];

describe('openapi.yaml against SPEC.md and the handlers', () => {
  it('is ASCII, so that the strings the server keeps from it are one byte a character', () => {
    // One character beyond Latin-1 makes V8 hold the whole file, and every key parsed from it, two
    // bytes a character. A document field with the same name as a key of the spec (`_id`, `name`)
    // then shares that two-byte string, and every response holding it is encoded to UTF-8 the slow
    // way (a callgrind count found `_id` so; it cost a 10-document read about 30,000 instructions).
    const lines = readFileSync(SPEC_PATH, 'utf8').split('\n');
    const offending = lines.flatMap((line, i) =>
      /[^\t\r -~]/.test(line) ? [`${i + 1}: ${line.trim()}`] : [],
    );
    expect(offending).toEqual([]);
  });

  it('has every method and path of SPEC.md', () => {
    const present = new Set(ops.map((o) => `${o.method} ${o.path}`));
    for (const [method, path] of SPEC_ROUTES)
      expect(present, `${method} ${path}`).toContain(`${method} ${path}`);
  });

  it('adds nothing beyond SPEC.md but the health probes, access tokens, OIDC operator tools, distinct, aggregate, the single-document operations and the rules', () => {
    const specRoutes = new Set(SPEC_ROUTES.map(([m, p]) => `${m} ${p}`));
    const extra = ops.map((o) => `${o.method} ${o.path}`).filter((r) => !specRoutes.has(r));
    expect(extra.sort()).toEqual([
      'DELETE /v1/tokens/{token_id}',
      'DELETE /v1/workplaces/{name}/oidc/users/{sub}/grants/{grant_id}',
      'DELETE /v1/workplaces/{name}/oidc/users/{sub}/sessions',
      'DELETE /v1/workplaces/{name}/oidc/users/{sub}/sessions/{session_id}',
      'GET /healthz',
      'GET /readyz',
      'GET /v1/tokens',
      'GET /v1/workplaces/{name}/oidc/users/{sub}/sessions',
      'GET /v1/workplaces/{name}/storages/{storage_name}/rules',
      'POST /v1/tokens',
      'POST /v1/workplaces/{name}/oidc/keys',
      'POST /v1/workplaces/{name}/oidc/password',
      'POST /v1/workplaces/{name}/storages/{storage_name}/aggregate',
      'POST /v1/workplaces/{name}/storages/{storage_name}/delete-one',
      'POST /v1/workplaces/{name}/storages/{storage_name}/distinct',
      'POST /v1/workplaces/{name}/storages/{storage_name}/find-one-and-delete',
      'POST /v1/workplaces/{name}/storages/{storage_name}/find-one-and-replace',
      'POST /v1/workplaces/{name}/storages/{storage_name}/find-one-and-update',
      'POST /v1/workplaces/{name}/storages/{storage_name}/replace-one',
      'POST /v1/workplaces/{name}/storages/{storage_name}/rules/test',
      'POST /v1/workplaces/{name}/storages/{storage_name}/update-one',
      'PUT /v1/workplaces/{name}/storages/{storage_name}/rules',
    ]);
  });

  it('has a handler for every operationId and an operationId for every handler', () => {
    const sql = {} as Sql;
    const handlers = createHandlers({ sql, statistics: new Statistics(sql), catalog: new CatalogCache(sql) });
    expect(Object.keys(handlers).sort()).toEqual(ops.map((o) => o.operationId).sort());
  });

  it('has unique camelCase operationIds, each with one tag', () => {
    const ids = ops.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z]+[A-Za-z]*$/);
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const op of Object.values(item) as { tags?: string[] }[]) {
        if (op && typeof op === 'object' && 'operationId' in op) expect(op.tags, path).toHaveLength(1);
      }
    }
  });

  it('spells the security headers exactly as SPEC.md does, with Authorization as an alternative', () => {
    const schemes = spec.components.securitySchemes;
    expect(schemes.XAuthToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Auth-Token' });
    expect(schemes.OidcToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorizarion' });
    expect(schemes.OidcTokenAuthorization).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('lists the relative server first, then an absolute one whose defaults name `npm start`', () => {
    const servers = (spec as { servers?: { url: string; variables?: Record<string, { default: string }> }[] })
      .servers;
    // Swagger UI calls the first server: relative, it is the origin the docs page came from.
    expect(servers?.[0]?.url).toBe('/');
    const absolute = servers?.[1];
    expect(absolute?.url).toBe('{scheme}://{host}');
    const url = absolute?.url.replace(
      /\{(\w+)\}/g,
      (_, name: string) => absolute.variables?.[name]?.default ?? '',
    );
    // A client generated for Node needs an absolute base URL without being configured.
    expect(new URL(url ?? '').href).toBe('http://127.0.0.1:3000/');
  });

  it('protects /v1 with X-Auth-Token (the document routes also with an end user’s token), /oidc with the OIDC token, and leaves only the probes public', () => {
    const documentRoutes =
      /^\/v1\/workplaces\/\{name\}\/storages\/\{storage_name\}\/(read|create|update|count|distinct|aggregate|delete|update-one|replace-one|delete-one|find-one-and-update|find-one-and-replace|find-one-and-delete)$/;
    for (const op of ops) {
      const schemes = op.security.map((r) => Object.keys(r).join('+'));
      if (documentRoutes.test(op.path))
        expect(schemes, op.operationId).toEqual(['XAuthToken', 'EndUserToken']);
      else if (op.path.startsWith('/v1/')) expect(schemes, op.operationId).toEqual(['XAuthToken']);
      else if (op.path.startsWith('/oidc/'))
        expect(schemes, op.operationId).toEqual(['OidcToken', 'OidcTokenAuthorization']);
      else expect(schemes, op.operationId).toEqual([]);
    }
  });

  it('switches the shared /oidc paths on an optional client_id, and requires it on delete', () => {
    const param = (path: string, method: string) => {
      const op = (spec.paths[path] as Record<string, { parameters?: { $ref: string }[] }>)[method];
      return op?.parameters?.map((p) => p.$ref.split('/').pop());
    };
    expect(param('/oidc/{name}/registration', 'get')).toEqual(['ClientIdSelect']);
    expect(param('/oidc/{name}/oidc/registration', 'post')).toEqual(['ClientIdSelect']);
    expect(param('/oidc/{name}/registration', 'delete')).toEqual(['ClientIdRequired']);
  });

  it("agrees with the code's workplace name pattern on the names it accepts", () => {
    const schemas = (spec as unknown as { components: { schemas: Record<string, unknown> } }).components
      .schemas;
    const name = schemas.Name as { pattern: string; minLength: number; maxLength: number };
    const specAccepts = (s: string) =>
      s.length >= name.minLength && s.length <= name.maxLength && new RegExp(name.pattern, 'u').test(s);
    const samples = [
      '',
      'a',
      'acme',
      'Z'.repeat(64),
      'Z'.repeat(65),
      'a1',
      'a-b',
      'a b',
      '\u00e9t\u00e9',
      'ab\n',
    ];
    for (const s of samples) expect(WORKPLACE_NAME.test(s), JSON.stringify(s)).toBe(specAccepts(s));
  });
});
