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
 * The wall-time clock: `performance.now()` is monotonic, unlike `Date.now()`, so a system clock
 * step never shortens or stretches a backoff.
 */
export const realClock: Clock = {
  now: () => performance.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      // A zero wait is a yield to the event loop: `setImmediate` runs right after pending I/O,
      // where `setTimeout(0)` would cost a clamped millisecond every time.
      const cancel =
        ms > 0
          ? (
              (timer) => () =>
                clearTimeout(timer)
            )(setTimeout(wake, ms))
          : (
              (immediate) => () =>
                clearImmediate(immediate)
            )(setImmediate(wake));
      const onAbort = (): void => {
        cancel();
        reject(abortReason(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};
