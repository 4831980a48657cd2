import { describe, expect, it } from 'vitest';
import type { EventOccurrence } from '../../src/kubernetes/resources/event-recorder.js';
import type { Cell } from '../../src/pools/cell-registry.js';
import { KubernetesEvents } from '../../src/service/kubernetes-events.js';
import type { PoolCapacityEvent } from '../../src/service/service-events.js';
import type { SinkTargetStatus } from '../../src/sinks/sink.js';
import { cellState } from '../support/cell-states.js';

const self = {
  apiVersion: 'v1' as const,
  kind: 'Pod' as const,
  namespace: 'ops',
  name: 'pool-controller-0',
};

function events(acting = true) {
  const recorded: EventOccurrence[] = [];
  let isActing = acting;
  const instance = new KubernetesEvents({
    record: (o) => recorded.push(o),
    self,
    acting: () => isActing,
  });
  return { instance, recorded, setActing: (value: boolean) => (isActing = value) };
}

const cell = (ready: boolean): Cell => ({
  ...cellState(0, { ready }),
  lastTransitionTime: 'now',
  transitions: [],
});
const target = (lastError: string | null): SinkTargetStatus => ({
  kind: 'sglang-router',
  target: 'http://router:30000',
  pool: 'engine',
  desired: [],
  actual: [],
  pending: [],
  lastAppliedAt: null,
  lastError,
  backoffUntil: null,
  mode: 'apply',
  wouldAdd: [],
  wouldRemove: [],
  panic: false,
  heldByPanic: [],
  ownership: { mode: 'managed', by: 'labels' },
});

const panic = (inPanic: boolean) =>
  ({
    type: 'pool.panic',
    namespace: 'inference',
    pool: 'engine',
    inPanic,
    routable: inPanic ? 1 : 3,
    known: 4,
    thresholdPercent: 50,
  }) as const;

const capacity = (
  from: PoolCapacityEvent['from'],
  to: PoolCapacityEvent['to'],
  fields: Partial<PoolCapacityEvent> = {},
): PoolCapacityEvent => ({
  type: 'pool.capacity',
  namespace: 'inference',
  pool: 'engine',
  from,
  to,
  aliveCells: 2,
  desiredCells: 4,
  missingCells: [2],
  missingCount: 1,
  notAliveCells: ['engine-00003'],
  notAliveCount: 1,
  reason: '2 of 4 cells alive',
  ...fields,
});

describe('KubernetesEvents', () => {
  it('reports capacity changes on the LeaderWorkerSet, naming the missing and not-alive cells', () => {
    const { instance, recorded } = events();
    instance.poolCapacity(capacity('Full', 'Degraded'), 'uid-lws');
    instance.poolCapacity(capacity('Degraded', 'Empty', { aliveCells: 0 }), 'uid-lws');
    instance.poolCapacity(
      capacity('Empty', 'Full', {
        aliveCells: 4,
        missingCells: [],
        missingCount: 0,
        notAliveCells: [],
        notAliveCount: 0,
      }),
      'uid-lws',
    );
    expect(recorded.map((e) => [e.type, e.reason, e.regarding])).toEqual([
      [
        'Warning',
        'PoolDegraded',
        {
          apiVersion: 'leaderworkerset.x-k8s.io/v1',
          kind: 'LeaderWorkerSet',
          namespace: 'inference',
          name: 'engine',
          uid: 'uid-lws',
        },
      ],
      ['Warning', 'PoolEmpty', expect.objectContaining({ kind: 'LeaderWorkerSet' })],
      ['Normal', 'PoolRecovered', expect.objectContaining({ kind: 'LeaderWorkerSet' })],
    ]);
    expect(recorded[0]?.note).toBe(
      'pool inference/engine is degraded: 2 of 4 cells alive; no pod for groups: 2; not alive: engine-00003',
    );
    expect(recorded[2]?.note).toBe('pool inference/engine is full again: 4 of 4 cells alive');
  });

  it('makes no capacity Event for Unknown, for Full reached from Unknown, or on a follower', () => {
    const { instance, recorded, setActing } = events();
    instance.poolCapacity(capacity('Degraded', 'Unknown', { desiredCells: null }), null);
    instance.poolCapacity(capacity('Unknown', 'Full'), null);
    setActing(false);
    instance.poolCapacity(capacity('Full', 'Degraded'), null);
    expect(recorded).toEqual([]);
  });

  it('names a bounded number of cells and says how many more', () => {
    const { instance, recorded } = events();
    instance.poolCapacity(
      capacity('Full', 'Degraded', {
        missingCells: [4, 5],
        missingCount: 40,
        notAliveCells: [],
        notAliveCount: 0,
      }),
      null,
    );
    expect(recorded[0]?.note).toMatch(/no pod for groups: 4, 5 and 38 more$/);
    expect(recorded[0]?.regarding).not.toHaveProperty('uid');
  });

  it('reports a cell becoming alive or not on its leader pod, with the reasons', () => {
    const { instance, recorded } = events();
    const dead = cell(false);
    instance.cellTransition({ type: 'not-alive', cell: dead, reasons: dead.whyNotAlive });
    instance.cellTransition({ type: 'alive', cell: cell(true) });
    instance.cellTransition({ type: 'generation-changed', cell: cell(true), from: 'a', to: 'b' });
    expect(recorded.map((e) => [e.type, e.reason, e.regarding.name, e.regarding.uid])).toEqual([
      ['Warning', 'CellNotAlive', 'engine-0', 'uid-engine-0'],
      ['Normal', 'CellAlive', 'engine-0', 'uid-engine-0'],
    ]);
    expect(recorded[0]?.note).toContain('PodsNotReady: engine-0-1 is not ready');
  });

  it('reports a sink target that began and stopped failing on the controller pod, once each', () => {
    const { instance, recorded } = events();
    instance.sinksApplied([target(null)]);
    instance.sinksApplied([target('HTTP 503')]);
    instance.sinksApplied([target('still 503')]);
    instance.sinksApplied([target(null)]);
    expect(recorded.map((e) => [e.reason, e.regarding, e.note])).toEqual([
      ['SinkFailed', self, 'sglang-router http://router:30000: HTTP 503'],
      ['SinkRecovered', self, 'sglang-router http://router:30000: applied again'],
    ]);
  });

  it('reports a pool entering and leaving panic on the controller pod', () => {
    const { instance, recorded } = events();
    instance.poolPanic(panic(true));
    instance.poolPanic(panic(false));
    expect(recorded.map((e) => [e.type, e.reason, e.regarding, e.note])).toEqual([
      [
        'Warning',
        'PoolPanicEntered',
        self,
        'pool inference/engine entered panic (1 of 4 cells alive and routable, threshold 50%): its sinks remove nothing until it leaves',
      ],
      [
        'Normal',
        'PoolPanicExited',
        self,
        'pool inference/engine left panic (3 of 4 cells alive and routable, threshold 50%): held removals go ahead',
      ],
    ]);
  });

  it('emits nothing while this replica does not act', () => {
    const { instance, recorded } = events(false);
    instance.cellTransition({ type: 'alive', cell: cell(true) });
    instance.sinksApplied([target('down')]);
    instance.poolPanic(panic(true));
    expect(recorded).toEqual([]);
  });
});
