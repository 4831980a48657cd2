/**
 * What the service tells Kubernetes users as Events (events.k8s.io/v1, through the recorder in
 * src/kubernetes/resources/event-recorder.ts): `CellAlive` / `CellNotAlive` (with the reasons)
 * regarding a cell's leader pod, and `SinkFailed` / `SinkRecovered` regarding the controller's own
 * pod (`POD_NAME`, `POD_NAMESPACE`), for each sink target whose last apply began or stopped
 * failing.
 *
 * Only the acting leader emits: every replica sees the same cell transitions and could report
 * them, but one Event stream per fact is what `kubectl describe` should show.
 */
import type { EventObjectReference } from '../kubernetes/resources/event-api.js';
import type { EventOccurrence } from '../kubernetes/resources/event-recorder.js';
import type { CellTransition } from '../pools/cell-registry.js';
import type { SinkTargetStatus } from '../sinks/sink.js';
import type { PoolCapacityEvent, PoolPanicEvent } from './service-events.js';

/** The action of cell Events: the controller judged the cell. */
const CELL_EVENT_ACTION = 'Reconcile';
/** The action of sink Events: the controller deployed to a target. */
const SINK_EVENT_ACTION = 'Deploy';
/** The action of panic Events: the controller held (or released) a pool's removals. */
const PANIC_EVENT_ACTION = 'GuardRemovals';
/** The action of capacity Events: the controller compared a pool with its workload. */
const CAPACITY_EVENT_ACTION = 'CompareCapacity';

/** Options of `KubernetesEvents`: where occurrences go, whom sink Events regard, who acts. */
interface KubernetesEventsOptions {
  record: (occurrence: EventOccurrence) => void;
  /** The controller's own pod; `undefined` outside a pod (no sink Events then). */
  self: EventObjectReference | undefined;
  /** Whether this replica acts now (leads, and has started its term). */
  acting: () => boolean;
}

/**
 * Turns cell transitions and sink status changes into Event occurrences, on their edges only (a
 * target failing again with the same error is no new fact), while this replica acts.
 */
export class KubernetesEvents {
  readonly #options: KubernetesEventsOptions;
  /** By `kind target`: the last error seen, for the failed ↔ recovered edges. */
  #failing = new Map<string, string>();

  constructor(options: KubernetesEventsOptions) {
    this.#options = options;
  }

  /** A cell's transition; `alive` and `not-alive` become Events on its leader pod. */
  cellTransition(transition: CellTransition): void {
    if (transition.type !== 'alive' && transition.type !== 'not-alive') return;
    if (!this.#options.acting()) return;
    const { cell } = transition;
    const leader = cell.members.find((m) => m.name === cell.leader) ?? cell.members[0];
    if (!leader) return;
    const regarding: EventObjectReference = {
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: cell.namespace,
      name: leader.name,
      uid: leader.uid,
    };
    if (transition.type === 'alive') {
      this.#options.record({
        regarding,
        type: 'Normal',
        reason: 'CellAlive',
        action: CELL_EVENT_ACTION,
        note: `cell ${cell.id} of pool ${cell.pool} is alive${cell.address ? ` at ${cell.address}` : ''}`,
      });
      return;
    }
    this.#options.record({
      regarding,
      type: 'Warning',
      reason: 'CellNotAlive',
      action: CELL_EVENT_ACTION,
      note: `cell ${cell.id} of pool ${cell.pool} is not alive: ${transition.reasons.map((r) => `${r.reason}: ${r.message}`).join('; ')}`,
    });
  }

  /**
   * A pool entering or leaving panic (`--sink-panic-threshold`), regarding the controller's own
   * pod: the pool's pods are not what changed, the controller's behaviour towards them is.
   */
  poolPanic(event: PoolPanicEvent): void {
    const self = this.#options.self;
    if (!self || !this.#options.acting()) return;
    const share = `${event.routable} of ${event.known} cells alive and routable, threshold ${event.thresholdPercent}%`;
    this.#options.record(
      event.inPanic
        ? {
            regarding: self,
            type: 'Warning',
            reason: 'PoolPanicEntered',
            action: PANIC_EVENT_ACTION,
            note: `pool ${event.namespace}/${event.pool} entered panic (${share}): its sinks remove nothing until it leaves`,
          }
        : {
            regarding: self,
            type: 'Normal',
            reason: 'PoolPanicExited',
            action: PANIC_EVENT_ACTION,
            note: `pool ${event.namespace}/${event.pool} left panic (${share}): held removals go ahead`,
          },
    );
  }

  /**
   * A pool's capacity changed state, regarding its LeaderWorkerSet (`uid`: the LWS's, so
   * `kubectl describe lws` lists the Event): `PoolDegraded` and `PoolEmpty` on entering those
   * states, `PoolRecovered` on reaching `Full` from either. Changes to or from `Unknown` (no
   * LWS, the API not served) are no capacity fact and make no Event.
   */
  poolCapacity(event: PoolCapacityEvent, uid: string | null): void {
    if (!this.#options.acting() || event.to === event.from) return;
    const reason =
      event.to === 'Degraded'
        ? 'PoolDegraded'
        : event.to === 'Empty'
          ? 'PoolEmpty'
          : event.to === 'Full' && (event.from === 'Degraded' || event.from === 'Empty')
            ? 'PoolRecovered'
            : undefined;
    if (reason === undefined) return;
    const named = (what: string, items: readonly (string | number)[], total: number): string =>
      total === 0
        ? ''
        : `; ${what}: ${items.join(', ')}${total > items.length ? ` and ${total - items.length} more` : ''}`;
    this.#options.record({
      regarding: {
        apiVersion: 'leaderworkerset.x-k8s.io/v1',
        kind: 'LeaderWorkerSet',
        namespace: event.namespace,
        name: event.pool,
        ...(uid !== null ? { uid } : {}),
      },
      type: reason === 'PoolRecovered' ? 'Normal' : 'Warning',
      reason,
      action: CAPACITY_EVENT_ACTION,
      note: `pool ${event.namespace}/${event.pool} ${event.to === 'Full' ? 'is full again' : `is ${event.to.toLowerCase()}`}: ${event.aliveCells} of ${event.desiredCells ?? '?'} cells alive${named('no pod for groups', event.missingCells, event.missingCount)}${named('not alive', event.notAliveCells, event.notAliveCount)}`,
    });
  }

  /** The sinks' status after a run: a target that began or stopped failing is an Event. */
  sinksApplied(statuses: readonly SinkTargetStatus[]): void {
    const now = new Map<string, string>();
    for (const status of statuses) {
      if (status.lastError !== null) now.set(`${status.kind} ${status.target}`, status.lastError);
    }
    const before = this.#failing;
    this.#failing = now;
    const self = this.#options.self;
    if (!self || !this.#options.acting()) return;
    for (const [target, error] of now) {
      if (before.has(target)) continue;
      this.#options.record({
        regarding: self,
        type: 'Warning',
        reason: 'SinkFailed',
        action: SINK_EVENT_ACTION,
        note: `${target}: ${error}`,
      });
    }
    for (const target of before.keys()) {
      if (now.has(target)) continue;
      if (!statuses.some((s) => `${s.kind} ${s.target}` === target)) continue; // gone, not recovered
      this.#options.record({
        regarding: self,
        type: 'Normal',
        reason: 'SinkRecovered',
        action: SINK_EVENT_ACTION,
        note: `${target}: applied again`,
      });
    }
  }
}
