import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { httpRequestDuration, httpRequests } from '../metrics.js';

/** The operation a request is counted under: a closed set, never the URL (it names workplaces). */
function operationOf(request: FastifyRequest): string {
  const config = request.routeOptions.config as { operationId?: unknown } | undefined;
  if (typeof config?.operationId === 'string') return config.operationId;
  const route = request.routeOptions.url;
  if (route === undefined) return 'none';
  // The workplaces' OpenID Providers (oidc/routes.ts), below their issuers.
  if (route.startsWith('/oidc/:name')) return 'oidc';
  return 'docs';
}

/** The onResponse hook that counts and times every request by operation and status class. */
export function requestMetricsHook(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) {
  const labels = { operation: operationOf(request), status_class: `${Math.floor(reply.statusCode / 100)}xx` };
  httpRequests.inc(labels);
  httpRequestDuration.observe(labels, reply.elapsedTime / 1000);
  done();
}
