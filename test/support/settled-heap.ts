/**
 * The main thread's heap in use after full collections, for tests that compare what two ways of
 * holding the same data cost.
 */
import { forcedGc } from '../../bench/forced-gc.js';

/**
 * `heapUsed` once full collections stop shrinking it. One collection is not enough in a process
 * that ran other test files (vitest runs them in one process here): V8 also drops the bytecode of
 * functions unused for a few collections, which frees hundreds of KiB at unpredictable points.
 */
export function settledHeapUsed(): number {
  const gc = forcedGc();
  let last = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 10; round += 1) {
    gc();
    const used = process.memoryUsage().heapUsed;
    if (used >= last - 1024) return used;
    last = used;
  }
  return last;
}
