// oidc-provider keeps its configuration private; oidc/extra-client-metadata.ts says why one piece
// of it is needed and checks at run time that it is still where this says.
declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  export default function instance(provider: object): { configuration?: { scopes?: unknown } } | undefined;
}
