import {
  createLocalJWKSet,
  decodeProtectedHeader,
  type JWTPayload,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import type { Sql } from '../db/connection/sql.js';
import { findTokenVerification, grantIsLive, type TokenVerification } from '../db/platform/oidc-provider.js';
import type { EndUser } from '../db/platform/tokens.js';
import { errors } from '../errors.js';
import { GRANT_CLAIM, isAccessTokenType } from './claims.js';
import { RETIRED_KEY_SECONDS } from './provider.js';

/** Clock skew allowed on `exp`, `nbf` and `iat` (the interface's bound). */
export const CLOCK_SKEW_SECONDS = 60;

/** How long a workplace's keys are kept before they are read again (a rotation is also announced). */
const KEYS_TTL_MS = 60_000;
/** How long a grant found live is trusted without reading it again, if no change is announced. */
const LIVE_TTL_MS = 60_000;
/** An unknown `kid` reads the keys again at most this often per workplace. */
const KEY_REFRESH_MS = 1_000;
const MAX_ENTRIES = 10_000;

interface KeyEntry {
  verification: TokenVerification;
  keySet: ReturnType<typeof createLocalJWKSet>;
  kids: Set<string>;
  readAt: number;
}

/** A token verified once: its claims, and once its grant was found live, its user and #live key. */
interface Seen {
  payload: JWTPayload;
  user?: EndUser;
  live?: string;
}

function invalid(message: string) {
  return errors.invalidAccessToken(message);
}

/**
 * Verifies access tokens locally: the signature against the workplace's published keys (RS256
 * only), `typ: at+jwt`, the issuer, the audience (the workplace's default audience, its issuer),
 * and the times with CLOCK_SKEW_SECONDS of skew. Then that the grant is still live, which is where
 * a revocation, a sign-out or a client's deletion stops a token before its `exp`.
 *
 * Neither check costs a database round trip once warm: the keys and the grants found live are
 * kept in memory. What ends a grant or changes the keys is announced to every process (migration
 * 0025, db/storage/catalog-changes.ts), which forgets the workplace's entries; an entry also ends
 * after LIVE_TTL_MS, the bound when an announcement is lost.
 */
export class AccessTokenVerifier {
  readonly #keys = new Map<string, KeyEntry>();
  /** `workplace\0grant or client` -> when it was found live. */
  readonly #live = new Map<string, number>();
  /**
   * `workplace\0token` -> its verified claims. An app sends one token for many requests; checking
   * its RS256 signature again each time was most of what an end user's read cost beyond an
   * administrator's. The times are checked on every use; the grant's liveness too (#checkLive).
   */
  readonly #verified = new Map<string, Seen>();

  constructor(
    private readonly sql: Sql,
    private readonly issuerOf: (workplace: string) => string,
  ) {}

  /** Forgets what is kept of a workplace: its keys and its live grants. */
  forget(workplace: string): void {
    this.#keys.delete(workplace);
    for (const map of [this.#live, this.#verified])
      for (const key of map.keys()) if (key.startsWith(`${workplace}\0`)) map.delete(key);
  }

  clear(): void {
    this.#keys.clear();
    this.#live.clear();
    this.#verified.clear();
  }

  /**
   * The token's end user. Answered without a promise when everything is known (a token seen
   * before, whose grant was found live within LIVE_TTL_MS): the request then pays for no tick of
   * the event loop either, as the administrator's does not.
   */
  verify(workplace: string, token: string): EndUser | Promise<EndUser> {
    const cacheKey = `${workplace}\0${token}`;
    const seen = this.#verified.get(cacheKey);
    if (!seen) return this.#verifyFirst(workplace, token, cacheKey);
    if ((seen.payload.exp as number) + CLOCK_SKEW_SECONDS <= Date.now() / 1000) {
      this.#verified.delete(cacheKey);
      throw invalid('The access token has expired.');
    }
    if (seen.user && seen.live) {
      const foundLive = this.#live.get(seen.live);
      if (foundLive !== undefined && Date.now() - foundLive < LIVE_TTL_MS) return seen.user;
    }
    return this.#endUser(workplace, seen);
  }

  async #verifyFirst(workplace: string, token: string, cacheKey: string): Promise<EndUser> {
    const payload = await this.#verifySignature(workplace, token);
    if (this.#verified.size >= MAX_ENTRIES) this.#verified.clear();
    const seen: Seen = { payload };
    this.#verified.set(cacheKey, seen);
    return this.#endUser(workplace, seen);
  }

  /** The token's claims once its signature, type, issuer, audience and times hold. */
  async #verifySignature(workplace: string, token: string): Promise<JWTPayload> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw invalid('The bearer token is not an access token of this workplace (not a signed JWT).');
    }
    if (header.alg !== 'RS256') throw invalid('The access token must be signed with RS256.');
    if (!isAccessTokenType(header.typ))
      throw invalid('The bearer token is not an access token (its typ is not at+jwt).');
    const entry = await this.#keysOf(workplace, typeof header.kid === 'string' ? header.kid : undefined);
    const issuer = this.issuerOf(workplace);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, entry.keySet, {
        algorithms: ['RS256'],
        typ: 'at+jwt',
        issuer,
        audience: issuer,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp', 'iat', 'sub', 'client_id', 'jti'],
      }));
    } catch (err) {
      throw invalid(describeJoseError(err));
    }
    return payload;
  }

  async #endUser(workplace: string, seen: Seen): Promise<EndUser> {
    const { payload } = seen;
    const entry = await this.#keysOf(workplace, undefined);
    const sub = payload.sub as string;
    const clientId = payload.client_id;
    if (typeof clientId !== 'string') throw invalid('The access token has no client_id.');
    const grantId = payload[GRANT_CLAIM];
    const isClient = sub === clientId && grantId === undefined;
    if (!isClient && typeof grantId !== 'string')
      throw invalid('The access token names no grant; ask the workplace for a new one.');
    seen.live = await this.#checkLive(
      workplace,
      entry.verification.workplaceId,
      clientId,
      isClient ? undefined : grantId,
    );
    seen.user ??= {
      workplace,
      sub,
      clientId,
      claims: payload as Record<string, unknown>,
      usersCollection: entry.verification.collection,
      isClient,
    };
    return seen.user;
  }

  async #keysOf(workplace: string, kid: string | undefined): Promise<KeyEntry> {
    const now = Date.now();
    const kept = this.#keys.get(workplace);
    const stale = !kept || now - kept.readAt > KEYS_TTL_MS;
    const unknownKid = kept && kid !== undefined && !kept.kids.has(kid) && now - kept.readAt > KEY_REFRESH_MS;
    if (kept && !stale && !unknownKid) return kept;
    const verification = await findTokenVerification(this.sql, workplace, RETIRED_KEY_SECONDS);
    if (!verification) {
      this.#keys.delete(workplace);
      throw invalid('The access token is not valid for this workplace.');
    }
    const entry: KeyEntry = {
      verification,
      keySet: createLocalJWKSet({ keys: verification.keys as never }),
      kids: new Set(verification.keys.map((k) => String(k.kid))),
      readAt: now,
    };
    if (this.#keys.size >= MAX_ENTRIES) this.#keys.clear();
    this.#keys.set(workplace, entry);
    return entry;
  }

  /** Throws unless the grant (or, for a client's own token, the client) is live; answers its #live key. */
  async #checkLive(
    workplace: string,
    workplaceId: string,
    clientId: string,
    grantId: string | undefined,
  ): Promise<string> {
    const key = `${workplace}\0${grantId ?? `client ${clientId}`}`;
    const now = Date.now();
    const seen = this.#live.get(key);
    if (seen !== undefined && now - seen < LIVE_TTL_MS) return key;
    if (!(await grantIsLive(this.sql, workplaceId, clientId, grantId))) {
      this.#live.delete(key);
      throw invalid(
        grantId === undefined
          ? 'The access token’s client is no longer registered.'
          : 'The access token’s grant has ended (revoked, signed out, or its client deleted).',
      );
    }
    if (this.#live.size >= MAX_ENTRIES) this.#live.clear();
    this.#live.set(key, now);
    return key;
  }
}

function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'The access token has expired.';
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return 'The access token is for another audience than this workplace.';
    if (err.claim === 'iss') return 'The access token was issued by another workplace or server.';
    if (err.claim === 'nbf') return 'The access token is not valid yet.';
    return `The access token's ${err.claim} claim is not valid.`;
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWSSignatureVerificationFailed)
    return 'The access token is not signed by this workplace.';
  return 'The access token is not valid.';
}
