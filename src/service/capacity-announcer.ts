/**
 * How a pool's capacity change is told: a log line, a `pool.capacity` event naming the missing and
 * not-alive cells, and (leader only) a Kubernetes Event on its LeaderWorkerSet. Both loops change
 * capacity (a cell's transition, a workload's change, the workload API's status), so all three say
 * it here, in the same words.
 */
import type { CellRegistry } from '../pools/cell-registry.js';
import type { CapacityTransition, PoolCapacityTracker } from '../pools/pool-capacity.js';
import type { Logger } from '../runtime/logger.js';
import type { CellBodies } from './cell-bodies.js';
import type { KubernetesEvents } from './kubernetes-events.js';
import {
  MAX_NAMED_CAPACITY_CELLS,
  type PoolCapacityEvent,
  type ServiceEvent,
} from './service-events.js';

/** What a capacity announcement reads (the pools and cells now) and where it goes. */
export interface CapacityAnnouncerOptions {
  cells: CellBodies;
  registry: CellRegistry;
  capacity: PoolCapacityTracker;
  publish: (event: ServiceEvent) => void;
  /** `undefined` without `--events`. */
  kubernetesEvents: KubernetesEvents | undefined;
  logger: Logger;
}

/** Announces the capacity transitions the tracker returns, after each pool's first judgement. */
export class CapacityAnnouncer {
  readonly #options: CapacityAnnouncerOptions;

  constructor(options: CapacityAnnouncerOptions) {
    this.#options = options;
  }

  announce(transitions: readonly CapacityTransition[]): void {
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
