import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Caller } from '../db/platform/tokens.js';
import { type Authenticator, authorize } from './security.js';
import type { SpecOperation } from './spec.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

/**
 * The security hook of an operation. The two OIDC schemes share one authenticator, which reads
 * both headers, so the alternatives hold whichever comes first; the data routes' alternatives
 * (an X-Auth-Token, or an end user's access token) have one authenticator that takes either.
 */
export function authenticatorFor(op: SpecOperation, authenticators: Record<string, Authenticator>) {
  const first = op.security[0];
  if (!first || Object.keys(first).length === 0) return undefined;
  const schemes = op.security.map((s) => Object.keys(s)[0]);
  const scheme = schemes.includes('EndUserToken') ? schemes.join('|') : (Object.keys(first)[0] as string);
  const authenticate = authenticators[scheme];
  if (!authenticate) throw new Error(`No authenticator for security scheme ${scheme} of ${op.operationId}`);
  return authenticate;
}

/** The workplace an operation acts on: its `name` path parameter, if it has one. */
function workplaceOf(request: FastifyRequest): string | undefined {
  const name = (request.params as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}

/**
 * The onRequest hook of a secured operation. Written with a callback rather than as an async
 * function so that a caller known without a database read (the admin token) costs no promise.
 */
export function authenticating(authenticate: Authenticator, access: SpecOperation['access']) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
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

function admit(
  request: FastifyRequest,
  caller: Caller,
  access: SpecOperation['access'],
  done: HookHandlerDoneFunction,
) {
  try {
    request.caller = caller;
    if (access) authorize(caller, access, workplaceOf(request));
  } catch (err) {
    return done(err as Error);
  }
  done();
}
