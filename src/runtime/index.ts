/**
 * The `./runtime` package entry (and the whole of the `@pool-controller/runtime` package's root):
 * the controller runtime of RUNTIME.md — store, queue, retries, stream driver, loop, clock — and
 * nothing else, so a program that imports only this loads no HTTP service, no metrics library and
 * no Kubernetes client, and installs with no dependencies (docs/library.md).
 */
export { abortReason, type Clock, realClock } from './clock.js';
export type { LoopInstrumentation, ReconcileResult } from './instrumentation.js';
export type { Logger } from './logger.js';
export { NO_LOGGER_WARNING_CODE } from './no-logger-warning.js';
export {
  ObjectStore,
  type ObjectStoreOptions,
  type ReplaceInParts,
} from './object-store.js';
export {
  DEFAULT_FAILURE_BASE_DELAY_MS,
  DEFAULT_FAILURE_MAX_DELAY_MS,
  DEFAULT_RESYNC_PERIOD_MS,
  DEFAULT_SOURCE_RETRY_DELAY_MS,
  InitialSyncTimeoutError,
  LoopStoppedError,
  type Reconcile,
  ReconcileLoop,
  type ReconcileLoopOptions,
  type ReconcileLoopState,
  WORKER_SLICE_MS,
} from './reconcile-loop.js';
export {
  DEFAULT_RETRY_POLL_INTERVAL_MS,
  type PendingRetry,
  RetryScheduler,
  type RetrySchedulerOptions,
} from './retry-scheduler.js';
export type {
  KeyMap,
  ObjectKey,
  ParentKey,
  Source,
  SourceEvent,
} from './source-event.js';
export {
  DEFAULT_SOURCE_RETRY_MAX_DELAY_MS,
  SourceStreamDriver,
  type SourceStreamDriverOptions,
  SourceStreamEndedError,
  StreamDidNotOpenWithReplaceError,
} from './source-stream-driver.js';
export { WorkQueue } from './work-queue.js';
