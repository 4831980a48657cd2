/**
 * The check every timed component applies to its millisecond options, in one place so the rule
 * (a positive finite number, or the default when absent) and its message cannot drift apart.
 */

/**
 * `value`, or `fallback` when undefined; throws a `RangeError` naming `owner` and `name` for
 * anything but a positive finite number, at construction rather than at the first wait.
 */
export function positiveDurationMs(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
): number {
  const resolved = value === undefined ? fallback : value;
  if (typeof resolved !== 'number' || !Number.isFinite(resolved) || resolved <= 0) {
    throw new RangeError(
      `${owner}: ${name} must be a positive finite number of milliseconds, got ${String(value)}`,
    );
  }
  return resolved;
}

/**
 * A failure backoff's `failureBaseDelayMs` and `failureMaxDelayMs`, each a positive duration or
 * its default, and the cap at least the base: the pair the reconcile loop and the coordinator
 * both take, checked together so neither can be built with a cap below its first wait.
 */
export function failureDelaysMs(
  owner: string,
  options: { failureBaseDelayMs?: number | undefined; failureMaxDelayMs?: number | undefined },
  defaults: { baseMs: number; maxMs: number },
): { baseMs: number; maxMs: number } {
  const baseMs = positiveDurationMs(
    owner,
    'failureBaseDelayMs',
    options.failureBaseDelayMs,
    defaults.baseMs,
  );
  const maxMs = positiveDurationMs(
    owner,
    'failureMaxDelayMs',
    options.failureMaxDelayMs,
    defaults.maxMs,
  );
  if (maxMs < baseMs) {
    throw new RangeError(
      `${owner}: failureMaxDelayMs (${maxMs}) must be >= failureBaseDelayMs (${baseMs})`,
    );
  }
  return { baseMs, maxMs };
}
