/**
 * Every event the service publishes on its bus: the coordinator's, the sinks', and the service's
 * own (sync, cell changes, watch state, leadership). `GET /api/v1/events` streams them; metrics
 * and the status page read them. Plain data, so each is one JSON line on the wire.
 */
import type { CoordinatorEvent } from '../coordination/coordinator.js';
import type { RelistReason } from '../model/pod-source-stats.js';
import type { Cell, CellTransition } from '../pools/cell-registry.js';
import type { NotAliveReason, NotRoutableReason } from '../pools/cell-state.js';
import type { CapacityState } from '../pools/pool-capacity.js';
import type { SinkEvent } from '../sinks/sink.js';

/** The initial list is in the store and every cell in it has been reconciled once. */
interface StoreSyncedEvent {
  type: 'store.synced';
  objects: number;
  cells: number;
}

/** A cell's routing-relevant state changed (appeared, gone, alive ↔ not alive, generation, address). */
export interface CellChangedEvent {
  type: 'cell.changed';
  /** The cell id, e.g. `engine-00001`. */
  cell: string;
  namespace: string;
  pool: string;
  /** What changed: the registry's transition type. */
  change: CellTransition['type'];
  alive: boolean;
  whyNotAlive: NotAliveReason[];
  generation: string;
  address: string | null;
  /** The address may be routed to (see the cell's field); false once gone. */
  routable: boolean;
  whyNotRoutable: NotRoutableReason[];
  /** Present (true) only when the cell is gone; then `alive` is false. */
  gone?: true;
}

/**
 * A pool entered or left panic (`--sink-panic-threshold`): while in it, its sinks remove nothing.
 * Published by the leader's deploy, once per entry and once per exit.
 */
export interface PoolPanicEvent {
  type: 'pool.panic';
  namespace: string;
  pool: string;
  inPanic: boolean;
  /** Alive and routable cells, and every known cell of the pool, when it entered or left. */
  routable: number;
  known: number;
  thresholdPercent: number;
}

/**
 * A pool's capacity against its workload changed state (pool-capacity.ts): published on every
 * change after the pool's first judgement, with the cells that make it so.
 */
export interface PoolCapacityEvent {
  type: 'pool.capacity';
  namespace: string;
  pool: string;
  from: CapacityState;
  to: CapacityState;
  aliveCells: number;
  /** `null` when the capacity is `Unknown`. */
  desiredCells: number | null;
  /** Indices with no pod at all, ascending (the first `MAX_NAMED_CAPACITY_CELLS`). */
  missingCells: number[];
  /** How many indices have no pod at all. */
  missingCount: number;
  /** Ids of the pool's cells that exist and are not alive (the first `MAX_NAMED_CAPACITY_CELLS`). */
  notAliveCells: string[];
  /** How many of the pool's cells exist and are not alive. */
  notAliveCount: number;
  /** Why, for a person: `2 of 4 cells alive`. */
  reason: string;
}

/**
 * Cells a `pool.capacity` event (and its Kubernetes Event) names of each kind; the counts say the
 * rest, so an event about a pool of 10,000 stays small.
 */
export const MAX_NAMED_CAPACITY_CELLS = 16;

/** The pod source's reflector changed state, or relisted. */
export interface WatchStateEvent {
  type: 'watch.state';
  phase: string;
  healthy: boolean;
  /** Set when this change is a relist, with its reason. */
  relistReason?: RelistReason;
  lastError?: string;
}

/**
 * This replica began leading (`identity` is its own): from now until `leadership.lost`, its
 * coordinator may write to the sinks.
 */
interface LeadershipAcquiredEvent {
  type: 'leadership.acquired';
  identity: string;
}

/**
 * This replica stopped leading (`identity` is its own): its term's signal has aborted, so its
 * running reconciliation ends and its coordinator begins no new one until it leads again.
 */
interface LeadershipLostEvent {
  type: 'leadership.lost';
  identity: string;
}

/** The observed holder of the Lease changed (this replica included). */
interface LeaderChangedEvent {
  type: 'leader.changed';
  identity: string;
}

/**
 * Every event the service publishes on its bus, as one union discriminated by `type`: what `GET
 * /api/v1/events` streams (`SERVICE_EVENT_TYPES` lists the types), so a consumer can switch on
 * `type` exhaustively.
 */
export type ServiceEvent =
  | CoordinatorEvent
  | SinkEvent
  | PoolPanicEvent
  | PoolCapacityEvent
  | StoreSyncedEvent
  | CellChangedEvent
  | WatchStateEvent
  | LeadershipAcquiredEvent
  | LeadershipLostEvent
  | LeaderChangedEvent;

/** Every event type, for `?types=` validation and documentation. */
export const SERVICE_EVENT_TYPES: readonly ServiceEvent['type'][] = [
  'reconciliation.triggered',
  'reconciliation.started',
  'phase.completed',
  'reconciliation.failed',
  'reconciliation.completed',
  'sink.applied',
  'sink.failed',
  'sink.observed',
  'pool.panic',
  'pool.capacity',
  'store.synced',
  'cell.changed',
  'watch.state',
  'leadership.acquired',
  'leadership.lost',
  'leader.changed',
];

/** The `cell.changed` event for one registry transition. */
export function cellChangedEvent(transition: CellTransition): CellChangedEvent {
  if (transition.type === 'gone') {
    const last: Cell = transition.last;
    return {
      type: 'cell.changed',
      cell: last.id,
      namespace: last.namespace,
      pool: last.pool,
      change: 'gone',
      alive: false,
      whyNotAlive: [],
      generation: last.generation,
      address: last.address,
      routable: false,
      whyNotRoutable: [],
      gone: true,
    };
  }
  const { cell } = transition;
  return {
    type: 'cell.changed',
    cell: cell.id,
    namespace: cell.namespace,
    pool: cell.pool,
    change: transition.type,
    alive: cell.alive,
    whyNotAlive: cell.whyNotAlive,
    generation: cell.generation,
    address: cell.address,
    routable: cell.routable,
    whyNotRoutable: cell.whyNotRoutable,
  };
}
