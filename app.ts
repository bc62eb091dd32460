import { STATUS_CODES } from 'node:http';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type RouteOptions,
} from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { CatalogCache } from './db/catalog-cache.js';
import type { Sql } from './db/sql.js';
import { Statistics } from './db/statistics.js';
import { type AppError, errors, MAX_PATH_PARAMETER_LENGTH, toAppError } from './errors.js';
import { createHandlers } from './handlers/index.js';
import type { Caller, Handler, Handlers, Input, OperationId } from './handlers/types.js';
import { EncodedJson } from './http/encoded-json.js';
import { jsonBodyParser, type ParseJson } from './http/json-body.js';
import { RequestLogger } from './http/request-logger.js';
import { type Authenticator, authorize, createAuthenticators } from './http/security.js';
import { loadSpec, type OpenApiDocument, type SpecOperation, specOperations } from './http/spec.js';
import { ProviderRegistry } from './oidc/provider.js';
import { registerOidcProvider } from './oidc/routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

export interface AppDeps {
  sql: Sql;
  /** SHA-256 of the admin X-Auth-Token. */
  adminTokenHash: Buffer;
  bodyLimit?: number;
  /** A pino logger; none when omitted (tests). */
  logger?: FastifyBaseLogger;
  /** The parsed openapi.yaml; read from disk when omitted. */
  spec?: OpenApiDocument;
  /**
   * The public base URL (scheme, host, port) of the server: workplace `acme`'s OpenID Provider
   * has the issuer `<base>/oidc/acme`. Read when a provider is built, after listen.
   */
  issuerBase?: () => string;
  /** The workplaces' OpenID Providers; made from `issuerBase` when omitted (tests pass their own). */
  providers?: ProviderRegistry;
  /** Fastify's trustProxy: whose X-Forwarded-For names the client in the request log (TRUST_PROXY). */
  trustProxy?: TrustProxy;
}

export type TrustProxy = boolean | string[];

export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * Request validation straight from the spec's JSON Schema 2020-12, configured so that bodies are
 * validated as sent: no type coercion, no defaults injected, no unknown properties stripped.
 */
function createValidator() {
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
 * required the route's preValidation hook says so; elsewhere the operation takes none. A JSON
 * `null` sent as the body is still validated (and refused).
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

function isOAuthRoute(request: FastifyRequest): boolean {
  return request.url.startsWith('/oidc/');
}

function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply, bodyLimit: number) {
  const e: AppError = toAppError(err, bodyLimit);
  if (e.status >= 500) request.log.error({ err: e.cause ?? err, code: e.code }, e.message);
  reply.code(e.status).headers(e.headers);
  if (isOAuthRoute(request)) {
    if (e.status === 401) reply.header('www-authenticate', 'Bearer error="invalid_token"');
    return reply.type('application/json').send({
      error: e.oauthError ?? (e.status >= 500 ? 'server_error' : 'invalid_request'),
      error_description: e.message,
    });
  }
  return reply.type('application/problem+json').send({
    type: 'about:blank',
    title: STATUS_CODES[e.status] ?? 'Error',
    status: e.status,
    code: e.code,
    detail: e.message,
    instance: request.url.split('?')[0],
    request_id: request.id,
    ...(e.errors ? { errors: e.errors } : {}),
  });
}

/** The security hook of an operation: its first requirement decides (aliases share one authenticator). */
function authenticatorFor(op: SpecOperation, authenticators: Record<string, Authenticator>) {
  const first = op.security[0];
  if (!first || Object.keys(first).length === 0) return undefined;
  const scheme = Object.keys(first)[0] as string;
  const authenticate = authenticators[scheme];
  if (!authenticate) throw new Error(`No authenticator for security scheme ${scheme} of ${op.operationId}`);
  return authenticate;
}

/** The workplace an operation acts on: its `name` path parameter, if it has one. */
function workplaceOf(request: FastifyRequest): string | undefined {
  const name = (request.params as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}

type HookDone = (err?: Error) => void;

/**
 * The onRequest hook of a secured operation. Written with a callback rather than as an async
 * function so that a caller known without a database read (the admin token) costs no promise.
 */
function authenticating(authenticate: Authenticator, access: SpecOperation['access']) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookDone) => {
    let caller: Caller | Promise<Caller>;
    try {
      caller = authenticate(request);
    } catch (err) {
      return done(err as Error);
    }
    if (caller instanceof Promise) caller.then((c) => admit(request, c, access, done), done);
    else admit(request, caller, access, done);
  };
}

function admit(request: FastifyRequest, caller: Caller, access: SpecOperation['access'], done: HookDone) {
  try {
    request.caller = caller;
    if (access) authorize(caller, access, workplaceOf(request));
  } catch (err) {
    return done(err as Error);
  }
  done();
}

/** What Fastify makes of `application/json` for the bodies it serializes; bytes it sends as typed. */
const JSON_UTF8 = 'application/json; charset=utf-8';

const BODY_REQUIRED = 'is required: send a JSON object with Content-Type: application/json';

function requiringBody(request: FastifyRequest, _reply: FastifyReply, done: HookDone) {
  if (request.body !== undefined) return done();
  done(errors.validation([{ in: 'body', path: '', message: BODY_REQUIRED }]));
}

function toRouteHandler<Op extends OperationId>(handler: Handler<Op>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const input = {
      params: request.params ?? {},
      query: request.query ?? {},
      body: request.body,
      caller: request.caller,
      log: request.log,
    } as Input<Op>;
    const out = (await handler(input)) as {
      status: number;
      body?: unknown;
      headers?: Record<string, string>;
    };
    reply.code(out.status);
    if (out.headers) reply.headers(out.headers);
    if (out.body === undefined) return reply.send();
    if (out.body instanceof EncodedJson) return reply.type(JSON_UTF8).send(out.body.bytes);
    return reply.type('application/json').send(out.body);
  };
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const spec = deps.spec ?? loadSpec();
  const bodyLimit = deps.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const operations = new Map(specOperations(spec).map((op) => [op.operationId, op]));
  const statistics = new Statistics(deps.sql, (err) =>
    deps.logger?.warn({ err }, 'ANALYZE of a collection failed'),
  );
  const providers =
    deps.providers ??
    new ProviderRegistry(deps.sql, deps.issuerBase ?? (() => 'http://127.0.0.1:3000'), deps.logger);
  const handlers: Handlers = createHandlers({
    sql: deps.sql,
    statistics,
    catalog: new CatalogCache(deps.sql),
    workplaceDeleted: (name) => providers.forget(name),
  });
  const authenticators = createAuthenticators({ sql: deps.sql, adminTokenHash: deps.adminTokenHash });

  const unclassified = [...operations.values()].filter(
    (op) => op.security.some((r) => 'XAuthToken' in r) && op.access === undefined,
  );
  if (unclassified.length) {
    throw new Error(`Operations without x-access: ${unclassified.map((op) => op.operationId).join(', ')}`);
  }
  const missing = [...operations.keys()].filter((id) => !(id in handlers));
  const extra = Object.keys(handlers).filter((id) => !operations.has(id));
  if (missing.length || extra.length) {
    throw new Error(
      `Handlers do not match openapi.yaml: missing ${missing.join(', ') || '-'}; extra ${extra.join(', ') || '-'}`,
    );
  }

  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    // Only the client address in the request log depends on it: URLs come from PUBLIC_URL.
    trustProxy: deps.trustProxy ?? false,
    return503OnClosing: true,
    // One line per request (in onResponse below) instead of Fastify's two: logging is a
    // measurable share of a small request's cost (see scripts/bench).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new RequestLogger(logger, bindings, options),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    // Paths the router cannot even decode (bad percent escapes, overlong parameters) get the same
    // problem+json as every other error.
    frameworkErrors: (err, request, reply) => sendError(err, request, reply, bodyLimit),
  });

  app.decorateRequest<Caller | null>('caller', null);
  const log = deps.logger;
  if (log) {
    // Through the root logger, with the id: the line most requests write costs no child logger.
    app.addHook('onResponse', (request, reply, done) => {
      // originalUrl: the OpenID Provider's routes hand oidc-provider the path below the issuer
      // as the request's url, and keep the path as sent here.
      const url = request.originalUrl;
      const query = url.indexOf('?');
      log.info(
        {
          reqId: request.id,
          method: request.method,
          url: query < 0 ? url : url.slice(0, query),
          ip: request.ip,
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request',
      );
      done();
    });
  }
  app.setValidatorCompiler(createValidator());
  // Responses are sent exactly as the typed handlers build them; the contract test checks them against the spec.
  // As a Buffer: JSON.stringify builds a large result as a rope, which a string payload would have
  // walked twice more (its UTF-8 length for Content-Length, then encoding it onto the socket).
  app.setSerializerCompiler(() => (data) => Buffer.from(JSON.stringify(data)) as unknown as string);

  // Only JSON bodies are accepted. An empty body is allowed so that a DELETE sent with
  // "Content-Type: application/json" and nothing else (as the interface describes) works.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    jsonBodyParser(app.getDefaultJsonParser('error', 'error') as ParseJson),
  );
  // The spec declares problem+json for responses only; registering a parser that refuses it keeps
  // fastify-openapi-glue from warning about a missing one, and requests sent with it still get 415.
  app.addContentTypeParser('application/problem+json', (request, _payload, done) =>
    done(errors.unsupportedMediaType(request.headers['content-type']), undefined),
  );

  app.setErrorHandler((err, request, reply) => sendError(err, request, reply, bodyLimit));
  app.setNotFoundHandler((request, reply) =>
    sendError(
      errors.routeNotFound(request.method, request.url.split('?')[0] ?? ''),
      request,
      reply,
      bodyLimit,
    ),
  );

  await app.register(swagger, { mode: 'static', specification: { document: spec as never } });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );

  await app.register(openapiGlue, {
    specification: spec,
    operationResolver: (operationId: string) => {
      const op = operations.get(operationId) as SpecOperation;
      const authenticate = authenticatorFor(op, authenticators);
      const handler = handlers[operationId as OperationId] as Handler<OperationId>;
      const routeOptions = {
        handler: toRouteHandler(handler),
        ...(authenticate ? { onRequest: authenticating(authenticate, op.access) } : {}),
        // Fastify validates a body only when one was sent; a required one must not be skipped.
        ...(op.bodyRequired ? { preValidation: requiringBody } : {}),
      };
      // The plugin's types demand a full RouteOptions; it merges this partial one into its own.
      return routeOptions as unknown as RouteOptions;
    },
  });

  await registerOidcProvider(app, { sql: deps.sql, providers });

  return app;
}
