import { afterEach, describe, expect, it } from 'vitest';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { assembleService } from '../../src/service/assemble.js';
import { FakeClock } from '../support/fake-clock.js';
import { lwsPod } from '../support/lws-pod.js';
import { RecordingLogger } from '../support/recording-logger.js';
import {
  closeAll,
  DrivenPodSource,
  harness,
  replaceWith,
  upsert,
} from '../support/service-harness.js';
import { until } from '../support/until.js';

// Every harness a test opened is stopped, and a stop() that hangs fails the test.
afterEach(closeAll);

function service(podSource = new DrivenPodSource(), clock = new FakeClock()) {
  return assembleService({
    podSource,
    sourceKind: 'kubernetes',
    labels: LWS_LABELS,
    portName: 'http',
    clock,
    resyncPeriodMs: null,
  });
}

describe('PoolService lifecycle', () => {
  it('stops the loop, then closes the source, once', async () => {
    const { service, podSource } = await harness({ pods: [lwsPod()] });
    expect(podSource.fake.openStreams).toBe(1);
    await Promise.all([service.stop(), service.stop()]);
    expect(podSource.fake.openStreams).toBe(0);
    expect(podSource.closes).toBe(1);
    expect(service.health.readyz.failureReason('shutdown')).toBe('the process is shutting down');
  });

  it('can be stopped without ever having started', async () => {
    const podSource = new DrivenPodSource();
    const s = service(podSource);
    await s.stop();
    expect(podSource.closes).toBe(1);
    expect(podSource.fake.opens).toBe(0);
  });

  it('leaves no timer behind once stopped', async () => {
    const clock = new FakeClock();
    const podSource = new DrivenPodSource();
    const s = service(podSource, clock);
    const started = s.start();
    await until(() => podSource.fake.awaitingPull, { what: 'the service to open its source' });
    podSource.fake.push(replaceWith([lwsPod()]));
    await started;
    await s.stop();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('PoolService under a relist', () => {
  it('keeps answering HTTP while thousands of reconciles are pending', async () => {
    const { app, podSource } = await harness();
    const pods = Array.from({ length: 5_000 }, (_, i) => lwsPod({ group: i }));
    // Not `push`, which waits for every reconcile: the request is the point, made meanwhile.
    podSource.fake.push(replaceWith(pods));
    // Asked while the reconciles run: answered between slices, not after the last one.
    const res = await app.inject({ url: '/api/v1/cells' });
    const seen = res.json().count as number;
    expect(seen).toBeLessThan(5_000);
  });
});

describe('PoolService as the control plane', () => {
  const world = () => [
    lwsPod({ group: 0, worker: 0, podIP: '10.0.0.1' }),
    lwsPod({ group: 1, worker: 0, namespace: 'blue' }),
    lwsPod({ group: 1, worker: 0, namespace: 'green' }),
  ];

  it('resolves a cell id to its key, or says it is unknown or in several namespaces', async () => {
    const { service } = await harness({ pods: world() });
    const published = { scope: 'published' } as const;
    expect(service.resolveCell('engine-00000', published)).toEqual({
      kind: 'found',
      key: 'ns/engine-00000',
    });
    expect(service.resolveCell('engine-00001', published)).toEqual({
      kind: 'ambiguous',
      namespaces: ['blue', 'green'],
    });
    expect(service.resolveCell('engine-00001', { ...published, namespace: 'green' })).toEqual({
      kind: 'found',
      key: 'green/engine-00001',
    });
    expect(service.resolveCell('engine-00001', { ...published, namespace: 'ns' })).toEqual({
      kind: 'not-found',
    });
    expect(service.resolveCell('nope', { scope: 'observed' })).toEqual({ kind: 'not-found' });
  });

  it('finds a cell the store holds but no reconcile has published only in the observed scope', async () => {
    const { service, podSource } = await harness();
    // A relist of thousands: the reconciles run in slices, so the last cell waits in the queue.
    const pods = Array.from({ length: 5_000 }, (_, i) => lwsPod({ group: i }));
    podSource.fake.push(replaceWith(pods)); // not `push`: it would wait for every reconcile
    await until(() => service.storeParents().length === pods.length, {
      what: 'the relist to reach the store',
    });
    const pending = service.storeParents().find((key) => service.cells.get(key) === undefined);
    expect(pending).toBeDefined();
    const id = pending!.slice('ns/'.length);
    expect(service.resolveCell(id, { scope: 'published' })).toEqual({ kind: 'not-found' });
    expect(service.resolveCell(id, { scope: 'observed' })).toEqual({ kind: 'found', key: pending });
    expect(
      service.storeSnapshot({ objects: false }).parents.find((p) => p.key === pending),
    ).toEqual({
      key: pending,
      reconciled: false,
      members: [`ns/engine-${Number(id.slice('engine-'.length))}`],
    });
  });

  it('serves the store snapshot ready to send, pod views only when asked', async () => {
    const { service } = await harness({ pods: world() });
    const bare = service.storeSnapshot({ objects: false });
    expect(bare).toMatchObject({ source: 'kubernetes', synced: true, objects: 3, parentCount: 3 });
    expect(bare.parents.map((p) => p.key)).toEqual([
      'blue/engine-00001',
      'green/engine-00001',
      'ns/engine-00000',
    ]);
    expect(bare.parents.every((p) => p.pods === undefined)).toBe(true);
    const full = service.storeSnapshot({ objects: true });
    expect(full.parents[2]!.pods).toEqual([
      expect.objectContaining({ key: 'ns/engine-0', namespace: 'ns', podIP: '10.0.0.1' }),
    ]);
  });

  it('decides admin access itself, without handing out the token', async () => {
    const CURL = { host: 'localhost:8080', origin: undefined, contentType: undefined };
    const { service } = await harness({ adminToken: 's3cret' });
    expect(service.authorizeAdmin('Bearer s3cret', '10.0.0.9', CURL)).toEqual({ allowed: true });
    expect(service.authorizeAdmin('Bearer wrong', '127.0.0.1', CURL)).toMatchObject({
      allowed: false,
      status: 401,
    });
    // Everything the control plane hands out, serialized: a token on a public field, in a
    // snapshot, a body, a health report or a metric would show up here.
    const handedOut = [
      // Public fields, one level deep (the metrics registry is circular; its text is below).
      JSON.stringify(Object.entries(service).map(([k, v]) => [k, typeof v === 'string' ? v : k])),
      JSON.stringify(service.storeSnapshot({ objects: true })),
      JSON.stringify(service.loopState()),
      JSON.stringify(service.reflector()),
      service.cells.listBody().toString(),
      JSON.stringify(service.health.readyz.report({ verbose: true, exclude: [] })),
      JSON.stringify(service.health.healthz.report({ verbose: true, exclude: [] })),
      JSON.stringify(service.authorizeAdmin('Bearer wrong', '10.0.0.9', CURL)),
      await service.metrics.render(),
    ];
    expect(handedOut.filter((text) => text.includes('s3cret'))).toEqual([]);
    expect(handedOut.join('\n')).toContain('controller_runtime_reconcile_total'); // reads are real
  });
});

describe('a pod with a 200 KB annotation', () => {
  it('enters the cell list, the cell.changed event, the log and the metrics bounded', async () => {
    const logger = new RecordingLogger();
    const h = await harness({ logger });
    const events: string[] = [];
    const stop = h.service.bus.listen((event) => events.push(JSON.stringify(event)));
    const pod = lwsPod({
      group: 0,
      worker: 0,
      size: 'x'.repeat(200_000),
      phase: 'y'.repeat(200_000),
    });
    await h.push(upsert(pod));
    stop();
    const cells = await h.app.inject({ url: '/api/v1/cells' });
    expect(cells.json().count).toBe(1);
    expect(cells.body.length).toBeLessThan(4_000);
    expect(events.some((e) => e.includes('"cell.changed"'))).toBe(true);
    expect(Math.max(...events.map((e) => e.length))).toBeLessThan(4_000);
    expect(Math.max(...logger.entries.map((e) => JSON.stringify(e).length))).toBeLessThan(4_000);
    expect((await h.service.metrics.render()).length).toBeLessThan(100_000);
  });
});
