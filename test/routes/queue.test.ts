import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/http/app.js';
import { ReconcileLoop } from '../../src/index.js';
import type { Pod } from '../../src/model/pod.js';
import { cellKeyMap } from '../../src/pools/cell-key.js';
import { CellRegistry } from '../../src/pools/cell-registry.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { CellBodies } from '../../src/service/cell-bodies.js';
import type { ControlPlane } from '../../src/service/control-plane.js';
import { HealthEndpoint } from '../../src/service/health.js';
import { ServiceMetrics } from '../../src/service/metrics.js';
import { FakeClock } from '../support/fake-clock.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, DrivenPodSource, harness, replaceWith } from '../support/service-harness.js';
import { until } from '../support/until.js';

afterEach(closeAll);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/**
 * The queue route over a real loop whose reconcile the test controls: `engine-00000` fails,
 * `engine-00001` hangs until released, everything else succeeds.
 */
async function controlledLoop(): Promise<{
  app: FastifyInstance;
  clock: FakeClock;
  release: () => void;
}> {
  const clock = new FakeClock();
  const podSource = new DrivenPodSource();
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const loop = new ReconcileLoop<Pod>({
    source: podSource.source,
    keyMap: cellKeyMap(LWS_LABELS),
    clock,
    resyncPeriodMs: 60_000,
    reconcile: async (key) => {
      if (key === 'ns/engine-00000') throw new Error('boom');
      if (key === 'ns/engine-00001') await held;
    },
  });
  const metrics = new ServiceMetrics({ clock });
  // Only the queue route is asked here; the other reads answer as an empty service would.
  const plane: ControlPlane = {
    sourceKind: 'kubernetes',
    buildInfo: { version: '0.0.0', revision: 'unknown', nodeVersion: process.version },
    shuttingDown: false,
    maxEventStreams: 0,
    cells: new CellBodies(new CellRegistry()),
    health: {
      healthz: new HealthEndpoint('healthz', []),
      readyz: new HealthEndpoint('readyz', []),
    },
    metrics,
    authorizeAdmin: () => ({ allowed: false, status: 403, message: 'not in this test' }),
    now: () => clock.now(),
    wallTime: (clockMs) => new Date(clockMs).toISOString(),
    get synced() {
      return loop.synced;
    },
    loopState: () => loop.state(),
    storeParents: () => [...loop.parentKeys()].sort(),
    get storeObjectCount() {
      return loop.objectCount;
    },
    storeSnapshot: () => ({
      source: 'kubernetes',
      synced: loop.synced,
      objects: loop.objectCount,
      parentCount: 0,
      parents: [],
    }),
    resolveCell: () => ({ kind: 'not-found' }),
    reflector: () => podSource.stats(),
    enqueue: (key) => loop.enqueue(key),
    leader: () => ({ identity: 'x', leading: false, leader: null, lease: null, since: null }),
    coordinator: () => {
      throw new Error('not in this test');
    },
    sinks: () => [],
    sinkSettings: () => ({ mode: 'apply' as const, panicThresholdPercent: 0, panic: [] }),
    eventStream: () => {
      throw new Error('not in this test');
    },
    eventReplayCursor: () => {
      throw new Error('not in this test');
    },
    eventSequence: () => 0,
    flags: () => [],
    triggerRouting: () => undefined,
  };
  const app = await buildServer(plane);
  const started = loop.start();
  await until(() => podSource.fake.awaitingPull, { what: 'the loop reading its source' });
  const pods = [lwsPod({ group: 0 }), lwsPod({ group: 1 }), lwsPod({ group: 2 })];
  podSource.fake.push(replaceWith(pods));
  await started;
  await until(() => loop.state().inFlight?.key === 'ns/engine-00001', {
    what: 'engine-00001 held in flight',
  });
  cleanups.push(async () => {
    release();
    await app.close();
    await loop.stop();
  });
  return { app, clock, release };
}

describe('GET /api/v1/queue', () => {
  it('shows an idle queue and the next resync as a delay', async () => {
    const { app, clock } = await harness({ resyncPeriodMs: 60_000 });
    await clock.advance(10_000);
    const res = await app.inject({ url: '/api/v1/queue' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      synced: true,
      depth: 0,
      queued: [],
      inFlight: null,
      retries: [],
      nextResyncInMs: 50_000,
    });
  });

  it('shows no next resync when resync is off', async () => {
    const { app } = await harness({ resyncPeriodMs: null });
    expect((await app.inject({ url: '/api/v1/queue' })).json().nextResyncInMs).toBeNull();
  });

  it('shows the in-flight key and for how long, queued keys in order, and retries with due times', async () => {
    const { app, clock } = await controlledLoop();
    await clock.advance(250);
    const body = (await app.inject({ url: '/api/v1/queue' })).json();
    expect(body.inFlight).toEqual({ key: 'ns/engine-00001', runningForMs: 250 });
    expect(body.queued).toEqual(['ns/engine-00002']);
    expect(body.depth).toBe(1);
    expect(body.retries).toEqual([{ key: 'ns/engine-00000', failures: 1, dueInMs: 750 }]);
    expect(body.nextResyncInMs).toBe(59_750);
  });

  it('shows durations in whole milliseconds, never float noise from the monotonic clock', async () => {
    const { app, clock } = await controlledLoop();
    await clock.advance(2726.0810969999998);
    const body = (await app.inject({ url: '/api/v1/queue' })).json();
    expect(body.inFlight.runningForMs).toBe(2726);
    expect(body.nextResyncInMs).toBe(57_274);
  });
});
