import type { FastifyRequest } from 'fastify';
import type { Sql } from '../db/connection/sql.js';
import {
  type Caller,
  type EndUser,
  findOidcToken,
  findScopedToken,
  touchScopedToken,
} from '../db/platform/tokens.js';
import { WORKPLACE_NAME } from '../db/platform/workplaces.js';
import { errors } from '../errors.js';
import type { AccessTokenVerifier } from '../oidc/access-tokens.js';
import { bytesEqual, generateSecret, hashSecret, secretsEqual, TOKEN_PREFIX } from '../secrets.js';
import type { Access } from './spec.js';

/**
 * Who is calling, or a thrown 401. The admin token is checked without a promise: it is the most
 * common caller, and every tick saved on it is saved on every request.
 */
export type Authenticator = (request: FastifyRequest) => Caller | Promise<Caller>;

export interface SecurityDeps {
  sql: Sql;
  /** SHA-256 of the admin token. */
  adminTokenHash: Buffer;
  /** Verifies the access tokens the workplaces' own OpenID Providers issue (the EndUserToken scheme). */
  accessTokens: AccessTokenVerifier;
}

const ADMIN: Caller = Object.freeze({ kind: 'admin' });

/** How often last_used_at of a scoped token may be written. */
export const LAST_USED_INTERVAL_SECONDS = 60;

const BEARER = /^Bearer +([\x21-\x7E]+) *$/i;

const asCaller = (user: EndUser): Caller => ({ kind: 'user', ...user });

/** The headers that may carry the workplace OIDC token: the interface's spelling, and the correct one. */
const OIDC_HEADERS = ['authorizarion', 'authorization'] as const;
const HEADER_NAMES: Record<(typeof OIDC_HEADERS)[number], string> = {
  authorizarion: 'Authorizarion',
  authorization: 'Authorization',
};

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * One authenticator per security scheme of openapi.yaml. They run in `onRequest`, before the body
 * is parsed or validated, so an unauthenticated caller learns nothing about the request's shape.
 */
export function createAuthenticators({
  sql,
  adminTokenHash,
  accessTokens,
}: SecurityDeps): Record<string, Authenticator> {
  const lastTouched = new Map<string, number>();
  /** last_used_at, written at most once a minute per token and process, never awaited by the request. */
  const noteUse = (request: FastifyRequest, tokenId: string) => {
    const now = Date.now();
    if (now - (lastTouched.get(tokenId) ?? 0) < LAST_USED_INTERVAL_SECONDS * 1000) return;
    lastTouched.set(tokenId, now);
    if (lastTouched.size > 10_000) lastTouched.clear();
    touchScopedToken(sql, tokenId, LAST_USED_INTERVAL_SECONDS).catch((err) =>
      request.log.warn({ err }, 'could not record the last use of a token'),
    );
  };

  /** A scoped token, looked up by its SHA-256: the database compares hashes, never the secret. */
  const scopedToken = async (request: FastifyRequest, token: string, hash: Buffer): Promise<Caller> => {
    const row = token.startsWith(`${TOKEN_PREFIX.scoped}_`) ? await findScopedToken(sql, hash) : undefined;
    if (!row) throw errors.unauthorized('The X-Auth-Token is not valid.');
    if (row.revoked_at) throw errors.unauthorized('The X-Auth-Token has been revoked.');
    if (row.expired) throw errors.unauthorized('The X-Auth-Token has expired.');
    noteUse(request, row.id);
    return {
      kind: 'scoped',
      tokenId: row.id,
      prefix: row.prefix,
      access: row.access,
      workplaces: new Set(row.workplaces),
    };
  };

  // The admin token as presented once its hash matched: later requests compare bytes in constant
  // time instead of hashing, which is most of what authenticating the admin costs.
  let adminToken: Buffer | undefined;

  const xAuthToken: Authenticator = (request) => {
    const token = header(request, 'x-auth-token');
    if (!token) throw errors.unauthorized('The X-Auth-Token header is missing.');
    if (adminToken && bytesEqual(Buffer.from(token, 'utf8'), adminToken)) return ADMIN;
    // One hash serves both checks: the admin token's, and the scoped token's lookup.
    const hash = hashSecret(token);
    if (!bytesEqual(hash, adminTokenHash)) return scopedToken(request, token, hash);
    adminToken = Buffer.from(token, 'utf8');
    return ADMIN;
  };

  // Compared against when the workplace is unknown, so that timing does not reveal which exist.
  const decoy = generateSecret('decoy');
  /**
   * The workplace OIDC token, in either header of OIDC_HEADERS. Each header is read on its own, as
   * the alternatives of the operations' `security` say: the request is admitted when one of them
   * holds `Bearer <the workplace's token>`, whatever the other holds. Generated clients send both
   * headers, the apiKey one often with the bare token, so preferring one header would refuse a
   * request that carries a valid credential. Every Bearer value is compared, without stopping at
   * the first match, so timing does not tell which header held the token.
   */
  const oidcToken: Authenticator = async (request) => {
    const sent = OIDC_HEADERS.flatMap((name) => {
      const value = header(request, name);
      return value === undefined ? [] : [{ name, token: BEARER.exec(value)?.[1] }];
    });
    if (sent.length === 0)
      throw errors.unauthorized(
        'The Authorizarion header is missing; send "Authorizarion: Bearer <OIDC token>".',
      );
    const tokens = sent.flatMap((s) => (s.token === undefined ? [] : [s.token]));
    if (tokens.length === 0) {
      const names = sent.map((s) => HEADER_NAMES[s.name]).join(' and the ');
      throw errors.unauthorized(`The ${names} header must be "Bearer <OIDC token>".`);
    }
    const workplace = (request.params as { name?: unknown }).name;
    const stored =
      typeof workplace === 'string' && WORKPLACE_NAME.test(workplace)
        ? await findOidcToken(sql, workplace)
        : undefined;
    let matches = false;
    for (const token of tokens) matches = secretsEqual(token, stored ?? decoy) || matches;
    if (!matches || stored === undefined || typeof workplace !== 'string') {
      throw errors.unauthorized('The bearer token is not valid for this workplace.');
    }
    return { kind: 'oidc', workplace };
  };

  /** An end user's access token, verified against the path's workplace (oidc/access-tokens.ts). */
  const endUserToken: Authenticator = (request) => {
    const value = header(request, 'authorization');
    if (value === undefined)
      throw errors.credentialsMissing('Send "Authorization: Bearer <access token>" or an X-Auth-Token.');
    const token = BEARER.exec(value)?.[1];
    if (token === undefined)
      throw errors.invalidAccessToken('The Authorization header must be "Bearer <access token>".');
    const workplace = (request.params as { name?: unknown }).name;
    if (typeof workplace !== 'string' || !WORKPLACE_NAME.test(workplace))
      throw errors.invalidAccessToken('The access token is not valid for this workplace.');
    const user = accessTokens.verify(workplace, token);
    return user instanceof Promise ? user.then(asCaller) : asCaller(user);
  };

  /**
   * The data routes' alternatives: an X-Auth-Token when one is sent (administrators and scoped
   * tokens, as before), otherwise an end user's bearer token.
   */
  const xAuthTokenOrEndUser: Authenticator = (request) =>
    header(request, 'x-auth-token') !== undefined ? xAuthToken(request) : endUserToken(request);

  // Both OIDC schemes name the same rule: either header may carry the token.
  return {
    XAuthToken: xAuthToken,
    OidcToken: oidcToken,
    OidcTokenAuthorization: oidcToken,
    EndUserToken: endUserToken,
    'XAuthToken|EndUserToken': xAuthTokenOrEndUser,
  };
}

/**
 * Whether the caller may run an operation that needs `access` on `workplace` (the path's `name`,
 * if it has one). A workplace outside a scoped token's scope is reported as not found, so that a
 * token learns nothing about other tenants; a token in scope without the access gets 403.
 */
export function authorize(caller: Caller, access: Access, workplace: string | undefined): void {
  // An end user's token was verified against the path's workplace; the rules decide the rest.
  if (caller.kind === 'user') {
    if (access === 'admin') throw errors.forbidden('This operation needs the admin token.');
    return;
  }
  if (caller.kind !== 'scoped') return;
  if (workplace !== undefined && !caller.workplaces.has(workplace)) throw errors.workplaceNotFound(workplace);
  if (access === 'admin') throw errors.forbidden('This operation needs the admin token.');
  if (access === 'write' && caller.access !== 'read_write') {
    throw errors.forbidden('This token is read-only; the operation needs a read_write token.');
  }
}
