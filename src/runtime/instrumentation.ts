/**
 * What the reconcile loop reports about its queue and its worker, as it happens.
 *
 * The runtime stays free of any metrics library: the service implements this interface with
 * prom-client (controller-runtime's and client-go's workqueue metric names), tests implement it
 * with a recorder. Gauges that are a function of current state (depth, unfinished work, the
 * longest running processor) are better read from `ReconcileLoop.state()` at scrape time.
 */
import type { ParentKey } from './source-event.js';

/**
 * How one reconcile ended, as the `result` label of the reconcile counters: controller-runtime's
 * two outcomes that apply here (there is no requeue-after result, since a reconcile cannot ask for
 * one).
 */
export type ReconcileResult = 'success' | 'error';

/**
 * The loop's hooks for counting what happens as it happens. They are called synchronously from
 * the loop and not guarded, so an implementation must be cheap and must not throw: a throw would
 * escape into the loop's own work, not just lose a count.
 */
export interface LoopInstrumentation {
  /** A key became queued (an add that a queued key absorbed is not counted, as in client-go). */
  queueAdded(key: ParentKey, depth: number): void;
  /** The worker took a key after it waited `waitedMs` in the queue. */
  queueTaken(key: ParentKey, waitedMs: number, depth: number): void;
  /** A failed key's backoff expired and it was queued again. */
  retried(key: ParentKey): void;
  /** One reconcile finished; `durationMs` is its wall time on the loop's clock. */
  reconciled(key: ParentKey, result: ReconcileResult, durationMs: number): void;
}

/** Used when the caller gives none. */
export const noInstrumentation: LoopInstrumentation = {
  queueAdded: () => {},
  queueTaken: () => {},
  retried: () => {},
  reconciled: () => {},
};
