import type Provider from 'oidc-provider';
import type { Configuration } from 'oidc-provider';
import internals from 'oidc-provider/lib/helpers/weak_cache.js';

/**
 * What a client carries into oidc-provider beyond the metadata it validates itself, so that every
 * client the registration route accepts can sign in.
 *
 * Contacts: the interface's contacts are any text, and oidc-provider refuses a client whose
 * `contacts` are not all e-mail addresses (it needs them only for its own registration endpoint,
 * which is off). So they travel under a name of ours, for the sign-in and consent pages.
 *
 * Scopes: oidc-provider treats a scope as an OpenID scope (asked for consent, granted, returned in
 * `scope`) only when it is in the set of scopes of its configuration, and refuses a client whose
 * `scope` names any other. That set is fixed when a workplace's Provider is built, while clients
 * register scopes of their own at any time and in any process. So a client's scopes join the set
 * when oidc-provider builds that client from its metadata: in every process, on first use and
 * after every change, before any request of that client is handled. The set only grows until the
 * Provider is rebuilt; another client still never gets such a scope, because oidc-provider checks
 * every scope in the set against the asking client's own `scope`. The set is reached through
 * oidc-provider's internals, since it offers no way to extend it.
 */

/** The private metadata name of the contacts as registered: a string or an array of strings. */
export const CONTACTS = 'workplace_contacts';

/**
 * The scopes the client registered itself, space-separated: its `scope` in oidc-provider also
 * holds the standard scopes every client may ask for, and client_credentials is limited to these.
 */
export const REGISTERED_SCOPE = 'workplace_registered_scope';

type ExtraClientMetadata = NonNullable<Configuration['extraClientMetadata']>;

function knownScopes(provider: Provider): Set<unknown> {
  const scopes = internals(provider)?.configuration?.scopes;
  if (!(scopes instanceof Set)) {
    throw new Error('oidc-provider no longer keeps its scopes where oidc/extra-client-metadata.ts looks');
  }
  return scopes;
}

/** `provider` is called only when a client is built, after the Provider exists. */
export function extraClientMetadata(provider: () => Provider): ExtraClientMetadata {
  return {
    properties: [CONTACTS, REGISTERED_SCOPE],
    // Called for every client oidc-provider builds, once per property, before it checks `scope`.
    validator(_ctx, key, _value, metadata) {
      if (key !== CONTACTS) return;
      const known = knownScopes(provider());
      for (const scope of (metadata.scope ?? '').split(' ')) if (scope !== '') known.add(scope);
    },
  };
}

/** The contacts to show for a client, from oidc-provider's metadata of it. */
export function contactsOf(metadata: Record<string, unknown>): string[] | undefined {
  const value = metadata[CONTACTS];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((c): c is string => typeof c === 'string');
  return undefined;
}

/** The scopes the client registered itself, from oidc-provider's metadata of it. */
export function registeredScopesOf(metadata: Record<string, unknown>): string[] {
  const value = metadata[REGISTERED_SCOPE];
  return typeof value === 'string' ? value.split(' ').filter((s) => s !== '') : [];
}
