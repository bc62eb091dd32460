import { STATUS_CODES } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AppError, SQLSTATE, toAppError } from '../errors.js';
import { unavailableResponses } from '../metrics.js';

function isOAuthRoute(request: FastifyRequest): boolean {
  return request.url.startsWith('/oidc/');
}

/** Why a 503 went out, for the metrics: a closed set read from what caused it. */
function unavailableCause(e: AppError): string {
  const cause = e.cause as { code?: unknown; sent?: unknown } | undefined;
  switch (cause?.code) {
    case 'DB_DEADLINE_EXCEEDED':
      return cause.sent ? 'database_unresponsive' : 'database_deadline';
    case '57014':
      return 'statement_timeout';
    case SQLSTATE.staleCatalog:
      return 'catalog_changing';
    default:
      return 'database_unavailable';
  }
}

/**
 * Renders anything thrown as the response: problem+json, or on the `/oidc` routes the OAuth error
 * body their clients expect. The one place error responses are written.
 */
export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply, bodyLimit: number) {
  const e: AppError = toAppError(err, bodyLimit);
  if (e.status >= 500) request.log.error({ err: e.cause ?? err, code: e.code }, e.message);
  if (e.status === 503) unavailableResponses.inc({ cause: unavailableCause(e) });
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
