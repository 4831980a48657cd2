import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import {
  cellListSchema,
  cellResponseSchema,
  type cellSchema,
  type poolSchema,
} from '../../routes/schemas.js';
import { type Cell, CellRegistry } from '../../src/pools/cell-registry.js';
import { PoolCapacityTracker, type PoolView } from '../../src/pools/pool-capacity.js';
import { CellBodies, MAX_CACHED_LIST_BODIES } from '../../src/service/cell-bodies.js';
import { cellState as state } from '../support/cell-states.js';

function bodies(): { reg: CellRegistry; cells: CellBodies } {
  const reg = new CellRegistry({ wallClock: () => Date.parse('2025-06-01T00:00:00Z') });
  return { reg, cells: new CellBodies(reg, { source: 'simulated' }) };
}

/**
 * zod objects drop keys they do not declare, so a body that parses to something other than itself
 * carries a field the schema (and so openapi.yaml) does not know.
 */
function expectExactly<S extends z.ZodType>(schema: S, body: Buffer): void {
  const raw = JSON.parse(body.toString());
  expect(schema.parse(raw)).toEqual(raw);
}

describe('CellBodies', () => {
  it('serves the list body with the envelope and the cached cells, reusing it until a change', () => {
    const { reg, cells } = bodies();
    reg.publish('ns/engine-00000', state(0));
    const body = cells.listBody();
    const parsed = JSON.parse(body.toString());
    expect(parsed).toMatchObject({ source: 'simulated', count: 1 });
    expect(parsed.cells[0]).toEqual(reg.get('ns/engine-00000'));
    expect(cells.listBody()).toBe(body);
    reg.publish('ns/engine-00001', state(1));
    expect(cells.listBody()).not.toBe(body);
    expect(JSON.parse(cells.listBody().toString()).count).toBe(2);
    expect(JSON.parse(cells.listBody({ alive: false }).toString())).toEqual({
      source: 'simulated',
      synced: true,
      count: 0,
      cells: [],
    });
  });

  it('keeps one body per synced state: the same cells before and after the sync differ', () => {
    const { reg, cells } = bodies();
    reg.publish('ns/engine-00000', state(0));
    const unsynced = cells.listBody({}, false);
    expect(JSON.parse(unsynced.toString()).synced).toBe(false);
    expect(JSON.parse(cells.listBody({}, true).toString()).synced).toBe(true);
    expect(cells.listBody({}, false)).toBe(unsynced);
  });

  it('bounds the number of cached filtered bodies', () => {
    const { reg, cells } = bodies();
    reg.publish('ns/engine-00000', state(0));
    for (let i = 0; i < MAX_CACHED_LIST_BODIES * 2; i += 1) cells.listBody({ pool: `p${i}` });
    const first = cells.listBody({ pool: 'engine' });
    expect(cells.listBody({ pool: 'engine' })).toBe(first);
  });

  it('serves one cell with the envelope, and nothing for an unknown key', () => {
    const { reg, cells } = bodies();
    reg.publish('ns/engine-00000', state(0));
    expect(JSON.parse(cells.cellBody('ns/engine-00000')!.toString())).toEqual({
      source: 'simulated',
      cell: reg.get('ns/engine-00000'),
    });
    expect(cells.cellBody('ns/nope')).toBeUndefined();
  });
});

describe('CellBodies with a workload', () => {
  function withWorkload(desiredCells: number): {
    reg: CellRegistry;
    cells: CellBodies;
    capacity: PoolCapacityTracker;
  } {
    const reg = new CellRegistry({ wallClock: () => Date.parse('2025-06-01T00:00:00Z') });
    const capacity = new PoolCapacityTracker({
      wallClock: () => Date.parse('2025-06-01T00:00:00Z'),
      workloadStatus: () => ({ state: 'available', message: 'watching' }),
    });
    capacity.setWorkload('ns/engine', {
      namespace: 'ns',
      name: 'engine',
      uid: 'uid-engine',
      desiredCells,
      readyReplicas: 1,
      conditions: [],
    });
    return { reg, capacity, cells: new CellBodies(reg, { source: 'simulated' }, capacity) };
  }

  it('lists a placeholder for each desired cell with no pod, in key order, never alive', () => {
    const { reg, cells } = withWorkload(4);
    reg.publish('ns/engine-00000', state(0));
    reg.publish('ns/engine-00002', state(2));
    const body = JSON.parse(cells.listBody().toString());
    expect(body.cells.map((c: Cell) => c.id)).toEqual([
      'engine-00000',
      'engine-00001',
      'engine-00002',
      'engine-00003',
    ]);
    expect(body.cells[1]).toMatchObject({
      alive: false,
      members: [],
      routable: false,
      whyNotAlive: [
        { reason: 'NoPods', message: expect.stringMatching(/no pod of group 1 exists/) },
      ],
    });
    expect(JSON.parse(cells.listBody({ alive: true }).toString()).count).toBe(2);
    expect(cells.list({ alive: false }).map((c) => c.id)).toEqual(['engine-00001', 'engine-00003']);
    expectExactly(cellListSchema, cells.listBody());
  });

  it('shows the pool against its workload and rebuilds the body when the workload changes', () => {
    const { reg, cells, capacity } = withWorkload(2);
    reg.publish('ns/engine-00000', state(0));
    const before = cells.listBody();
    expect(cells.pools()).toMatchObject([
      { name: 'engine', desiredCells: 2, missingCells: [1], aliveCells: 1, capacity: 'Degraded' },
    ]);
    capacity.setWorkload('ns/engine', {
      namespace: 'ns',
      name: 'engine',
      uid: 'uid-engine',
      desiredCells: 1,
      readyReplicas: 1,
      conditions: [],
    });
    expect(cells.listBody()).not.toBe(before);
    expect(JSON.parse(cells.listBody().toString()).count).toBe(1);
    expect(cells.pools()).toMatchObject([{ desiredCells: 1, missingCells: [], capacity: 'Full' }]);
  });
});

describe('one definition of the cell shape', () => {
  it('types the cell and pool exactly as the response schemas do', () => {
    // A field added to `Cell` (or `CellState`) without the schema fails `npm run typecheck` here.
    expectTypeOf<z.output<typeof cellSchema>>().toEqualTypeOf<Cell>();
    expectTypeOf<z.output<typeof poolSchema>>().toEqualTypeOf<PoolView>();
  });

  it('serves cached bodies that the response schemas describe field for field', () => {
    const { reg, cells } = bodies();
    reg.publish('ns/engine-00000', state(0));
    reg.publish('ns/engine-00001', state(1, { ready: false }));
    expectExactly(cellListSchema, cells.listBody());
    expectExactly(cellListSchema, cells.listBody({ alive: false }));
    expectExactly(cellResponseSchema, cells.cellBody('ns/engine-00001')!);
  });

  it('notices a field the schema does not declare (the check can fail)', () => {
    const { reg, cells } = bodies();
    reg.publish('ns/engine-00000', { ...state(0), extra: 1 } as never);
    expect(() => expectExactly(cellListSchema, cells.listBody())).toThrow(
      /^expected \{ source: 'simulated'/,
    );
  });
});
