import { defineConfig } from 'vitest/config';

/**
 * End-to-end tests against a real kube-apiserver and etcd that the tests provision themselves.
 * Files run one at a time: some compact etcd or restart an apiserver, and they share servers.
 */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 1_800_000,
  },
});
