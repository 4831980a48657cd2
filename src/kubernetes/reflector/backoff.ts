/**
 * The reflector's wait between a failure and the next LIST or WATCH: its retry policy.
 *
 * One `Backoff` per reflector stream covers reconnects and relists alike, so an API server that
 * keeps failing is protected from a hot loop whichever way it fails. It tells two kinds of
 * failure apart, because they cost the server very differently:
 * - **answered** failures (a 429 or 5xx, an in-stream ERROR, a watch that ended at once, a
 *   connection that broke after the server began answering): the server did work, so the waits
 *   grow as client-go's do (800 ms doubling to 30 s, jitter 1.0), never shorter than a
 *   Retry-After;
 * - **unanswered** failures (connection refused, a reset or a TLS failure before any response):
 *   the server spent nothing, so the wait stays short and jittered (`DEFAULT_UNANSWERED_MIN_MS`
 *   to `DEFAULT_UNANSWERED_MAX_MS`), and does not grow the answered streak: an API server that
 *   was down for minutes is found again within two seconds of listening, and its first answers
 *   are not met with a 30 s wait earned while it was gone.
 *
 * The streak ends when a WATCH proves itself (it delivered a change or a bookmark, or stayed open
 * `WATCH_HEALTHY_AFTER_MS`): the server is healthy now, whatever happened before. client-go waits
 * for two minutes of quiet instead, which is what made a restart 25 s after an outage cost ~30 s.
 *
 * Time is passed in rather than read from a clock, and randomness injected, so the rule is pure
 * and tables of (event, time) → wait rows test it completely. The doubling itself is the runtime's
 * one `ExponentialBackoff` (`src/runtime/backoff.ts`), which every other caller that waits holds too.
 */
import { ExponentialBackoff } from '../../runtime/backoff.js';

/** client-go's `initialBackoff` for reflectors: long enough that a flapping server gets a breather. */
const DEFAULT_BACKOFF_INITIAL_MS = 800;
/** client-go's `maxBackoff`: a server that keeps failing is still probed twice a minute. */
const DEFAULT_BACKOFF_MAX_MS = 30_000;
/** client-go's jitter factor 1.0: a wait lands anywhere in [base, 2 × base), so replicas spread out. */
const DEFAULT_BACKOFF_JITTER = 1.0;
/**
 * Shortest wait after an unanswered failure. With the maximum below, the mean wait is 1.5 s, so
 * a replica sends a server that is down at most one request (of each kind) per second on average.
 */
const DEFAULT_UNANSWERED_MIN_MS = 1_000;
/**
 * Longest wait after an unanswered failure: a server that starts listening again is reached
 * within this long, which leaves room in a 5 s recovery budget for the LIST and the WATCH.
 */
const DEFAULT_UNANSWERED_MAX_MS = 2_000;

/**
 * The retry policy's numbers. Partial options fill in from `defaultBackoffOptions`, and the
 * constructor refuses a combination that could never work (a zero or inverted range, a negative
 * jitter).
 */
export interface BackoffOptions {
  /** First wait after an answered failure; doubles per further one. */
  initialMs: number;
  /** Cap of the answered waits, jitter included. */
  maxMs: number;
  /** Fraction of the answered base delay added at random: 0 is deterministic. */
  jitter: number;
  /** Unanswered failures wait uniformly in [`unansweredMinMs`, `unansweredMaxMs`). */
  unansweredMinMs: number;
  unansweredMaxMs: number;
  /** `[0, 1)`, injectable so tests can pin the jitter. */
  random: () => number;
}

/**
 * The defaults every reflector stream uses (the constants above), gathered so a test can override
 * one field and keep the rest.
 */
const defaultBackoffOptions: BackoffOptions = {
  initialMs: DEFAULT_BACKOFF_INITIAL_MS,
  maxMs: DEFAULT_BACKOFF_MAX_MS,
  jitter: DEFAULT_BACKOFF_JITTER,
  unansweredMinMs: DEFAULT_UNANSWERED_MIN_MS,
  unansweredMaxMs: DEFAULT_UNANSWERED_MAX_MS,
  random: Math.random,
};

/**
 * Exponential backoff with jitter for answered failures (capped at `maxMs` after jitter too, so
 * no wait exceeds it), a short jittered wait for unanswered ones, and a streak that a proven
 * watch ends (`reset()`).
 */
export class Backoff extends ExponentialBackoff {
  readonly #unansweredMinMs: number;
  readonly #unansweredMaxMs: number;
  readonly #random: () => number;

  constructor(options: Partial<BackoffOptions> = {}) {
    const merged = { ...defaultBackoffOptions, ...options };
    if (!(merged.initialMs > 0 && merged.initialMs <= merged.maxMs)) {
      throw new RangeError(
        `backoff needs 0 < initialMs <= maxMs, got ${merged.initialMs} and ${merged.maxMs}`,
      );
    }
    if (!(merged.jitter >= 0)) throw new RangeError('backoff needs jitter >= 0');
    if (!(merged.unansweredMinMs > 0 && merged.unansweredMinMs <= merged.unansweredMaxMs)) {
      throw new RangeError(
        `backoff needs 0 < unansweredMinMs <= unansweredMaxMs, got ${merged.unansweredMinMs} and ${merged.unansweredMaxMs}`,
      );
    }
    super(merged);
    this.#unansweredMinMs = merged.unansweredMinMs;
    this.#unansweredMaxMs = merged.unansweredMaxMs;
    this.#random = merged.random;
  }

  /** The wait after a failure the server never answered: short, jittered, the streak untouched. */
  unanswered(): number {
    return this.#unansweredMinMs + (this.#unansweredMaxMs - this.#unansweredMinMs) * this.#random();
  }
}
