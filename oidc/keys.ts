import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import type { Sql } from '../db/connection/sql.js';
import { addKey } from '../db/platform/oidc-provider.js';

/**
 * Generates an RS256 signing key for a workplace and stores it. With `rotate`, the keys in use are
 * retired: the new one signs from now on, the old ones stay in the JWKS for RETIRED_KEY_SECONDS
 * so that tokens they signed still verify. Every process notices the new key on its next request.
 */
export async function generateSigningKey(sql: Sql, workplaceId: string, rotate: boolean): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = randomBytes(12).toString('base64url');
  await addKey(sql, workplaceId, { kid, privateJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } }, rotate);
  return kid;
}
