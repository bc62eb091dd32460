import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Sql } from '../db/connection/sql.js';
import { findCorsOrigins } from '../db/platform/oidc-settings.js';
import { WORKPLACE_NAME } from '../db/platform/workplaces.js';

/**
 * CORS for end users (issue 45): a browser page may call a workplace's document routes with an
 * access token when its origin is one of the workplace's (the origins of its clients' redirect
 * URIs, and its OIDC settings' `allowed_origins`). Nothing else of /v1 answers CORS: the admin
 * and X-Auth-Token routes are not for browsers. The OpenID Provider's own endpoints answer CORS
 * themselves (oidc-provider).
 *
 * @fastify/cors runs in every request's onRequest hook, preflights included; a request without
 * an Origin header, or for another route, costs one test. A workplace's origins are read once
 * and kept ORIGINS_TTL_MS (a client registered meanwhile is allowed within that time; a change
 * of the settings is announced, and forgets them at once), so a preflight answers from memory.
 */

/**
 * A matcher of request URLs for the routes an end user may call (the operations whose security
 * names `EndUserToken` in openapi.yaml, so that a route added there is covered): the workplace
 * named in the URL, or undefined for any other route.
 */
export function endUserRoutes(paths: readonly string[]): (url: string) => string | undefined {
  const patterns = paths.map((path) => {
    const source = path
      .split(/(\{[a-z_]+\})/)
      .map((part) =>
        part === '{name}'
          ? '([^/?]+)'
          : part.startsWith('{')
            ? '[^/?]+'
            : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'),
      )
      .join('');
    return new RegExp(`^${source}(?:\\?|$)`);
  });
  return (url) => {
    for (const pattern of patterns) {
      const workplace = pattern.exec(url)?.[1];
      // A name as workplaces have them, or nothing to look up.
      if (workplace !== undefined) return WORKPLACE_NAME.test(workplace) ? workplace : undefined;
    }
    return undefined;
  };
}

const ORIGINS_TTL_MS = 10_000;
const MAX_WORKPLACES = 10_000;
/** How long a browser may keep a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

const REFUSED: FastifyCorsOptions = { origin: false };

export class CorsOrigins {
  readonly #kept = new Map<string, { origins: Set<string>; readAt: number }>();

  constructor(private readonly sql: Sql) {}

  forget(workplace: string): void {
    this.#kept.delete(workplace);
  }

  clear(): void {
    this.#kept.clear();
  }

  /** The workplace's origins, without a promise when they are kept. */
  of(workplace: string): Set<string> | Promise<Set<string>> {
    const kept = this.#kept.get(workplace);
    if (kept && Date.now() - kept.readAt < ORIGINS_TTL_MS) return kept.origins;
    return findCorsOrigins(this.sql, workplace).then((list) => {
      const origins = new Set(list ?? []);
      if (this.#kept.size >= MAX_WORKPLACES) this.#kept.clear();
      this.#kept.set(workplace, { origins, readAt: Date.now() });
      return origins;
    });
  }
}

function optionsFor(origin: string, origins: Set<string>): FastifyCorsOptions {
  if (!origins.has(origin)) return REFUSED;
  return {
    origin,
    methods: ['POST'],
    // Named: a browser does not let `*` cover Authorization.
    allowedHeaders: ['authorization', 'content-type'],
    exposedHeaders: ['www-authenticate'],
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  };
}

export async function registerCors(
  app: FastifyInstance,
  origins: CorsOrigins,
  workplaceOf: (url: string) => string | undefined,
): Promise<void> {
  await app.register(cors, {
    hideOptionsRoute: true,
    delegator(request: FastifyRequest, callback: (err: Error | null, options: FastifyCorsOptions) => void) {
      const origin = request.headers.origin;
      const workplace = origin === undefined ? undefined : workplaceOf(request.url);
      if (workplace === undefined || origin === undefined) return callback(null, REFUSED);
      const found = origins.of(workplace);
      if (found instanceof Promise)
        found.then(
          (set) => callback(null, optionsFor(origin, set)),
          (err: Error) => callback(err, REFUSED),
        );
      else callback(null, optionsFor(origin, found));
    },
  });
}
