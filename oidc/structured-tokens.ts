import { createLocalJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type { Sql } from '../db/connection/sql.js';
import { grantIsLive, publicJwk } from '../db/platform/oidc-provider.js';
import { revokeGrantWithTokens } from '../db/platform/oidc-sessions.js';
import { GRANT_CLAIM, isAccessTokenType } from './claims.js';

/**
 * Introspection (RFC 7662) and revocation (RFC 7009) of the provider's own JWT access tokens
 * (RFC 9068), which oidc-provider refuses (`400 unsupported_token_type`: it does not store them).
 * Keycloak and Hydra answer both; so does this, after the provider authenticated the client:
 *
 * - introspection answers `active: true` with the token's claims while its signature holds, it has
 *   not expired, and its grant (or, for a client's own token, its client) is live; otherwise
 *   `active: false`. Only a confidential client may introspect, as for opaque tokens.
 * - revocation of a user's token by the client it was issued to ends its grant, with every token
 *   and code issued under it (RFC 7009 section 2.1 allows revoking the refresh token with the
 *   access token); the data routes refuse them from the next request (oidc/access-tokens.ts). A
 *   token of another client, or not valid, is answered 200 and changes nothing (section 2.2). A
 *   client's own `client_credentials` token has no grant to end: it stays `unsupported_token_type`.
 */

/** What the outer middleware of a provider sees after a route ran (a Koa context). */
interface RouteContext {
  status: number;
  body: unknown;
  oidc?: {
    route?: string;
    params?: Record<string, unknown>;
    client?: { clientId: string; clientAuthMethod?: string };
  };
}

export interface StructuredTokenContext {
  sql: Sql;
  workplaceId: string;
  issuer: string;
  /** The workplace's published keys (private JWKs: their public parts verify). */
  keys: Record<string, unknown>[];
  /** Told when a revocation ended a grant (the data routes forget what they kept of it). */
  grantEnded: () => void;
}

function isStructuredTokenRefusal(ctx: RouteContext): boolean {
  const body = ctx.body as { error?: unknown } | undefined;
  return ctx.status === 400 && body?.error === 'unsupported_token_type' && ctx.oidc?.client !== undefined;
}

async function verified(token: string, c: StructuredTokenContext): Promise<JWTPayload | undefined> {
  try {
    if (!isAccessTokenType(decodeProtectedHeader(token).typ)) return undefined;
    const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: c.keys.map(publicJwk) as never }), {
      algorithms: ['RS256'],
      issuer: c.issuer,
      requiredClaims: ['exp', 'client_id'],
    });
    return payload;
  } catch {
    return undefined;
  }
}

async function isLive(payload: JWTPayload, c: StructuredTokenContext): Promise<boolean> {
  const grantId = payload[GRANT_CLAIM];
  return grantIsLive(
    c.sql,
    c.workplaceId,
    String(payload.client_id),
    typeof grantId === 'string' ? grantId : undefined,
  );
}

/** Rewrites the provider's refusal of a JWT access token into the answer RFC 7662 or 7009 wants. */
export async function answerStructuredTokens(ctx: RouteContext, c: StructuredTokenContext): Promise<void> {
  const route = ctx.oidc?.route;
  if ((route !== 'introspection' && route !== 'revocation') || !isStructuredTokenRefusal(ctx)) return;
  const token = ctx.oidc?.params?.token;
  const client = ctx.oidc?.client as { clientId: string; clientAuthMethod?: string };
  if (typeof token !== 'string') return;
  const payload = await verified(token, c);
  if (route === 'introspection') {
    ctx.status = 200;
    if (!payload || client.clientAuthMethod === 'none' || !(await isLive(payload, c))) {
      ctx.body = { active: false };
      return;
    }
    const { iss, sub, aud, iat, exp, jti, scope, client_id } = payload;
    ctx.body = {
      active: true,
      token_type: 'Bearer',
      ...{ iss, sub, aud, iat, exp, jti, client_id },
      ...(scope !== undefined ? { scope } : {}),
    };
    return;
  }
  const grantId = payload?.[GRANT_CLAIM];
  if (payload && typeof grantId !== 'string') return; // a client's own token: still unsupported
  ctx.status = 200;
  ctx.body = '';
  if (!payload || payload.client_id !== client.clientId || typeof grantId !== 'string') return;
  await revokeGrantWithTokens(c.sql, c.workplaceId, grantId);
  c.grantEnded();
}
