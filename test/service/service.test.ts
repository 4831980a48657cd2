import { describe, expect, it } from 'vitest';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { PoolService } from '../../src/service.js';
import { DrivenPodSource, harness, replaceWith } from '../routes/harness.js';
import { FakeClock } from '../support/fake-clock.js';
import { lwsPod } from '../support/lws-pod.js';

function service(podSource = new DrivenPodSource(), clock = new FakeClock()) {
  return new PoolService({
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
    expect(service.health.readyz.find((c) => c.name === 'shutdown')?.check()).toBe(
      'the process is shutting down',
    );
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
    await new Promise((r) => setImmediate(r));
    podSource.fake.push(replaceWith([lwsPod()]));
    await started;
    await s.stop();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('PoolService under a relist', () => {
  it('keeps answering HTTP while thousands of reconciles are pending', async () => {
    const { app, push } = await harness();
    const pods = Array.from({ length: 5_000 }, (_, i) => lwsPod({ group: i }));
    const responded = push(replaceWith(pods)).then(() => undefined);
    // Asked while the reconciles run: answered between slices, not after the last one.
    const res = await app.inject({ url: '/api/v1/cells' });
    const seen = res.json().count as number;
    expect(seen).toBeLessThan(5_000);
    await responded;
  });
});
