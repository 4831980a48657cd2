/**
 * A `Clock` whose time moves only when a test says so. It implements nothing beyond the `Clock`
 * interface plus controls, so code that works with it depends on no other timing source.
 */
import { abortReason, type Clock } from '../../src/runtime/clock.js';

interface Timer {
  dueAt: number;
  seq: number;
  resolve: () => void;
}

/**
 * How many macrotask turns a fake-clock step gives the woken code before looking for the next
 * due sleeper. The step is the condition a timer-driven test waits for, so the count lives here
 * and nowhere in the tests: it only has to cover the hops from a wake-up to the next `sleep()`
 * (promise chains, `setImmediate`), never I/O, which a test waits for with `until`.
 */
const TURNS_PER_STEP = 10;

async function letWokenCodeRun(): Promise<void> {
  for (let i = 0; i < TURNS_PER_STEP; i += 1) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Set<Timer>();

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      if (ms <= 0) {
        // "resolves on a later tick": never synchronously, never needing an advance.
        setImmediate(resolve);
        return;
      }
      const timer: Timer = {
        dueAt: this.#now + ms,
        seq: this.#seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#timers.delete(timer);
        reject(abortReason(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#timers.add(timer);
    });
  }

  /** Sleepers not yet woken or aborted: 0 after a clean shutdown means nothing is left running. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Due times of pending sleepers, earliest first. */
  pendingDueTimes(): number[] {
    return [...this.#timers].map((t) => t.dueAt).sort((a, b) => a - b);
  }

  /**
   * Moves time forward by `ms`, waking sleepers in due order and letting each wake-up's
   * continuations run (and schedule new sleeps) before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await letWokenCodeRun();
      const next = this.#earliestDueBy(target);
      if (!next) break;
      this.#timers.delete(next);
      this.#now = Math.max(this.#now, next.dueAt);
      next.resolve();
    }
    this.#now = target;
    await letWokenCodeRun();
  }

  /**
   * Fires pending sleepers one at a time, earliest first, until `condition` holds, and leaves
   * time at the wake-up that made it true: a test reads the exact moment something happened
   * (a reopen, a retry) without knowing the delay beforehand. Throws when nothing is pending and
   * the condition still fails, or after `limitMs` of fake time, so a wrong expectation fails fast.
   */
  async advanceUntil(condition: () => boolean, limitMs = 3_600_000): Promise<void> {
    const deadline = this.#now + limitMs;
    for (;;) {
      await letWokenCodeRun();
      if (condition()) return;
      const next = this.#earliestDueBy(deadline);
      if (!next) {
        throw new Error(
          `FakeClock.advanceUntil: condition still false at ${this.#now} ms with no sleeper due by ${deadline} ms`,
        );
      }
      this.#timers.delete(next);
      this.#now = Math.max(this.#now, next.dueAt);
      next.resolve();
    }
  }

  #earliestDueBy(limit: number): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.#timers) {
      if (timer.dueAt > limit) continue;
      if (
        !best ||
        timer.dueAt < best.dueAt ||
        (timer.dueAt === best.dueAt && timer.seq < best.seq)
      ) {
        best = timer;
      }
    }
    return best;
  }
}
