/**
 * The project's one backoff: the object every caller that waits after a failure holds (the retry
 * scheduler per key, the source driver per reopen, the coordinator per run, each sink target,
 * the reflector per stream, the Event recorder per series), and the jitter the leader elector
 * also spreads its acquire attempts with.
 *
 * Callers hold a `Backoff` and say only what happened (`next()` after a failure, `reset()` after
 * a success), never a counter of their own: one place to read how a wait grows. When a streak
 * ends still differs per caller on purpose (a key's success, a proven watch, a stream that stayed
 * open: `ResetAfterHealthyBackoff`), and each caller keeps that rule.
 */

/**
 * A streak of failures and the wait each one earns, as kube-rs's `backoff::Backoff` and
 * client-go's `wait.Backoff` are.
 */
export interface Backoff {
  /** One more failure in a row: the wait before trying again. */
  next(): number;
  /** A success (or whatever the caller counts as healthy): the next failure starts over. */
  reset(): void;
  /** Failures in a row since the last reset: 0 means the next wait is the initial one. */
  readonly failures: number;
}

/**
 * Exponent clamp: 2^1000 is still a finite double, so `initial × 2^n` never becomes NaN or
 * throws, however many times something fails; every caller's cap applies long before this matters.
 */
const MAX_BACKOFF_EXPONENT = 1_000;

/** The numbers of an `ExponentialBackoff`. */
interface ExponentialBackoffOptions {
  /** The wait after the first failure; it doubles per further one. */
  initialMs: number;
  /** Cap of every wait, jitter included. */
  maxMs: number;
  /** Fraction of the base wait added at random (client-go's jitter factor); default 0, exact. */
  jitter?: number;
  /** `[0, 1)`, injectable so tests can pin the jitter; default `Math.random`. */
  random?: () => number;
}

/**
 * `initialMs × 2^(n − 1)` after the n-th failure in a row, stretched by the jitter and capped at
 * `maxMs` (client-go's `ItemExponentialFailureRateLimiter`, plus `wait.Jitter` when asked).
 *
 * It checks no numbers: every caller validates its own at its own construction, with its own
 * option names in the message, before the first failure could reach this.
 */
export class ExponentialBackoff implements Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #failures = 0;

  constructor(options: ExponentialBackoffOptions) {
    this.#initialMs = options.initialMs;
    this.#maxMs = options.maxMs;
    this.#jitter = options.jitter ?? 0;
    this.#random = options.random ?? Math.random;
  }

  get failures(): number {
    return this.#failures;
  }

  next(): number {
    this.#failures += 1;
    const exponent = Math.min(this.#failures - 1, MAX_BACKOFF_EXPONENT);
    const base = Math.min(this.#initialMs * 2 ** exponent, this.#maxMs);
    // Drawn even at jitter 0, so a caller's sequence of random draws never depends on the factor.
    return Math.min(this.#maxMs, jitteredMs(base, this.#jitter, this.#random));
  }

  reset(): void {
    this.#failures = 0;
  }
}

/**
 * `baseMs` stretched by up to `factor × baseMs` at random (client-go's `wait.Jitter`): the wait
 * lands in `[baseMs, baseMs × (1 + factor))`, so replicas that failed together retry apart.
 * `random` returns `[0, 1)` and is injected so tests can pin it.
 */
export function jitteredMs(baseMs: number, factor: number, random: () => number): number {
  return baseMs * (1 + factor * random());
}
