import { STATUS_CODES } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AppError, toAppError } from '../errors.js';

function isOAuthRoute(request: FastifyRequest): boolean {
  return request.url.startsWith('/oidc/');
}

/**
 * Renders anything thrown as the response: problem+json, or on the `/oidc` routes the OAuth error
 * body their clients expect. The one place error responses are written.
 */
export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply, bodyLimit: number) {
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
