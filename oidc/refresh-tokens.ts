import type { KoaContextWithOIDC } from 'oidc-provider';

/**
 * When a refresh returns a new refresh token and consumes the one presented. oidc-provider then
 * treats a consumed refresh token presented again as stolen: it refuses it and revokes the whole
 * grant (every access and refresh token of that sign-in, the newest included), which is the
 * reuse detection of RFC 9700 section 4.14.
 *
 * A public client cannot prove who presents its refresh token, so it rotates on every refresh,
 * for as long as the grant lasts (oidc-provider's default stops rotating a public client's token
 * after a year of rotations, leaving one that can be replayed until it expires).
 *
 * A confidential client authenticates each refresh, so a leaked token alone is useless and
 * rotation is not needed (RFC 9700 section 4.14.2) and would turn a retried refresh (the answer
 * lost on the way) into a revoked sign-in. As oidc-provider does by default, its token is
 * replaced only once 70% of its lifetime has passed, so that a relying party that keeps
 * refreshing is not cut off by its first token's expiry (the grant's own lifetime still is).
 */
export function rotateRefreshToken(ctx: KoaContextWithOIDC): boolean {
  const { RefreshToken: token, Client: client } = ctx.oidc.entities;
  if (client?.clientAuthMethod === 'none') return true;
  return (token?.ttlPercentagePassed() ?? 0) >= 70;
}
