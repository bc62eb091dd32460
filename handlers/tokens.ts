import {
  createScopedToken,
  listScopedTokens,
  revokeScopedToken,
  type ScopedTokenRow,
} from '../db/platform/tokens.js';
import { errors } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { generateSecret, hashSecret, TOKEN_PREFIX } from '../secrets.js';
import type { Handler, HandlerDeps } from './types.js';

type Token = components['schemas']['Token'];
type TokenCreate = components['schemas']['TokenCreate'];

/** Characters of a token shown to people to recognise it: `wpt_` and 8 of the 43 random ones. */
export const SHOWN_PREFIX_LENGTH = 12;

export function presentToken(row: ScopedTokenRow): Token {
  return {
    id: row.id,
    prefix: row.prefix,
    label: row.label,
    workplaces: row.workplaces,
    access: row.access,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

/**
 * Issues a scoped token: the one path for the HTTP operation and the operator CLI. Returns the
 * stored token and its secret, which exists nowhere else afterwards.
 */
export async function issueToken(deps: Pick<HandlerDeps, 'sql'>, input: TokenCreate, now = new Date()) {
  const expiresAt = input.expires_at === undefined ? null : new Date(input.expires_at);
  if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) {
    throw errors.validation([{ in: 'body', path: '/expires_at', message: 'must be in the future' }]);
  }
  const secret = generateSecret(TOKEN_PREFIX.scoped);
  const outcome = await createScopedToken(deps.sql, {
    prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
    secretHash: hashSecret(secret),
    label: input.label ?? '',
    access: input.access,
    workplaces: input.workplaces,
    expiresAt,
  });
  if ('unknownWorkplaces' in outcome) {
    throw errors.validation(
      outcome.unknownWorkplaces.map((name) => ({
        in: 'body' as const,
        path: `/workplaces/${input.workplaces.indexOf(name)}`,
        message: `names workplace '${name}', which does not exist`,
      })),
    );
  }
  return { token: presentToken(outcome.created), secret };
}

export function tokenHandlers({ sql }: HandlerDeps) {
  const createToken: Handler<'createToken'> = async ({ body }) => {
    const { token, secret } = await issueToken({ sql }, body);
    return { status: 201, body: { result: { ...token, token: secret } } };
  };

  const listTokens: Handler<'listTokens'> = async () => {
    const rows = await listScopedTokens(sql);
    return { status: 200, body: { result: rows.map(presentToken) } };
  };

  const revokeToken: Handler<'revokeToken'> = async ({ params }) => {
    if (!(await revokeScopedToken(sql, params.token_id))) throw errors.tokenNotFound(params.token_id);
    return { status: 204 };
  };

  return { createToken, listTokens, revokeToken };
}
