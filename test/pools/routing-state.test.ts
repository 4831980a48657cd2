import { describe, expect, it } from 'vitest';
import {
  type RoutableCell,
  type RoutingState,
  RoutingStateError,
  renderRoutingState,
  summarizeRoutingState,
  validateRoutingState,
} from '../../src/pools/routing-state.js';

function cell(overrides: Partial<RoutableCell> = {}): RoutableCell {
  return {
    namespace: 'ns',
    pool: 'engine',
    id: 'engine-00000',
    alive: true,
    routable: true,
    generation: 'g0',
    address: '10.0.0.1:30000',
    ...overrides,
  };
}

function state(...cells: Array<{ cell: string; address: string; namespace?: string }>) {
  const pools = new Map<string, RoutingState['pools'][number]>();
  for (const c of cells) {
    const namespace = c.namespace ?? 'ns';
    const pool = pools.get(namespace) ?? { namespace, pool: 'engine', cells: [] };
    pool.cells.push({ cell: c.cell, generation: 'g', address: c.address });
    pools.set(namespace, pool);
  }
  return { pools: [...pools.values()] };
}

describe('renderRoutingState', () => {
  it("carries a prefill cell's bootstrap port, and none for a cell without one", () => {
    const rendered = renderRoutingState([
      cell({ id: 'engine-00000', address: '10.0.0.1:30000', bootstrapPort: 8998 }),
      cell({ id: 'engine-00001', address: '10.0.0.2:30000', bootstrapPort: null }),
    ]);
    expect(rendered.pools[0]?.cells).toEqual([
      { cell: 'engine-00000', generation: 'g0', address: '10.0.0.1:30000', bootstrapPort: 8998 },
      { cell: 'engine-00001', generation: 'g0', address: '10.0.0.2:30000' },
    ]);
  });

  it('renders per pool the addresses of its alive cells, sorted, each with cell id and generation', () => {
    const rendered = renderRoutingState([
      cell({ id: 'engine-00002', address: '10.0.0.9:30000', generation: 'g2' }),
      cell({ id: 'engine-00000', address: '10.0.0.10:30000', generation: 'g0' }),
      cell({ id: 'engine-00001', address: '10.0.0.2:30000', generation: 'g1' }),
    ]);
    expect(rendered).toEqual({
      pools: [
        {
          namespace: 'ns',
          pool: 'engine',
          cells: [
            { cell: 'engine-00000', generation: 'g0', address: '10.0.0.10:30000' },
            { cell: 'engine-00001', generation: 'g1', address: '10.0.0.2:30000' },
            { cell: 'engine-00002', generation: 'g2', address: '10.0.0.9:30000' },
          ],
        },
      ],
    });
  });

  it('leaves out cells that are not alive or have no address, but keeps their pool with no cells', () => {
    const rendered = renderRoutingState([
      cell({ pool: 'dead', id: 'dead-00000', alive: false }),
      cell({ id: 'engine-00000', alive: false, address: '10.0.0.1:30000' }),
      cell({ id: 'engine-00001', alive: true, address: null }),
      cell({ id: 'engine-00002', address: '10.0.0.3:30000' }),
    ]);
    expect(rendered.pools).toEqual([
      { namespace: 'ns', pool: 'dead', cells: [] },
      {
        namespace: 'ns',
        pool: 'engine',
        cells: [{ cell: 'engine-00002', generation: 'g0', address: '10.0.0.3:30000' }],
      },
    ]);
  });

  it('sorts pools by namespace, then pool name, and keeps same-named pools of two namespaces apart', () => {
    const rendered = renderRoutingState([
      cell({ namespace: 'b', pool: 'alpha', id: 'alpha-00000', address: '10.0.1.1:1' }),
      cell({ namespace: 'a', pool: 'zeta', id: 'zeta-00000', address: '10.0.2.1:1' }),
      cell({ namespace: 'a', pool: 'alpha', id: 'alpha-00000', address: '10.0.3.1:1' }),
    ]);
    expect(rendered.pools.map((p) => `${p.namespace}/${p.pool}`)).toEqual([
      'a/alpha',
      'a/zeta',
      'b/alpha',
    ]);
  });

  it('renders the same state whatever order the cells come in', () => {
    const cells = [
      cell({ id: 'engine-00000', address: '10.0.0.1:30000' }),
      cell({ id: 'engine-00001', address: '10.0.0.2:30000' }),
      cell({ pool: 'other', id: 'other-00000', address: '10.0.1.1:30000' }),
    ];
    expect(renderRoutingState([...cells].reverse())).toEqual(renderRoutingState(cells));
  });

  it('breaks an address tie by cell id, so a duplicate renders the same every time', () => {
    const a = cell({ id: 'engine-00001', address: '10.0.0.1:30000' });
    const b = cell({ id: 'engine-00000', address: '10.0.0.1:30000' });
    expect(renderRoutingState([a, b]).pools[0]!.cells.map((c) => c.cell)).toEqual([
      'engine-00000',
      'engine-00001',
    ]);
    expect(renderRoutingState([b, a])).toEqual(renderRoutingState([a, b]));
  });

  it('renders no pools from no cells', () => {
    expect(renderRoutingState([])).toEqual({ pools: [] });
  });
});

describe('validateRoutingState', () => {
  it('accepts IPv4, hostname and bracketed IPv6 hosts with a port in 1–65535', () => {
    expect(() =>
      validateRoutingState(
        state(
          { cell: 'a', address: '10.0.0.1:30000' },
          { cell: 'b', address: 'engine-0.engine.ns.svc:1' },
          { cell: 'c', address: '[fd00::1]:65535' },
        ),
      ),
    ).not.toThrow();
  });

  it.each([
    ['no port', '10.0.0.1'],
    ['port 0', '10.0.0.1:0'],
    ['a port above 65535', '10.0.0.1:65536'],
    ['an unbracketed IPv6 host', 'fd00::1:30000'],
    ['a scheme', 'http://10.0.0.1:30000'],
    ['an empty host', ':30000'],
    ['a path', '10.0.0.1:30000/x'],
  ])('refuses an address with %s, naming the cell and the address', (_, address) => {
    const check = () => validateRoutingState(state({ cell: 'engine-00004', address }));
    expect(check).toThrow(RoutingStateError);
    expect(check).toThrow(`cell ns/engine-00004 has address ${JSON.stringify(address)}`);
  });

  it('refuses one address claimed by two cells, naming both', () => {
    const check = () =>
      validateRoutingState(
        state(
          { cell: 'engine-00000', address: '10.0.0.1:30000' },
          { cell: 'engine-00001', address: '10.0.0.1:30000' },
        ),
      );
    expect(check).toThrow(RoutingStateError);
    expect(check).toThrow(
      'address 10.0.0.1:30000 is claimed by two cells, ns/engine-00000 and ns/engine-00001',
    );
  });

  it('refuses one address claimed by cells of two namespaces', () => {
    expect(() =>
      validateRoutingState(
        state(
          { cell: 'engine-00000', address: '10.0.0.1:30000', namespace: 'a' },
          { cell: 'engine-00000', address: '10.0.0.1:30000', namespace: 'b' },
        ),
      ),
    ).toThrow('claimed by two cells, a/engine-00000 and b/engine-00000');
  });

  it('accepts an empty state and pools with no cells', () => {
    expect(() => validateRoutingState({ pools: [] })).not.toThrow();
    expect(() =>
      validateRoutingState({ pools: [{ namespace: 'ns', pool: 'engine', cells: [] }] }),
    ).not.toThrow();
  });
});

describe('summarizeRoutingState', () => {
  it('counts pools, alive cells, and cells per pool', () => {
    const rendered = renderRoutingState([
      cell({ id: 'engine-00000', address: '10.0.0.1:1' }),
      cell({ id: 'engine-00001', address: '10.0.0.2:1' }),
      cell({ pool: 'dead', id: 'dead-00000', alive: false }),
    ]);
    expect(summarizeRoutingState(rendered)).toEqual({
      pools: 2,
      cells: 2,
      byPool: { 'ns/dead': 0, 'ns/engine': 2 },
    });
  });
});

describe('renderRoutingState with a panic threshold', () => {
  const cells = (alive: number, dead: number): RoutableCell[] => [
    ...Array.from({ length: alive }, (_, i) =>
      cell({ id: `engine-a${i}`, address: `10.0.1.${i + 1}:30000` }),
    ),
    ...Array.from({ length: dead }, (_, i) =>
      cell({ id: `engine-d${i}`, address: `10.0.2.${i + 1}:30000`, alive: false }),
    ),
  ];

  it('puts a pool in panic when fewer than the threshold share of its known cells are alive and routable', () => {
    const [pool] = renderRoutingState(cells(1, 3), { panicThresholdPercent: 50 }).pools;
    expect(pool?.capacity).toEqual({ routable: 1, known: 4, thresholdPercent: 50, panic: true });
  });

  it('is out of panic at exactly the threshold (Envoy: panic only below it)', () => {
    const [pool] = renderRoutingState(cells(2, 2), { panicThresholdPercent: 50 }).pools;
    expect(pool?.capacity?.panic).toBe(false);
  });

  it('counts an alive but unroutable cell as not routable', () => {
    const unroutable = cell({ id: 'engine-u', address: '10.0.3.1:30000', routable: false });
    const [pool] = renderRoutingState([...cells(1, 0), unroutable], {
      panicThresholdPercent: 60,
    }).pools;
    expect(pool?.capacity).toMatchObject({ routable: 1, known: 2, panic: true });
  });

  it('puts a pool with no routable cell at all in panic, and renders no capacity when off', () => {
    expect(
      renderRoutingState(cells(0, 2), { panicThresholdPercent: 1 }).pools[0]?.capacity?.panic,
    ).toBe(true);
    expect(renderRoutingState(cells(0, 2)).pools[0]).not.toHaveProperty('capacity');
    expect(
      renderRoutingState(cells(0, 2), { panicThresholdPercent: 0 }).pools[0],
    ).not.toHaveProperty('capacity');
  });
});
