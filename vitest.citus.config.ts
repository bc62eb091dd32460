import { defineConfig } from 'vitest/config';

/**
 * `npm run test:citus`: the Citus pass CI runs on a 3-node cluster (scripts/test-citus.sh). These
 * files cover every statement shape of documents, indexes of every kind, aggregation, text search,
 * TTL passes, cursors, `$expr`, connectors, tokens and OpenID sign-in, and the grammar fuzzer's
 * requests, so a statement Citus cannot plan fails here; then test/citus/ stops a worker and moves a workplace, alone. The whole suite runs on a
 * cluster with `DATABASE_URL=<coordinator> npm test` (docs/scaling.md says what it skips there).
 */
const CITUS_SUITE = [
  'test/integration/documents.test.ts',
  'test/integration/indexes.test.ts',
  'test/integration/index-kinds.test.ts',
  'test/integration/index-races.test.ts',
  'test/integration/aggregate.test.ts',
  'test/integration/cursor.test.ts',
  'test/integration/distinct.test.ts',
  'test/integration/text-search.test.ts',
  'test/integration/ttl.test.ts',
  'test/integration/single-document.test.ts',
  'test/integration/positional-updates.test.ts',
  'test/integration/concurrency.test.ts',
  'test/integration/catalog-cache.test.ts',
  // Migration 0024's triggers on the coordinator's catalog, one fired inside a data write.
  'test/integration/catalog-changes.test.ts',
  'test/integration/collections.test.ts',
  'test/integration/workplaces.test.ts',
  'test/integration/connectors.test.ts',
  'test/integration/tokens.test.ts',
  'test/integration/oidc-settings.test.ts',
  'test/integration/oidc-clients.test.ts',
  'test/integration/oidc-provider.test.ts',
  // The shapes Citus cannot run as PostgreSQL does (db/storage/citus-shapes.ts): filters proven false,
  // `$expr` in deletes, found first by the fuzzer; and the shard's plans use the indexes.
  'test/integration/grammar-fuzz.test.ts',
  'test/integration/expressions.test.ts',
  'test/integration/storage-explain.test.ts',
  // End users under rules: the rule in every statement, the write checks, $lookup's ruled
  // sub-select, the fenced head of a pipeline, and the grants' announcements.
  'test/integration/end-user-rules.test.ts',
  'test/integration/end-user-oracles.test.ts',
  'test/integration/end-user-tokens.test.ts',
];

export default defineConfig({
  test: {
    include: process.env.CITUS_PASS === 'faults' ? ['test/citus/**/*.test.ts'] : CITUS_SUITE,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // One process runs its files one after another, importing the app once (vitest.config.ts).
    isolate: process.env.CITUS_PASS === 'faults',
    // A database of the run's own on every node of the cluster, dropped at its end.
    globalSetup: ['test/helpers/database-per-run.ts'],
  },
});
