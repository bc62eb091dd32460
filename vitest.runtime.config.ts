import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm run test:runtime`: what CI runs again under Node 24 LTS, having run the whole suite under
 * Node 20. Node's version changes what Node itself does, not what the query compiler or the
 * database answers, so this is every pure unit test (cheap, and they catch a changed builtin),
 * and the integration files whose behaviour goes through Node's own surfaces: its HTTP server and
 * parser, processes, signals and node:cluster, sockets and TLS, timers, the file system, crypto,
 * Buffer, fetch, and the libraries built on them (oidc-provider, pino, postgres.js, PGlite's WASM).
 * CONTRIBUTING.md says how to choose; a file that starts to depend on the runtime joins the list.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/unit/**/*.test.ts',
      // processes, signals, node:cluster, the HTTP server's limits and parser
      'test/integration/server.test.ts',
      'test/integration/workers.test.ts',
      'test/integration/shutdown.test.ts',
      'test/integration/metrics.test.ts',
      'test/integration/hostile-input.test.ts',
      'test/integration/docs-servers.test.ts',
      'test/integration/docs-browser.test.ts',
      // PGlite's WASM, its data directory and lock file
      'test/integration/embedded.test.ts',
      // sockets, timers and postgres.js (the pool's and the statement timeout's own files need
      // PostgreSQL, and this pass runs on PGlite, the README's command)
      'test/integration/concurrency.test.ts',
      // crypto, TLS, cookies and oidc-provider (Koa) under a real browser and a relying party
      'test/integration/tokens.test.ts',
      'test/integration/oidc-provider.test.ts',
      'test/integration/oidc-tokens.test.ts',
      'test/integration/oidc-tls-proxy.test.ts',
      'test/integration/oidc-browser.test.ts',
      // the request log's files (pino, sonic-boom)
      'test/integration/request-log.test.ts',
      // Buffer and JSON at the edges: bytes of keys and documents, numbers, the typed client's fetch
      'test/integration/documents.test.ts',
      'test/integration/jsonb-id-first.test.ts',
      'test/integration/bson-key.test.ts',
      'test/integration/sdk.test.ts',
    ],
  },
});
