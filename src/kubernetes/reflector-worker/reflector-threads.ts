/**
 * `ReflectorThreads`: the piscina pool whose one thread runs the reflector's streams, startable
 * on its own, before anything else of the service is loaded.
 *
 * Why its own module: a thread takes ~100 ms to start (an isolate, the worker's bundle, Node's
 * `http`/`tls` modules), and the service's main thread takes
 * about as long to load its own modules and read its flags before it knows which namespace to
 * watch. Started from the command's entry (../../main.ts) the two overlap, so the first request
 * to the API server leaves that much sooner; the entry imports only this module (piscina and two
 * small files), not the source and its dependencies. `WorkerPodSource` takes a pool started here,
 * or starts one itself.
 */
import type { MessagePort, ResourceLimits } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { workerEnvironment } from './compile-cache.js';
import type { ReflectorTask } from './protocol.js';
import { requireReflectorWorker } from './script-path.js';

/**
 * The worker's heap cap: a leak kills the worker, which is a failed stream, instead of the
 * process (a runaway LIST is refused before, at ./memory-budget.ts's budget).
 *
 * Why 2 GiB, V8's own default for a 64-bit heap, and not less: V8 grows the old generation's
 * limit after each full collection by a factor it picks from this cap, the largest only from 2 GiB
 * up. Capped at 1 GiB, the worker's old generation (~10 MB live) was fully collected 5 times in a
 * 10,000-pod sync; at 2 GiB once or twice, and the sync took 729 against 788 ms, its CPU 1,054
 * against 1,164 ms, a relist 563 against 625 ms (medians of 5 alternated runs, docs/performance.md).
 * The heap the worker uses is the same either way.
 */
const DEFAULT_WORKER_RESOURCE_LIMITS: ResourceLimits = { maxOldGenerationSizeMb: 2048 };

/**
 * Cap on the streams the one worker runs at once. In practice piscina gives a thread only one
 * abortable task at a time (each stream's task carries an abort signal, for the close grace), so a
 * reopen's stream waits in the queue until the previous stream's task has ended: at most the close
 * grace, since a task that outlives it is terminated.
 */
const CONCURRENT_STREAMS_PER_WORKER = 4;

/** How the reflector's thread is started. */
export interface ReflectorThreadOptions {
  /** The worker thread's V8 limits; default `DEFAULT_WORKER_RESOURCE_LIMITS`. */
  resourceLimits?: ResourceLimits;
  /**
   * Where the worker thread keeps Node's compile cache (`NODE_COMPILE_CACHE`), `false` for none.
   * Default `defaultCompileCacheDir()` (./compile-cache.ts); a `NODE_COMPILE_CACHE` already set is
   * left as it is.
   */
  compileCacheDir?: string | false;
}

/**
 * Errors a thread reports before its owner listens are kept (this many at most) and handed over:
 * piscina emits `error` for a thread that dies between tasks, and an `error` nobody listens to
 * would crash the process, while the entry has no logger yet to say it with.
 */
const MAX_EARLY_ERRORS = 8;

/**
 * What the source uses of the piscina pool. Declared here rather than as piscina's own type, so
 * the published declarations of the source do not make a consumer's compiler read piscina's.
 */
export interface ReflectorPool {
  run(
    task: ReflectorTask,
    options: { transferList: MessagePort[]; signal: AbortSignal },
  ): Promise<unknown>;
  /** The pool's live threads (at most one). */
  readonly threads: readonly { terminate(): Promise<number> }[];
  /** `error`: a thread died between tasks; `workerDestroy`: a thread is gone. */
  on(event: 'error' | 'workerDestroy', listener: (value: unknown) => void): unknown;
  emit(event: 'error', error: unknown): boolean;
  destroy(): Promise<void>;
}

/** A started pool, the limits its thread runs under, and its errors until someone listens. */
export class ReflectorThreads {
  #early: unknown[] | undefined = [];

  /** Starts the pool and its one thread now; `close()` (or a source that adopted it) ends it. */
  constructor(options: ReflectorThreadOptions = {}) {
    this.resourceLimits = options.resourceLimits ?? DEFAULT_WORKER_RESOURCE_LIMITS;
    this.pool = new Piscina<ReflectorTask, unknown>({
      filename: requireReflectorWorker(),
      minThreads: 1,
      maxThreads: 1,
      concurrentTasksPerWorker: CONCURRENT_STREAMS_PER_WORKER,
      // Piscina's default parks a worker that finished a task in Atomics.wait, which would freeze
      // every other stream still running on that thread.
      atomics: 'disabled',
      resourceLimits: this.resourceLimits,
      env: workerEnvironment(options.compileCacheDir),
    });
    this.pool.on('error', (error: unknown) => {
      if (this.#early && this.#early.length < MAX_EARLY_ERRORS) this.#early.push(error);
    });
  }

  /** @internal The pool itself: for the source that adopts it, and tests. */
  readonly pool: ReflectorPool;
  /** The thread's V8 limits: a source sizes the most a LIST may hold by them. */
  readonly resourceLimits: ResourceLimits;

  /** From now on the thread's errors go to `onError`, those that came before it first. */
  adopt(onError: (error: unknown) => void): void {
    for (const error of this.#early ?? []) onError(error);
    this.#early = undefined;
    this.pool.on('error', onError);
  }

  /** Ends the thread, for an owner that never handed it to a source. */
  close(): Promise<void> {
    return this.pool.destroy();
  }
}
