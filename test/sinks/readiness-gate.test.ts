import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesPodConditionApi } from '../../src/kubernetes/resources/pod-condition-api.js';
import { type Pod, podKey } from '../../src/model/pod.js';
import { cellKeyMap } from '../../src/pools/cell-key.js';
import { type CellState, deriveCellState } from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { renderRoutingState } from '../../src/pools/routing-state.js';
import type { ParentKey } from '../../src/runtime/source-event.js';
import {
  type ConditionWriteRecord,
  ReadinessGateSink,
  type ReadinessGateSinkOptions,
} from '../../src/sinks/readiness-gate.js';
import { SinkApplyError, type SinkEvent } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodStatusApiServer } from '../support/fake-pod-status-apiserver.js';
import { type LwsPodOptions, lwsPod } from '../support/lws-pod.js';

const GATE = 'pool-controller/cell-alive';
const NOW = '2026-01-02T03:04:05.000Z';
const signal = new AbortController().signal;
const keyMap = cellKeyMap(LWS_LABELS);

let server: FakePodStatusApiServer;
beforeEach(async () => {
  server = await FakePodStatusApiServer.start();
});
afterEach(async () => {
  await server.close();
});

/**
 * The reflector's cache of one namespace, the cells derived from it, and the gate sink over both.
 * `watch()` copies what the server stored back into the cache, as the watch would.
 */
function world(extra: Partial<ReadinessGateSinkOptions> = {}) {
  const cache = new Map<string, Pod>();
  let version = 1;
  const put = (options: LwsPodOptions): Pod => {
    const pod = lwsPod({ resourceVersion: String(version++), ...options });
    const key = podKey(pod);
    const previous = cache.get(key);
    // Conditions the server holds survive a kubelet-style status change, as with the real one.
    const gate = previous?.status.conditions.find((c) => c.type === GATE);
    if (gate && !pod.status.conditions.some((c) => c.type === GATE)) {
      pod.status.conditions.push(gate);
    }
    cache.set(key, pod);
    if (!server.pods.has(key)) server.addPod(key, pod.metadata.uid, pod.metadata.resourceVersion);
    return pod;
  };
  const membersOf = (key: ParentKey): Pod[] =>
    [...cache.values()].filter((pod) => keyMap(pod) === key);
  const cells = (): CellState[] => {
    const keys = new Set([...cache.values()].map((pod) => keyMap(pod)!));
    return [...keys]
      .map((key) =>
        deriveCellState(key, membersOf(key), {
          labels: LWS_LABELS,
          portName: 'http',
          readinessGate: GATE,
        }),
      )
      .filter((cell): cell is CellState => cell !== undefined);
  };
  const watch = (): void => {
    for (const [key, stored] of server.pods) {
      const pod = cache.get(key);
      if (!pod || pod.metadata.resourceVersion === stored.resourceVersion) continue;
      const others = pod.status.conditions.filter((c) => c.type !== GATE);
      const gate = stored.conditions.find((c) => c.type === GATE);
      cache.set(key, {
        ...pod,
        metadata: { ...pod.metadata, resourceVersion: stored.resourceVersion },
        status: { ...pod.status, conditions: gate ? [...others, { ...gate }] : others },
      });
    }
  };
  const events: SinkEvent[] = [];
  const writes: ConditionWriteRecord[] = [];
  const clock = new FakeClock();
  const sink = new ReadinessGateSink({
    api: new KubernetesPodConditionApi({ connection: server.connection() }),
    conditionType: GATE,
    cells,
    pods: membersOf,
    wallClock: () => new Date(NOW),
    clock,
    publish: (event) => events.push(event),
    onWrite: (record) => writes.push(record),
    ...extra,
  });
  const apply = () => sink.apply(renderRoutingState(cells()), signal);
  return { cache, put, cells, watch, sink, apply, events, writes, clock };
}

/** A gated two-pod cell of pool `engine`; worker 1's containers ready or not. */
function gatedCell(w: ReturnType<typeof world>, group: number, workerReady = true): void {
  w.put({
    group,
    worker: 0,
    size: 2,
    readinessGates: [GATE],
    ready: false,
    containersReady: true,
    podIP: `10.0.${group}.1`,
  });
  w.put({
    group,
    worker: 1,
    size: 2,
    readinessGates: [GATE],
    ready: false,
    containersReady: workerReady,
    podIP: `10.0.${group}.2`,
  });
}

const gateOf = (pod: { conditions: Array<{ type: string }> } | undefined) =>
  pod?.conditions.find((c) => c.type === GATE);

describe('ReadinessGateSink', () => {
  it('sets True on every gated pod of an alive cell whose Ready is False only because of the gate', async () => {
    const w = world();
    gatedCell(w, 0);
    await w.apply();
    expect(server.writes().sort()).toEqual(['ns/engine-0', 'ns/engine-0-1']);
    expect(gateOf(server.pods.get('ns/engine-0'))).toEqual({
      type: GATE,
      status: 'True',
      reason: 'CellAlive',
      message: 'cell engine-00000 is alive and routable at 10.0.0.1:30000',
      lastTransitionTime: '2026-01-02T03:04:05Z',
    });
    const request = server.requests[0]!;
    expect(request.query.get('fieldManager')).toBe('pool-controller-cell-readiness-gate');
    expect(request.query.get('force')).toBe('true');
    expect(request.headers['content-type']).toBe('application/apply-patch+yaml');
    expect(request.body).toMatchObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { uid: expect.stringMatching(/^uid-engine-0/) },
    });
    expect(w.writes).toEqual([
      { status: 'True', result: 'success' },
      { status: 'True', result: 'success' },
    ]);
    expect(w.events.filter((e) => e.type === 'sink.applied')).toHaveLength(2);
  });

  it('flips every gated member to False with the reason when a worker is not ready', async () => {
    const w = world();
    gatedCell(w, 0);
    await w.apply();
    w.watch();
    gatedCell(w, 0, false);
    await w.apply();
    expect(server.writes()).toHaveLength(4);
    for (const name of ['ns/engine-0', 'ns/engine-0-1']) {
      expect(gateOf(server.pods.get(name))).toMatchObject({
        status: 'False',
        reason: 'PodsNotReady',
        message: 'cell engine-00000: engine-0-1 is not ready',
      });
    }
  });

  it('in observe mode reports the conditions it would write and sends none', async () => {
    const w = world({ mode: 'observe' });
    gatedCell(w, 0);
    await w.apply();
    expect(server.requests).toEqual([]);
    const [status] = w.sink.status();
    expect(status).toMatchObject({
      mode: 'observe',
      wouldAdd: ['engine-0-1=True/CellAlive', 'engine-0=True/CellAlive'],
      wouldRemove: [],
      ownership: { mode: 'managed', by: 'field-manager' },
    });
    expect(w.events.filter((e) => e.type === 'sink.observed')).toHaveLength(1);
    expect(w.writes).toEqual([]);
  });

  it('writes nothing when the cache already holds the wanted conditions', async () => {
    const w = world();
    gatedCell(w, 0);
    await w.apply();
    w.watch();
    await w.apply();
    await w.apply();
    expect(server.writes()).toHaveLength(2);
  });

  it('does not resend a write the cache has not caught up with yet', async () => {
    const w = world();
    gatedCell(w, 0);
    await w.apply();
    // No watch event yet: the cached pods still show no condition.
    await w.apply();
    expect(server.writes()).toHaveLength(2);
  });

  it('repairs a condition someone else changed once the cache shows it', async () => {
    const w = world();
    gatedCell(w, 0);
    await w.apply();
    w.watch();
    const leader = w.cache.get('ns/engine-0')!;
    w.cache.set('ns/engine-0', {
      ...leader,
      metadata: { ...leader.metadata, resourceVersion: '9999' },
      status: {
        ...leader.status,
        conditions: leader.status.conditions.map((c) =>
          c.type === GATE ? { ...c, status: 'False', reason: 'Manual' } : c,
        ),
      },
    });
    await w.apply();
    expect(server.writes()).toEqual(expect.arrayContaining(['ns/engine-0']));
    expect(server.writes()).toHaveLength(3);
    expect(gateOf(server.pods.get('ns/engine-0'))).toMatchObject({ status: 'True' });
  });

  it('writes each gated pod once per flip of a flapping cell', async () => {
    const w = world();
    for (let flip = 0; flip < 10; flip += 1) {
      gatedCell(w, 0, flip % 2 === 0);
      await w.apply();
      await w.apply(); // a second run on the same world (drift, another cell) writes nothing
      w.watch();
    }
    expect(server.writes()).toHaveLength(20);
  });

  it('never writes a pod that does not carry the gate', async () => {
    const w = world();
    w.put({ group: 0, worker: 0, size: 2, podIP: '10.0.0.1' });
    w.put({ group: 0, worker: 1, size: 2 });
    gatedCell(w, 1);
    await w.apply();
    expect(server.writes().sort()).toEqual(['ns/engine-1', 'ns/engine-1-1']);
  });

  it('keeps lastTransitionTime when only the reason changes', async () => {
    const w = world({ wallClock: () => new Date('2026-05-05T00:00:00.000Z') });
    gatedCell(w, 0, false);
    w.put({
      group: 0,
      worker: 0,
      size: 2,
      readinessGates: [GATE],
      ready: false,
      containersReady: true,
      podIP: '10.0.0.1',
      conditions: [
        {
          type: GATE,
          status: 'False',
          reason: 'IndicesMissing',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    });
    await w.apply();
    expect(gateOf(server.pods.get('ns/engine-0'))).toMatchObject({
      status: 'False',
      reason: 'PodsNotReady',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    });
    expect(gateOf(server.pods.get('ns/engine-0-1'))).toMatchObject({
      lastTransitionTime: '2026-05-05T00:00:00Z',
    });
  });

  it('leaves a cell alone when the render and the published cell disagree', async () => {
    const w = world();
    gatedCell(w, 0);
    // Rendered while worker 1 was not ready; the cell is alive by the time the sink runs.
    await w.sink.apply({ pools: [{ namespace: 'ns', pool: 'engine', cells: [] }] }, signal);
    expect(server.writes()).toEqual([]);
  });

  it('reports a failed pod, backs it off, and still writes the others', async () => {
    const w = world();
    gatedCell(w, 0);
    server.fail('ns/engine-0', 500);
    const error = await w.apply().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SinkApplyError);
    expect(gateOf(server.pods.get('ns/engine-0-1'))).toMatchObject({ status: 'True' });
    const [status] = w.sink.status();
    expect(status).toMatchObject({ kind: 'readiness-gate', target: 'ns/engine', pool: 'engine' });
    expect(status?.lastError).toContain('ns/engine-0: APPLY pods/status ns/engine-0: HTTP 500');
    expect(w.writes).toContainEqual({ status: 'True', result: 'error' });
    // Held: the next run does not call it before its backoff ends.
    const before = server.requests.length;
    await w.apply().catch(() => {});
    expect(server.requests.length).toBe(before);
    expect(w.sink.nextAttemptAtMs()).toBe(w.clock.now() + 1_000);
    server.heal();
    await w.clock.advance(1_000);
    w.watch();
    await w.apply();
    expect(gateOf(server.pods.get('ns/engine-0'))).toMatchObject({ status: 'True' });
    expect(w.sink.status()[0]?.lastError).toBeNull();
  });

  it('shows each pool as one target with its pods’ wanted and cached conditions', async () => {
    const w = world();
    gatedCell(w, 0);
    await w.apply();
    w.watch();
    await w.apply();
    expect(w.sink.status()).toEqual([
      {
        kind: 'readiness-gate',
        target: 'ns/engine',
        pool: 'engine',
        desired: ['engine-0-1=True/CellAlive', 'engine-0=True/CellAlive'],
        actual: ['engine-0-1=True/CellAlive', 'engine-0=True/CellAlive'],
        pending: [],
        lastAppliedAt: NOW,
        lastError: null,
        backoffUntil: null,
        mode: 'apply',
        wouldAdd: [],
        wouldRemove: [],
        panic: false,
        heldByPanic: [],
        ownership: { mode: 'managed', by: 'field-manager' },
      },
    ]);
  });

  it('sends nothing once the signal has aborted', async () => {
    const w = world();
    gatedCell(w, 0);
    const aborted = new AbortController();
    aborted.abort(new Error('leadership ended'));
    await expect(w.sink.apply(renderRoutingState(w.cells()), aborted.signal)).rejects.toThrow(
      'leadership ended',
    );
    expect(server.requests).toEqual([]);
  });
});
