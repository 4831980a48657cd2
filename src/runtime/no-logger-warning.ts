/**
 * The one exception to "without a logger, nothing is logged" (RUNTIME.md, amendment 2): the first
 * failure of a kind raises one process warning, so a loop pointed at an unreachable server, or a
 * reconcile that always throws, is never silent. controller-runtime does the same when no logger
 * was set: it says so once, then stays quiet.
 */

/** The `code` of the warning, for `process.on('warning')` filters and `--disable-warning`. */
export const NO_LOGGER_WARNING_CODE = 'POOL_CONTROLLER_NO_LOGGER';

/**
 * One kind of failure of one instance (a loop's reconciles, a driver's streams) without a logger:
 * `raise` emits `process.emitWarning(message, { code: NO_LOGGER_WARNING_CODE })` the first time
 * and never again, so a failure that repeats every second cannot flood stderr. The owner creates
 * one only when no logger was given, so a logger means no warning at all.
 */
export class NoLoggerWarning {
  #raised = false;

  /** Emits the warning unless this instance already did. */
  raise(message: string): void {
    if (this.#raised) return;
    this.#raised = true;
    // Outside Node (a runtime without `process`) there is nowhere to warn; the runtime still works.
    if (typeof process === 'undefined' || typeof process.emitWarning !== 'function') return;
    process.emitWarning(message, { code: NO_LOGGER_WARNING_CODE });
  }
}

/**
 * A failure as one line for a warning or an error message: an `Error`'s message (its name first
 * when that is not plain `Error`), followed by its direct `cause`'s message when it has one,
 * since a wrapper such as fetch's `TypeError: fetch failed` keeps the reason (`ECONNREFUSED`)
 * there; anything else as a string. Never throws, whatever was thrown.
 */
export function describeFailure(failure: unknown): string {
  try {
    if (!(failure instanceof Error)) return String(failure);
    const named =
      failure.name && failure.name !== 'Error'
        ? `${failure.name}: ${failure.message}`
        : failure.message;
    const cause: unknown = failure.cause;
    return cause instanceof Error && cause.message ? `${named} (${cause.message})` : named;
  } catch {
    return 'an unprintable value';
  }
}
