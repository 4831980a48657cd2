/**
 * What each change the service sees fans out to, in one place. A cell's transition: its pool's
 * capacity, the transition counter, a `cell.changed` event (the bus, so the event stream and its
 * history), a Kubernetes Event (leader only) and, once the cells have synced, a routing run. The
 * workload API's status: the pools' capacity. A routing run's end or a pool's panic: the sink and
 * panic Kubernetes Events.
 *
 * The order within a transition is the order subscribers may rely on: capacity before the event,
 * so a client that reads the pools on `cell.changed` sees the capacity it caused; the routing
 * trigger last, so a run never begins before the change is published.
 */
import type { CellTransition } from '../pools/cell-registry.js';
import type { PoolCapacityTracker } from '../pools/pool-capacity.js';
import type { CapacityAnnouncer } from './capacity-announcer.js';
import type { InitialSyncGate } from './initial-sync-gate.js';
import type { KubernetesEvents } from './kubernetes-events.js';
import type { ServiceMetrics } from './metrics.js';
import type { RoutingController } from './routing-controller.js';
import { cellChangedEvent, type ServiceEvent } from './service-events.js';
import type { ServiceHandler } from './service-handlers.js';

/** The parts a change reaches, all built before the fan-out. */
export interface ChangeFanOutOptions {
  capacity: PoolCapacityTracker;
  announcer: CapacityAnnouncer;
  metrics: ServiceMetrics;
  publish: (event: ServiceEvent) => void;
  /** `undefined` without `--events`. */
  kubernetesEvents: KubernetesEvents | undefined;
  /** Before it opens, the first run after sync covers every change, so none triggers one. */
  gate: InitialSyncGate;
  routing: RoutingController;
}

/** The service's subscriber to cell transitions, the workload API's status and routing outcomes. */
export class ChangeFanOut implements ServiceHandler {
  readonly #options: ChangeFanOutOptions;

  constructor(options: ChangeFanOutOptions) {
    this.#options = options;
  }

  cellTransition(transition: CellTransition): void {
    const { capacity, announcer, metrics, publish, kubernetesEvents, gate, routing } =
      this.#options;
    announcer.announce(capacity.cellTransition(transition));
    metrics.cellTransition(transition.type);
    const event = cellChangedEvent(transition);
    publish(event);
    kubernetesEvents?.cellTransition(transition);
    if (gate.synced) {
      routing.triggerForCell(`cell ${event.namespace}/${event.cell} ${transition.type}`);
    }
  }

  workloadStatusChanged(): void {
    this.#options.announcer.announce(this.#options.capacity.workloadStatusChanged());
  }

  published(event: ServiceEvent): void {
    const { kubernetesEvents, routing } = this.#options;
    if (!kubernetesEvents) return;
    if (event.type === 'reconciliation.completed' || event.type === 'reconciliation.failed') {
      kubernetesEvents.sinksApplied(routing.sinkStatus());
    }
    if (event.type === 'pool.panic') kubernetesEvents.poolPanic(event);
  }
}
