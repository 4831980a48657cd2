import { afterEach, describe, expect, it } from 'vitest';
import { ReconcileLoop } from '../../src/index.js';
import type { Pod } from '../../src/model/pod.js';
import { cellKeyMap } from '../../src/pools/cell-key.js';
import { CellRegistry } from '../../src/pools/cell-registry.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { DROPPED_DEFAULT_METRICS, ServiceMetrics } from '../../src/service/metrics.js';
import { renderPoolFamilies } from '../../src/service/pool-metric-families.js';
import { FakeClock } from '../support/fake-clock.js';
import { lwsPod } from '../support/lws-pod.js';
import { DrivenPodSource, replaceWith } from '../support/service-harness.js';
import { until } from '../support/until.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((s) => s()));
});

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** ServiceMetrics wired into a real loop whose reconcile fails for group 0 and hangs for group 1. */
async function instrumentedLoop() {
  const clock = new FakeClock();
  const podSource = new DrivenPodSource();
  const metrics = new ServiceMetrics({ clock });
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const loop: ReconcileLoop<Pod> = new ReconcileLoop<Pod>({
    source: podSource.source,
    keyMap: cellKeyMap(LWS_LABELS),
    clock,
    resyncPeriodMs: null,
    instrumentation: metrics.instrumentation,
    reconcile: async (key) => {
      if (key === 'ns/engine-00000') throw new Error('boom');
      if (key === 'ns/engine-00001') await held;
    },
  });
  metrics.bind({
    loopState: () => loop.state(),
    storeObjects: () => loop.objectCount,
    reflector: () => podSource.stats(),
    cells: new CellRegistry(),
    sourceKind: 'kubernetes',
  });
  const started = loop.start();
  await until(() => podSource.fake.awaitingPull, { what: 'the loop to open its source' });
  podSource.fake.push(
    replaceWith([lwsPod({ group: 0 }), lwsPod({ group: 1 }), lwsPod({ group: 2 })]),
  );
  await started;
  await until(
    () => loop.state().inFlight?.key === 'ns/engine-00001' && loop.state().retries.length === 1,
    { what: 'group 0 to fail and group 1 to hang' },
  );
  stops.push(async () => {
    release();
    await loop.stop();
  });
  return { clock, metrics, release, loop };
}

describe('ServiceMetrics with a running loop', () => {
  it('counts a failed reconcile as an error, in both error metrics', async () => {
    const { metrics } = await instrumentedLoop();
    const text = await metrics.render();
    expect(
      value(text, 'controller_runtime_reconcile_total{controller="cell",result="error"}'),
    ).toBe(1);
    expect(value(text, 'controller_runtime_reconcile_errors_total{controller="cell"}')).toBe(1);
  });

  it('shows the in-flight reconcile as an active worker, unfinished work and the longest processor', async () => {
    const { metrics, clock } = await instrumentedLoop();
    await clock.advance(500);
    const text = await metrics.render();
    expect(value(text, 'controller_runtime_active_workers{controller="cell"}')).toBe(1);
    expect(value(text, 'workqueue_unfinished_work_seconds{name="cell",controller="cell"}')).toBe(
      0.5,
    );
    expect(
      value(text, 'workqueue_longest_running_processor_seconds{name="cell",controller="cell"}'),
    ).toBe(0.5);
    expect(value(text, 'workqueue_depth{name="cell",controller="cell"}')).toBe(1);
  });

  it('counts a retry when a failed key comes back after its backoff', async () => {
    const { metrics, clock, release, loop } = await instrumentedLoop();
    release();
    await until(() => loop.state().inFlight === undefined, { what: 'the held reconcile to end' });
    await clock.advance(2_000);
    const text = await metrics.render();
    expect(
      value(text, 'workqueue_retries_total{name="cell",controller="cell"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(text, 'controller_runtime_reconcile_total{controller="cell",result="error"}'),
    ).toBeGreaterThanOrEqual(2);
  });

  it('adds the process metrics when asked', async () => {
    const metrics = new ServiceMetrics({ clock: new FakeClock(), processMetrics: true });
    const text = await metrics.render();
    expect(text).toContain('process_cpu_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('leaves out the default gauges named like counters, keeping their per-type gauges', async () => {
    const metrics = new ServiceMetrics({ clock: new FakeClock(), processMetrics: true });
    const text = await metrics.render();
    for (const name of DROPPED_DEFAULT_METRICS) {
      expect(text).not.toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
      // The per-type gauge it summed is still there (`nodejs_active_resources` needs Node ≥ 17.3).
      expect(text).toMatch(new RegExp(`^# TYPE ${name.replace(/_total$/, '')} gauge$`, 'm'));
    }
    // Every other metric whose name ends in _total is a counter, as the exposition format wants.
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+_total) (\S+)$/gm)) {
      expect(`${name} ${type}`).toBe(`${name} counter`);
    }
  });
});

describe('ServiceMetrics.render', () => {
  it("writes prom-client's exposition, then the per-pool families, one family per turn", async () => {
    const { metrics } = await instrumentedLoop();
    const families = metrics.registry.getMetricsAsArray().length;
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const text = await metrics.render();
    counting = false;
    const pools = await renderPoolFamilies(undefined);
    expect(text).toBe(`${await metrics.registry.metrics()}\n${pools.join('\n\n')}\n`);
    // Other callbacks (probes, requests) ran between the families, not only after them.
    expect(turns).toBeGreaterThanOrEqual(families - 1);
  });
});
