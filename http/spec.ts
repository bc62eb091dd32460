import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const SPEC_PATH = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
/** The OpenAPI 3.0.3 rendition of the spec that `npm run gen` writes (scripts/openapi-3.0.ts). */
export const OPENAPI_30_PATH = fileURLToPath(new URL('../generated/openapi-3.0.json', import.meta.url));

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

type SecurityRequirement = Record<string, string[]>;

export interface SpecOperation {
  operationId: string;
  method: string;
  /** The OpenAPI path, `/v1/workplaces/{name}`. */
  path: string;
  /** Alternatives, in order; `[]` means public. */
  security: SecurityRequirement[];
  bodyRequired: boolean;
  /** What an X-Auth-Token must allow (`x-access`); undefined on operations that do not take one. */
  access: Access | undefined;
}

/** `x-access` of an operation: what a scoped token needs to call it. */
export type Access = 'read' | 'write' | 'admin';
const ACCESS_VALUES: readonly string[] = ['read', 'write', 'admin'];

export interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string;
        security?: SecurityRequirement[];
        requestBody?: { required?: boolean };
        'x-access'?: unknown;
      }
    >
  >;
  security?: SecurityRequirement[];
  components: { securitySchemes: Record<string, { type: string; name?: string; in?: string }> };
  [key: string]: unknown;
}

/** The file must stay ASCII: the contract test says why (it keeps response encoding fast). */
export function loadSpec(path = SPEC_PATH): OpenApiDocument {
  return parse(readFileSync(path, 'utf8')) as OpenApiDocument;
}

/** Every operation of the spec, with its effective security requirements. */
export function specOperations(spec: OpenApiDocument): SpecOperation[] {
  const ops: SpecOperation[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const access = op['x-access'];
      if (access !== undefined && !ACCESS_VALUES.includes(String(access)))
        throw new Error(`${op.operationId} has x-access ${String(access)}; use read, write or admin`);
      ops.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        security: op.security ?? spec.security ?? [],
        bodyRequired: op.requestBody?.required === true,
        access: access as Access | undefined,
      });
    }
  }
  return ops;
}
