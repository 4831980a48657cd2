/**
 * A backoff whose streak ends by itself once its caller has been healthy long enough: kube-rs's
 * `ResetTimerBackoff`, with the timer started where health begins rather than at the previous
 * failure.
 *
 * kube-rs starts over when the previous `next()` was longer ago than the reset duration, which
 * counts the backoff's own wait and a reopen that failed slowly as healthy time. Here the caller
 * says when health began (`healthy()`: a stream delivered its first `replace`), and the streak
 * ends only if that lasted `healthyAfterMs` before the next failure. That is RUNTIME.md's rule
 * for the source driver: a stream that stayed open `retryMaxDelayMs` ends the streak.
 */
import type { Backoff } from './backoff.js';
import type { Clock } from './clock.js';

/** Wraps a `Backoff` so that health of at least `healthyAfterMs` on `clock` resets it. */
export class ResetAfterHealthyBackoff implements Backoff {
  readonly #inner: Backoff;
  readonly #clock: Clock;
  readonly #healthyAfterMs: number;
  /** Clock time health began since the last failure; undefined while not healthy. */
  #healthySince: number | undefined;

  constructor(inner: Backoff, clock: Clock, healthyAfterMs: number) {
    this.#inner = inner;
    this.#clock = clock;
    this.#healthyAfterMs = healthyAfterMs;
  }

  get failures(): number {
    return this.#inner.failures;
  }

  /** Health begins now (a stream opened); a failure `healthyAfterMs` or more later starts over. */
  healthy(): void {
    this.#healthySince ??= this.#clock.now();
  }

  /** A failure: the streak starts over first if health lasted long enough, then grows. */
  next(): number {
    if (
      this.#healthySince !== undefined &&
      this.#clock.now() - this.#healthySince >= this.#healthyAfterMs
    ) {
      this.#inner.reset();
    }
    this.#healthySince = undefined;
    return this.#inner.next();
  }

  reset(): void {
    this.#healthySince = undefined;
    this.#inner.reset();
  }
}
