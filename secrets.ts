import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Recognisable prefixes, so that secret scanners can find leaked tokens. */
export const TOKEN_PREFIX = { admin: 'wpa', scoped: 'wpt', oidc: 'wpo', clientSecret: 'wpcs' } as const;

/** 256 bits from the CSPRNG, URL-safe, behind a recognisable prefix. */
export function generateSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** SHA-256, one-shot: it runs on every authenticated request, and a Hash object costs more than the digest. */
export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

/**
 * Compares a presented secret with a stored hash in constant time. Hashing first makes both
 * sides the same length, so not even the length of the secret leaks.
 */
export function secretMatchesHash(presented: string, storedHash: Buffer): boolean {
  return bytesEqual(hashSecret(presented), storedHash);
}

/** Constant-time equality of two byte strings (their lengths are not secret). */
export function bytesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function secretsEqual(presented: string, stored: string): boolean {
  return secretMatchesHash(presented, hashSecret(stored));
}
