/**
 * What each change the service sees fans out to, in one place. A cell's transition: its pool's
 * capacity, the transition counter, a `cell.changed` event (the bus, so the event stream and its
 * history), a Kubernetes Event (leader only) and, once the cells have synced, a routing run. A
 * workload's change or the workload API's status: the pools' capacity. A pool's capacity change,
 * whichever loop caused it: a log line, a `pool.capacity` event naming the missing and not-alive
 * cells, and (leader only) a Kubernetes Event on its LeaderWorkerSet. A routing run's end or a
 * pool's panic: the sink and panic Kubernetes Events.
 *
 * The order within a transition is the order subscribers may rely on: capacity before the event,
 * so a client that reads the pools on `cell.changed` sees the capacity it caused; the routing
 * trigger last, so a run never begins before the change is published.
 */
import type { Workload } from '../model/workload.js';
import type { CellRegistry, CellTransition } from '../pools/cell-registry.js';
import type { CapacityTransition, PoolCapacityTracker } from '../pools/pool-capacity.js';
import type { Logger } from '../runtime/logger.js';
import type { CellBodies } from './cell-bodies.js';
import type { InitialSyncGate } from './initial-sync-gate.js';
import type { KubernetesEvents } from './kubernetes-events.js';
import type { ServiceMetrics } from './metrics.js';
import type { RoutingController } from './routing-controller.js';
import {
  cellChangedEvent,
  MAX_NAMED_CAPACITY_CELLS,
  type PoolCapacityEvent,
  type ServiceEvent,
} from './service-events.js';
import type { ServiceHandler } from './service-handlers.js';

/** The parts a change reaches, all built before the fan-out. */
interface ChangeFanOutOptions {
  capacity: PoolCapacityTracker;
  /** The pools and cells now, which a `pool.capacity` event names. */
  cells: CellBodies;
  registry: CellRegistry;
  metrics: ServiceMetrics;
  publish: (event: ServiceEvent) => void;
  /** `undefined` without `--events`. */
  kubernetesEvents: KubernetesEvents | undefined;
  /** Before it opens, the first run after sync covers every change, so none triggers one. */
  gate: InitialSyncGate;
  routing: RoutingController;
  logger: Logger;
}

/** The service's subscriber to cell transitions, the workload API's status and routing outcomes. */
export class ChangeFanOut implements ServiceHandler {
  readonly #options: ChangeFanOutOptions;

  constructor(options: ChangeFanOutOptions) {
    this.#options = options;
  }

  cellTransition(transition: CellTransition): void {
    const { capacity, metrics, publish, kubernetesEvents, gate, routing } = this.#options;
    this.#announce(capacity.cellTransition(transition));
    metrics.cellTransition(transition.type);
    const event = cellChangedEvent(transition);
    publish(event);
    kubernetesEvents?.cellTransition(transition);
    if (gate.synced) {
      routing.triggerForCell(`cell ${event.namespace}/${event.cell} ${transition.type}`);
    }
  }

  /** A workload (keyed `namespace/name`, the pool's key) as its loop holds it now; `undefined`: gone. */
  workloadChanged(key: string, workload: Workload | undefined): void {
    this.#announce(this.#options.capacity.setWorkload(key, workload));
  }

  workloadStatusChanged(): void {
    this.#announce(this.#options.capacity.workloadStatusChanged());
  }

  published(event: ServiceEvent): void {
    const { kubernetesEvents, routing } = this.#options;
    if (!kubernetesEvents) return;
    if (event.type === 'reconciliation.completed' || event.type === 'reconciliation.failed') {
      kubernetesEvents.sinksApplied(routing.sinkStatus());
    }
    if (event.type === 'pool.panic') kubernetesEvents.poolPanic(event);
  }

  /** Capacity changes after a pool's first judgement. */
  #announce(transitions: readonly CapacityTransition[]): void {
    const { cells, registry, capacity, publish, kubernetesEvents, logger } = this.#options;
    for (const t of transitions) {
      if (t.from === null) continue;
      const view = cells.pools().find((p) => p.namespace === t.namespace && p.name === t.pool);
      const notAlive = registry
        .list({ namespace: t.namespace, pool: t.pool, alive: false })
        .map((cell) => cell.id);
      const missing = view?.missingCells ?? [];
      const event: PoolCapacityEvent = {
        type: 'pool.capacity',
        namespace: t.namespace,
        pool: t.pool,
        from: t.from,
        to: t.to,
        aliveCells: t.aliveCells,
        desiredCells: t.desiredCells,
        missingCells: missing.slice(0, MAX_NAMED_CAPACITY_CELLS),
        missingCount: missing.length,
        notAliveCells: notAlive.slice(0, MAX_NAMED_CAPACITY_CELLS),
        notAliveCount: notAlive.length,
        reason: t.reason,
      };
      publish(event);
      kubernetesEvents?.poolCapacity(event, capacity.workload(t.namespace, t.pool)?.uid ?? null);
      logger.info(
        {
          pool: `${t.namespace}/${t.pool}`,
          from: t.from,
          to: t.to,
          aliveCells: t.aliveCells,
          desiredCells: t.desiredCells,
        },
        `pool ${t.namespace}/${t.pool} capacity ${t.from} → ${t.to}: ${t.reason}`,
      );
    }
  }
}
