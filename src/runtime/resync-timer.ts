/**
 * The level-triggered backstop: every period, re-drive every parent that still has members.
 *
 * Kept from client-go's resync (on by default at Go's 10 h) as insurance against this controller,
 * or anything it depends on, failing to requeue. The 10% jitter is dropped: it spreads the LIST
 * storms of many controllers, and here resync only adds keys to one dedup set.
 */
import type { Clock } from './clock.js';

/**
 * The resync backstop's timer, apart from the loop so its period, its next tick and its stop are
 * tested with a fake clock alone. It only calls `onTick`; which keys to requeue is the caller's
 * rule.
 */
export class ResyncTimer {
  #nextAtMs: number | undefined;
  readonly #done: Promise<void>;

  /** Starts ticking now; the first tick is one full period away. Stops when `signal` aborts. */
  constructor(
    private readonly clock: Clock,
    private readonly periodMs: number,
    private readonly onTick: () => void,
    signal: AbortSignal,
  ) {
    this.#done = this.#run(signal);
  }

  /** Clock time of the next tick, or undefined once stopped. */
  get nextAtMs(): number | undefined {
    return this.#nextAtMs;
  }

  /** Settles once the timer has stopped (after its signal aborted). */
  get done(): Promise<void> {
    return this.#done;
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      this.#nextAtMs = this.clock.now() + this.periodMs;
      try {
        await this.clock.sleep(this.periodMs, signal);
      } catch {
        break;
      }
      this.onTick();
    }
    this.#nextAtMs = undefined;
  }
}
