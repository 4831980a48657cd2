/**
 * The controller: a source feeding a store, a dedup queue, exactly one reconcile worker, retries
 * with backoff and a resync backstop, with a lifecycle that never leaks a running piece.
 *
 * Port of controller-runtime's `Controller` with `MaxConcurrentReconciles = 1` (its default):
 * one in-flight key means a reconcile never races another over shared side effects. Lifecycle:
 *
 *   new ──start()──► starting ──initial replace applied──► running ──stop()──► stopped
 *                       │ aborted / stop()                                      ▲
 *                       └────────────────────► failed (nothing left running) ───┘ (stop() no-op)
 */
import { abortReason, type Clock, realClock } from './clock.js';
import { type LoopInstrumentation, noInstrumentation } from './instrumentation.js';
import { type Logger, silentLogger } from './logger.js';
import { ObjectStore } from './object-store.js';
import { isInsideReconcileOf, runAsReconcile } from './reconcile-context.js';
import { ResyncTimer } from './resync-timer.js';
import { type PendingRetry, RetryScheduler } from './retry-scheduler.js';
import type { KeyMap, ParentKey, Source } from './source-event.js';
import { SourceStreamDriver } from './source-stream-driver.js';
import { WorkQueue } from './work-queue.js';

/** client-go's default resync period (10 h): a backstop, not a heartbeat. */
export const DEFAULT_RESYNC_PERIOD_MS = 36_000_000;
/** First retry after a failed reconcile: soon enough for a transient error to clear quickly. */
export const DEFAULT_FAILURE_BASE_DELAY_MS = 1_000;
/** Retry cap: a persistently failing key is still retried every minute, never forgotten. */
export const DEFAULT_FAILURE_MAX_DELAY_MS = 60_000;
/** Pause before reopening a failed source stream, so a dead backend is not hammered. */
export const DEFAULT_SOURCE_RETRY_DELAY_MS = 1_000;
/**
 * Longest run of back-to-back reconciles before the worker yields the event loop. The worker
 * takes a queued key without leaving the microtask queue, so the thousands of reconciles after a
 * large relist would otherwise run as one block while HTTP requests and stream events wait (Go's
 * scheduler preempts goroutines; JavaScript has to yield by hand). A few milliseconds keeps
 * request latency low without paying a turn per reconcile.
 */
export const WORKER_SLICE_MS = 5;

export type Reconcile = (parent: ParentKey, signal: AbortSignal) => Promise<void>;

export interface ReconcileLoopOptions<T> {
  source: Source<T>;
  reconcile: Reconcile;
  keyMap?: KeyMap<T>;
  /** `null` turns resync off. */
  resyncPeriodMs?: number | null;
  failureBaseDelayMs?: number;
  failureMaxDelayMs?: number;
  sourceRetryDelayMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Queue and worker events for metrics; the runtime itself depends on no metrics library. */
  instrumentation?: LoopInstrumentation;
  /**
   * Milliseconds on a monotonic scale, read around reconciles to time the worker's slices (see
   * `WORKER_SLICE_MS`). Separate from `clock` because it measures CPU spent in synchronous work,
   * which a fake `Clock` never sees pass; default `performance.now`. Tests inject one to make
   * the yield points deterministic.
   */
  sliceClock?: () => number;
}

/** What the control plane shows about the loop's scheduling. */
export interface ReconcileLoopState {
  synced: boolean;
  queued: ParentKey[];
  inFlight?: { key: ParentKey; sinceMs: number };
  retries: Array<PendingRetry<ParentKey>>;
  nextResyncAtMs?: number;
}

type Phase = 'new' | 'starting' | 'running' | 'stopped' | 'failed';

interface InFlight {
  key: ParentKey;
  sinceMs: number;
  controller: AbortController;
}

/** The rejection `start()` gives when `stop()` cut the initial sync short. */
export class LoopStoppedError extends Error {
  override readonly name = 'LoopStoppedError';
}

function positiveFinite(name: string, value: unknown, fallback: number): number {
  const resolved = value === undefined ? fallback : value;
  if (typeof resolved !== 'number' || !Number.isFinite(resolved) || resolved <= 0) {
    throw new RangeError(
      `ReconcileLoop: ${name} must be a positive finite number of milliseconds, got ${String(value)}`,
    );
  }
  return resolved;
}

export class ReconcileLoop<T> implements AsyncDisposable {
  readonly #reconcile: Reconcile;
  readonly #resyncPeriodMs: number | null;
  readonly #failureBaseDelayMs: number;
  readonly #failureMaxDelayMs: number;
  readonly #clock: Clock;
  readonly #sliceClock: () => number;
  readonly #logger: Logger;
  readonly #instrumentation: LoopInstrumentation;
  readonly #store: ObjectStore<T>;
  readonly #queue = new WorkQueue<ParentKey>();
  readonly #queuedAtMs = new Map<ParentKey, number>();
  readonly #driver: SourceStreamDriver<T>;
  /** Aborted by `stop()`: ends the driver, the resync timer and a pending start. */
  readonly #lifetime = new AbortController();

  #phase: Phase = 'new';
  #startPromise: Promise<void> | undefined;
  #stopPromise: Promise<void> | undefined;
  #driverDone: Promise<void> | undefined;
  #workerDone: Promise<void> | undefined;
  #retries: RetryScheduler<ParentKey> | undefined;
  #resync: ResyncTimer | undefined;
  #inFlight: InFlight | undefined;

  constructor(options: ReconcileLoopOptions<T>) {
    if (typeof options?.source !== 'function') {
      throw new TypeError('ReconcileLoop: source must be a function that opens a stream');
    }
    if (typeof options.reconcile !== 'function') {
      throw new TypeError('ReconcileLoop: reconcile must be a function');
    }
    this.#resyncPeriodMs =
      options.resyncPeriodMs === null
        ? null
        : positiveFinite('resyncPeriodMs', options.resyncPeriodMs, DEFAULT_RESYNC_PERIOD_MS);
    this.#failureBaseDelayMs = positiveFinite(
      'failureBaseDelayMs',
      options.failureBaseDelayMs,
      DEFAULT_FAILURE_BASE_DELAY_MS,
    );
    this.#failureMaxDelayMs = positiveFinite(
      'failureMaxDelayMs',
      options.failureMaxDelayMs,
      DEFAULT_FAILURE_MAX_DELAY_MS,
    );
    if (this.#failureMaxDelayMs < this.#failureBaseDelayMs) {
      throw new RangeError(
        `ReconcileLoop: failureMaxDelayMs (${this.#failureMaxDelayMs}) must be >= failureBaseDelayMs (${this.#failureBaseDelayMs})`,
      );
    }
    const sourceRetryDelayMs = positiveFinite(
      'sourceRetryDelayMs',
      options.sourceRetryDelayMs,
      DEFAULT_SOURCE_RETRY_DELAY_MS,
    );
    this.#reconcile = options.reconcile;
    this.#clock = options.clock ?? realClock;
    this.#sliceClock = options.sliceClock ?? (() => performance.now());
    this.#logger = options.logger ?? silentLogger;
    this.#instrumentation = options.instrumentation ?? noInstrumentation;
    this.#store = new ObjectStore<T>(options.keyMap, { logger: this.#logger });
    this.#driver = new SourceStreamDriver<T>({
      source: options.source,
      store: this.#store,
      onAffected: (parents) => {
        for (const parent of parents) this.#add(parent);
      },
      retryDelayMs: sourceRetryDelayMs,
      clock: this.#clock,
      logger: this.#logger,
    });
  }

  /**
   * Starts the source and resolves once the initial world is in the store and its parents are
   * queued, so the first reconciles never decide on a half-filled cache. Then runs the single
   * worker and the resync timer. Only once; `signal` may abort the initial sync only.
   */
  start(signal?: AbortSignal): Promise<void> {
    if (this.#phase !== 'new') {
      return Promise.reject(new Error('ReconcileLoop.start() may be called only once per loop'));
    }
    this.#phase = 'starting';
    this.#startPromise = this.#start(signal);
    return this.#startPromise;
  }

  async #start(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) {
      this.#phase = 'failed';
      this.#queue.shutdown();
      throw abortReason(signal);
    }
    const lifetime = this.#lifetime.signal;
    this.#driverDone = this.#driver.run(lifetime);
    const syncAbort = signal ? AbortSignal.any([lifetime, signal]) : lifetime;
    try {
      await this.#driver.waitForSync(syncAbort);
      if (lifetime.aborted) throw abortReason(lifetime);
    } catch (err) {
      await this.#abandonStart();
      if (lifetime.aborted && !signal?.aborted) {
        throw new LoopStoppedError('ReconcileLoop was stopped before the initial sync completed');
      }
      throw err;
    }
    this.#phase = 'running';
    this.#retries = new RetryScheduler<ParentKey>({
      onRetry: (key) => {
        this.#instrumentation.retried(key);
        this.#add(key);
      },
      baseDelayMs: this.#failureBaseDelayMs,
      maxDelayMs: this.#failureMaxDelayMs,
      clock: this.#clock,
      logger: this.#logger,
    });
    this.#workerDone = this.#work();
    if (this.#resyncPeriodMs !== null) {
      this.#resync = new ResyncTimer(
        this.#clock,
        this.#resyncPeriodMs,
        () => this.#resyncTick(),
        lifetime,
      );
    }
  }

  /** Leaves nothing running after a start that did not complete. */
  async #abandonStart(): Promise<void> {
    this.#phase = 'failed';
    this.#lifetime.abort(new LoopStoppedError('ReconcileLoop start was abandoned'));
    this.#queue.shutdown();
    await this.#driverDone;
  }

  /**
   * Stops everything and waits: aborts the in-flight reconcile and waits for it to settle, shuts
   * the queue and the retry poller, closes the source stream, clears the resync timer.
   * Idempotent. From inside a reconcile it cannot wait for itself, so it begins the shutdown and
   * returns an already-handled rejection: write `void loop.stop()` there.
   */
  stop(): Promise<void> {
    if (this.#phase === 'new') {
      return Promise.reject(new Error('ReconcileLoop.stop() called before start()'));
    }
    if (this.#phase === 'failed' && !this.#stopPromise) return Promise.resolve();
    this.#stopPromise ??= this.#shutdown();
    if (isInsideReconcileOf(this)) {
      const refusal = Promise.reject(
        new Error(
          'ReconcileLoop.stop() must not be awaited inside reconcile (it waits for that reconcile); ' +
            'call `void loop.stop()` there: the shutdown completes once the reconcile returns',
        ),
      );
      refusal.catch(() => {});
      return refusal;
    }
    return this.#stopPromise;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  async #shutdown(): Promise<void> {
    const reason = new LoopStoppedError('ReconcileLoop stopped');
    this.#lifetime.abort(reason);
    this.#inFlight?.controller.abort(reason);
    this.#queue.shutdown();
    if (this.#phase === 'starting') {
      // start() notices the abort, tears down and rejects; wait for it, without its rejection.
      await this.#startPromise?.catch(() => {});
    }
    await this.#workerDone;
    await this.#retries?.shutdown();
    await this.#driverDone;
    await this.#resync?.done;
    if (this.#phase !== 'failed') this.#phase = 'stopped';
  }

  /** Manual requeue (the control plane's POST); ignored once stopped. */
  enqueue(parent: ParentKey): void {
    this.#add(parent);
  }

  getByParent(parent: ParentKey): T[] {
    return this.#store.getByParent(parent);
  }

  parentKeys(): Set<ParentKey> {
    return this.#store.parentKeys();
  }

  /** Objects in the store, for the control plane's store snapshot. */
  get objectCount(): number {
    return this.#store.size;
  }

  get synced(): boolean {
    return this.#driver.synced;
  }

  state(): ReconcileLoopState {
    const state: ReconcileLoopState = {
      synced: this.#driver.synced,
      queued: this.#queue.keys(),
      retries: this.#retries?.pending() ?? [],
    };
    if (this.#inFlight)
      state.inFlight = { key: this.#inFlight.key, sinceMs: this.#inFlight.sinceMs };
    const nextResyncAtMs = this.#resync?.nextAtMs;
    if (nextResyncAtMs !== undefined) state.nextResyncAtMs = nextResyncAtMs;
    return state;
  }

  #add(parent: ParentKey): void {
    if (!this.#queue.add(parent)) return;
    this.#queuedAtMs.set(parent, this.#clock.now());
    this.#instrumentation.queueAdded(parent, this.#queue.length);
  }

  #resyncTick(): void {
    for (const parent of [...this.#store.parentKeys()].sort()) this.#add(parent);
  }

  /** The single worker: one key at a time, never two reconciles at once. */
  async #work(): Promise<void> {
    // CPU time spent, not a wait: measured on the slice clock (the real monotonic one unless a
    // test injects another), because what it protects is the real event loop. The yield itself
    // goes through the Clock.
    let sliceStartedAt = this.#sliceClock();
    for (;;) {
      if (this.#sliceClock() - sliceStartedAt >= WORKER_SLICE_MS) {
        try {
          await this.#clock.sleep(0, this.#lifetime.signal);
        } catch {
          return; // stopped while yielding
        }
        sliceStartedAt = this.#sliceClock();
      }
      const willWait = this.#queue.length === 0;
      const key = await this.#queue.get();
      if (key === undefined) return;
      if (willWait) sliceStartedAt = this.#sliceClock(); // the event loop ran while we waited
      const sinceMs = this.#clock.now();
      this.#instrumentation.queueTaken(
        key,
        sinceMs - (this.#queuedAtMs.get(key) ?? sinceMs),
        this.#queue.length,
      );
      this.#queuedAtMs.delete(key);
      const inFlight: InFlight = { key, sinceMs, controller: new AbortController() };
      this.#inFlight = inFlight;
      let failed = false;
      try {
        await runAsReconcile(this, () => this.#reconcile(key, inFlight.controller.signal));
      } catch (err) {
        failed = true;
        if (inFlight.controller.signal.aborted) {
          this.#logger.warn({ err, key }, 'reconcile ended by stop()');
        } else {
          this.#logger.error({ err, key }, 'reconcile failed');
        }
      } finally {
        this.#inFlight = undefined;
      }
      this.#instrumentation.reconciled(
        key,
        failed ? 'error' : 'success',
        this.#clock.now() - sinceMs,
      );
      if (this.#lifetime.signal.aborted) return;
      if (failed) this.#retries?.noteFailure(key);
      else this.#retries?.noteSuccess(key);
    }
  }
}
