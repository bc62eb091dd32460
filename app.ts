import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  LogController,
  type RouteOptions,
} from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import type { Sql } from './db/connection/sql.js';
import type { Caller } from './db/platform/tokens.js';
import { CatalogCache } from './db/storage/catalog-cache.js';
import { listenForCatalogChanges } from './db/storage/catalog-changes.js';
import { Statistics } from './db/storage/statistics.js';
import { errors, MAX_PATH_PARAMETER_LENGTH } from './errors.js';
import { createHandlers } from './handlers/index.js';
import type { Handler, Handlers, OperationId } from './handlers/types.js';
import { authenticating, authenticatorFor } from './http/authentication-hook.js';
import { CorsOrigins, endUserRoutes, registerCors } from './http/cors.js';
import { sendError } from './http/error-response.js';
import { DEFAULT_BODY_LIMIT, jsonBodyParser, type ParseJson } from './http/json-body.js';
import { requestLogHook } from './http/request-log.js';
import { RequestLogger } from './http/request-logger.js';
import { requestMetricsHook } from './http/request-metrics.js';
import { toRouteHandler } from './http/route-handler.js';
import { createAuthenticators } from './http/security.js';
import {
  loadSpec,
  OPENAPI_30_PATH,
  type OpenApiDocument,
  type SpecOperation,
  specOperations,
} from './http/spec.js';
import { createValidatorCompiler, requiringBody } from './http/validation.js';
import { AccessTokenVerifier } from './oidc/access-tokens.js';
import { ProviderRegistry } from './oidc/provider.js';
import { registerOidcProvider } from './oidc/routes.js';

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
  /** The collections' catalog entries; made when omitted (tests pass their own). */
  catalog?: CatalogCache;
  /**
   * false: deaf to catalog changes made elsewhere, as a process whose notifications are lost (the
   * tests of what keeps it right then: the catalog guard, the TTL).
   */
  catalogChanges?: boolean;
  /** Fastify's trustProxy: whose X-Forwarded-For names the client in the request log (TRUST_PROXY). */
  trustProxy?: TrustProxy;
}

export type TrustProxy = boolean | string[];

/**
 * Refuses to start when the spec and the handlers disagree, or when an operation that takes the
 * X-Auth-Token does not say what access it needs: without x-access every scoped token could call it.
 */
function checkSpecMatchesHandlers(operations: Map<string, SpecOperation>, handlers: Handlers): void {
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
  const catalog = deps.catalog ?? new CatalogCache(deps.sql);
  const accessTokens = new AccessTokenVerifier(deps.sql, (name) => providers.issuerOf(name));
  const corsOrigins = new CorsOrigins(deps.sql);
  providers.grantEnded = (name) => accessTokens.forget(name);
  const handlers: Handlers = createHandlers({
    sql: deps.sql,
    statistics,
    catalog,
    workplaceDeleted: (name) => {
      providers.forget(name);
      accessTokens.forget(name);
    },
    grantsEnded: (name) => accessTokens.forget(name),
    originsChanged: (name) => corsOrigins.forget(name),
  });
  const authenticators = createAuthenticators({
    sql: deps.sql,
    adminTokenHash: deps.adminTokenHash,
    accessTokens,
  });

  checkSpecMatchesHandlers(operations, handlers);

  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    // Only the client address in the request log depends on it: URLs come from PUBLIC_URL.
    trustProxy: deps.trustProxy ?? false,
    return503OnClosing: true,
    // One line per request (http/request-log.ts) instead of Fastify's two: logging is a
    // measurable share of a small request's cost (see scripts/bench).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new RequestLogger(logger, bindings, options),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    // Paths the router cannot even decode (bad percent escapes, overlong parameters) get the same
    // problem+json as every other error.
    frameworkErrors: (err, request, reply) => sendError(err, request, reply, bodyLimit),
  });

  app.decorateRequest<Caller | null>('caller', null);
  app.decorateRequest<string | undefined>('verbatimBody', undefined);
  const log = deps.logger;
  if (log) app.addHook('onResponse', requestLogHook(log));
  app.addHook('onResponse', requestMetricsHook);
  app.setValidatorCompiler(createValidatorCompiler());
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

  // Before the routes, so that its onRequest hook answers preflights ahead of authentication.
  const endUserPaths = [...operations.values()]
    .filter((op) => op.security.some((requirement) => 'EndUserToken' in requirement))
    .map((op) => op.path);
  await registerCors(app, corsOrigins, endUserRoutes(endUserPaths));
  await app.register(swagger, { mode: 'static', specification: { document: spec as never } });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );
  // For the generators that cannot read 3.1: the file as generated, byte for byte.
  const openapi30 = readFileSync(OPENAPI_30_PATH);
  app.get('/openapi-3.0.json', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(openapi30),
  );

  await app.register(openapiGlue, {
    specification: spec,
    operationResolver: (operationId: string) => {
      const op = operations.get(operationId) as SpecOperation;
      const authenticate = authenticatorFor(op, authenticators);
      const handler = handlers[operationId as OperationId] as Handler<OperationId>;
      const routeOptions = {
        handler: toRouteHandler(handler),
        // What the request metrics count it under (http/request-metrics.ts).
        config: { operationId },
        ...(authenticate ? { onRequest: authenticating(authenticate, op.access) } : {}),
        // Fastify validates a body only when one was sent; a required one must not be skipped.
        ...(op.bodyRequired ? { preValidation: requiringBody } : {}),
      };
      // The plugin's types demand a full RouteOptions; it merges this partial one into its own.
      return routeOptions as unknown as RouteOptions;
    },
  });

  await registerOidcProvider(app, { sql: deps.sql, providers });

  // What other processes change in the catalog reaches this one's caches at once.
  if (deps.catalogChanges !== false) {
    const changes = await listenForCatalogChanges(
      deps.sql,
      {
        catalog,
        workplaceChanged: (name) => {
          providers.forget(name);
          accessTokens.forget(name);
          corsOrigins.forget(name);
        },
        grantsEnded: (name) => accessTokens.forget(name),
        missed: () => {
          accessTokens.clear();
          corsOrigins.clear();
        },
      },
      (err) => deps.logger?.warn({ err }, 'listening for catalog changes failed'),
    );
    app.addHook('onClose', () => changes.close());
  }

  return app;
}
