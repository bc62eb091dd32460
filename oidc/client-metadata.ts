import type { ClientMetadata } from '../db/platform/oidc-clients.js';
import { AppError } from '../errors.js';
import type { components } from '../generated/openapi.js';

/**
 * Client metadata rules of RFC 7591, OpenID Connect Dynamic Client Registration and RFC 8252
 * (native apps) that JSON Schema cannot say: defaults, merging an update into the stored client,
 * and what a redirect URI may be for each application type. Pure: no I/O.
 */

export type ClientMetadataInput = components['schemas']['ClientMetadataInput'];

type GrantType = ClientMetadata['grant_types'][number];

/** RFC 7591's grants, less client_credentials: a client acts as itself only if it registers it. */
const DEFAULT_GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token'];

/** The client's grants; a client stored before they were registered has the default two. */
export function grantTypesOf(m: Pick<ClientMetadata, 'grant_types'>): GrantType[] {
  return [...(m.grant_types ?? DEFAULT_GRANT_TYPES)];
}

const DEFAULTS: ClientMetadata = {
  scope: [],
  redirect_uris: [],
  post_logout_redirect_uris: [],
  client_secret_expires_at: 0,
  response_types: ['code'],
  grant_types: [...DEFAULT_GRANT_TYPES],
  application_type: 'web',
  token_endpoint_auth_method: 'client_secret_basic',
};

const OPTIONAL_STRINGS = ['client_name', 'logo_uri', 'client_uri', 'tos_uri', 'policy_uri'] as const;
const PAGE_URIS = ['logo_uri', 'client_uri', 'tos_uri', 'policy_uri'] as const;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;
const MAX_SCOPES = 100;
/**
 * Characters of all scopes joined with spaces, as the string form allows. A relying party asks for
 * its scopes in the authorization URL, where each may take three times its length percent-encoded,
 * and the server reads at most 16 KiB of request line and headers: 4096 leaves room for the rest.
 */
const MAX_SCOPE_CHARACTERS = 4096;

function invalid(field: string, message: string): AppError {
  const redirect = field === 'redirect_uris' || field.startsWith('redirect_uris/');
  return new AppError(400, 'VALIDATION_FAILED', `${field}: ${message}`, {
    errors: [{ in: 'body', path: `/${field}`, message }],
    oauthError: redirect ? 'invalid_redirect_uri' : 'invalid_client_metadata',
  });
}

/** The metadata of a new client: defaults, then the input. */
export function metadataForCreate(input: ClientMetadataInput): ClientMetadata {
  if (input.generate_token !== undefined) {
    throw invalid('generate_token', 'is only for updates; a new confidential client always gets a secret');
  }
  if (input.redirect_uris === undefined) throw invalid('redirect_uris', 'is required');
  return checkedExpiry(input, checked(withSecretFields(input, merge(DEFAULTS, input))));
}

/** The metadata after an update: the stored client, then the fields the input names. */
export function metadataForUpdate(stored: ClientMetadata, input: ClientMetadataInput): ClientMetadata {
  const m = withSecretFields(input, merge(stored, input));
  if (input.generate_token === true && isPublic(m)) {
    throw invalid(
      'generate_token',
      'a public client (token_endpoint_auth_method none) has no secret to replace',
    );
  }
  return checkedExpiry(input, checked(m));
}

/** A public client authenticates with its client_id alone (RFC 7591 section 2: method `none`). */
export function isPublic(m: Pick<ClientMetadata, 'token_endpoint_auth_method'>): boolean {
  return m.token_endpoint_auth_method === 'none';
}

/**
 * What an update does to the stored secret: a client that becomes public loses it, one that
 * stops being public needs one to authenticate at all, and `generate_token` replaces it.
 */
export function secretChange(
  stored: ClientMetadata,
  next: ClientMetadata,
  input: ClientMetadataInput,
): 'keep' | 'issue' | 'drop' {
  if (isPublic(next)) return isPublic(stored) ? 'keep' : 'drop';
  return isPublic(stored) || input.generate_token === true ? 'issue' : 'keep';
}

/**
 * A public client has no secret, so no secret expiry either (RFC 7591 section 3.2.1 requires it
 * only with a secret); a confidential client always has one, `0` (never) unless set.
 */
function withSecretFields(input: ClientMetadataInput, m: ClientMetadata): ClientMetadata {
  if (!isPublic(m)) {
    m.client_secret_expires_at ??= DEFAULTS.client_secret_expires_at;
    return m;
  }
  if (input.client_secret_expires_at != null) {
    throw invalid(
      'client_secret_expires_at',
      'a public client (token_endpoint_auth_method none) has no secret to expire',
    );
  }
  delete m.client_secret_expires_at;
  return m;
}

/**
 * The token endpoint refuses a client whose secret has expired, so an expiry already past would
 * let no sign-in finish. Checked only when the request sets the expiry or asks for a new secret:
 * a stored expiry passing later is the expiry doing its job, and does not block other changes.
 */
function checkedExpiry(input: ClientMetadataInput, m: ClientMetadata): ClientMetadata {
  const expires = m.client_secret_expires_at;
  if (expires === undefined || expires === 0 || expires > Math.floor(Date.now() / 1000)) return m;
  if (input.client_secret_expires_at != null) {
    throw invalid('client_secret_expires_at', `${expires} has passed; give a later time, or 0 for never`);
  }
  if (input.generate_token === true) {
    throw invalid(
      'client_secret_expires_at',
      `has passed (${expires}), so a new secret would be expired at once; give a later time, or 0 for never`,
    );
  }
  return m;
}

function merge(base: ClientMetadata, input: ClientMetadataInput): ClientMetadata {
  const out: ClientMetadata = structuredClone(base);
  if (input.redirect_uris === null) throw invalid('redirect_uris', 'cannot be removed');
  if (input.redirect_uris !== undefined) out.redirect_uris = [...input.redirect_uris];
  if (input.scope !== undefined) out.scope = input.scope === null ? [] : normaliseScope(input.scope);
  if (input.post_logout_redirect_uris !== undefined)
    out.post_logout_redirect_uris = input.post_logout_redirect_uris ?? [];
  if (input.client_secret_expires_at !== undefined)
    out.client_secret_expires_at = input.client_secret_expires_at ?? DEFAULTS.client_secret_expires_at;
  if (input.response_types !== undefined)
    out.response_types = input.response_types ?? [...DEFAULTS.response_types];
  out.grant_types =
    input.grant_types === undefined ? grantTypesOf(out) : (input.grant_types ?? [...DEFAULT_GRANT_TYPES]);
  if (input.application_type !== undefined)
    out.application_type = input.application_type ?? DEFAULTS.application_type;
  if (input.token_endpoint_auth_method !== undefined)
    out.token_endpoint_auth_method = input.token_endpoint_auth_method ?? DEFAULTS.token_endpoint_auth_method;
  if (input.contacts !== undefined) {
    if (input.contacts === null) delete out.contacts;
    else out.contacts = Array.isArray(input.contacts) ? [...input.contacts] : input.contacts;
  }
  for (const field of OPTIONAL_STRINGS) {
    const value = input[field];
    if (value === null) delete out[field];
    else if (value !== undefined) out[field] = value;
  }
  return out;
}

function normaliseScope(scope: string | string[]): string[] {
  const tokens = typeof scope === 'string' ? scope.split(' ').filter((s) => s !== '') : scope;
  tokens.forEach((t, i) => {
    if (!SCOPE_TOKEN.test(t)) {
      throw invalid(
        typeof scope === 'string' ? 'scope' : `scope/${i}`,
        `'${t.slice(0, 64)}' is not a scope token (1-128 printable ASCII characters without space, '"' or '\\')`,
      );
    }
  });
  const unique = [...new Set(tokens)];
  if (unique.length > MAX_SCOPES) throw invalid('scope', `has more than ${MAX_SCOPES} scopes`);
  if (unique.join(' ').length > MAX_SCOPE_CHARACTERS) {
    throw invalid(
      'scope',
      `has more than ${MAX_SCOPE_CHARACTERS} characters in all (joined with spaces), more than an authorization request can carry`,
    );
  }
  return unique;
}

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** U+0000 and unpaired surrogates: JSON carries them, PostgreSQL's jsonb refuses them. */
function checkStorable(field: string, value: string) {
  if (value.includes('\u0000') || UNPAIRED_SURROGATE.test(value)) {
    throw invalid(field, 'holds a character that cannot be stored (U+0000 or an unpaired surrogate)');
  }
}

/** Validates the merged client as a whole, so an update cannot leave a rule broken. */
function checked(m: ClientMetadata): ClientMetadata {
  if (m.client_name !== undefined) checkStorable('client_name', m.client_name);
  if (typeof m.contacts === 'string') checkStorable('contacts', m.contacts);
  else
    m.contacts?.forEach((c, i) => {
      checkStorable(`contacts/${i}`, c);
    });
  if (m.redirect_uris.length === 0) throw invalid('redirect_uris', 'must hold at least one URI');
  // RFC 7591 section 2.1: the response type code goes with the grant that redeems it.
  if (!m.grant_types.includes('authorization_code'))
    throw invalid('grant_types', "must include authorization_code, which the response type 'code' needs");
  if (isPublic(m) && m.grant_types.includes('client_credentials'))
    throw invalid(
      'grant_types',
      'client_credentials needs a client secret: a public client (token_endpoint_auth_method none) cannot act as itself',
    );
  m.redirect_uris.forEach((uri, i) => {
    checkRedirectUri(`redirect_uris/${i}`, uri, m.application_type);
  });
  m.post_logout_redirect_uris.forEach((uri, i) => {
    checkRedirectUri(`post_logout_redirect_uris/${i}`, uri, m.application_type);
  });
  for (const field of PAGE_URIS) {
    const uri = m[field];
    if (uri === undefined) continue;
    const url = parseAbsolute(field, uri);
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw invalid(field, `must be an http or https URL, not ${url.protocol}`);
  }
  return m;
}

function parseAbsolute(field: string, uri: string): URL {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalid(field, `'${uri.slice(0, 200)}' is not an absolute URI`);
  }
  if (uri.includes('#')) throw invalid(field, 'must not contain a fragment (#)');
  if (url.username !== '' || url.password !== '')
    throw invalid(field, 'must not contain user information (user@host)');
  return url;
}

/** localhost, 127.0.0.0/8 and [::1]: the hosts that never leave the user's machine. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * The loopback hosts of a native client: oidc-provider accepts no other for a native client's
 * http redirect URI (it matches these with any port, RFC 8252 section 7.3), and refuses them in
 * its https (claimed, section 7.2) redirect URIs.
 */
const NATIVE_LOOPBACKS = new Set(['localhost', '127.0.0.1', '[::1]']);

function checkRedirectUri(field: string, uri: string, applicationType: ClientMetadata['application_type']) {
  const url = parseAbsolute(field, uri);
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') {
    if (url.hostname === '') throw invalid(field, 'must name a host');
    if (applicationType === 'native' && NATIVE_LOOPBACKS.has(url.hostname)) {
      throw invalid(
        field,
        `a native client's https redirect URI is a claimed URI and cannot be on ${url.hostname}; use http on the loopback host`,
      );
    }
    return;
  }
  if (scheme === 'http') {
    if (applicationType === 'native') {
      if (NATIVE_LOOPBACKS.has(url.hostname)) return;
      throw invalid(
        field,
        `a native client may use http only on localhost, 127.0.0.1 or [::1], not on ${url.hostname}`,
      );
    }
    if (isLoopbackHost(url.hostname)) return;
    throw invalid(
      field,
      `may use http only on a loopback host (localhost, 127.0.0.1 or [::1]); use https for ${url.hostname}`,
    );
  }
  if (applicationType === 'web') {
    throw invalid(
      field,
      `a web client's redirect URI must use https (or http on a loopback host), not ${scheme}`,
    );
  }
  // RFC 8252 §7.1: a private-use scheme is a reverse domain name the app controls, which also
  // keeps out javascript:, data:, file: and the like.
  if (!/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/.test(scheme)) {
    throw invalid(
      field,
      `a native client's private-use scheme must be a reverse domain name such as com.example.app, not ${scheme}`,
    );
  }
}
