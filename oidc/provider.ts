import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import Provider, {
  type Account,
  type Adapter,
  type AdapterPayload,
  type KoaContextWithOIDC,
  errors as providerErrors,
} from 'oidc-provider';
import { findClientForProvider } from '../db/oidc-clients.js';
import {
  consumePayload,
  destroyPayload,
  ensureCookieSecret,
  findPayload,
  findProviderState,
  type ProviderState,
  publishedKeys,
  purgeExpiredPayloads,
  revokeGrant,
  upsertPayload,
} from '../db/oidc-provider.js';
import type { JsonObject } from '../db/query/errors.js';
import type { Sql } from '../db/sql.js';
import { RETRY_AFTER_SECONDS, toAppError } from '../errors.js';
import { generateSigningKey } from './keys.js';
import { logoutPage, messagePage } from './pages.js';
import { findUserBySubject, subjectOf } from './users.js';

/** Scopes the provider knows, and the claims each releases from the user document. */
export const SCOPE_CLAIMS: Record<string, string[]> = {
  openid: ['sub'],
  profile: [
    'name',
    'given_name',
    'family_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
  ],
  email: ['email', 'email_verified'],
  phone: ['phone_number', 'phone_number_verified'],
  address: ['address'],
};
const SCOPES = [...Object.keys(SCOPE_CLAIMS), 'offline_access'];

/** ID tokens live at most a day, so a retired key is published for a day after its retirement. */
export const RETIRED_KEY_SECONDS = 86_400;

/** The request's workplace state, attached to the raw request before the provider sees it. */
interface ProviderRequest extends IncomingMessage {
  originalUrl?: string;
  oidcState?: ProviderState & { workplace: string };
}

type WorkplaceState = ProviderState & { workplace: string };

/**
 * The settings a provider works with: those read for the request at hand, or (for calls outside a
 * request, such as saving a grant from the consent page) the latest read for its workplace.
 */
function stateOf(ctx: KoaContextWithOIDC | undefined, latest: { state: WorkplaceState }): WorkplaceState {
  return (ctx?.req as ProviderRequest | undefined)?.oidcState ?? latest.state;
}

function sha256hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** The user's claims: only members that are present, of the types OpenID Connect gives them. */
function claimsOf(user: JsonObject, sub: string): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub };
  for (const names of Object.values(SCOPE_CLAIMS)) {
    for (const name of names) {
      if (name !== 'sub' && user[name] !== undefined && user[name] !== null) claims[name] = user[name];
    }
  }
  return claims;
}

/**
 * Runs database work for the provider. The provider answers any error it did not create with
 * `500 server_error`; a database that is unavailable (the same failures errors.ts answers with 503
 * everywhere else) becomes its own exposed error instead: `503 temporarily_unavailable`, which
 * the provider renders in its format (JSON, the sign-in error page, or the redirect of the
 * authorization endpoint) and the middleware in build() gives Retry-After.
 */
async function fromDatabase<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const e = toAppError(err, 0);
    if (e.status !== 503) throw err;
    const unavailable = new providerErrors.OIDCProviderError(503, 'temporarily_unavailable', { cause: err });
    unavailable.expose = true;
    unavailable.error_description = e.message;
    throw unavailable;
  }
}

function adapterFor(sql: Sql, workplaceId: string) {
  return class PostgresAdapter implements Adapter {
    constructor(readonly model: string) {}

    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      return fromDatabase(async () => {
        await upsertPayload(sql, workplaceId, this.model, id, payload as Record<string, unknown>, expiresIn);
        // Now and then, drop what has expired everywhere.
        if (Math.random() < 0.01) await purgeExpiredPayloads(sql);
      });
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') return fromDatabase(() => clientPayload(sql, workplaceId, id));
      return this.#findBy('id', id);
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.#findBy('uid', uid);
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return this.#findBy('user_code', userCode);
    }

    #findBy(column: 'id' | 'uid' | 'user_code', value: string): Promise<AdapterPayload | undefined> {
      return fromDatabase(
        async () =>
          (await findPayload(sql, workplaceId, this.model, { column, value })) as AdapterPayload | undefined,
      );
    }

    consume(id: string): Promise<void> {
      return fromDatabase(() => consumePayload(sql, workplaceId, this.model, id));
    }

    destroy(id: string): Promise<void> {
      return fromDatabase(() => destroyPayload(sql, workplaceId, this.model, id));
    }

    revokeByGrantId(grantId: string): Promise<void> {
      return fromDatabase(() => revokeGrant(sql, workplaceId, grantId));
    }
  };
}

/**
 * A registered client as oidc-provider metadata, read on every use so that a change or a deletion
 * takes effect at once. `client_secret` carries the SHA-256 (hex) of the secret: the provider's
 * comparison is replaced to hash the presented secret first (see build()).
 */
async function clientPayload(
  sql: Sql,
  workplaceId: string,
  clientId: string,
): Promise<AdapterPayload | undefined> {
  const c = await findClientForProvider(sql, workplaceId, clientId);
  if (!c) return undefined;
  const m = c.metadata;
  return {
    client_id: c.client_id,
    client_secret: c.secretHash.toString('hex'),
    client_secret_expires_at: m.client_secret_expires_at,
    client_id_issued_at: c.issued_at,
    redirect_uris: m.redirect_uris,
    post_logout_redirect_uris: m.post_logout_redirect_uris,
    response_types: m.response_types,
    grant_types: ['authorization_code', 'refresh_token'],
    application_type: m.application_type,
    token_endpoint_auth_method: 'client_secret_basic',
    scope: [...new Set([...SCOPES, ...m.scope])].join(' '),
    ...(m.client_name !== undefined ? { client_name: m.client_name } : {}),
    ...(m.logo_uri !== undefined ? { logo_uri: m.logo_uri } : {}),
    ...(m.client_uri !== undefined ? { client_uri: m.client_uri } : {}),
    ...(m.tos_uri !== undefined ? { tos_uri: m.tos_uri } : {}),
    ...(m.policy_uri !== undefined ? { policy_uri: m.policy_uri } : {}),
    ...(m.contacts !== undefined ? { contacts: [m.contacts] } : {}),
  } as AdapterPayload;
}

export interface ProviderEntry {
  provider: Provider;
  state: ProviderState & { workplace: string };
  /** Serves a request whose URL is below the issuer path. */
  serve(req: IncomingMessage, res: ServerResponse, pathBelowIssuer: string): void;
}

interface Cached {
  provider: Provider;
  latest: { state: WorkplaceState };
  callback: (req: IncomingMessage, res: ServerResponse) => void;
  key: string;
}

/**
 * One oidc-provider instance per workplace, built on first use and rebuilt when what it is built
 * from changes (its signing keys, its issuer, or the workplace itself). Settings that vary per
 * request (lifetimes, the users collection) are read on every request, so a change applies to
 * tokens issued after it without a rebuild; clients are read through the adapter on every use.
 */
export class ProviderRegistry {
  readonly #cache = new Map<string, Cached>();

  constructor(
    private readonly sql: Sql,
    private readonly issuerBase: () => string,
    private readonly log: FastifyBaseLogger | undefined,
  ) {}

  issuerOf(workplace: string): string {
    return `${this.issuerBase().replace(/\/$/, '')}/oidc/${workplace}`;
  }

  async get(workplace: string): Promise<ProviderEntry | undefined> {
    let state = await findProviderState(this.sql, workplace);
    if (!state) return undefined;
    if (state.keysVersion === null || state.cookieSecret === null) {
      if (state.keysVersion === null) await generateSigningKey(this.sql, state.workplaceId, false);
      if (state.cookieSecret === null)
        await ensureCookieSecret(this.sql, state.workplaceId, randomBytes(32).toString('base64url'));
      state = (await findProviderState(this.sql, workplace)) as ProviderState;
    }
    const full = { ...state, workplace };
    const issuer = this.issuerOf(workplace);
    const key = `${state.workplaceId}|${state.keysVersion}|${issuer}|${state.cookieSecret}`;
    let cached = this.#cache.get(workplace);
    if (!cached || cached.key !== key) {
      const latest = { state: full };
      const provider = await this.build(full, issuer, latest);
      cached = { provider, callback: provider.callback(), key, latest };
      this.#cache.set(workplace, cached);
    }
    cached.latest.state = full;
    const { callback, provider } = cached;
    return {
      provider,
      state: full,
      serve(req, res, pathBelowIssuer) {
        const r = req as ProviderRequest;
        r.originalUrl = r.url;
        r.url = pathBelowIssuer;
        r.oidcState = full;
        callback(r, res);
      },
    };
  }

  /** Attaches the workplace state to a raw request, for interaction routes that call the provider directly. */
  static attach(req: IncomingMessage, entry: ProviderEntry): void {
    (req as ProviderRequest).oidcState = entry.state;
  }

  private async build(
    state: WorkplaceState,
    issuer: string,
    latest: { state: WorkplaceState },
  ): Promise<Provider> {
    const { workplace } = state;
    const keys = await publishedKeys(this.sql, state.workplaceId, RETIRED_KEY_SECONDS);
    const sql = this.sql;
    const provider = new Provider(issuer, {
      adapter: adapterFor(sql, state.workplaceId),
      clients: [],
      jwks: { keys: keys.map((k) => k.private_jwk) as never },
      async findAccount(ctx, sub): Promise<Account | undefined> {
        const s = stateOf(ctx, latest);
        const user = await fromDatabase(() => findUserBySubject(sql, s.workplace, s.collection, sub));
        if (!user || subjectOf(user) !== sub) return undefined;
        return { accountId: sub, claims: async () => claimsOf(user, sub) as never };
      },
      claims: SCOPE_CLAIMS,
      scopes: SCOPES,
      responseTypes: ['code'],
      pkce: { required: () => true },
      cookies: {
        keys: [state.cookieSecret as string],
        // Names and paths of their own, so that two workplaces on one host never share a session.
        names: {
          session: `_session_${workplace}`,
          interaction: `_interaction_${workplace}`,
          resume: `_interaction_resume_${workplace}`,
        },
        long: { httpOnly: true, sameSite: 'lax', path: `/oidc/${workplace}` },
        short: { httpOnly: true, sameSite: 'lax', path: `/oidc/${workplace}` },
      },
      interactions: { url: (_ctx, interaction) => `/oidc/${workplace}/interaction/${interaction.uid}` },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: false },
        revocation: { enabled: true },
        userinfo: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          async logoutSource(ctx, form) {
            ctx.type = 'html';
            ctx.body = logoutPage(form, ctx.host);
          },
          async postLogoutSuccessSource(ctx) {
            ctx.type = 'html';
            ctx.body = messagePage('Signed out', 'You have been signed out.');
          },
        },
      },
      ttl: {
        AccessToken: (ctx) => stateOf(ctx, latest).tokenTimeout,
        IdToken: (ctx) => stateOf(ctx, latest).idTokenTimeout,
        RefreshToken: (ctx) => stateOf(ctx, latest).refreshTimeout,
        Session: (ctx) => stateOf(ctx, latest).sessionTimeout,
        Grant: (ctx) => Math.max(stateOf(ctx, latest).refreshTimeout, stateOf(ctx, latest).sessionTimeout),
        Interaction: 3600,
        AuthorizationCode: 60,
      },
      async renderError(ctx, out) {
        ctx.type = 'html';
        ctx.body = messagePage('Sign-in failed', `${out.error}: ${out.error_description ?? ''}`);
      },
    });
    // Secrets are stored as SHA-256 hashes: hash what the client presents, then compare.
    provider.Client.prototype.compareClientSecret = function compareClientSecret(
      this: { clientSecret?: string },
      actual: string,
    ) {
      const expected = Buffer.from(this.clientSecret ?? '', 'hex');
      const presented = Buffer.from(sha256hex(actual), 'hex');
      return Promise.resolve(expected.length === presented.length && timingSafeEqual(expected, presented));
    };
    provider.on('server_error', (_ctx, err) => this.log?.error({ err, workplace }, 'OpenID Provider error'));
    // Outermost (provider.use runs around every route): the answer to an unavailable database.
    provider.use(async (ctx, next) => {
      await next();
      if (ctx.status === 503) ctx.set('retry-after', String(RETRY_AFTER_SECONDS));
    });
    return provider;
  }
}
