import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { escapePointer } from '../../errors.js';
import { loadSpec, type OpenApiDocument, specOperations } from '../../http/spec.js';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema?: unknown }>;
  headers?: Record<string, unknown>;
}

function pointer(...segments: string[]): string {
  return segments.map(escapePointer).join('/');
}

/** An Ajv that knows the whole spec as `openapi`, so any of its schemas compiles as `openapi#/<pointer>`. */
export function createSpecAjv(spec: OpenApiDocument = loadSpec()): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(spec as object, 'openapi');
  return ajv;
}

/**
 * Checks responses against openapi.yaml: the status must be declared for the operation, the media
 * type must be the declared one, and the body must validate against its schema.
 */
export function createResponseChecker(spec: OpenApiDocument = loadSpec()) {
  const ajv = createSpecAjv(spec);
  const compiled = new Map<string, ValidateFunction>();
  const routes = specOperations(spec).map((op) => ({
    ...op,
    regex: new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));

  return function check(
    method: string,
    url: string,
    status: number,
    contentType: string | undefined,
    body: string,
  ) {
    const path = url.split('?')[0] ?? '';
    const route = routes.find((r) => r.method === method && r.regex.test(path));
    if (!route) return; // not an API operation (docs, unknown routes)
    const responses = (
      spec.paths[route.path] as Record<string, { responses: Record<string, ResponseObject> }>
    )[method.toLowerCase()]?.responses;
    let response = responses?.[String(status)];
    if (!response)
      throw new Error(`${route.operationId}: status ${status} is not declared (body: ${body.slice(0, 300)})`);
    let base = pointer('paths', route.path, method.toLowerCase(), 'responses', String(status));
    if (response.$ref) {
      base = response.$ref.replace(/^#\//, '');
      const name = response.$ref.split('/').pop() as string;
      response = (spec.components as unknown as { responses: Record<string, ResponseObject> }).responses[
        name
      ];
    }
    const declared = Object.keys(response?.content ?? {});
    if (declared.length === 0) {
      if (body !== '')
        throw new Error(`${route.operationId}: ${status} must have no body, got ${body.slice(0, 200)}`);
      return;
    }
    const mediaType = (contentType ?? '').split(';')[0]?.trim() ?? '';
    if (!declared.includes(mediaType)) {
      throw new Error(
        `${route.operationId}: ${status} sent ${mediaType || 'no content type'}, spec declares ${declared.join(', ')}`,
      );
    }
    const ref = `openapi#/${base}/${pointer('content', mediaType, 'schema')}`;
    let validate = compiled.get(ref);
    if (!validate) {
      validate = ajv.compile({ $ref: ref });
      compiled.set(ref, validate);
    }
    if (!validate(JSON.parse(body))) {
      throw new Error(
        `${route.operationId}: ${status} body does not match the spec: ${ajv.errorsText(validate.errors)}\n${body.slice(0, 500)}`,
      );
    }
  };
}
