/**
 * The backoff of each sink target: a target (a router, an EndpointSlice, a namespace's LIST) whose
 * last call failed is not called again before its own delay has passed, however many runs begin.
 *
 * COORDINATION.md makes a trigger begin a run at once (it replaces the coordinator's pending
 * retry), so with ongoing cell changes the coordinator's own backoff never holds anything back: a
 * dead router would be called on every run. The delay therefore lives here, per target, as
 * client-go's per-item rate limiter does for work-queue keys: the other targets of the same run
 * deploy at once, and the service's deploy asks the coordinator to run again when the earliest
 * delay ends (`nextAttemptAtMs` → `requeueAfterMs`), so the held target's change is retried then
 * and not at the next drift.
 */

import { ExponentialBackoff } from '../runtime/backoff.js';
import { type Clock, realClock } from '../runtime/clock.js';

/** The delay after a target's first failure: a router restart or a blip is over within it. */
export const DEFAULT_SINK_BACKOFF_BASE_MS = 1_000;
/**
 * The longest delay: the coordinator's failure cap. The service passes its drift interval when
 * shorter (`sinkBackoffMaxMs`), so a target that came back waits no longer than a drift run would.
 */
export const DEFAULT_SINK_BACKOFF_MAX_MS = 60_000;

/**
 * The service's cap on a target's backoff: `DEFAULT_SINK_BACKOFF_MAX_MS`, but never longer than
 * the drift interval (nor below the base). Drift runs do not call a held target, so with the plain
 * one-minute cap a router that came back would stay empty up to a minute whatever
 * `--drift-interval` says.
 */
export function sinkBackoffMaxMs(driftIntervalMs: number | null): number {
  if (driftIntervalMs === null) return DEFAULT_SINK_BACKOFF_MAX_MS;
  return Math.max(
    DEFAULT_SINK_BACKOFF_BASE_MS,
    Math.min(DEFAULT_SINK_BACKOFF_MAX_MS, driftIntervalMs),
  );
}

/**
 * The delays of one sink's targets; both are checked at construction (positive, finite, cap at
 * least the base), so a sink cannot be built to hot-loop.
 */
export interface TargetBackoffOptions {
  baseMs?: number;
  maxMs?: number;
  clock?: Clock;
}

interface Held {
  backoff: ExponentialBackoff;
  dueAtMs: number;
}

/**
 * Per-target failure streaks of one sink, keyed by whatever names a target there (a router URL, a
 * slice). It only answers "may this be called now, and when next"; the sink decides what a
 * failure is and passes the earliest time on through its own `nextAttemptAtMs()`.
 */
export class TargetBackoff<K> {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #clock: Clock;
  /** Only targets whose last call failed: bounded by the targets a sink has. */
  readonly #held = new Map<K, Held>();

  constructor(options: TargetBackoffOptions = {}) {
    this.#baseMs = options.baseMs ?? DEFAULT_SINK_BACKOFF_BASE_MS;
    this.#maxMs = options.maxMs ?? DEFAULT_SINK_BACKOFF_MAX_MS;
    this.#clock = options.clock ?? realClock;
    if (!(this.#baseMs > 0) || !Number.isFinite(this.#baseMs)) {
      throw new RangeError(`backoff base ${this.#baseMs} ms must be a positive finite number`);
    }
    if (!(this.#maxMs >= this.#baseMs) || !Number.isFinite(this.#maxMs)) {
      throw new RangeError(`backoff cap ${this.#maxMs} ms must be finite and >= the base`);
    }
  }

  /** The clock time before which `key` must not be called; `undefined` when it may be now. */
  heldUntil(key: K): number | undefined {
    const held = this.#held.get(key);
    return held && this.#clock.now() < held.dueAtMs ? held.dueAtMs : undefined;
  }

  /** The call to `key` failed: it is held for base × 2^(n−1), capped, after its n-th failure in a row. */
  failed(key: K): void {
    let held = this.#held.get(key);
    if (held === undefined) {
      const backoff = new ExponentialBackoff({ initialMs: this.#baseMs, maxMs: this.#maxMs });
      held = { backoff, dueAtMs: 0 };
      this.#held.set(key, held);
    }
    held.dueAtMs = this.#clock.now() + held.backoff.next();
  }

  /** The call to `key` succeeded (or the target is gone): its next failure starts at the base. */
  succeeded(key: K): void {
    this.#held.delete(key);
  }

  /** Failures in a row of `key`; 0 after a success. */
  failures(key: K): number {
    return this.#held.get(key)?.backoff.failures ?? 0;
  }

  /** The earliest clock time a held target may be called again; `undefined` when none is held. */
  nextAttemptAtMs(): number | undefined {
    const now = this.#clock.now();
    let next: number | undefined;
    for (const held of this.#held.values()) {
      if (held.dueAtMs > now && (next === undefined || held.dueAtMs < next)) next = held.dueAtMs;
    }
    return next;
  }
}
