import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // PGlite takes seconds to start and a real database round trip is not a unit test's budget.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
