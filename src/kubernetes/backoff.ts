/**
 * The reflector's wait between a failure and the next LIST or WATCH.
 *
 * One backoff per reflector stream covers both reconnects and relists: an API server that keeps
 * failing is protected from a hot loop whichever way it fails. The numbers are client-go's
 * (`NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)` in `NewReflector`).
 */

/** client-go's `initialBackoff` for reflectors: long enough that a flapping server gets a breather. */
export const DEFAULT_BACKOFF_INITIAL_MS = 800;
/** client-go's `maxBackoff`: a dead server is still probed twice a minute, never given up on. */
export const DEFAULT_BACKOFF_MAX_MS = 30_000;
/** client-go's `backoffReset`: a watch healthy this long means earlier trouble is over. */
export const DEFAULT_BACKOFF_RESET_AFTER_MS = 120_000;
/** client-go's jitter factor 1.0: a wait lands anywhere in [base, 2 × base), so replicas spread out. */
export const DEFAULT_BACKOFF_JITTER = 1.0;

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  resetAfterMs: number;
  /** Fraction of the base delay added at random: 0 is deterministic. */
  jitter: number;
  /** `[0, 1)`, injectable so tests can pin the jitter. */
  random: () => number;
}

export const defaultBackoffOptions: BackoffOptions = {
  initialMs: DEFAULT_BACKOFF_INITIAL_MS,
  maxMs: DEFAULT_BACKOFF_MAX_MS,
  resetAfterMs: DEFAULT_BACKOFF_RESET_AFTER_MS,
  jitter: DEFAULT_BACKOFF_JITTER,
  random: Math.random,
};

/**
 * Exponential backoff with jitter, doubling from `initialMs` and capped at `maxMs` (the cap holds
 * after jitter too, so no wait ever exceeds it), reset once the reflector has been watching
 * healthily for `resetAfterMs`.
 *
 * Time is passed in (`now`) rather than read from a clock, so the rule is pure and a table of
 * (event, time) rows tests it completely.
 */
export class Backoff {
  readonly #options: BackoffOptions;
  #failures = 0;
  /** When the current healthy streak began; undefined while there is none. */
  #healthySince: number | undefined;

  constructor(options: Partial<BackoffOptions> = {}) {
    const merged = { ...defaultBackoffOptions, ...options };
    if (!(merged.initialMs > 0 && merged.initialMs <= merged.maxMs)) {
      throw new RangeError(
        `backoff needs 0 < initialMs <= maxMs, got ${merged.initialMs} and ${merged.maxMs}`,
      );
    }
    if (!(merged.resetAfterMs > 0) || !(merged.jitter >= 0)) {
      throw new RangeError('backoff needs resetAfterMs > 0 and jitter >= 0');
    }
    this.#options = merged;
  }

  /** Failures since the last reset: 0 means the next wait is the initial one. */
  get failures(): number {
    return this.#failures;
  }

  /**
   * A WATCH opened (or a clean reconnect followed a healthy one): the streak continues if one
   * is running, else starts now. A clean server-side timeout does not break a streak.
   */
  markHealthy(now: number): void {
    this.#healthySince ??= now;
  }

  /** The wait for the failure that happened at `now`; ends any healthy streak. */
  next(now: number): number {
    const { initialMs, maxMs, resetAfterMs, jitter, random } = this.#options;
    if (this.#healthySince !== undefined && now - this.#healthySince >= resetAfterMs) {
      this.#failures = 0;
    }
    this.#healthySince = undefined;
    // Clamp the exponent: 2^40 × 800 ms is already astronomically past any cap.
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(this.#failures, 40));
    this.#failures += 1;
    return Math.min(maxMs, base * (1 + jitter * random()));
  }
}
