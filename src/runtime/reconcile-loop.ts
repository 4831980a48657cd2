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
 *
 * Size: the controller's lifecycle, one state machine over the parts (store, queue, retries,
 * resync) that are files of their own.
 */

import { abortReason, type Clock, realClock } from './clock.js';
import { type LoopInstrumentation, noInstrumentation } from './instrumentation.js';
import { type Logger, silentLogger } from './logger.js';
import { describeFailure, NoLoggerWarning } from './no-logger-warning.js';
import { ObjectStore } from './object-store.js';
import { failureDelaysMs, positiveDurationMs } from './positive-duration.js';
import { isInsideReconcileOf, runAsReconcile } from './reconcile-context.js';
import { ResyncTimer } from './resync-timer.js';
import { type PendingRetry, RetryScheduler } from './retry-scheduler.js';
import type { KeyMap, ParentKey, Source } from './source-event.js';
import { DEFAULT_SOURCE_RETRY_MAX_DELAY_MS, SourceStreamDriver } from './source-stream-driver.js';
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

/**
 * The user's reconcile for one parent. It gets only the key, so it must re-derive everything from
 * `loop.getByParent(key)` (treating those objects as read-only), be idempotent (delivery is
 * at-least-once: a relist or a resync re-drives every parent), and honour `signal`, which
 * `stop()` aborts. Rejecting counts as a failure and schedules a retry with backoff.
 */
export type Reconcile = (parent: ParentKey, signal: AbortSignal) => Promise<void>;

/**
 * Options of `ReconcileLoop`. Every duration is in milliseconds; the constructor throws
 * `RangeError` for one that is not a positive finite number, or when the failure cap is below the
 * base (checked after defaults are applied).
 */
export interface ReconcileLoopOptions<T> {
  /** Where the world comes from; opened at `start()` and reopened whenever a stream ends or fails. */
  source: Source<T>;
  /** Called with one parent key at a time, never two at once. */
  reconcile: Reconcile;
  /**
   * Groups objects under the parent a reconcile is run for (pods under their cell). Without one,
   * every object is its own parent.
   */
  keyMap?: KeyMap<T>;
  /**
   * How often every parent with members is enqueued again, whatever happened: a backstop for an
   * event this controller, or something it depends on, failed to act on. Default
   * `DEFAULT_RESYNC_PERIOD_MS` (10 h); `null` turns resync off.
   */
  resyncPeriodMs?: number | null;
  /** Delay before retrying a key after its first failed reconcile. Default `DEFAULT_FAILURE_BASE_DELAY_MS`. */
  failureBaseDelayMs?: number;
  /**
   * Cap on the doubling retry delay of a key that keeps failing. Default
   * `DEFAULT_FAILURE_MAX_DELAY_MS`.
   */
  failureMaxDelayMs?: number;
  /**
   * Wait before reopening a source stream after a first failure; doubles per consecutive
   * failure. Default `DEFAULT_SOURCE_RETRY_DELAY_MS`.
   */
  sourceRetryDelayMs?: number;
  /**
   * Cap of that doubling wait, and how long a stream must stay open after its `replace` to end a
   * failure streak. Default `DEFAULT_SOURCE_RETRY_MAX_DELAY_MS`; at least `sourceRetryDelayMs`.
   */
  sourceRetryMaxDelayMs?: number;
  /**
   * How long `start()` waits for the initial sync (the first `replace` applied) before it rejects
   * with an `InitialSyncTimeoutError` carrying the source's last failure as its `cause`, leaving
   * nothing running; controller-runtime's `CacheSyncTimeout`. Default `null`: wait for ever, since
   * a source that is merely slow (a LIST of a large cluster) must not be cut short unless asked.
   * Measured on `clock`, from the moment `start()` is called.
   */
  syncTimeoutMs?: number | null;
  /** Every wait (retry poller, resync, source reopen, the worker's yields) goes through it. */
  clock?: Clock;
  /**
   * Failed reconciles and source trouble are logged here. Without one nothing is logged, except
   * that the first failed reconcile and the first failed source stream each raise one
   * `POOL_CONTROLLER_NO_LOGGER` process warning, so failures are never wholly silent.
   */
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

/** What the control plane shows about the loop's scheduling. Times are `clock` times. */
export interface ReconcileLoopState {
  /** The first `replace` has been applied: the store holds a whole world. */
  synced: boolean;
  /** Keys waiting for the worker, in queue order. */
  queued: ParentKey[];
  /** The key being reconciled now, and since when. */
  inFlight?: { key: ParentKey; sinceMs: number };
  /** Keys with failures, with their next retry; empty before the worker starts. */
  retries: Array<PendingRetry<ParentKey>>;
  /** When the next resync enqueues every parent; absent when resync is off or not running. */
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

/**
 * The rejection `start()` gives when the initial sync took longer than `syncTimeoutMs`. Its
 * message quotes the source's last failure (an unreachable server, a refused LIST), which is also
 * its `cause`, so the caller learns why without a logger.
 */
export class InitialSyncTimeoutError extends Error {
  override readonly name = 'InitialSyncTimeoutError';
}

function positiveFinite(name: string, value: unknown, fallback: number): number {
  return positiveDurationMs('ReconcileLoop', name, value, fallback);
}

/**
 * A level-triggered controller over one `Source`: it keeps a store of the source's objects up to
 * date, enqueues every parent an event touched, and runs `reconcile` for each queued parent, one
 * at a time, retrying failures with backoff and re-driving every parent on a (long) resync period.
 *
 * Level-triggered means a reconcile never sees the event that woke it, only the parent key; it
 * re-reads the parent's members and makes the world match. That is what lets the loop lose,
 * merge and repeat events safely: a burst of changes to one parent is one reconcile, and a
 * dropped stream is repaired by the next stream's `replace`.
 *
 * Use: `await loop.start()` (resolves once the initial world is in the store and queued), read
 * with `getByParent`/`parentKeys`/`state`, `enqueue` to force a reconcile, `await loop.stop()`
 * (or `await using`) to end it with nothing left running.
 */
export class ReconcileLoop<T> implements AsyncDisposable {
  readonly #reconcile: Reconcile;
  readonly #resyncPeriodMs: number | null;
  readonly #failureBaseDelayMs: number;
  readonly #failureMaxDelayMs: number;
  readonly #syncTimeoutMs: number | null;
  readonly #clock: Clock;
  readonly #sliceClock: () => number;
  readonly #logger: Logger;
  /** Present only when no logger was given: the one warning about failed reconciles. */
  readonly #noLoggerWarning: NoLoggerWarning | undefined;
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
    const failureDelays = failureDelaysMs('ReconcileLoop', options, {
      baseMs: DEFAULT_FAILURE_BASE_DELAY_MS,
      maxMs: DEFAULT_FAILURE_MAX_DELAY_MS,
    });
    this.#failureBaseDelayMs = failureDelays.baseMs;
    this.#failureMaxDelayMs = failureDelays.maxMs;
    const sourceRetryDelayMs = positiveFinite(
      'sourceRetryDelayMs',
      options.sourceRetryDelayMs,
      DEFAULT_SOURCE_RETRY_DELAY_MS,
    );
    const sourceRetryMaxDelayMs = positiveFinite(
      'sourceRetryMaxDelayMs',
      options.sourceRetryMaxDelayMs,
      DEFAULT_SOURCE_RETRY_MAX_DELAY_MS,
    );
    if (sourceRetryMaxDelayMs < sourceRetryDelayMs) {
      throw new RangeError(
        `ReconcileLoop: sourceRetryMaxDelayMs (${sourceRetryMaxDelayMs}) must be >= sourceRetryDelayMs (${sourceRetryDelayMs})`,
      );
    }
    this.#syncTimeoutMs =
      options.syncTimeoutMs === null || options.syncTimeoutMs === undefined
        ? null
        : positiveFinite('syncTimeoutMs', options.syncTimeoutMs, 0);
    this.#reconcile = options.reconcile;
    this.#clock = options.clock ?? realClock;
    this.#sliceClock = options.sliceClock ?? (() => performance.now());
    this.#logger = options.logger ?? silentLogger;
    this.#noLoggerWarning = options.logger ? undefined : new NoLoggerWarning();
    this.#instrumentation = options.instrumentation ?? noInstrumentation;
    this.#store = new ObjectStore<T>(options.keyMap, { logger: this.#logger });
    this.#driver = new SourceStreamDriver<T>({
      source: options.source,
      store: this.#store,
      onAffected: (parents) => {
        for (const parent of parents) this.#add(parent);
      },
      retryDelayMs: sourceRetryDelayMs,
      retryMaxDelayMs: sourceRetryMaxDelayMs,
      clock: this.#clock,
      // The caller's logger as given: without one, the driver raises its own no-logger warning.
      logger: options.logger,
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
    const deadline = this.#armSyncDeadline();
    const syncAbort = AbortSignal.any([
      lifetime,
      ...(signal ? [signal] : []),
      ...(deadline ? [deadline.signal] : []),
    ]);
    try {
      await this.#driver.waitForSync(syncAbort);
      if (lifetime.aborted) throw abortReason(lifetime);
    } catch (err) {
      const timedOut = deadline?.signal.aborted === true && !lifetime.aborted && !signal?.aborted;
      await this.#abandonStart();
      if (timedOut) throw err;
      if (lifetime.aborted && !signal?.aborted) {
        throw new LoopStoppedError('ReconcileLoop was stopped before the initial sync completed');
      }
      throw err;
    } finally {
      deadline?.disarm();
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

  /**
   * With `syncTimeoutMs`, a signal the loop's clock aborts that long from now with an
   * `InitialSyncTimeoutError` quoting the source's last failure; `disarm()` cancels the timer
   * once the wait is over either way, so no sleeper outlives `start()`.
   */
  #armSyncDeadline(): { signal: AbortSignal; disarm: () => void } | undefined {
    const timeoutMs = this.#syncTimeoutMs;
    if (timeoutMs === null) return undefined;
    const deadline = new AbortController();
    const timer = new AbortController();
    this.#clock.sleep(timeoutMs, timer.signal).then(
      () => deadline.abort(this.#syncTimeoutError(timeoutMs)),
      () => {}, // disarmed: the wait ended first
    );
    return { signal: deadline.signal, disarm: () => timer.abort() };
  }

  #syncTimeoutError(timeoutMs: number): InitialSyncTimeoutError {
    const failure = this.#driver.lastFailure;
    const message = `ReconcileLoop: the initial sync did not finish within ${timeoutMs} ms`;
    if (!failure) {
      return new InitialSyncTimeoutError(`${message}; no source stream failed meanwhile`);
    }
    return new InitialSyncTimeoutError(
      `${message}; the source's last failure: ${describeFailure(failure.error)}`,
      { cause: failure.error },
    );
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

  /** `stop()`, so `await using loop = new ReconcileLoop(...)` pairs start and stop. */
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

  /** The parent's members as the store holds them now, sorted by object key; `[]` when none. */
  getByParent(parent: ParentKey): T[] {
    return this.#store.getByParent(parent);
  }

  /** Parents with at least one member in the store. */
  parentKeys(): Set<ParentKey> {
    return this.#store.parentKeys();
  }

  /** Objects in the store, for the control plane's store snapshot. */
  get objectCount(): number {
    return this.#store.size;
  }

  /** True for good once the first `replace` has been applied (before `start()` resolves). */
  get synced(): boolean {
    return this.#driver.synced;
  }

  /** A snapshot of the queue, the in-flight reconcile, pending retries and the next resync. */
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
          this.#noLoggerWarning?.raise(
            `ReconcileLoop: reconcile of ${JSON.stringify(key)} failed (${describeFailure(err)}) ` +
              'and will be retried; no `logger` option was given, so this and later failures ' +
              'are otherwise silent: pass `logger` to see them',
          );
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
