/**
 * Durations as the API shows them (`…InMs`, `…ForMs`, `agoMs`): whole milliseconds, never
 * negative. The clock is `performance.now()`, whose readings carry microseconds and float noise
 * (`"agoMs": 2726.0810969999998`, issue 41); no reader needs less than a millisecond.
 */

/** The whole milliseconds from `fromMs` to `toMs` on one clock; 0 when `toMs` is earlier. */
export function durationMs(fromMs: number, toMs: number): number {
  return Math.max(0, Math.round(toMs - fromMs));
}
