import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/model/pod.js';
import {
  cellGeneration,
  deriveCellState,
  MAX_CELL_SIZE,
  MAX_LISTED_PER_REASON,
  memberOf,
} from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { type LwsPodOptions, lwsPod } from '../support/lws-pod.js';

const options = { labels: LWS_LABELS, portName: 'http' };
const KEY = 'ns/engine-00000';
const GOLDEN_GENERATION = '2eb9fd418b55a2d7';

/** A complete, healthy cell of `size` pods, with per-worker overrides. */
function cell(size: number, overrides: Record<number, LwsPodOptions> = {}): Pod[] {
  return Array.from({ length: size }, (_, worker) =>
    lwsPod({ group: 0, worker, size, podIP: `10.0.0.${worker + 1}`, ...overrides[worker] }),
  );
}

function derive(pods: Pod[]) {
  const state = deriveCellState(KEY, pods, options);
  if (!state) throw new Error('expected a state');
  return state;
}

describe('cell state: alive', () => {
  it('is alive when every member is ready, none deleting and indices cover 0..size-1', () => {
    const state = derive(cell(4));
    expect(state.alive).toBe(true);
    expect(state.whyNotAlive).toEqual([]);
    expect(state).toMatchObject({ namespace: 'ns', pool: 'engine', id: 'engine-00000', size: 4 });
  });

  it('is not alive while a member is not ready, and names it', () => {
    const state = derive(cell(3, { 2: { ready: false } }));
    expect(state.alive).toBe(false);
    expect(state.whyNotAlive).toEqual([
      { reason: 'PodsNotReady', message: 'engine-0-2 is not ready', pods: ['engine-0-2'] },
    ]);
  });

  it('is not alive while a member is terminating, even if still ready', () => {
    const state = derive(cell(2, { 0: { deleting: true } }));
    expect(state.alive).toBe(false);
    expect(state.whyNotAlive).toEqual([
      { reason: 'PodsDeleting', message: 'engine-0 is terminating', pods: ['engine-0'] },
    ]);
  });

  it('is not alive with a missing worker index, and says which', () => {
    const pods = cell(4).filter((_, i) => i !== 1 && i !== 3);
    const state = derive(pods);
    expect(state.alive).toBe(false);
    expect(state.whyNotAlive).toEqual([
      {
        reason: 'IndicesMissing',
        message: 'worker indices 1 and 3 of 4 are missing',
        indices: [1, 3],
      },
    ]);
  });

  it('is not alive with an index beyond the size or held twice', () => {
    const pods = [
      ...cell(2),
      lwsPod({ group: 0, worker: 2, size: 2, name: 'extra' }),
      lwsPod({ group: 0, worker: 1, size: 2, name: 'twin' }),
    ];
    const reasons = derive(pods).whyNotAlive.map((r) => [r.reason, r.indices]);
    expect(reasons).toEqual([
      ['IndicesUnexpected', [2]],
      ['IndicesDuplicated', [1]],
    ]);
  });

  it('reports every failing rule at once', () => {
    const pods = cell(3, { 1: { ready: false, deleting: true } }).slice(0, 2);
    expect(derive(pods).whyNotAlive.map((r) => r.reason)).toEqual([
      'PodsNotReady',
      'PodsDeleting',
      'IndicesMissing',
    ]);
  });

  it('checks no indices when the cell declares no size', () => {
    const pods = [lwsPod({ group: 0, worker: 0 }), lwsPod({ group: 0, worker: 5 })];
    const state = derive(pods);
    expect(state.size).toBeNull();
    expect(state.alive).toBe(true);
  });

  it('is not alive with an unreadable size annotation or worker index', () => {
    expect(derive(cell(2, { 0: { size: 'two' } })).whyNotAlive.map((r) => r.reason)).toContain(
      'SizeInvalid',
    );
    const bad = derive([
      lwsPod({ group: 0, worker: 0 }),
      lwsPod({ group: 0, worker: 'x', name: 'odd' }),
    ]);
    expect(bad.whyNotAlive).toEqual([
      {
        reason: 'WorkerIndexInvalid',
        message: 'odd has an unreadable leaderworkerset.sigs.k8s.io/worker-index label',
        pods: ['odd'],
      },
    ]);
  });

  it('refuses a size above MAX_CELL_SIZE as SizeInvalid, at once and in a few bytes (issue 36: 999,999,999 killed every replica)', () => {
    const started = performance.now();
    const state = derive(cell(2, { 0: { size: 999_999_999 }, 1: { size: 999_999_999 } }));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(state.size).toBeNull();
    expect(state.whyNotAlive).toEqual([
      {
        reason: 'SizeInvalid',
        message: `annotation leaderworkerset.sigs.k8s.io/size="999999999" is not an integer from 1 to ${MAX_CELL_SIZE}`,
      },
    ]);
    expect(JSON.stringify(state).length).toBeLessThan(2_000);
  });

  it('reports the missing indices of the largest allowed size as ranges, the first few listed and the rest counted', () => {
    const started = performance.now();
    const pods = [
      lwsPod({ group: 0, worker: 0, size: MAX_CELL_SIZE }),
      lwsPod({ group: 0, worker: 5, size: MAX_CELL_SIZE }),
    ];
    const state = derive(pods);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(state.size).toBe(MAX_CELL_SIZE);
    expect(state.whyNotAlive).toEqual([
      {
        reason: 'IndicesMissing',
        message: `worker indices 1-4 and 6-${MAX_CELL_SIZE - 1} of ${MAX_CELL_SIZE} are missing`,
        indices: [1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
        omitted: MAX_CELL_SIZE - 2 - MAX_LISTED_PER_REASON,
      },
    ]);
  });

  it('lists at most MAX_LISTED_PER_REASON ranges, pods and indices, and counts the rest', () => {
    // Every even index of 0..98 present and not ready, each twice, plus ten beyond the size.
    const pods = [
      ...Array.from({ length: 50 }, (_, i) =>
        lwsPod({ group: 0, worker: 2 * i, size: 100, ready: false, name: `even-${2 * i}` }),
      ),
      ...Array.from({ length: 50 }, (_, i) =>
        lwsPod({ group: 0, worker: 2 * i, size: 100, name: `twin-${2 * i}` }),
      ),
      ...Array.from({ length: 10 }, (_, i) =>
        lwsPod({ group: 0, worker: 100 + i, size: 100, name: `beyond-${i}` }),
      ),
    ];
    const byCode = new Map(derive(pods).whyNotAlive.map((r) => [r.reason, r]));
    expect(byCode.get('PodsNotReady')).toMatchObject({ omitted: 50 - MAX_LISTED_PER_REASON });
    expect(byCode.get('PodsNotReady')?.pods).toHaveLength(MAX_LISTED_PER_REASON);
    expect(byCode.get('PodsNotReady')?.message).toMatch(/ and 34 more are not ready$/);
    expect(byCode.get('IndicesMissing')).toMatchObject({
      message:
        'worker indices 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31 and 34 more ranges (50 indices in all) of 100 are missing',
      omitted: 50 - MAX_LISTED_PER_REASON,
    });
    expect(byCode.get('IndicesUnexpected')).toEqual({
      reason: 'IndicesUnexpected',
      message:
        'worker indices 100, 101, 102, 103, 104, 105, 106, 107, 108 and 109 are beyond the cell size 100',
      indices: [100, 101, 102, 103, 104, 105, 106, 107, 108, 109],
    });
    expect(byCode.get('IndicesDuplicated')?.indices).toEqual(
      Array.from({ length: MAX_LISTED_PER_REASON }, (_, i) => 2 * i),
    );
    expect(byCode.get('IndicesDuplicated')).toMatchObject({
      omitted: 50 - MAX_LISTED_PER_REASON,
    });
    expect(byCode.get('IndicesDuplicated')?.message).toMatch(
      /^worker indices 0, 2, .*, 30 and 34 more are held by more than one pod$/,
    );
  });

  it('reads an absent worker index as 0, so a one-pod cell is its own leader', () => {
    const pod = lwsPod({ group: null, worker: null, name: 'solo', podIP: '10.1.1.1' });
    const state = deriveCellState('ns/solo', [pod], options);
    expect(state?.alive).toBe(true);
    expect(state?.leader).toBe('solo');
    expect(state?.members[0]?.workerIndex).toBe(0);
    expect(state?.address).toBe('10.1.1.1:30000');
  });

  it('has no state when the cell has no members', () => {
    expect(deriveCellState(KEY, [], options)).toBeUndefined();
  });
});

describe('cell state: members', () => {
  it('shows each member in worker-index order with its pod facts', () => {
    const pods = cell(2, { 1: { restarts: [2, 1], node: 'node-b', phase: 'Running' } }).reverse();
    const state = derive(pods);
    expect(state.members.map((m) => m.name)).toEqual(['engine-0', 'engine-0-1']);
    expect(state.members[1]).toEqual({
      name: 'engine-0-1',
      uid: 'uid-engine-0-1',
      phase: 'Running',
      ready: true,
      podIP: '10.0.0.2',
      restarts: 3,
      deleting: false,
      workerIndex: 1,
      node: 'node-b',
      readinessGate: null,
    });
  });

  it('shows a pod not yet scheduled with nulls, not missing fields', () => {
    const member = memberOf(lwsPod({ podIP: null, phase: 'Pending', ready: false }), LWS_LABELS);
    expect(member.podIP).toBeNull();
    expect(member.phase).toBe('Pending');
  });
});

describe('cell state: generation', () => {
  const base = derive(cell(2)).generation;

  it('is 16 hex digits of a sha256 over name:uid:restarts:deleting in worker-index order', () => {
    expect(base).toMatch(/^[0-9a-f]{16}$/);
    expect(derive(cell(2).reverse()).generation).toBe(base);
    expect(base).toBe(
      cellGeneration([
        { ...memberOf(cell(2)[0]!, LWS_LABELS) },
        { ...memberOf(cell(2)[1]!, LWS_LABELS) },
      ]),
    );
  });

  it('pins the exact hashed text: one name:uid:restarts:deleting line per member, newline-joined', () => {
    // sha256("engine-0:u0:0:false\nengine-0-1:u1:3:true"), first 16 hex digits, computed
    // independently (printf '%s' '…' | sha256sum), so a change of format cannot go unnoticed.
    const member = (name: string, uid: string, restarts: number, deleting: boolean) => ({
      ...memberOf(cell(1)[0]!, LWS_LABELS),
      name,
      uid,
      restarts,
      deleting,
    });
    expect(
      cellGeneration([member('engine-0', 'u0', 0, false), member('engine-0-1', 'u1', 3, true)]),
    ).toBe(GOLDEN_GENERATION);
  });

  it('changes when a pod is replaced (new uid)', () => {
    expect(derive(cell(2, { 1: { uid: 'replacement' } })).generation).not.toBe(base);
  });

  it('changes on a container restart', () => {
    expect(derive(cell(2, { 1: { restarts: [1] } })).generation).not.toBe(base);
  });

  it('changes when a pod starts terminating', () => {
    expect(derive(cell(2, { 0: { deleting: true } })).generation).not.toBe(base);
  });

  it('does not change on a readiness blip or a new IP', () => {
    expect(derive(cell(2, { 1: { ready: false } })).generation).toBe(base);
    expect(derive(cell(2, { 0: { podIP: '10.9.9.9' } })).generation).toBe(base);
  });
});

describe('cell state: address', () => {
  it('is the leader pod IP and the container port named by the port name', () => {
    const pods = cell(2, {
      0: {
        podIP: '10.0.0.7',
        ports: [
          { name: 'metrics', containerPort: 9090 },
          { name: 'http', containerPort: 8000 },
        ],
      },
    });
    const state = derive(pods);
    expect(state.leader).toBe('engine-0');
    expect(state.address).toBe('10.0.0.7:8000');
    expect(deriveCellState(KEY, pods, { ...options, portName: 'metrics' })?.address).toBe(
      '10.0.0.7:9090',
    );
  });

  it('brackets an IPv6 leader address', () => {
    expect(derive(cell(1, { 0: { podIP: 'fd00::5' } })).address).toBe('[fd00::5]:30000');
  });

  it('is null without a leader IP, without the named port, or without a leader', () => {
    expect(derive(cell(2, { 0: { podIP: null } })).address).toBeNull();
    expect(
      derive(cell(2, { 0: { ports: [{ name: 'grpc', containerPort: 1 }] } })).address,
    ).toBeNull();
    const workersOnly = derive(cell(2).slice(1));
    expect(workersOnly.leader).toBeNull();
    expect(workersOnly.address).toBeNull();
  });
});

describe('cell state: routable', () => {
  it('is routable with a valid leader address, in canonical form', () => {
    const state = derive(cell(2, { 0: { podIP: 'FD00:0::7' } }));
    expect(state).toMatchObject({ address: '[fd00::7]:30000', routable: true, whyNotRoutable: [] });
  });

  it('is alive but not routable, NoServingPort, when the leader has no --port-name port', () => {
    const state = derive(cell(2, { 0: { ports: [{ name: 'metrics', containerPort: 9000 }] } }));
    expect(state.alive).toBe(true);
    expect(state.address).toBeNull();
    expect(state.routable).toBe(false);
    expect(state.whyNotRoutable).toEqual([
      {
        reason: 'NoServingPort',
        message: 'leader engine-0 has no container port named "http" (--port-name)',
      },
    ]);
  });

  it('says NoServingPort while the leader has no pod IP yet', () => {
    const state = derive(cell(2, { 0: { podIP: null, ready: false } }));
    expect(state.whyNotRoutable.map((r) => r.reason)).toEqual(['NoServingPort']);
  });

  it('keeps a pod IP that is not an IP in the address and calls it AddressInvalid', () => {
    const state = derive(cell(2, { 0: { podIP: 'engine.local' } }));
    expect(state.address).toBe('engine.local:30000');
    expect(state.whyNotRoutable.map((r) => r.reason)).toEqual(['AddressInvalid']);
  });

  it('refuses loopback unless allowed, and link-local and unspecified always', () => {
    const loopback = cell(2, { 0: { podIP: '127.0.0.1' } });
    expect(derive(loopback).whyNotRoutable).toMatchObject([
      { reason: 'AddressInvalid', message: expect.stringContaining('--sink-allow-loopback') },
    ]);
    const allowed = { ...options, allowLoopback: true };
    expect(deriveCellState(KEY, loopback, allowed)?.routable).toBe(true);
    for (const ip of ['169.254.0.9', '0.0.0.0', 'fe80::2', '::']) {
      const state = deriveCellState(KEY, cell(2, { 0: { podIP: ip } }), allowed);
      expect(state?.whyNotRoutable.map((r) => r.reason)).toEqual(['AddressInvalid']);
    }
  });
});

describe('cell state: bootstrap port of a prefill cell', () => {
  const annotation = 'sglang.ai/bootstrap-port';
  const prefill = {
    ...options,
    prefillPools: new Set(['engine']),
    bootstrapPortAnnotation: annotation,
  };
  const withPort = (value: string) => cell(2, { 0: { annotations: { [annotation]: value } } });

  it("reads a prefill cell's bootstrap port from its leader and stays routable", () => {
    const state = deriveCellState(KEY, withPort('8998'), prefill);
    expect(state).toMatchObject({ routable: true, whyNotRoutable: [], bootstrapPort: 8998 });
  });

  it('makes a prefill cell without the annotation unroutable, NoBootstrapPort, and names the flag', () => {
    const state = deriveCellState(KEY, cell(2), prefill);
    expect(state).toMatchObject({ alive: true, routable: false, bootstrapPort: null });
    expect(state?.whyNotRoutable).toEqual([
      {
        reason: 'NoBootstrapPort',
        message: `leader engine-0 has no annotation ${annotation} (--sglang-bootstrap-port-annotation); a prefill worker needs its bootstrap port`,
      },
    ]);
  });

  it('refuses a value that is not one port 1..65535, quoting it bounded', () => {
    for (const value of ['0', '65536', '-1', '+80', '080', ' 80', '80 ', '8998,8999', '1e3', '']) {
      const state = deriveCellState(KEY, withPort(value), prefill);
      expect(
        state?.whyNotRoutable.map((r) => r.reason),
        value,
      ).toEqual(['NoBootstrapPort']);
      expect(state?.bootstrapPort).toBeNull();
    }
    const huge = deriveCellState(KEY, withPort('9'.repeat(100_000)), prefill);
    expect(huge?.whyNotRoutable[0]?.message.length).toBeLessThan(600);
    expect(deriveCellState(KEY, withPort('65535'), prefill)?.bootstrapPort).toBe(65_535);
    expect(deriveCellState(KEY, withPort('1'), prefill)?.bootstrapPort).toBe(1);
  });

  it('reads the annotation of the leader only, and adds its reason to the address reasons', () => {
    const onWorker = cell(2, { 1: { annotations: { [annotation]: '8998' } } });
    expect(deriveCellState(KEY, onWorker, prefill)?.whyNotRoutable.map((r) => r.reason)).toEqual([
      'NoBootstrapPort',
    ]);
    const noPort = cell(2, { 0: { ports: [] } });
    expect(deriveCellState(KEY, noPort, prefill)?.whyNotRoutable.map((r) => r.reason)).toEqual([
      'NoServingPort',
      'NoBootstrapPort',
    ]);
  });

  it('never asks a cell of another pool for one, nor reads it there', () => {
    const decode = { ...prefill, prefillPools: new Set(['other']) };
    expect(deriveCellState(KEY, cell(2), decode)).toMatchObject({
      routable: true,
      bootstrapPort: null,
    });
    expect(deriveCellState(KEY, withPort('8998'), decode)?.bootstrapPort).toBeNull();
    expect(deriveCellState(KEY, cell(2), options)?.bootstrapPort).toBeNull();
  });
});

describe('the cell readiness gate', () => {
  const GATE = 'pool-controller/cell-alive';
  const gated = { labels: LWS_LABELS, portName: 'http', readinessGate: GATE };
  const pair = (worker1: Parameters<typeof lwsPod>[0] = {}) => [
    lwsPod({ worker: 0, size: 2, readinessGates: [GATE], ready: false, containersReady: true }),
    lwsPod({
      worker: 1,
      size: 2,
      readinessGates: [GATE],
      ready: false,
      containersReady: true,
      ...worker1,
    }),
  ];

  it('counts a gated pod whose Ready is False only because of the gate (no deadlock)', () => {
    const state = deriveCellState('ns/engine-00000', pair(), gated)!;
    expect(state.alive).toBe(true);
    expect(state.members.map((m) => m.ready)).toEqual([true, true]);
    expect(state.members[0]?.readinessGate).toEqual({ status: null, reason: null });
  });

  it('judges a gated pod by ContainersReady, its phase and its other gates', () => {
    expect(deriveCellState('ns/engine-00000', pair({ containersReady: false }), gated)!.alive).toBe(
      false,
    );
    expect(deriveCellState('ns/engine-00000', pair({ phase: 'Pending' }), gated)!.alive).toBe(
      false,
    );
    const otherGate = pair({
      readinessGates: [GATE, 'example.com/lb'],
      conditions: [{ type: 'example.com/lb', status: 'False' }],
    });
    const state = deriveCellState('ns/engine-00000', otherGate, gated)!;
    expect(state.whyNotAlive.map((r) => r.reason)).toEqual(['PodsNotReady']);
    expect(state.whyNotAlive[0]?.pods).toEqual(['engine-0-1']);
  });

  it('still judges ungated pods, and every pod with the gate off, by Ready', () => {
    const mixed = [pair()[0]!, lwsPod({ worker: 1, size: 2, ready: false, containersReady: true })];
    expect(deriveCellState('ns/engine-00000', mixed, gated)!.alive).toBe(false);
    const off = deriveCellState('ns/engine-00000', pair(), {
      labels: LWS_LABELS,
      portName: 'http',
    })!;
    expect(off.alive).toBe(false);
    expect(off.members.map((m) => m.readinessGate)).toEqual([null, null]);
  });

  it('shows the condition as the pod holds it', () => {
    const pods = pair({ conditions: [{ type: GATE, status: 'False', reason: 'PodsNotReady' }] });
    const state = deriveCellState('ns/engine-00000', pods, gated)!;
    expect(state.members[1]?.readinessGate).toEqual({ status: 'False', reason: 'PodsNotReady' });
  });
});
