import { defineConfig } from 'vitest/config';

/** `npm run test:faults`: a PostgreSQL instance stopped under a server, a server killed mid-write. */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // On PostgreSQL, a database of the run's own, dropped at its end.
    globalSetup: ['test/helpers/database-per-run.ts', 'test/helpers/pglite-image.ts'],
  },
});
