/**
 * Per-key exponential backoff with latest-wins deadlines, swept by one poll loop.
 *
 * Replaces client-go's rate limiter plus delaying queue. A new failure overwrites the key's
 * deadline instead of scheduling another timer, so the pending delay always matches the current
 * failure count; one poller sweeps due deadlines, so a retry fires up to one interval late, which
 * a backoff heuristic absorbs. The scheduler only calls back: it knows no queue and no domain.
 */
import { ExponentialBackoff } from './backoff.js';
import { type Clock, realClock } from './clock.js';
import { type Logger, silentLogger } from './logger.js';

/** Once a second: coarse enough to cost nothing idle, fine enough next to a 1 s base delay. */
export const DEFAULT_RETRY_POLL_INTERVAL_MS = 1_000;

/** Options of `RetryScheduler`; the constructor throws `RangeError` on bad numbers. */
export interface RetrySchedulerOptions<K> {
  /**
   * Called from the poller for each key whose deadline is due (the loop enqueues it there). A
   * throw is logged and does not stop the other keys or the poller.
   */
  onRetry: (key: K) => void;
  /** Delay after a key's first failure; doubles per further failure. Positive, finite. */
  baseDelayMs: number;
  /** Cap on the delay, so a key that keeps failing is still retried this often. `>= baseDelayMs`. */
  maxDelayMs: number;
  /** Reads deadlines and drives the poller; a fake one makes retries deterministic in tests. */
  clock?: Clock;
  /**
   * How often due deadlines are swept; a retry fires up to this late. Default
   * `DEFAULT_RETRY_POLL_INTERVAL_MS`.
   */
  pollIntervalMs?: number;
  /** Where a throwing `onRetry` is reported; silent by default. */
  logger?: Logger;
}

/** One key's retry bookkeeping, as the control plane shows it. */
export interface PendingRetry<K> {
  key: K;
  /** Consecutive failures since the key's last success: sets the current delay. */
  failures: number;
  /** Clock time the next retry is due; absent once that retry has fired. */
  dueAtMs?: number;
}

interface Entry {
  backoff: ExponentialBackoff;
  dueAtMs: number | undefined;
}

/**
 * Remembers which keys failed and calls `onRetry` for each once its backoff has passed:
 * `min(baseDelayMs × 2^(failures − 1), maxDelayMs)` after the latest failure.
 *
 * Why a separate object and not a delaying queue: the work queue stays a plain dedup set, a key
 * can be both queued (by an event) and waiting for a retry without two timers racing, and the
 * control plane can list every pending retry with its due time. A retry is only a nudge: whatever
 * reconcile runs next for the key (retry, event or resync) reports success or failure, and that
 * outcome resets or re-arms the backoff.
 *
 * Lifetime: the poller starts in the constructor and stops in `shutdown()`; nothing else runs.
 */
export class RetryScheduler<K> {
  readonly #onRetry: (key: K) => void;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #pollIntervalMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #entries = new Map<K, Entry>();
  readonly #stop = new AbortController();
  readonly #poller: Promise<void>;
  #shutDown = false;

  /** Starts the poller: its lifetime is a straight line from here to `shutdown()`. */
  constructor(options: RetrySchedulerOptions<K>) {
    const { baseDelayMs, maxDelayMs } = options;
    const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_RETRY_POLL_INTERVAL_MS;
    if (!(Number.isFinite(baseDelayMs) && baseDelayMs > 0)) {
      throw new RangeError(
        `RetryScheduler: baseDelayMs must be a positive finite number, got ${baseDelayMs}`,
      );
    }
    if (!(maxDelayMs >= baseDelayMs)) {
      throw new RangeError(
        `RetryScheduler: maxDelayMs must be >= baseDelayMs (${baseDelayMs}), got ${maxDelayMs}`,
      );
    }
    if (!(Number.isFinite(pollIntervalMs) && pollIntervalMs > 0)) {
      throw new RangeError(
        `RetryScheduler: pollIntervalMs must be a positive finite number, got ${pollIntervalMs}`,
      );
    }
    if (typeof options.onRetry !== 'function') {
      throw new TypeError('RetryScheduler: onRetry must be a function');
    }
    this.#onRetry = options.onRetry;
    this.#baseDelayMs = baseDelayMs;
    this.#maxDelayMs = maxDelayMs;
    this.#pollIntervalMs = pollIntervalMs;
    this.#clock = options.clock ?? realClock;
    this.#logger = options.logger ?? silentLogger;
    this.#poller = this.#poll();
  }

  /** Counts a failure and (re)arms the key's deadline; the latest failure wins, even if later. */
  noteFailure(key: K): void {
    if (this.#shutDown) return;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const backoff = new ExponentialBackoff({
        initialMs: this.#baseDelayMs,
        maxMs: this.#maxDelayMs,
      });
      entry = { backoff, dueAtMs: undefined };
      this.#entries.set(key, entry);
    }
    entry.dueAtMs = this.#clock.now() + entry.backoff.next();
  }

  /** Forgets the key: its next failure starts again at the base delay. */
  noteSuccess(key: K): void {
    this.#entries.delete(key);
  }

  /** Every key with a failure count, in first-failure order, for the control plane. */
  pending(): Array<PendingRetry<K>> {
    return [...this.#entries].map(([key, entry]) =>
      entry.dueAtMs === undefined
        ? { key, failures: entry.backoff.failures }
        : { key, failures: entry.backoff.failures, dueAtMs: entry.dueAtMs },
    );
  }

  /** Stops the poller and clears all state; no retry fires afterwards. Safe to call twice. */
  async shutdown(): Promise<void> {
    this.#shutDown = true;
    this.#entries.clear();
    this.#stop.abort();
    await this.#poller;
  }

  async #poll(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        await this.#clock.sleep(this.#pollIntervalMs, signal);
      } catch {
        return; // aborted by shutdown()
      }
      this.#sweep();
    }
  }

  #sweep(): void {
    const now = this.#clock.now();
    const due: K[] = [];
    for (const [key, entry] of this.#entries) {
      if (entry.dueAtMs !== undefined && entry.dueAtMs <= now) {
        entry.dueAtMs = undefined; // fired: never twice for one failure; the count stays
        due.push(key);
      }
    }
    for (const key of due) {
      if (this.#shutDown) return;
      try {
        this.#onRetry(key);
      } catch (err) {
        this.#logger.error({ err, key }, 'retry callback threw');
      }
    }
  }
}
