/**
 * The desired routing state: what every consumer of the controller's judgement (an SGLang router,
 * an EndpointSlice) should see. The coordinator's pipeline renders it from the reconciled cells,
 * validates it and hands it to the sinks; it is plain data so it can be served, logged and
 * compared as is.
 */

/** One alive cell, as a consumer routes to it. */
interface RoutedCell {
  /** The cell id, e.g. `engine-00001`. */
  cell: string;
  /** The cell's generation: changes when a consumer must reconnect. */
  generation: string;
  /** `host:port` of the cell's leader (IPv6 hosts in brackets). */
  address: string;
  /** A prefill pool's cell: the bootstrap port its prefill router worker is registered with. */
  bootstrapPort?: number | undefined;
}

/**
 * A pool's capacity against `--sink-panic-threshold` (Envoy's panic threshold): in panic while
 * fewer than the threshold's share of its known cells are alive and routable; then the sinks
 * remove nothing from its targets (they still add).
 */
export interface PoolCapacity {
  /** Cells alive and routable (the pool's `cells`). */
  routable: number;
  /** Every cell of the pool the registry knows, alive or not. */
  known: number;
  thresholdPercent: number;
  panic: boolean;
}

/** One pool's routing: its alive cells, sorted by address so equal states compare equal. */
export interface PoolRouting {
  namespace: string;
  pool: string;
  cells: RoutedCell[];
  /**
   * Present when a panic threshold is set; `capacity.panic`: its sinks keep what they list, and
   * still add.
   */
  capacity?: PoolCapacity | undefined;
}

/** `--sink-panic-threshold`'s default: 0, no panic ever (every removal goes ahead). */
const DEFAULT_PANIC_THRESHOLD_PERCENT = 0;

/** How `renderRoutingState` judges capacity; without options no pool is ever in panic. */
interface RenderOptions {
  /**
   * 0–100: a pool whose alive and routable cells are fewer than this share of its known cells
   * is in panic. 0 (the default) turns panic off.
   */
  panicThresholdPercent?: number;
}

/**
 * Whether `routable` of `known` cells is below the threshold: Envoy's rule (panic while the
 * healthy share is under the threshold, leave it once at or above), counted in whole cells so
 * no rounding decides it: routable × 100 < threshold × known.
 */
function inPanic(routable: number, known: number, thresholdPercent: number): boolean {
  return thresholdPercent > 0 && known > 0 && routable * 100 < thresholdPercent * known;
}

/** Every pool with at least one cell, sorted by namespace then pool name. */
export interface RoutingState {
  pools: PoolRouting[];
}

/** The desired state cannot be deployed as rendered; the coordinator's validate phase throws it. */
export class RoutingStateError extends Error {
  override readonly name = 'RoutingStateError';
}

/** The parts of a published cell the routing state is made of. */
export interface RoutableCell {
  namespace: string;
  pool: string;
  id: string;
  alive: boolean;
  /** The registry's judgement of the address: valid, allowed, and claimed by no other alive cell. */
  routable: boolean;
  generation: string;
  address: string | null;
  /** Set only for a prefill pool's cell (see `CellState.bootstrapPort`); absent counts as `null`. */
  bootstrapPort?: number | null;
}

/** Code-unit order, the order every list of routing state is kept in. */
export const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Renders the desired routing state from the published cells: every pool that has a cell, with
 * its alive and routable cells, sorted by address (pools by namespace, then name). Pure:
 * the same cells always render the same state, so an unchanged world deploys nothing.
 *
 * A pool whose cells are all dead is rendered with no cells rather than left out: its consumers
 * must route nowhere, and a pool that is left out means "gone" (its EndpointSlices are deleted).
 */
export function renderRoutingState(
  cells: Iterable<RoutableCell>,
  options: RenderOptions = {},
): RoutingState {
  const threshold = options.panicThresholdPercent ?? DEFAULT_PANIC_THRESHOLD_PERCENT;
  const pools = new Map<string, PoolRouting>();
  const known = new Map<PoolRouting, number>();
  for (const cell of cells) {
    const poolKey = `${cell.namespace}/${cell.pool}`;
    let pool = pools.get(poolKey);
    if (!pool) {
      pool = { namespace: cell.namespace, pool: cell.pool, cells: [] };
      pools.set(poolKey, pool);
    }
    known.set(pool, (known.get(pool) ?? 0) + 1);
    // An unroutable cell (no port, an invalid or clashing address) is left out on its own, and
    // says why on itself; every other cell and pool still deploys.
    if (cell.alive && cell.routable && cell.address !== null) {
      const routed: RoutedCell = {
        cell: cell.id,
        generation: cell.generation,
        address: cell.address,
      };
      if (typeof cell.bootstrapPort === 'number') routed.bootstrapPort = cell.bootstrapPort;
      pool.cells.push(routed);
    }
  }
  for (const pool of pools.values()) {
    pool.cells.sort((a, b) => byString(a.address, b.address) || byString(a.cell, b.cell));
    if (threshold > 0) {
      const count = known.get(pool) ?? 0;
      pool.capacity = {
        routable: pool.cells.length,
        known: count,
        thresholdPercent: threshold,
        panic: inPanic(pool.cells.length, count, threshold),
      };
    }
  }
  return {
    pools: [...pools.values()].sort(
      (a, b) => byString(a.namespace, b.namespace) || byString(a.pool, b.pool),
    ),
  };
}

/** `host:port` with a bracketed IPv6 host, or a hostname/IPv4 host, and a port in 1–65535. */
const ADDRESS = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[-A-Za-z0-9.]*[A-Za-z0-9])?):(\d{1,5})$/;

/**
 * Refuses a desired state that must never be deployed: an address that is not `host:port`, or one
 * address claimed by two cells (two cells behind one endpoint would make a router send one cell's
 * traffic to another, and removing either would cut both).
 */
export function validateRoutingState(state: RoutingState): void {
  const owners = new Map<string, string>();
  for (const pool of state.pools) {
    for (const cell of pool.cells) {
      const match = ADDRESS.exec(cell.address);
      const port = match ? Number(match[1]) : 0;
      if (!match || port < 1 || port > 65_535) {
        throw new RoutingStateError(
          `cell ${pool.namespace}/${cell.cell} has address ${JSON.stringify(cell.address)}, which is not host:port`,
        );
      }
      const owner = owners.get(cell.address);
      const self = `${pool.namespace}/${cell.cell}`;
      if (owner !== undefined) {
        throw new RoutingStateError(
          `address ${cell.address} is claimed by two cells, ${owner} and ${self}; refusing to route to either until that is resolved`,
        );
      }
      owners.set(cell.address, self);
    }
  }
}

/** A one-line summary for logs: pools, alive cells, addresses per pool. */
export function summarizeRoutingState(state: RoutingState): {
  pools: number;
  cells: number;
  byPool: Record<string, number>;
} {
  const byPool: Record<string, number> = {};
  let cells = 0;
  for (const pool of state.pools) {
    byPool[`${pool.namespace}/${pool.pool}`] = pool.cells.length;
    cells += pool.cells.length;
  }
  return { pools: state.pools.length, cells, byPool };
}
