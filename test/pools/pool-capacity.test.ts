import { describe, expect, it } from 'vitest';
import type { WorkloadApiStatus } from '../../src/model/workload.js';
import type { Cell } from '../../src/pools/cell-registry.js';
import {
  cellIndexOf,
  PoolCapacityTracker,
  placeholderCell,
} from '../../src/pools/pool-capacity.js';
import { cellState } from '../support/cell-states.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function cell(index: number, alive = true): Cell {
  const at = new Date(T0).toISOString();
  const state = cellState(index, { ready: alive });
  return {
    ...state,
    lastTransitionTime: at,
    transitions: [{ at, alive, reasons: state.whyNotAlive.map((r) => r.reason) }],
  };
}

function tracker(api: WorkloadApiStatus = { state: 'available', message: 'watching' }): {
  capacity: PoolCapacityTracker;
  advance: (ms: number) => void;
} {
  let now = T0;
  return {
    capacity: new PoolCapacityTracker({ wallClock: () => now, workloadStatus: () => api }),
    advance: (ms) => {
      now += ms;
    },
  };
}

const engine = (desiredCells: number) => ({
  namespace: 'ns',
  name: 'engine',
  uid: 'uid-engine',
  desiredCells,
  readyReplicas: null,
  conditions: [],
});

describe('PoolCapacityTracker', () => {
  it('reports a pool first judged, then each change of state with the alive and desired counts', () => {
    const { capacity, advance } = tracker();
    expect(capacity.setWorkload('ns/engine', engine(2))).toEqual([
      expect.objectContaining({ from: null, to: 'Empty', desiredCells: 2, aliveCells: 0 }),
    ]);
    advance(1_000);
    expect(capacity.cellTransition({ type: 'appeared', cell: cell(0) })).toEqual([
      expect.objectContaining({ from: 'Empty', to: 'Degraded', aliveCells: 1, workload: 'engine' }),
    ]);
    // A change that keeps the state (a second cell appearing not alive) says nothing.
    expect(capacity.cellTransition({ type: 'appeared', cell: cell(1, false) })).toEqual([]);
    expect(capacity.cellTransition({ type: 'alive', cell: cell(1) })).toEqual([
      expect.objectContaining({ from: 'Degraded', to: 'Full', aliveCells: 2 }),
    ]);
    expect(
      capacity.cellTransition({ type: 'gone', key: 'ns/engine-00000', last: cell(0) }),
    ).toEqual([expect.objectContaining({ from: 'Full', to: 'Degraded', aliveCells: 1 })]);
    expect(capacity.setWorkload('ns/engine', undefined)).toEqual([
      expect.objectContaining({ from: 'Degraded', to: 'Unknown', desiredCells: null }),
    ]);
  });

  it('moves since only when the state changes', () => {
    const { capacity, advance } = tracker();
    capacity.setWorkload('ns/engine', engine(3));
    capacity.cellTransition({ type: 'appeared', cell: cell(0) });
    const pool = () =>
      capacity.pools([
        {
          namespace: 'ns',
          name: 'engine',
          cells: 1,
          aliveCells: 1,
          pods: 1,
          cellIds: ['engine-00000'],
        },
      ])[0]!;
    const since = pool().capacitySince;
    advance(60_000);
    capacity.setWorkload('ns/engine', engine(4));
    expect(pool()).toMatchObject({
      capacity: 'Degraded',
      capacitySince: since,
      missingCells: [1, 2, 3],
    });
    advance(60_000);
    capacity.setWorkload('ns/engine', engine(1));
    expect(pool()).toMatchObject({
      capacity: 'Full',
      capacitySince: new Date(T0 + 120_000).toISOString(),
    });
  });

  it('forgets a pool with neither cells nor a workload', () => {
    const { capacity } = tracker();
    capacity.cellTransition({ type: 'appeared', cell: cell(0) });
    capacity.cellTransition({ type: 'gone', key: 'ns/engine-00000', last: cell(0) });
    expect(capacity.pools([])).toEqual([]);
    expect(capacity.setWorkload('ns/engine', engine(1))).toEqual([
      expect.objectContaining({ from: null, to: 'Empty' }),
    ]);
  });

  it('re-judges every pool when the workload API changes status', () => {
    let api: WorkloadApiStatus = { state: 'pending', message: 'not listed yet' };
    const capacity = new PoolCapacityTracker({ workloadStatus: () => api });
    capacity.cellTransition({ type: 'appeared', cell: cell(0) });
    const before = capacity.version;
    api = { state: 'forbidden', message: 'may not list' };
    expect(capacity.workloadStatusChanged()).toEqual([]);
    expect(capacity.version).toBeGreaterThan(before);
  });
});

describe('cell indices and placeholders', () => {
  it('reads the group index from a cell id of its pool only', () => {
    expect(cellIndexOf('engine', 'engine-00003')).toBe(3);
    expect(cellIndexOf('engine', 'engine-123456')).toBe(123456);
    expect(cellIndexOf('engine', 'engine-3')).toBeUndefined();
    expect(cellIndexOf('engine', 'engine-v2-00003')).toBeUndefined();
    expect(cellIndexOf('engine', 'trainer-00003')).toBeUndefined();
  });

  it('makes a placeholder that is never alive or routable and says which group has no pod', () => {
    expect(placeholderCell('ns', 'engine', 3, '2026-01-01T00:00:00.000Z')).toMatchObject({
      key: 'ns/engine-00003',
      id: 'engine-00003',
      alive: false,
      routable: false,
      members: [],
      address: null,
      whyNotAlive: [{ reason: 'NoPods', indices: [3] }],
      whyNotRoutable: [{ reason: 'NoServingPort' }],
    });
  });
});
