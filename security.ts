import type { FastifyRequest } from 'fastify';
import type { Sql } from './db/sql.js';
import { findOidcToken } from './db/tokens.js';
import { errors } from './errors.js';
import type { Caller } from './handlers/types.js';
import { generateSecret, secretMatchesHash, secretsEqual } from './secrets.js';

export type Authenticator = (request: FastifyRequest) => Promise<Caller>;

export interface SecurityDeps {
  sql: Sql;
  /** SHA-256 of the admin token. */
  adminTokenHash: Buffer;
}

const BEARER = /^Bearer +([\x21-\x7E]+) *$/i;
const WORKPLACE_NAME = /^[A-Za-z]{1,64}$/;

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * One authenticator per security scheme of openapi.yaml. They run in `onRequest`, before the body
 * is parsed or validated, so an unauthenticated caller learns nothing about the request's shape.
 */
export function createAuthenticators({ sql, adminTokenHash }: SecurityDeps): Record<string, Authenticator> {
  const xAuthToken: Authenticator = async (request) => {
    const token = header(request, 'x-auth-token');
    if (!token) throw errors.unauthorized('The X-Auth-Token header is missing.');
    if (!secretMatchesHash(token, adminTokenHash))
      throw errors.unauthorized('The X-Auth-Token is not valid.');
    return { kind: 'admin' };
  };

  // Compared against when the workplace is unknown, so that timing does not reveal which exist.
  const decoy = generateSecret('decoy');
  const oidcToken: Authenticator = async (request) => {
    // The interface spells the header "Authorizarion"; the correct spelling is an alias.
    const raw = header(request, 'authorizarion') ?? header(request, 'authorization');
    if (!raw)
      throw errors.unauthorized(
        'The Authorizarion header is missing; send "Authorizarion: Bearer <OIDC token>".',
      );
    const match = BEARER.exec(raw);
    if (!match?.[1]) throw errors.unauthorized('The Authorizarion header must be "Bearer <OIDC token>".');
    const workplace = (request.params as { name?: unknown }).name;
    const stored =
      typeof workplace === 'string' && WORKPLACE_NAME.test(workplace)
        ? await findOidcToken(sql, workplace)
        : undefined;
    const matches = secretsEqual(match[1], stored ?? decoy);
    if (!matches || stored === undefined || typeof workplace !== 'string') {
      throw errors.unauthorized('The bearer token is not valid for this workplace.');
    }
    return { kind: 'oidc', workplace };
  };

  return { XAuthToken: xAuthToken, OidcToken: oidcToken, OidcTokenAuthorization: oidcToken };
}
