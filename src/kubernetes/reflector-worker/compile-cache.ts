/**
 * The compile cache (Node's `NODE_COMPILE_CACHE`) of the reflector's worker thread and of the
 * service's process: where it lives, and the thread environment that turns it on for the worker.
 * The worker flushes it after its first sync (./worker-thread-task.ts); the command's entry
 * (../../main.ts) turns it on for the main thread.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The compile cache's directory by default: under the OS temp dir, the one place the image's
 * read-only root leaves writable, named per user so that no other account's cache is loaded.
 * Why a cache at all: a restarted process (and its worker) then loads its modules' compiled code
 * instead of compiling them again, and that start is on the path to the first request (measured
 * in docs/performance.md). A directory Node cannot create or write only leaves the cache off.
 */
export function defaultCompileCacheDir(): string {
  // `process.getuid`, not `os.userInfo()`: the latter throws for a uid with no passwd entry, as a
  // container run under an arbitrary uid has.
  return join(tmpdir(), `pool-controller-compile-cache-${process.getuid?.() ?? 'user'}`);
}

/** The worker thread's environment: this process's, with the compile cache where asked. */
export function workerEnvironment(dir: string | false | undefined): NodeJS.ProcessEnv {
  if (dir === false || process.env.NODE_COMPILE_CACHE !== undefined) return process.env;
  return { ...process.env, NODE_COMPILE_CACHE: dir ?? defaultCompileCacheDir() };
}
