import { defineConfig } from 'vitest/config';

/** Unit tests: everything that runs on a plain machine, no cluster, no network beyond loopback. */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**', 'dist/**'],
    testTimeout: 20_000,
    // Two files at once, even on two cores (vitest's default is one worker fewer than cores,
    // which here is one file at a time): much of the suite waits on child processes, worker
    // threads and loopback sockets, and the runner's own process is mostly idle.
    maxWorkers: 2,
    // A worker process runs file after file with the modules it already loaded (each file's own
    // module still runs afresh). Isolation cost more than the tests themselves: a fresh process and
    // a fresh import of fastify, zod and pino per file, about half the suite's CPU time. Safe
    // because no test mocks a module or leaves a global changed: fakes are injected (Clock,
    // PodApi, servers on port 0), and the few spies and patched globals are restored after each
    // test. A test that cannot restore what it changes must not be added without isolation back.
    isolate: false,
  },
});
