/**
 * The package root: the controller runtime's public API (see design/RUNTIME.md), under exactly
 * the names the contract gives them, plus the few extras the service builds on.
 */
export { abortReason, type Clock, realClock } from './runtime/clock.js';
export type { LoopInstrumentation, ReconcileResult } from './runtime/instrumentation.js';
export type { Logger } from './runtime/logger.js';
export { ObjectStore, type ObjectStoreOptions } from './runtime/object-store.js';
export {
  DEFAULT_FAILURE_BASE_DELAY_MS,
  DEFAULT_FAILURE_MAX_DELAY_MS,
  DEFAULT_RESYNC_PERIOD_MS,
  DEFAULT_SOURCE_RETRY_DELAY_MS,
  LoopStoppedError,
  type Reconcile,
  ReconcileLoop,
  type ReconcileLoopOptions,
  type ReconcileLoopState,
} from './runtime/reconcile-loop.js';
export {
  DEFAULT_RETRY_POLL_INTERVAL_MS,
  type PendingRetry,
  RetryScheduler,
  type RetrySchedulerOptions,
} from './runtime/retry-scheduler.js';
export type {
  KeyMap,
  ObjectKey,
  ParentKey,
  Source,
  SourceEvent,
} from './runtime/source-event.js';
export {
  SourceStreamDriver,
  type SourceStreamDriverOptions,
  StreamDidNotOpenWithReplaceError,
} from './runtime/source-stream-driver.js';
export { WorkQueue } from './runtime/work-queue.js';
