/**
 * The Lease as the leader elector sees it, and the lock it goes through.
 *
 * Port of client-go's `resourcelock.LeaderElectionRecord` and `resourcelock.Interface`, reduced to
 * the Lease kind (ConfigMap and Endpoints locks are deprecated upstream). The lock is an interface
 * so that `src/coordination/` never imports Kubernetes code: `src/kubernetes/resources/lease-lock.ts` speaks
 * to the API server, tests use an in-memory fake.
 */

/** The fields of a Lease's `spec` that leader election reads and writes. */
export interface LeaseRecord {
  /** The leader's identity; `''` when released or never held. */
  holderIdentity: string;
  /** How long followers wait, from when they observed the last change, before taking over. */
  leaseDurationSeconds: number;
  /** MicroTime (see `formatMicroTime`) when the current holder acquired the lease. */
  acquireTime: string | null;
  /** MicroTime of the holder's last renewal. Informational: expiry is judged on the local clock. */
  renewTime: string | null;
  /** How many times the lease changed hands. */
  leaseTransitions: number;
}

/** A record together with the version it was read or written at, for optimistic concurrency. */
export interface ObservedLease {
  record: LeaseRecord;
  resourceVersion: string;
}

/**
 * Storage for one Lease. Every write is conditional (create only if absent, update only at the
 * given resourceVersion), which is what makes two electors racing for one lease safe: exactly
 * one write wins, the other gets a `LeaseConflictError`.
 */
export interface LeaseLock {
  /** The current Lease, or `null` when there is none. */
  get(signal: AbortSignal): Promise<ObservedLease | null>;
  /** Creates the Lease; rejects with `LeaseConflictError` if it already exists. */
  create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease>;
  /** Replaces the Lease; rejects with `LeaseConflictError` when `resourceVersion` is stale. */
  update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal): Promise<ObservedLease>;
  /** `namespace/name`, for logs. */
  describe(): string;
}

/** Another writer got there first (HTTP 409): the attempt fails and is retried later. */
export class LeaseConflictError extends Error {
  override readonly name = 'LeaseConflictError';
}

/** Field-by-field equality, so a re-read of an unchanged Lease does not reset its observed time. */
export function sameObservedLease(a: ObservedLease | null, b: ObservedLease | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.resourceVersion === b.resourceVersion &&
    a.record.holderIdentity === b.record.holderIdentity &&
    a.record.leaseDurationSeconds === b.record.leaseDurationSeconds &&
    a.record.acquireTime === b.record.acquireTime &&
    a.record.renewTime === b.record.renewTime &&
    a.record.leaseTransitions === b.record.leaseTransitions
  );
}
