import type { FastifyReply, FastifyRequest } from 'fastify';
import { EncodedJson } from '../handlers/encoded-json.js';
import type { Handler, Input, OperationId } from '../handlers/types.js';

/** What Fastify makes of `application/json` for the bodies it serializes; bytes it sends as typed. */
const JSON_UTF8 = 'application/json; charset=utf-8';

/**
 * The Fastify route of a handler: handlers see only their validated input and return status,
 * headers and body, so that they can be written and typed against the spec alone.
 */
export function toRouteHandler<Op extends OperationId>(handler: Handler<Op>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const input = {
      params: request.params ?? {},
      query: request.query ?? {},
      body: request.body,
      verbatimBody: request.verbatimBody,
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
