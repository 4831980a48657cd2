import { describe, expect, it } from 'vitest';
import { CELL_TRANSITIONS_KEPT } from '../../src/pools/cell-history.js';
import { CellRegistry } from '../../src/pools/cell-registry.js';
import { cellState as state } from '../support/cell-states.js';

function registry(): { reg: CellRegistry; tick: (ms: number) => void } {
  let now = Date.parse('2025-06-01T00:00:00Z');
  const reg = new CellRegistry({ wallClock: () => now });
  return { reg, tick: (ms) => (now += ms) };
}

describe('CellRegistry transitions', () => {
  it('reports a new cell as appeared', () => {
    const { reg } = registry();
    const transitions = reg.publish('ns/engine-00000', state(0));
    expect(transitions.map((t) => t.type)).toEqual(['appeared']);
    expect(reg.get('ns/engine-00000')?.lastTransitionTime).toBe('2025-06-01T00:00:00.000Z');
  });

  it('reports alive and not-alive flips with the reasons, and stamps the flip time', () => {
    const { reg, tick } = registry();
    reg.publish('ns/engine-00000', state(0, { ready: false }));
    tick(5_000);
    expect(reg.publish('ns/engine-00000', state(0)).map((t) => t.type)).toEqual(['alive']);
    expect(reg.get('ns/engine-00000')?.lastTransitionTime).toBe('2025-06-01T00:00:05.000Z');
    const down = reg.publish('ns/engine-00000', state(0, { ready: false }));
    expect(down).toMatchObject([
      { type: 'not-alive', reasons: [{ reason: 'PodsNotReady', pods: ['engine-0-1'] }] },
    ]);
  });

  it('reports a generation change separately from aliveness', () => {
    const { reg } = registry();
    const before = state(0);
    reg.publish('ns/engine-00000', before);
    const after = state(0, { uid: 'new-uid' });
    expect(reg.publish('ns/engine-00000', after)).toMatchObject([
      { type: 'generation-changed', from: before.generation, to: after.generation },
    ]);
  });

  it('reports nothing and keeps its version when the same state is published again', () => {
    const { reg, tick } = registry();
    reg.publish('ns/engine-00000', state(0));
    const version = reg.version;
    tick(1_000);
    expect(reg.publish('ns/engine-00000', state(0))).toEqual([]);
    expect(reg.version).toBe(version);
  });

  it('removes a cell without members and reports it gone, once', () => {
    const { reg } = registry();
    reg.publish('ns/engine-00000', state(0));
    expect(reg.publish('ns/engine-00000', undefined)).toMatchObject([
      { type: 'gone', key: 'ns/engine-00000' },
    ]);
    expect(reg.get('ns/engine-00000')).toBeUndefined();
    expect(reg.keysForId('engine-00000')).toEqual([]);
    expect(reg.publish('ns/engine-00000', undefined)).toEqual([]);
  });
});

describe('CellRegistry time in state', () => {
  const key = 'ns/engine-00000';

  it('keeps the state start when only the address or generation changes', () => {
    const { reg, tick } = registry();
    reg.publish(key, state(0, { ready: false }));
    tick(3_000);
    expect(reg.publish(key, state(0, { ready: false, podIP: '10.9.9.9' }))).toMatchObject([
      { type: 'address-changed' },
    ]);
    tick(3_000);
    reg.publish(key, state(0, { ready: false, podIP: '10.9.9.9', uid: 'new-uid' }));
    const cell = reg.get(key)!;
    expect(cell.lastTransitionTime).toBe('2025-06-01T00:00:00.000Z');
    expect(cell.transitions).toEqual([
      { at: '2025-06-01T00:00:00.000Z', alive: false, reasons: ['PodsNotReady'] },
    ]);
  });

  it('restarts the state on each alive change and records it, newest first', () => {
    const { reg, tick } = registry();
    reg.publish(key, state(0));
    tick(60_000);
    reg.publish(key, state(0, { ready: false }));
    tick(12_000);
    reg.publish(key, state(0));
    const cell = reg.get(key)!;
    expect(cell.lastTransitionTime).toBe('2025-06-01T00:01:12.000Z');
    expect(cell.transitions).toEqual([
      { at: '2025-06-01T00:01:12.000Z', alive: true, reasons: [] },
      { at: '2025-06-01T00:01:00.000Z', alive: false, reasons: ['PodsNotReady'] },
      { at: '2025-06-01T00:00:00.000Z', alive: true, reasons: [] },
    ]);
  });

  it(`keeps only the last ${CELL_TRANSITIONS_KEPT} changes of a flapping cell`, () => {
    const { reg, tick } = registry();
    const flips = CELL_TRANSITIONS_KEPT * 3;
    for (let i = 0; i < flips; i += 1) {
      reg.publish(key, state(0, { ready: i % 2 === 0 }));
      tick(1_000);
    }
    const { transitions, lastTransitionTime } = reg.get(key)!;
    expect(transitions).toHaveLength(CELL_TRANSITIONS_KEPT);
    expect(transitions[0]!.at).toBe(lastTransitionTime);
    const newest = Date.parse('2025-06-01T00:00:00Z') + (flips - 1) * 1_000;
    expect(transitions.map((t) => Date.parse(t.at))).toEqual(
      Array.from({ length: CELL_TRANSITIONS_KEPT }, (_, i) => newest - i * 1_000),
    );
  });

  it('starts over when a gone cell comes back', () => {
    const { reg, tick } = registry();
    reg.publish(key, state(0));
    reg.publish(key, state(0, { ready: false }));
    reg.publish(key, undefined);
    tick(5_000);
    reg.publish(key, state(0));
    expect(reg.get(key)!.transitions).toEqual([
      { at: '2025-06-01T00:00:05.000Z', alive: true, reasons: [] },
    ]);
  });

  it("keeps a cell's history when another cell's address makes it unroutable", () => {
    const { reg, tick } = registry();
    reg.publish(key, state(0, { podIP: '10.0.0.9' }));
    tick(5_000);
    reg.publish('ns/engine-00001', state(1, { podIP: '10.0.0.9' }));
    const cell = reg.get(key)!;
    expect(cell.routable).toBe(false);
    expect(cell.lastTransitionTime).toBe('2025-06-01T00:00:00.000Z');
    expect(cell.transitions).toHaveLength(1);
  });
});

describe('CellRegistry reads', () => {
  it('lists cells in key order, filtered by pool, aliveness and namespace', () => {
    const { reg } = registry();
    reg.publish('ns/trainer-00000', state(0, { pool: 'trainer' }));
    reg.publish('ns/engine-00001', state(1, { ready: false }));
    reg.publish('ns/engine-00000', state(0));
    reg.publish('other/engine-00000', state(0, { namespace: 'other' }));
    expect(reg.list().map((c) => c.key)).toEqual([
      'ns/engine-00000',
      'ns/engine-00001',
      'ns/trainer-00000',
      'other/engine-00000',
    ]);
    expect(reg.list({ pool: 'engine', alive: true }).map((c) => c.key)).toEqual([
      'ns/engine-00000',
      'other/engine-00000',
    ]);
    expect(reg.list({ namespace: 'other' }).map((c) => c.key)).toEqual(['other/engine-00000']);
    expect(reg.keysForId('engine-00000')).toEqual(['ns/engine-00000', 'other/engine-00000']);
  });

  it('summarises pools per namespace with cell, alive and pod counts', () => {
    const { reg } = registry();
    reg.publish('ns/engine-00000', state(0));
    reg.publish('ns/engine-00001', state(1, { ready: false }));
    reg.publish('ns/trainer-00000', state(0, { pool: 'trainer' }));
    expect(reg.pools()).toEqual([
      {
        namespace: 'ns',
        name: 'engine',
        cells: 2,
        aliveCells: 1,
        pods: 4,
        cellIds: ['engine-00000', 'engine-00001'],
      },
      {
        namespace: 'ns',
        name: 'trainer',
        cells: 1,
        aliveCells: 1,
        pods: 2,
        cellIds: ['trainer-00000'],
      },
    ]);
  });
});

describe('CellRegistry address clashes', () => {
  const clash = { podIP: '10.9.9.9' };

  it('publishes both claimants of one address unroutable, across namespaces, and says who', () => {
    const { reg } = registry();
    expect(reg.publish('a/engine-00000', state(0, { namespace: 'a', ...clash }))).toMatchObject([
      { type: 'appeared' },
    ]);
    expect(reg.get('a/engine-00000')?.routable).toBe(true);
    const second = reg.publish('b/engine-00000', state(0, { namespace: 'b', ...clash }));
    expect(second.map((t) => t.type)).toEqual(['appeared', 'routability-changed']);
    expect(reg.get('b/engine-00000')).toMatchObject({
      routable: false,
      whyNotRoutable: [
        { reason: 'AddressConflict', message: expect.stringContaining('a/engine-00000') },
      ],
    });
    expect(reg.get('a/engine-00000')).toMatchObject({
      routable: false,
      whyNotRoutable: [
        { reason: 'AddressConflict', message: expect.stringContaining('b/engine-00000') },
      ],
    });
  });

  it('makes the remaining claimant routable again once the other goes or moves', () => {
    const { reg } = registry();
    reg.publish('ns/engine-00000', state(0, clash));
    reg.publish('ns/engine-00001', state(1, clash));
    reg.publish('ns/engine-00002', state(2, clash));
    expect(reg.list().map((c) => c.routable)).toEqual([false, false, false]);
    const moved = reg.publish('ns/engine-00001', state(1));
    // The mover is routable; the two left still clash, and their messages no longer name it.
    expect(moved.map((t) => [t.type, 'cell' in t ? t.cell.key : ''])).toEqual([
      ['address-changed', 'ns/engine-00001'],
      ['routability-changed', 'ns/engine-00001'],
      ['routability-changed', 'ns/engine-00000'],
      ['routability-changed', 'ns/engine-00002'],
    ]);
    expect(reg.list().map((c) => c.routable)).toEqual([false, true, false]);
    const gone = reg.publish('ns/engine-00002', undefined);
    expect(gone).toMatchObject([
      { type: 'gone' },
      { type: 'routability-changed', cell: { key: 'ns/engine-00000', routable: true } },
    ]);
    expect(reg.get('ns/engine-00000')?.whyNotRoutable).toEqual([]);
  });

  it('lets a dead cell claim nothing: a finished pod keeps an IP that went to another pod', () => {
    const { reg } = registry();
    reg.publish('ns/engine-00000', state(0, clash));
    expect(reg.publish('ns/engine-00001', state(1, { ...clash, ready: false }))).toMatchObject([
      { type: 'appeared' },
    ]);
    expect(reg.get('ns/engine-00000')?.routable).toBe(true);
    // Once alive it claims, and both are out.
    reg.publish('ns/engine-00001', state(1, clash));
    expect(reg.get('ns/engine-00000')?.routable).toBe(false);
    expect(reg.get('ns/engine-00001')?.routable).toBe(false);
  });

  it('keeps lastTransitionTime of a claimant that changed only through another cell', () => {
    const { reg, tick } = registry();
    reg.publish('ns/engine-00000', state(0, clash));
    const before = reg.get('ns/engine-00000')?.lastTransitionTime;
    tick(60_000);
    reg.publish('ns/engine-00001', state(1, clash));
    expect(reg.get('ns/engine-00000')?.lastTransitionTime).toBe(before);
  });
});
