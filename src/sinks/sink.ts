/**
 * A deploy target of the coordinator's pipeline: something outside the process (an SGLang
 * router's worker list, an EndpointSlice) that must equal the desired routing state.
 *
 * Sinks are level-triggered: every `apply` reads the target's actual state and changes only the
 * difference, so applying the same desired state twice is harmless (the coordinator's drift runs
 * rely on it) and a target that restarted or lost a call converges on the next run.
 */
import type { RoutingState } from '../pools/routing-state.js';

/** The kinds of sink, as `GET /api/v1/sinks` names them. */
export type SinkKind = 'sglang-router' | 'endpointslice' | 'readiness-gate' | 'epp-endpoints-file';

/**
 * `--sink-mode`: `apply` makes every target match; `observe` (a dry run) reads every target,
 * computes what `apply` would add and remove, reports it, and never writes.
 */
export type SinkMode = 'apply' | 'observe';
/**
 * Every `SinkMode`, in the order `--sink-mode` lists them: the flag's help and its parser read this
 * list, so a new mode cannot be accepted by one and missed by the other.
 */
export const SINK_MODES: readonly SinkMode[] = ['apply', 'observe'];
/** Writing is what a sink is for; a dry run is asked for. */
export const DEFAULT_SINK_MODE: SinkMode = 'apply';

/**
 * Which endpoints of a target the sink may remove. `managed`: only those it marked itself
 * (`by: 'labels'`, the router keeps the marks on its workers; an EndpointSlice's managed-by
 * label), or, on a router that keeps no marks, those it recorded adding (`by: 'record'`);
 * `all`: any endpoint it does not desire. `by` is `null` until a read showed which applies.
 */
export interface SinkOwnership {
  mode: 'managed' | 'all';
  /**
   * How the sink tells what it owns: its mark on the target (`labels`), a record of what this
   * process added (`record`), or the API server's field ownership (`field-manager`: the
   * readiness gate owns its one condition by server-side apply). `null`: not known yet, or `all`.
   */
  by: 'labels' | 'record' | 'field-manager' | null;
}

/** One target of one sink for one pool, as `GET /api/v1/sinks` serves it. */
export interface SinkTargetStatus {
  kind: SinkKind;
  /** The router URL, the EndpointSlice's `namespace/name`, or the gated pool's `namespace/pool`. */
  target: string;
  pool: string;
  /**
   * A prefill/decode router's pool: this target is the router's workers of that type (one router
   * then has two targets). Absent for a plain router and a slice.
   */
  role?: 'prefill' | 'decode' | undefined;
  /** Sorted: `http://host:port` for a router, `ip:port` for a slice. */
  desired: string[];
  /**
   * Sorted: the target's list as read at the end of the last apply that reached it, after that
   * apply's adds and removes were sent (empty before the first read). A router add it is still
   * processing is in `pending`, not here, until a later read lists it.
   */
  actual: string[];
  /**
   * Changes sent but not yet visible on the target (e.g. a router add still being processed), and
   * router adds the router did not take (`reason`), held until `retryAt`.
   */
  pending: Array<{
    operation: 'add' | 'remove';
    endpoint: string;
    since: string;
    /** Why the router's answer was not believed (a 409 without a worker id, an add never listed). */
    reason?: string | undefined;
    /** RFC 3339: the add is not sent again before then; a run begins at that time. */
    retryAt?: string | undefined;
  }>;
  /**
   * RFC 3339 time of the last apply that completed without error (every call answered; adds the
   * router did not take may still be named in `lastError`); `null` before one.
   */
  lastAppliedAt: string | null;
  /**
   * The last apply's error for this target, or the router adds it did not take (see `pending`);
   * `null` after a clean success. Never holds secrets.
   */
  lastError: string | null;
  /**
   * RFC 3339 time before which the target is not called again (its last call failed: see
   * `TargetBackoff`); `null` when it may be called now.
   */
  backoffUntil: string | null;
  /** `apply` or `observe` (`--sink-mode`). */
  mode: SinkMode;
  /** Observe mode: what the last read says `apply` would add now (sorted); `[]` in apply mode. */
  wouldAdd: string[];
  /** Observe mode: what `apply` would remove now (sorted; panic and ownership honoured). */
  wouldRemove: string[];
  /** The target's pool is in panic (`--sink-panic-threshold`): nothing is removed from it. */
  panic: boolean;
  /** Listed endpoints that are not desired but kept because the pool is in panic (sorted). */
  heldByPanic: string[];
  /**
   * A router only: listed, not desired, at a URL this process added, but without its mark (the
   * router dropped or rewrote the labels), so `managed` ownership does not remove it (sorted).
   */
  unmarked?: string[] | undefined;
  ownership: SinkOwnership;
}

/** What one `apply` changed on one target, published on the bus as `sink.applied`. */
interface SinkChange {
  type: 'sink.applied';
  kind: SinkKind;
  target: string;
  pool: string;
  added: string[];
  removed: string[];
}

/** One target's failure in one `apply`, published on the bus as `sink.failed`. */
export interface SinkFailure {
  type: 'sink.failed';
  kind: SinkKind;
  target: string;
  pool: string;
  error: string;
}

/**
 * Observe mode: what `apply` would change on one target, published as `sink.observed` whenever
 * that differs from the last one reported for the target (so a steady diff is one event).
 */
interface SinkObservation {
  type: 'sink.observed';
  kind: SinkKind;
  target: string;
  pool: string;
  wouldAdd: string[];
  wouldRemove: string[];
}

/**
 * What sinks publish on the service's bus: a change made, a failure, or (observe mode) a change
 * that would be made. Part of `ServiceEvent`, so the event stream's `types` filter and the status
 * page name these `type`s.
 */
export type SinkEvent = SinkChange | SinkFailure | SinkObservation;

/** The error of a target `apply` did not call because its backoff holds it. */
export function heldError(untilIso: string, lastError: string | null): string {
  return `not called until ${untilIso}: its last call failed${lastError ? ` (${lastError})` : ''}`;
}

/**
 * Thrown by `apply` after every target was tried, when at least one failed: one unreachable
 * target never keeps the others from converging. The failed ones are held by their backoff, and
 * the service's deploy asks for a run when the earliest may be called again (`nextAttemptAtMs`).
 */
export class SinkApplyError extends Error {
  readonly failures: readonly SinkFailure[];
  constructor(failures: readonly SinkFailure[]) {
    super(
      failures.map((f) => `${f.kind} ${f.target} (pool ${f.pool}): ${f.error}`).join('; ') ||
        'sink apply failed',
    );
    this.name = 'SinkApplyError';
    this.failures = failures;
  }
}

/**
 * What the coordinator's deploy phase calls, through one `SinkWorker` per sink: each sink owns its
 * targets' state between runs and is never called concurrently (its worker runs one apply at a
 * time). `status()` and `nextAttemptAtMs()` are synchronous reads for the control plane and the
 * routing controller, served from what the last `apply` learnt.
 */
export interface Sink {
  readonly kind: SinkKind;
  /**
   * Makes every target match `desired`: reads actual state, changes only the difference, tries
   * every target even when one fails, then throws `SinkApplyError` naming the failed ones.
   * Honours `signal`: once it aborts, no further change is sent.
   */
  apply(desired: RoutingState, signal: AbortSignal): Promise<void>;
  /** Per target, what was desired, what was last read, and how the last apply went. */
  status(): SinkTargetStatus[];
  /**
   * The earliest clock time (the sink's `Clock`) at which a target held by its backoff may be
   * called again; `undefined` when none is held. The service's deploy asks the coordinator for a
   * run then (`requeueAfterMs`), so the held target's change is retried as soon as its backoff
   * allows.
   */
  nextAttemptAtMs(): number | undefined;
}
