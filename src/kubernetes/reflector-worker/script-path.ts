/**
 * The one place that knows where the reflector's worker script is.
 *
 * Worker threads run JavaScript from disk, so the worker always runs the compiled build,
 * `dist/workers/reflector.worker.cjs` (CommonJS: see scripts/bundle-reflector-worker.mjs), whether its caller is compiled JS in plain Node (this module
 * is then `dist/src/kubernetes/reflector-worker/script-path.js`) or TypeScript source under the test runner
 * (this module is `src/kubernetes/reflector-worker/script-path.ts`; `npm test` builds first, so dist exists).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The compiled worker, located relative to this module. */
export function reflectorWorkerUrl(moduleUrl: string = import.meta.url): URL {
  const fromSource = /\.[cm]?ts$/.test(new URL(moduleUrl).pathname);
  // src/kubernetes/reflector-worker/ → <root>/dist/workers/ ;
  // dist/src/kubernetes/reflector-worker/ → dist/workers/
  return new URL(
    fromSource
      ? '../../../dist/workers/reflector.worker.cjs'
      : '../../../workers/reflector.worker.cjs',
    moduleUrl,
  );
}

/** The worker's path, or a clear error saying how to produce it. */
export function requireReflectorWorker(url: URL = reflectorWorkerUrl()): string {
  const path = fileURLToPath(url);
  if (!existsSync(path)) {
    throw new Error(`the reflector worker is not built (${path} is missing): run "npm run build"`);
  }
  return path;
}
