/**
 * The JSON API's answers → the status page's data, for the browser: it re-fetches the same
 * `GET /api/v1/…` endpoints anyone can call and reduces each answer to what the page shows, the
 * shape the server builds from the control plane (`statusPageData` in routes/status-page.ts).
 * A unit test feeds both the same service and checks the two views, and the rows drawn from
 * them, are equal.
 *
 * Each `Api*` interface names only the fields read here; the route schemas (routes/schemas.ts)
 * describe the whole answers, and a type test keeps them assignable to these.
 */
import type {
  StatusCell,
  StatusCoordinator,
  StatusLeader,
  StatusPool,
  StatusQueue,
  StatusReflector,
  StatusSink,
} from './page-data.js';

/**
 * The fields of one cell of `GET /api/v1/cells` the page reads: a Cells row's fields, with the
 * members (which the row only counts) in place of the counts.
 */
export type ApiCell = Omit<StatusCell, 'podsReady' | 'pods' | 'inStateForMs'> & {
  members: Array<{ ready: boolean }>;
};

/** The fields of one target of `GET /api/v1/sinks` the page reads. */
export interface ApiSink {
  kind: string;
  target: string;
  pool: string;
  mode: string;
  desired: unknown[];
  actual: unknown[];
  pending: unknown[];
  heldByPanic: unknown[];
  panic: boolean;
  wouldAdd: unknown[];
  wouldRemove: unknown[];
  lastError: string | null;
}

/** The Coordinator card's fields about this replica rather than the coordinator's run state. */
type ReplicaFields = 'leading' | 'acting' | 'cellsSynced';

/**
 * The fields of `GET /api/v1/coordinator` the page reads: the Coordinator card's fields, with the
 * run state nested in `state` as the API answers it.
 */
export type ApiCoordinator = Pick<StatusCoordinator, ReplicaFields> & {
  state: Omit<StatusCoordinator, ReplicaFields>;
};

/** `nowMs - Date.parse(since)`, never negative; `null` without a clock or a parseable time. */
function heldForMs(since: string, nowMs: number | undefined): number | null {
  const at = Date.parse(since);
  return nowMs === undefined || Number.isNaN(at) ? null : Math.max(0, nowMs - at);
}

/**
 * A cell as the Cells table shows it: members counted, not listed; `nowMs` (epoch ms, when the
 * drawer knows it) turns `lastTransitionTime` into how long the cell has been in its state.
 */
export function cellView(c: ApiCell, nowMs?: number): StatusCell {
  return {
    key: c.key,
    namespace: c.namespace,
    id: c.id,
    pool: c.pool,
    alive: c.alive,
    whyNotAlive: c.whyNotAlive.map((r) => ({ reason: r.reason, message: r.message })),
    routable: c.routable,
    whyNotRoutable: c.whyNotRoutable.map((r) => ({ reason: r.reason, message: r.message })),
    generation: c.generation,
    address: c.address,
    podsReady: c.members.filter((m) => m.ready).length,
    pods: c.members.length,
    lastTransitionTime: c.lastTransitionTime,
    transitions: c.transitions.map((t) => ({ at: t.at, alive: t.alive, reasons: [...t.reasons] })),
    inStateForMs: heldForMs(c.lastTransitionTime, nowMs),
  };
}

/**
 * A pool as the Pools table shows it; `nowMs` (epoch ms, when the drawer knows it) turns
 * `capacitySince` into how long the capacity state has held.
 */
export function poolView(p: StatusPool, nowMs?: number): StatusPool {
  return {
    namespace: p.namespace,
    name: p.name,
    cells: p.cells,
    aliveCells: p.aliveCells,
    pods: p.pods,
    desiredCells: p.desiredCells,
    missingCells: p.missingCells,
    capacity: p.capacity,
    capacitySince: p.capacitySince,
    capacityReason: p.capacityReason,
    capacityForMs: heldForMs(p.capacitySince, nowMs),
  };
}

/** A sink target as the Sinks table shows it: every list counted. */
export function sinkView(t: ApiSink): StatusSink {
  return {
    kind: t.kind,
    target: t.target,
    pool: t.pool,
    mode: t.mode,
    desired: t.desired.length,
    listed: t.actual.length,
    pending: t.pending.length,
    heldByPanic: t.heldByPanic.length,
    panic: t.panic,
    wouldAdd: t.wouldAdd.length,
    wouldRemove: t.wouldRemove.length,
    lastError: t.lastError,
  };
}

/** The Queue card's data: `GET /api/v1/queue` without its `source`. */
export function queueView(q: StatusQueue): StatusQueue {
  return {
    synced: q.synced,
    depth: q.depth,
    queued: q.queued,
    inFlight:
      q.inFlight === null ? null : { key: q.inFlight.key, runningForMs: q.inFlight.runningForMs },
    retries: q.retries.map((r) => ({ key: r.key, failures: r.failures, dueInMs: r.dueInMs })),
    nextResyncInMs: q.nextResyncInMs,
  };
}

/**
 * The Coordinator card's data: the run state lifted beside leading and acting. The server's first
 * paint reads it from the same answer (`coordinatorAnswer` in routes/coordinator.ts).
 */
export function coordinatorView({
  leading,
  acting,
  cellsSynced,
  state,
}: ApiCoordinator): StatusCoordinator {
  const last = state.lastCompleted;
  const error = state.lastError;
  return {
    leading,
    acting,
    cellsSynced,
    running: state.running,
    runningId: state.runningId,
    pendingReasons: state.pendingReasons,
    consecutiveFailures: state.consecutiveFailures,
    lastError: error === null ? null : { phase: error.phase, message: error.message },
    lastCompleted: last === null ? null : { id: last.id, result: last.result, agoMs: last.agoMs },
  };
}

/** The Reflector card's data: `GET /api/v1/reflector` reduced to phase, health, cursor, error. */
export function reflectorView(r: StatusReflector): StatusReflector {
  return { phase: r.phase, healthy: r.healthy, cursor: r.cursor, lastError: r.lastError };
}

/** The Leadership card's data: `GET /api/v1/leader`'s fields. */
export function leaderView(l: StatusLeader): StatusLeader {
  return {
    identity: l.identity,
    leading: l.leading,
    leader: l.leader,
    lease: l.lease,
    since: l.since,
  };
}
