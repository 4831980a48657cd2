/**
 * The per-pool metric families, written without prom-client: the same text prom-client's gauges
 * wrote for the same pools, and a turn of the event loop at least every `SERIES_PER_SLICE` series.
 */
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CellRegistry } from '../../src/pools/cell-registry.js';
import type { PoolView } from '../../src/pools/pool-capacity.js';
import {
  POOL_FAMILY_NAMES,
  type PoolFamilySources,
  renderPoolFamilies,
  SERIES_PER_SLICE,
} from '../../src/service/pool-metric-families.js';
import { cellState } from '../support/cell-states.js';

/** `count` pools of one cell each in `ns`, every third not alive and every fifth unroutable. */
function registry(count: number): CellRegistry {
  const cells = new CellRegistry({ wallClock: () => Date.parse('2025-06-01T00:00:00Z') });
  for (let i = 0; i < count; i += 1) {
    const state = cellState(0, {
      pool: `pool-${i}`,
      ready: i % 3 !== 0,
      ...(i % 5 === 0 ? { podIP: null } : {}),
    });
    cells.publish(state.key, state);
  }
  return cells;
}

/** Capacity views of the registry's pools: desired known for every other pool. */
function poolViews(cells: CellRegistry): PoolView[] {
  return cells.pools().map((pool, i) => ({
    ...pool,
    desiredCells: i % 2 === 0 ? 2 : null,
    missingCells: [],
    readyReplicas: null,
    workloadConditions: [],
    capacity: i % 2 === 0 ? 'Degraded' : 'Unknown',
    capacitySince: '2025-06-01T00:00:00Z',
    capacityReason: 'test',
  }));
}

/** What prom-client's gauges, filled as the service filled them before, write for `sources`. */
async function promClientText(sources: PoolFamilySources): Promise<string[]> {
  const reg = new Registry();
  const registers = [reg];
  const gauge = (name: string, labelNames: string[]) =>
    new Gauge({ name, help: 'h', labelNames, registers });
  const cells = gauge('pool_controller_cells', ['namespace', 'pool', 'alive']);
  const unroutable = gauge('pool_controller_cells_unroutable', ['namespace', 'pool']);
  const desired = gauge('pool_controller_pool_desired_cells', ['namespace', 'pool']);
  const alive = gauge('pool_controller_pool_alive_cells', ['namespace', 'pool']);
  const pods = gauge('pool_controller_pods', ['namespace', 'pool']);
  for (const pool of sources.cells.pools()) {
    const labels = { namespace: pool.namespace, pool: pool.name };
    cells.set({ ...labels, alive: 'true' }, pool.aliveCells);
    cells.set({ ...labels, alive: 'false' }, pool.cells - pool.aliveCells);
    unroutable.set(labels, 0);
    pods.set(labels, pool.pods);
  }
  for (const cell of sources.cells.list()) {
    if (cell.alive && !cell.routable)
      unroutable.inc({ namespace: cell.namespace, pool: cell.pool });
  }
  for (const pool of sources.pools?.() ?? []) {
    const labels = { namespace: pool.namespace, pool: pool.name };
    if (pool.desiredCells !== null) desired.set(labels, pool.desiredCells);
    alive.set(labels, pool.aliveCells);
  }
  return Promise.all(
    POOL_FAMILY_NAMES.map(async (name) => (await reg.getSingleMetricAsString(name)).split('\n')),
  ).then((families) => families.map((lines) => lines.slice(2).join('\n')));
}

describe('renderPoolFamilies', () => {
  it('writes the series prom-client wrote for the same pools, under HELP and TYPE gauge', async () => {
    const cells = registry(30);
    const sources = { cells, pools: () => poolViews(cells) };
    const texts = await renderPoolFamilies(sources);
    const reference = await promClientText(sources);
    expect(texts).toHaveLength(POOL_FAMILY_NAMES.length);
    texts.forEach((text, i) => {
      const [help, type, ...series] = text.split('\n');
      expect(help).toMatch(new RegExp(`^# HELP ${POOL_FAMILY_NAMES[i]} \\S`));
      expect(type).toBe(`# TYPE ${POOL_FAMILY_NAMES[i]} gauge`);
      expect(series.join('\n')).toBe(reference[i]);
    });
    // The sample is not trivial: unroutable and not-alive cells, and pools without a desired count.
    expect(texts[1]).toContain('pool_controller_cells_unroutable{namespace="ns",pool="pool-5"} 1');
    expect(texts[0]).toContain(
      'pool_controller_cells{namespace="ns",pool="pool-3",alive="false"} 1',
    );
    expect(texts[2]).not.toContain('pool="pool-1"}');
  });

  it('writes only the headers before the service is bound', async () => {
    const texts = await renderPoolFamilies(undefined);
    for (const text of texts) expect(text.split('\n')).toHaveLength(2);
  });

  it('lets other work run at least every SERIES_PER_SLICE series', async () => {
    const cells = registry(3 * SERIES_PER_SLICE);
    let turns = 0;
    let rendering = true;
    const tick = (): void => {
      turns += 1;
      if (rendering) setImmediate(tick);
    };
    setImmediate(tick);
    const texts = await renderPoolFamilies({ cells });
    rendering = false;
    const series = texts.reduce((n, text) => n + text.split('\n').length - 2, 0);
    // 6,000 + 3,000 + 3,000 series: one turn per full slice, and one after each family.
    expect(series).toBe(12 * SERIES_PER_SLICE);
    expect(turns).toBeGreaterThanOrEqual(12);
  });
});
