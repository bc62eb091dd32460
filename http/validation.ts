import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { errors } from '../errors.js';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * Request validation straight from the spec's JSON Schema 2020-12, configured so that bodies are
 * validated as sent: no type coercion, no defaults injected, no unknown properties stripped.
 */
export function createValidatorCompiler() {
  const ajv = new Ajv2020({
    allErrors: true,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    strict: false,
  });
  addFormats(ajv);
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    // fastify-openapi-glue gives every recursive schema the same placeholder $id.
    const id = (schema as { $id?: unknown }).$id;
    if (typeof id === 'string' && ajv.getSchema(id)) ajv.removeSchema(id);
    const validate = ajv.compile(schema);
    return httpPart === 'body' ? skippingAbsentBody(validate) : validate;
  };
}

/**
 * Fastify hands a body validator `null` when no body was sent with `Content-Type:
 * application/json`, which no object schema accepts. No body is not a bad body: where one is
 * required the route's preValidation hook (requiringBody) says so; elsewhere the operation takes
 * none. A JSON `null` sent as the body is still validated (and refused).
 */
function skippingAbsentBody(validate: ValidateFunction): ValidateFunction {
  const wrapper = ((data: unknown, ctx?: Parameters<ValidateFunction>[1]) =>
    ctx?.parentData !== undefined && (ctx.parentData as { body?: unknown }).body === undefined
      ? true
      : validate(data, ctx)) as ValidateFunction;
  // Fastify passes the request as parentData only to validators that carry schemaEnv, and reads
  // `errors` off the function it called.
  Object.defineProperty(wrapper, 'schemaEnv', { value: validate.schemaEnv });
  Object.defineProperty(wrapper, 'errors', { get: () => validate.errors });
  return wrapper;
}

const BODY_REQUIRED = 'is required: send a JSON object with Content-Type: application/json';

/**
 * The preValidation hook of an operation whose body is required: Fastify validates a body only
 * when one was sent, so a missing one would otherwise pass.
 */
export function requiringBody(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  if (request.body !== undefined) return done();
  done(errors.validation([{ in: 'body', path: '', message: BODY_REQUIRED }]));
}
