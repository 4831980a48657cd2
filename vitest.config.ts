import { defineConfig } from 'vitest/config';

/** Unit tests: everything that runs on a plain machine, no cluster, no network beyond loopback. */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**', 'dist/**'],
    testTimeout: 20_000,
  },
});
