/**
 * The per-pool metric families — cells by aliveness, unroutable cells, desired and alive cells,
 * pods — written straight as Prometheus text rather than through prom-client gauges. At 5,000
 * pools they are 30,000 series, and prom-client's way (a labels object and a hashed key per series
 * at every scrape, then each series' labels formatted again) was most of a `/metrics` render:
 * about 0.6 s of the event loop per render under bench:api's hostile reads, and most of the
 * garbage its collector then spent twice as long on (issue 36). The text is the same prom-client
 * writes (`# HELP`, `# TYPE`, one line per series, label values escaped alike), written a slice of
 * pools at a time with a turn of the event loop between slices.
 */
import type { CellRegistry } from '../pools/cell-registry.js';
import type { PoolView } from '../pools/pool-capacity.js';

/**
 * Series per slice of a family: a slice is a few milliseconds of string building, so no request
 * (or probe) waits behind a family for long, while 30,000 series take thirty turns, not thousands.
 */
export const SERIES_PER_SLICE = 1_000;

/** What the families read, as `MetricsBindings` has it. */
export interface PoolFamilySources {
  cells: Pick<CellRegistry, 'pools' | 'list'>;
  /** Every pool with its capacity; without it no desired/alive-cells series. */
  pools?: (() => readonly PoolView[]) | undefined;
}

/** One family: its name, help, and its series lines, read from the sources as they are now. */
interface Family {
  name: string;
  help: string;
  lines: (sources: PoolFamilySources) => Iterable<string>;
}

/** prom-client's `escapeLabelValue`: backslash, newline and double quote escaped. */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** `namespace="…",pool="…"`, escaped. */
function poolLabels(namespace: string, pool: string): string {
  return `namespace="${labelValue(namespace)}",pool="${labelValue(pool)}"`;
}

/** A pool of the registry's summaries with its count of alive cells no sink routes. */
interface UnroutableCount {
  namespace: string;
  pool: string;
  unroutable: number;
}

/**
 * Alive unroutable cells per pool: every pool at 0, then one per such cell (a cell of a pool the
 * summaries do not name yet gets its own series, as the gauge's `inc` gave it).
 */
function unroutableCounts(sources: PoolFamilySources): UnroutableCount[] {
  const counts = new Map<string, UnroutableCount>();
  const keyOf = (namespace: string, pool: string): string => `${namespace}/${pool}`;
  for (const pool of sources.cells.pools()) {
    counts.set(keyOf(pool.namespace, pool.name), {
      namespace: pool.namespace,
      pool: pool.name,
      unroutable: 0,
    });
  }
  for (const cell of sources.cells.list()) {
    if (!cell.alive || cell.routable) continue;
    const key = keyOf(cell.namespace, cell.pool);
    const count = counts.get(key) ?? { namespace: cell.namespace, pool: cell.pool, unroutable: 0 };
    count.unroutable += 1;
    counts.set(key, count);
  }
  return [...counts.values()];
}

/** The families, in the order they are written. */
const FAMILIES: readonly Family[] = [
  {
    name: 'pool_controller_cells',
    help: 'Reconciled cells by namespace, pool and whether they are alive.',
    *lines(sources) {
      for (const pool of sources.cells.pools()) {
        const labels = poolLabels(pool.namespace, pool.name);
        yield `pool_controller_cells{${labels},alive="true"} ${pool.aliveCells}`;
        yield `pool_controller_cells{${labels},alive="false"} ${pool.cells - pool.aliveCells}`;
      }
    },
  },
  {
    name: 'pool_controller_cells_unroutable',
    help: "Alive cells left out of every sink because their address is missing, invalid or claimed by another cell (see the cell's whyNotRoutable), by namespace and pool.",
    *lines(sources) {
      for (const count of unroutableCounts(sources)) {
        const labels = poolLabels(count.namespace, count.pool);
        yield `pool_controller_cells_unroutable{${labels}} ${count.unroutable}`;
      }
    },
  },
  {
    name: 'pool_controller_pool_desired_cells',
    help: "Cells a pool's workload asks for (its LeaderWorkerSet's spec.replicas), by namespace and pool; no series while the pool's capacity is Unknown.",
    *lines(sources) {
      for (const pool of sources.pools?.() ?? []) {
        if (pool.desiredCells === null) continue;
        const labels = poolLabels(pool.namespace, pool.name);
        yield `pool_controller_pool_desired_cells{${labels}} ${pool.desiredCells}`;
      }
    },
  },
  {
    name: 'pool_controller_pool_alive_cells',
    help: 'Alive cells of a pool, by namespace and pool, including a pool whose LeaderWorkerSet has no pod yet (0): compare with pool_controller_pool_desired_cells.',
    *lines(sources) {
      for (const pool of sources.pools?.() ?? []) {
        const labels = poolLabels(pool.namespace, pool.name);
        yield `pool_controller_pool_alive_cells{${labels}} ${pool.aliveCells}`;
      }
    },
  },
  {
    name: 'pool_controller_pods',
    help: 'Pods in reconciled cells, by namespace and pool.',
    *lines(sources) {
      for (const pool of sources.cells.pools()) {
        yield `pool_controller_pods{${poolLabels(pool.namespace, pool.name)}} ${pool.pods}`;
      }
    },
  },
];

/** The families' names, so nothing else registers a metric under one of them. */
export const POOL_FAMILY_NAMES: readonly string[] = FAMILIES.map((f) => f.name);

/** A turn of the event loop, so requests and probes waiting behind a slice go first. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Each family as prom-client's `getSingleMetricAsString` would write it (`# HELP`, `# TYPE`, the
 * series; no trailing newline), from `sources` (nothing but the headers when unbound).
 */
export async function renderPoolFamilies(
  sources: PoolFamilySources | undefined,
): Promise<string[]> {
  const texts: string[] = [];
  for (const family of FAMILIES) {
    const out = [`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} gauge`];
    let inSlice = 0;
    for (const line of sources ? family.lines(sources) : []) {
      out.push(line);
      inSlice += 1;
      if (inSlice === SERIES_PER_SLICE) {
        inSlice = 0;
        await turn();
      }
    }
    texts.push(out.join('\n'));
    await turn();
  }
  return texts;
}
