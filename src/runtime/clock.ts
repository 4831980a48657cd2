/**
 * Time, injected. Every wait in the runtime goes through a `Clock` so that tests can drive all
 * timing (retry polling, resync, source reopen delays) with a fake clock instead of sleeping.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences between readings are meaningful. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds; `ms <= 0` resolves on a later tick, never synchronously.
   * Rejects with the signal's reason as soon as `signal` aborts, so a sleeper never outlives
   * the work it belongs to.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The reason a signal carries, or a generic AbortError when it carries none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The longest delay a Node.js timer keeps (2^31 − 1 ms, about 24.8 days): `setTimeout` with more
 * fires after 1 ms instead. `realClock.sleep` chains timers past it, so no duration is truncated.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/**
 * The wall-time clock: `performance.now()` is monotonic, unlike `Date.now()`, so a system clock
 * step never shortens or stretches a backoff. Any duration is honoured: one longer than a timer
 * can hold is slept in chained pieces.
 */
export const realClock: Clock = {
  now: () => performance.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      let cancel: () => void = () => {};
      const onAbort = (): void => {
        cancel();
        reject(abortReason(signal as AbortSignal));
      };
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      if (!(ms > 0)) {
        // A zero wait is a yield to the event loop: `setImmediate` runs right after pending I/O,
        // where `setTimeout(0)` would cost a clamped millisecond every time.
        const immediate = setImmediate(wake);
        cancel = () => clearImmediate(immediate);
      } else {
        const until = performance.now() + ms;
        const arm = (remaining: number): void => {
          const timer = setTimeout(
            () => {
              const left = until - performance.now();
              if (left > 0 && remaining > MAX_TIMER_DELAY_MS) arm(left);
              else wake();
            },
            Math.min(remaining, MAX_TIMER_DELAY_MS),
          );
          cancel = () => clearTimeout(timer);
        };
        arm(ms);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};
