/**
 * Opens a source, pumps its events into the store, and reopens it whenever it ends or fails.
 *
 * Port of client-go's informer `Run`/`processLoop` with controller-runtime's `SyncingSource`
 * shape (`run()` plus `waitForSync()`). Two rules carry the weight:
 * - cache before notify: an event is applied to the store before its parents are handed on, so
 *   whoever reacts never reads a state older than the event that woke it;
 * - every stream opens with a `replace`: a stream that does not is broken and is reopened, since
 *   without the whole world first, deletions missed while disconnected would never be noticed.
 */
import { ExponentialBackoff } from './backoff.js';
import { abortReason, type Clock, realClock } from './clock.js';
import { type Logger, silentLogger } from './logger.js';
import { describeFailure, NoLoggerWarning } from './no-logger-warning.js';
import type { ObjectStore } from './object-store.js';
import { ResetAfterHealthyBackoff } from './reset-after-healthy-backoff.js';
import type { ParentKey, Source, SourceEvent } from './source-event.js';

/** Options of `SourceStreamDriver`. */
export interface SourceStreamDriverOptions<T> {
  /** Opened at `run()` and reopened after every end or failure; each stream must open with a `replace`. */
  source: Source<T>;
  /** Every event is applied here before anyone hears of it. */
  store: ObjectStore<T>;
  /**
   * Receives the parents an event affected, after the store has applied it: never empty, sorted
   * in default string order (so enqueue order is deterministic). A throw is logged; the store
   * keeps the event.
   */
  onAffected: (parents: ParentKey[]) => void;
  /**
   * Wait before reopening a stream after a first failure (an end, a throw, a bad first event),
   * doubling with each consecutive failure up to `retryMaxDelayMs`, so a source that fails at
   * once every time (a worker that keeps crashing, a consumer that keeps falling behind) costs a
   * relist every `retryMaxDelayMs` at most, not one per `retryDelayMs`. `ReconcileLoop` passes its
   * `sourceRetryDelayMs` (default `DEFAULT_SOURCE_RETRY_DELAY_MS`). Non-negative, finite.
   */
  retryDelayMs: number;
  /**
   * Cap of the doubling reopen wait, and how long a stream must stay open after its first
   * `replace` for the failure streak to end (a stream that lived that long was a success, so the
   * next failure waits `retryDelayMs` again). Default `DEFAULT_SOURCE_RETRY_MAX_DELAY_MS`; at
   * least `retryDelayMs`. `ReconcileLoop` passes its `sourceRetryMaxDelayMs`.
   */
  retryMaxDelayMs?: number;
  /** Times the reopen delay and the yields between slices of a large `replace`. */
  clock?: Clock;
  /**
   * Where failed, ended and unclosable streams are reported. Without one nothing is logged, but
   * the first failed stream raises one `POOL_CONTROLLER_NO_LOGGER` process warning, so a source
   * that cannot reach its server is never silent.
   */
  logger?: Logger | undefined;
}

/**
 * Objects per slice when a large `replace` is applied across event-loop turns: a few
 * milliseconds of work for pods, so the event loop is never blocked for long while a big world
 * syncs or relists. A replace of this many objects or fewer is one `apply` (RUNTIME.md).
 */
export const REPLACE_SLICE_SIZE = 1_000;

/**
 * The reopen wait's cap (RUNTIME.md's default): the reflector's own backoff cap, so a source that
 * fails on every open is reopened twice a minute, and the same span of healthy streaming ends a
 * failure streak.
 */
export const DEFAULT_SOURCE_RETRY_MAX_DELAY_MS = 30_000;

/** The reason a stream's signal carries when the driver closes it after an end or a failure. */
const STREAM_CLOSED_MESSAGE = 'the source stream was closed';

/** The failure the driver records when a stream ended by itself: a source must not end. */
export class SourceStreamEndedError extends Error {
  override readonly name = 'SourceStreamEndedError';
}

/** Why a stream was rejected before anything of it was applied. */
export class StreamDidNotOpenWithReplaceError extends Error {
  override readonly name = 'StreamDidNotOpenWithReplaceError';
}

/**
 * Keeps one stream of a `Source` open into an `ObjectStore` for as long as `run()` runs, and
 * reports which parents each event affected.
 *
 * It never gives up and never rejects: a stream that ends, throws, or does not open with a
 * `replace` is closed, logged and reopened after a wait that doubles from `retryDelayMs` to
 * `retryMaxDelayMs` while streams keep failing, because the new stream's
 * `replace` repairs whatever was missed. `synced` and `waitForSync` tell the loop when the first
 * whole world is in the store, which is when reconciling can start. A large `replace` (more than
 * `REPLACE_SLICE_SIZE` objects) is applied in slices of that size, upserts first and the
 * synthesised deletions last, yielding between them, so neither syncing nor relisting a big
 * cluster blocks the event loop.
 */
export class SourceStreamDriver<T> {
  readonly #source: Source<T>;
  readonly #store: ObjectStore<T>;
  readonly #onAffected: (parents: ParentKey[]) => void;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #synced = false;
  /** Consecutive failed streams set the next reopen wait; a stream that stayed open ends them. */
  readonly #reopenBackoff: ResetAfterHealthyBackoff;
  #syncWaiters = new Set<() => void>();
  /** The most recent failed stream's error, boxed so a thrown `undefined` still counts. */
  #lastFailure: { error: unknown } | undefined;
  /** Present only when no logger was given. */
  readonly #noLoggerWarning: NoLoggerWarning | undefined;

  constructor(options: SourceStreamDriverOptions<T>) {
    if (typeof options.source !== 'function') {
      throw new TypeError('SourceStreamDriver: source must be a function that opens a stream');
    }
    if (typeof options.onAffected !== 'function') {
      throw new TypeError('SourceStreamDriver: onAffected must be a function');
    }
    if (!(Number.isFinite(options.retryDelayMs) && options.retryDelayMs >= 0)) {
      throw new RangeError(
        `SourceStreamDriver: retryDelayMs must be a non-negative finite number, got ${options.retryDelayMs}`,
      );
    }
    this.#source = options.source;
    this.#store = options.store;
    this.#onAffected = options.onAffected;
    const retryMaxDelayMs = options.retryMaxDelayMs ?? DEFAULT_SOURCE_RETRY_MAX_DELAY_MS;
    if (!(Number.isFinite(retryMaxDelayMs) && retryMaxDelayMs >= options.retryDelayMs)) {
      throw new RangeError(
        `SourceStreamDriver: retryMaxDelayMs must be a finite number >= retryDelayMs (${options.retryDelayMs}), got ${retryMaxDelayMs}`,
      );
    }
    this.#clock = options.clock ?? realClock;
    // Exact, no jitter: the reflector jitters its own requests, and a test can pin every wait.
    this.#reopenBackoff = new ResetAfterHealthyBackoff(
      new ExponentialBackoff({ initialMs: options.retryDelayMs, maxMs: retryMaxDelayMs }),
      this.#clock,
      retryMaxDelayMs,
    );
    this.#logger = options.logger ?? silentLogger;
    this.#noLoggerWarning = options.logger ? undefined : new NoLoggerWarning();
  }

  /**
   * What the most recent failed stream failed with (its error, or a `SourceStreamEndedError` for
   * a stream that ended by itself); undefined while none has failed. `ReconcileLoop` quotes it
   * when the initial sync times out, so "it never synced" comes with the reason.
   */
  get lastFailure(): { error: unknown } | undefined {
    return this.#lastFailure;
  }

  /** True for good once the first `replace` has been applied. */
  get synced(): boolean {
    return this.#synced;
  }

  /** Resolves once the first `replace` has been applied; rejects if `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#syncWaiters.delete(wake);
        reject(abortReason(signal as AbortSignal));
      };
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#syncWaiters.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Runs until `signal` aborts: open, pump, close, wait, reopen. Never rejects; failures are
   * logged and answered by reopening, because a fresh stream's `replace` repairs whatever the
   * failed one missed.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.#pumpOneStream(signal);
      if (signal.aborted) return;
      try {
        await this.#clock.sleep(this.#reopenBackoff.next(), signal);
      } catch {
        return;
      }
    }
  }

  async #pumpOneStream(signal: AbortSignal): Promise<void> {
    let iterator: AsyncIterator<SourceEvent<T>> | undefined;
    let reader: AbortableReader<SourceEvent<T>> | undefined;
    let finishedByItself = false;
    // The stream's own signal (RUNTIME.md, amendment 2): aborted the moment `run` is (the driver
    // reads nothing more of the stream from then on), else when the stream is closed after it
    // ended or failed, always before `return()`, so a source parked in an `await` stops at once.
    const stream = new AbortController();
    const abortStream = (): void => stream.abort(abortReason(signal));
    signal.addEventListener('abort', abortStream, { once: true });
    try {
      iterator = this.#source(stream.signal)[Symbol.asyncIterator]();
      reader = new AbortableReader(iterator, signal);
      let opened = false;
      for (;;) {
        const result = await reader.next();
        if (result.done) {
          finishedByItself = true;
          this.#failed(new SourceStreamEndedError('the source stream ended by itself'));
          this.#logger.warn({}, 'source stream ended; reopening');
          return;
        }
        const event = result.value;
        if (!opened && event?.type !== 'replace') {
          throw new StreamDidNotOpenWithReplaceError(
            `source stream opened with ${JSON.stringify(event?.type)} instead of a replace; reopening`,
          );
        }
        const first = !opened;
        opened = true;
        if (event.type === 'replace' && isLargeReplace(event.objects)) {
          // Events arriving meanwhile wait: the stream is not read until the replace is done.
          await this.#deliverReplaceInSlices(event.objects, signal);
        } else {
          this.#deliver(event);
        }
        if (first) this.#reopenBackoff.healthy();
      }
    } catch (err) {
      if (signal.aborted) return;
      this.#failed(err);
      this.#logger.warn({ err }, 'source stream failed; reopening');
    } finally {
      signal.removeEventListener('abort', abortStream);
      reader?.dispose();
      stream.abort(new DOMException(STREAM_CLOSED_MESSAGE, 'AbortError'));
      if (iterator && !finishedByItself) this.#close(iterator);
    }
  }

  /**
   * Notes a failed stream (an end, a throw, a bad first event, a throwing `source()`): kept for
   * `lastFailure`, and, without a logger, the one `POOL_CONTROLLER_NO_LOGGER` warning.
   */
  #failed(err: unknown): void {
    this.#lastFailure = { error: err };
    this.#noLoggerWarning?.raise(
      `SourceStreamDriver: a source stream failed (${describeFailure(err)}) and is being reopened; ` +
        'no `logger` option was given, so this and later failures are otherwise silent: ' +
        'pass `logger` to see them',
    );
  }

  #deliver(event: SourceEvent<T>): void {
    this.#handOn(this.#store.apply(event));
    if (event.type === 'replace') this.#markSynced();
  }

  #handOn(affected: Set<ParentKey>): void {
    if (affected.size === 0) return;
    try {
      this.#onAffected([...affected].sort());
    } catch (err) {
      this.#logger.error(
        { err },
        'onAffected threw; the store is updated, the parents were not handed on',
      );
    }
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    const waiters = this.#syncWaiters;
    this.#syncWaiters = new Set();
    for (const wake of waiters) wake();
  }

  /**
   * A large `replace`, applied as RUNTIME.md allows ("Large replaces may be applied in slices"):
   * each slice one store write of up to `REPLACE_SLICE_SIZE` listed objects, handed on at once,
   * then a yield (`clock.sleep(0)`) so HTTP requests, the stream's I/O and reconciles run; the
   * synthesised deletions last, as one write in a turn of its own. Every parent a change touches is handed on in the
   * slice that changed it, so each is reported after its last change; a reconcile running between
   * slices may see a parent half old, half new, and is re-driven when its part arrives. The store
   * ends equal to one atomic `apply(replace)` (the store guarantees it, `beginReplace`). Aborted
   * midway, the store keeps the slices applied so far; the next stream's replace repairs it.
   */
  async #deliverReplaceInSlices(
    objects: ReadonlyMap<string, T>,
    signal: AbortSignal,
  ): Promise<void> {
    const replace = this.#store.beginReplace();
    let slice: Array<[string, T]> = [];
    for (const entry of objects) {
      slice.push(entry);
      if (slice.length === REPLACE_SLICE_SIZE) {
        this.#handOn(replace.upsert(slice));
        slice = [];
        await this.#clock.sleep(0, signal); // rejects when aborted: the stream is abandoned
      }
    }
    if (slice.length > 0) {
      this.#handOn(replace.upsert(slice));
      // The sweep walks every stored object (3-4 ms at 50,000 pods): a turn of its own, not
      // added to the last upsert slice's.
      await this.#clock.sleep(0, signal);
    }
    this.#handOn(replace.finish());
    // Synced on a turn of its own too: the loop's worker starts its first slice of reconciles
    // (up to `WORKER_SLICE_MS`) in the task that marks the first sync, which would add it to the
    // sweep's.
    await this.#clock.sleep(0, signal);
    this.#markSynced();
  }

  /**
   * Closes an abandoned stream without waiting on it: a `return()` that never settles must not
   * hold up a reopen or a stop, and a close error must not mask the failure being handled.
   */
  #close(iterator: AsyncIterator<SourceEvent<T>>): void {
    try {
      const closing = iterator.return?.();
      if (closing && typeof closing.then === 'function') {
        closing.then(undefined, (err: unknown) =>
          this.#logger.warn({ err }, 'closing the source stream failed'),
        );
      }
    } catch (err) {
      this.#logger.warn({ err }, 'closing the source stream failed');
    }
  }
}

/**
 * More objects than one slice. `objects` is whatever the source sent; anything that is not
 * Map-like goes to `apply`, which rejects it.
 */
function isLargeReplace(objects: unknown): boolean {
  const candidate = objects as { size?: unknown; forEach?: unknown } | null | undefined;
  return (
    typeof candidate?.forEach === 'function' &&
    typeof candidate.size === 'number' &&
    candidate.size > REPLACE_SLICE_SIZE
  );
}

/**
 * A stream's `iterator.next()`, each one rejected as soon as `signal` aborts. One abort listener
 * for the stream's life rather than one per event: adding and removing a listener on an
 * `AbortSignal` (Node's `EventTarget`) cost about 12 µs of main-thread time per event in a
 * 1,000-event burst (bench:sync's profile), more than applying the event to the store.
 * `dispose()` removes the listener when the stream is done, so nothing accumulates on `run`'s
 * signal across reopens.
 */
class AbortableReader<E> {
  readonly #iterator: AsyncIterator<E>;
  readonly #signal: AbortSignal;
  /** The pending `next()`'s reject, for the abort listener; undefined between reads. */
  #reject: ((reason: unknown) => void) | undefined;
  readonly #onAbort = (): void => this.#reject?.(abortReason(this.#signal));

  constructor(iterator: AsyncIterator<E>, signal: AbortSignal) {
    this.#iterator = iterator;
    this.#signal = signal;
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  next(): Promise<IteratorResult<E>> {
    if (this.#signal.aborted) return Promise.reject(abortReason(this.#signal));
    return new Promise<IteratorResult<E>>((resolve, reject) => {
      this.#reject = reject;
      const settle = (): void => {
        this.#reject = undefined;
      };
      Promise.resolve()
        .then(() => this.#iterator.next())
        .then(
          (result) => {
            settle();
            resolve(result);
          },
          (err: unknown) => {
            settle();
            reject(err);
          },
        );
    });
  }

  dispose(): void {
    this.#signal.removeEventListener('abort', this.#onAbort);
    this.#reject = undefined;
  }
}
