import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fault tests stop databases and kill servers: `npm run test:faults` runs them, once; the
    // Citus tests stop a worker of a cluster: `npm run test:citus`.
    exclude: ['test/faults/**', 'test/citus/**', '**/node_modules/**'],
    // PGlite takes seconds to start and a real database round trip is not a unit test's budget.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Every core: vitest's default leaves one free, which on a 2-core machine runs one file at a
    // time, while most files spend part of their time waiting (on servers they spawn, on timers).
    maxWorkers: availableParallelism(),
    // A worker runs its files one after another in one process, importing the app's modules once
    // instead of once per file, which was half of the suite's CPU. So a module's state outlives a
    // file: every test works in a workplace of its own (random names), and module-level state must
    // not assume a fresh process (CONTRIBUTING.md, "Module-level state").
    isolate: false,
    // On PostgreSQL, a database of the run's own, dropped at its end.
    // dist/ rebuilt from the source under test, for the server started by `npm start`.
    globalSetup: [
      'test/helpers/database-per-run.ts',
      'test/helpers/pglite-image.ts',
      'test/helpers/compiled-server.ts',
    ],
  },
});
