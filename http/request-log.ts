import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * The onResponse hook that writes the one line per request, through the root logger with the id:
 * the line most requests write costs no child logger (see request-logger.ts).
 */
export function requestLogHook(log: FastifyBaseLogger) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
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
  };
}
