/**
 * Each pool against the workload it belongs to: how many cells the workload asks for, which of
 * them have no pod at all, and the pool's capacity state.
 *
 * Pools are counted from the pods that exist, so a cell whose pods are all gone (or never got
 * scheduled) simply stops being counted; only the workload says how many there should be. A pool
 * is joined to its workload (a LeaderWorkerSet) by namespace and name, which is exactly how LWS
 * labels its pods (`leaderworkerset.sigs.k8s.io/name`). The state:
 * - `Full`: at least as many alive cells as the workload asks for (a workload asking for none is
 *   `Full` with none);
 * - `Degraded`: some alive, fewer than asked for;
 * - `Empty`: none alive while the workload asks for some;
 * - `Unknown`: no workload of that name, or the workload API is not served, not permitted, not
 *   listed yet or turned off: then the pool is judged as before, by its cells alone.
 *
 * The tracker keeps, per pool, the alive count from the cell transitions it is fed (so a state
 * change is noticed at the transition that causes it, in constant time), the workload from the
 * workload loop, and since when each pool's state holds. What the API shows is built from the
 * registry's pool summaries on read, cached per version.
 */
import type { Workload, WorkloadApiStatus, WorkloadCondition } from '../model/workload.js';
import type { ParentKey } from '../runtime/source-event.js';
import { cellId, parentKeyOf, parseIndex } from './cell-key.js';
import type { Cell, CellFilter, CellTransition, PoolSummary } from './cell-registry.js';
import { GENERATION_HEX_LENGTH } from './cell-state.js';

/** A pool's capacity against its workload (see the module comment). */
export type CapacityState = 'Full' | 'Degraded' | 'Empty' | 'Unknown';

/** What a pool gains from its workload; every field is always present. */
interface PoolCapacity {
  /** The workload's `spec.replicas`; `null` when the capacity is `Unknown`. */
  desiredCells: number | null;
  /** Indices below `desiredCells` with no cell at all (no pod of that group exists), ascending. */
  missingCells: number[];
  /** The workload's own count of ready groups (LWS `status.readyReplicas`); `null` when unknown. */
  readyReplicas: number | null;
  /** The workload's status conditions (LWS: `Available`, `Progressing`, `UpdateInProgress`). */
  workloadConditions: WorkloadCondition[];
  capacity: CapacityState;
  /** RFC 3339: since when `capacity` has held (as this replica saw it). */
  capacitySince: string;
  /** Why the pool is in its state, for a person. */
  capacityReason: string;
}

/** A pool as the API shows it: its counts and its capacity. */
export interface PoolView extends PoolSummary, PoolCapacity {}

/** One change of a pool's capacity state: the `pool.capacity` event and a Kubernetes Event. */
export interface CapacityTransition {
  namespace: string;
  pool: string;
  /** `null`: the pool was not tracked before (it just appeared). */
  from: CapacityState | null;
  to: CapacityState;
  aliveCells: number;
  desiredCells: number | null;
  /** The workload's name when there is one: what a Kubernetes Event is about. */
  workload: string | null;
  reason: string;
}

/** Options of `PoolCapacityTracker`. */
interface PoolCapacityTrackerOptions {
  /** Epoch ms for `capacitySince`; default `Date.now`. */
  wallClock?: (() => number) | undefined;
  /** Where the workload API stands: the reason of every `Unknown` when it is not `available`. */
  workloadStatus: () => WorkloadApiStatus;
}

interface Tracked {
  namespace: string;
  pool: string;
  /** Alive state per cell key, from the transitions. */
  cells: Map<ParentKey, boolean>;
  alive: number;
  state: CapacityState;
  since: string;
}

/** `namespace/pool`: how pools and workloads are joined. */
function poolKeyOf(namespace: string, pool: string): string {
  return parentKeyOf(namespace, pool);
}

/** The group index a cell id carries (`engine-00003` of pool `engine` → 3), if it carries one. */
export function cellIndexOf(pool: string, id: string): number | undefined {
  if (!id.startsWith(`${pool}-`)) return undefined;
  const index = parseIndex(id.slice(pool.length + 1));
  return index !== undefined && cellId(pool, index) === id ? index : undefined;
}

/** The capacity state of `alive` cells against `workload`, with its reason. */
function judgeCapacity(
  alive: number,
  workload: Workload | undefined,
  api: WorkloadApiStatus,
  namespace: string,
  pool: string,
): { state: CapacityState; reason: string } {
  if (!workload) {
    return {
      state: 'Unknown',
      reason:
        api.state === 'available'
          ? `no LeaderWorkerSet ${namespace}/${pool}: the pool is judged by its cells alone`
          : api.message,
    };
  }
  const desired = workload.desiredCells;
  const said = `${alive} of ${desired} cells alive`;
  if (desired === 0) return { state: 'Full', reason: 'the LeaderWorkerSet asks for no cells' };
  if (alive === 0) return { state: 'Empty', reason: `no cell alive; ${desired} asked for` };
  if (alive < desired) return { state: 'Degraded', reason: said };
  return { state: 'Full', reason: said };
}

/** The placeholder of a desired cell that has no pod: never alive, never routed to. */
export function placeholderCell(
  namespace: string,
  pool: string,
  index: number,
  since: string,
): Cell {
  const id = cellId(pool, index);
  return {
    key: parentKeyOf(namespace, id),
    namespace,
    pool,
    id,
    size: null,
    alive: false,
    whyNotAlive: [
      {
        reason: 'NoPods',
        message: `no pod of group ${index} exists; the LeaderWorkerSet asks for it`,
        indices: [index],
      },
    ],
    generation: '0'.repeat(GENERATION_HEX_LENGTH),
    leader: null,
    address: null,
    routable: false,
    whyNotRoutable: [{ reason: 'NoServingPort', message: 'the cell has no pod' }],
    bootstrapPort: null,
    members: [],
    lastTransitionTime: since,
    transitions: [{ at: since, alive: false, reasons: ['NoPods'] }],
  };
}

/** The pools' capacity against their workloads (see the module comment). */
export class PoolCapacityTracker {
  readonly #wallClock: () => number;
  readonly #workloadStatus: () => WorkloadApiStatus;
  readonly #workloads = new Map<string, Workload>();
  readonly #tracked = new Map<string, Tracked>();
  #version = 0;

  constructor(options: PoolCapacityTrackerOptions) {
    this.#wallClock = options.wallClock ?? Date.now;
    this.#workloadStatus = options.workloadStatus;
  }

  /** Bumps on every change of a workload or a pool's state; with the registry's, keys caches. */
  get version(): number {
    return this.#version;
  }

  /** Hears one cell transition; returns the capacity change it caused, if any. */
  cellTransition(transition: CellTransition): CapacityTransition[] {
    const cell = transition.type === 'gone' ? transition.last : transition.cell;
    const poolKey = poolKeyOf(cell.namespace, cell.pool);
    const tracked = this.#track(cell.namespace, cell.pool);
    const key = transition.type === 'gone' ? transition.key : cell.key;
    const before = tracked.cells.get(key);
    if (before === true) tracked.alive -= 1;
    if (transition.type === 'gone') tracked.cells.delete(key);
    else {
      tracked.cells.set(key, cell.alive);
      if (cell.alive) tracked.alive += 1;
    }
    return this.#refresh(poolKey);
  }

  /** The workload of pool `namespace/name` is now `workload` (`undefined`: there is none). */
  setWorkload(poolKey: string, workload: Workload | undefined): CapacityTransition[] {
    const previous = this.#workloads.get(poolKey);
    if (workload) this.#workloads.set(poolKey, workload);
    else this.#workloads.delete(poolKey);
    if (JSON.stringify(previous) !== JSON.stringify(workload)) this.#version += 1;
    if (workload) this.#track(workload.namespace, workload.name);
    return this.#refresh(poolKey);
  }

  /** The workload API's status changed: every pool's `Unknown` reason (or state) may have. */
  workloadStatusChanged(): CapacityTransition[] {
    this.#version += 1;
    return [...this.#tracked.keys()].flatMap((key) => this.#refresh(key));
  }

  /** The workload of a pool, if known. */
  workload(namespace: string, pool: string): Workload | undefined {
    return this.#workloads.get(poolKeyOf(namespace, pool));
  }

  /**
   * `summaries` (the registry's pools) with their capacity, plus a pool for every workload that
   * has no cell at all (all its groups are missing); sorted by namespace and name.
   */
  pools(summaries: readonly PoolSummary[]): PoolView[] {
    const api = this.#workloadStatus();
    const views: PoolView[] = [];
    const seen = new Set<string>();
    for (const summary of summaries) {
      const key = poolKeyOf(summary.namespace, summary.name);
      seen.add(key);
      views.push(this.#view(summary, api));
    }
    for (const [key, workload] of this.#workloads) {
      if (seen.has(key)) continue;
      views.push(
        this.#view(
          {
            namespace: workload.namespace,
            name: workload.name,
            cells: 0,
            aliveCells: 0,
            pods: 0,
            cellIds: [],
          },
          api,
        ),
      );
    }
    return views.sort((a, b) =>
      a.namespace !== b.namespace
        ? a.namespace < b.namespace
          ? -1
          : 1
        : a.name < b.name
          ? -1
          : a.name > b.name
            ? 1
            : 0,
    );
  }

  /** The placeholder cells of `pools` that `filter` admits, in key order. */
  placeholders(pools: readonly PoolView[], filter: CellFilter = {}): Cell[] {
    if (filter.alive === true) return [];
    const cells: Cell[] = [];
    for (const pool of pools) {
      if (pool.missingCells.length === 0) continue;
      if (filter.namespace !== undefined && pool.namespace !== filter.namespace) continue;
      if (filter.pool !== undefined && pool.name !== filter.pool) continue;
      for (const index of pool.missingCells) {
        cells.push(placeholderCell(pool.namespace, pool.name, index, pool.capacitySince));
      }
    }
    return cells.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  #view(summary: PoolSummary, api: WorkloadApiStatus): PoolView {
    const key = poolKeyOf(summary.namespace, summary.name);
    const workload = this.#workloads.get(key);
    const judged = judgeCapacity(
      summary.aliveCells,
      workload,
      api,
      summary.namespace,
      summary.name,
    );
    const missingCells: number[] = [];
    if (workload) {
      const present = new Set<number>();
      for (const id of summary.cellIds) {
        const index = cellIndexOf(summary.name, id);
        if (index !== undefined) present.add(index);
      }
      for (let index = 0; index < workload.desiredCells; index += 1) {
        if (!present.has(index)) missingCells.push(index);
      }
    }
    return {
      ...summary,
      desiredCells: workload?.desiredCells ?? null,
      missingCells,
      readyReplicas: workload?.readyReplicas ?? null,
      workloadConditions: workload?.conditions ?? [],
      capacity: judged.state,
      capacitySince: this.#tracked.get(key)?.since ?? new Date(this.#wallClock()).toISOString(),
      capacityReason: judged.reason,
    };
  }

  #track(namespace: string, pool: string): Tracked {
    const key = poolKeyOf(namespace, pool);
    let tracked = this.#tracked.get(key);
    if (!tracked) {
      tracked = {
        namespace,
        pool,
        cells: new Map(),
        alive: 0,
        state: 'Unknown',
        since: new Date(this.#wallClock()).toISOString(),
      };
      this.#tracked.set(key, tracked);
      this.#version += 1;
      // A new pool starts Unknown; its first judgement below is its first transition.
      tracked.state = judgeCapacity(
        0,
        this.#workloads.get(key),
        this.#workloadStatus(),
        namespace,
        pool,
      ).state;
      this.#fresh.add(key);
    }
    return tracked;
  }

  /** Pools tracked since their last refresh: their first judgement is reported `from: null`. */
  readonly #fresh = new Set<string>();

  #refresh(poolKey: string): CapacityTransition[] {
    const tracked = this.#tracked.get(poolKey);
    if (!tracked) return [];
    const workload = this.#workloads.get(poolKey);
    if (!workload && tracked.cells.size === 0) {
      this.#tracked.delete(poolKey);
      this.#fresh.delete(poolKey);
      this.#version += 1;
      return [];
    }
    const judged = judgeCapacity(
      tracked.alive,
      workload,
      this.#workloadStatus(),
      tracked.namespace,
      tracked.pool,
    );
    const fresh = this.#fresh.delete(poolKey);
    if (!fresh && judged.state === tracked.state) return [];
    const from = fresh ? null : tracked.state;
    if (!fresh || judged.state !== tracked.state) {
      tracked.since = new Date(this.#wallClock()).toISOString();
    }
    tracked.state = judged.state;
    this.#version += 1;
    return [
      {
        namespace: tracked.namespace,
        pool: tracked.pool,
        from,
        to: judged.state,
        aliveCells: tracked.alive,
        desiredCells: workload?.desiredCells ?? null,
        workload: workload ? workload.name : null,
        reason: judged.reason,
      },
    ];
  }
}
