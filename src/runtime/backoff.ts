/**
 * The project's one backoff arithmetic, shared by every caller that waits after a failure: the
 * retry scheduler (per key), the source driver (per reopen), the coordinator (per run), each sink
 * target, the reflector (per stream), the Event recorder (per write) and the leader elector (its
 * acquire jitter).
 *
 * Only the arithmetic is shared. Each caller keeps its own streak and its own rule for when the
 * streak ends, because those differ on purpose (a key's success, a stream that stayed open, a
 * proven watch); one formula means one place to read how a wait grows.
 */

/**
 * Exponent clamp: 2^1000 is still a finite double, so `base × 2^n` never becomes NaN or throws,
 * however many times something fails; every caller's cap applies long before this matters.
 */
const MAX_BACKOFF_EXPONENT = 1_000;

/**
 * The delay after the `failures`-th failure in a row: `baseMs × 2^(failures − 1)`, capped at
 * `maxMs` (client-go's `ItemExponentialFailureRateLimiter`). `failures` below 1 reads as 1.
 */
export function exponentialBackoffMs(baseMs: number, maxMs: number, failures: number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), MAX_BACKOFF_EXPONENT);
  return Math.min(baseMs * 2 ** exponent, maxMs);
}

/**
 * `baseMs` stretched by up to `factor × baseMs` at random (client-go's `wait.Jitter`): the wait
 * lands in `[baseMs, baseMs × (1 + factor))`, so replicas that failed together retry apart.
 * `random` returns `[0, 1)` and is injected so tests can pin it.
 */
export function jitteredMs(baseMs: number, factor: number, random: () => number): number {
  return baseMs * (1 + factor * random());
}
