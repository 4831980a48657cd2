import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CoordinationMetrics } from '../../src/service/coordination-metrics.js';
import type { SinkTargetStatus } from '../../src/sinks/sink.js';

function status(target: string): SinkTargetStatus {
  return {
    kind: 'endpointslice',
    target,
    pool: 'engine',
    desired: [],
    actual: [],
    pending: [],
    lastAppliedAt: null,
    lastError: null,
    backoffUntil: null,
    mode: 'apply',
    wouldAdd: [],
    wouldRemove: [],
    panic: false,
    heldByPanic: [],
    ownership: { mode: 'managed', by: 'labels' },
  };
}

describe('pool_controller_sink_operations_total', () => {
  it('drops the series of a target the sinks stopped reporting, one scrape after it vanished', async () => {
    const registry = new Registry();
    const metrics = new CoordinationMetrics(registry);
    let targets = [status('ns/a-alive-http-ipv4'), status('ns/b-alive-http-ipv4')];
    metrics.bind({ leaseName: 'l', subscribers: () => 0, sinkStatus: () => targets });
    const sink = 'endpointslice';
    metrics.sinkOperation({ sink, target: 'ns/*', operation: 'list', result: 'success' });
    for (const target of ['ns/a-alive-http-ipv4', 'ns/b-alive-http-ipv4']) {
      metrics.sinkOperation({ sink, target, operation: 'apply', result: 'success' });
    }
    const series = async () =>
      (await registry.getSingleMetric('pool_controller_sink_operations_total')!.get()).values.map(
        (v) => `${v.labels.target} ${v.labels.operation}`,
      );
    expect(await series()).toHaveLength(3);
    // Pool b goes: its slice is deleted and no longer reported.
    metrics.sinkOperation({
      sink,
      target: 'ns/b-alive-http-ipv4',
      operation: 'delete',
      result: 'success',
    });
    targets = [status('ns/a-alive-http-ipv4')];
    // Scraped once more with its last count...
    expect(await series()).toContain('ns/b-alive-http-ipv4 delete');
    // ...then gone; the live target and the namespace's LIST stay.
    expect((await series()).sort()).toEqual(['ns/* list', 'ns/a-alive-http-ipv4 apply']);
  });

  it('stays bounded over 4,000 pools that came and went', async () => {
    const registry = new Registry();
    const metrics = new CoordinationMetrics(registry);
    let targets: SinkTargetStatus[] = [];
    metrics.bind({ leaseName: 'l', subscribers: () => 0, sinkStatus: () => targets });
    const count = async () =>
      (await registry.getSingleMetric('pool_controller_sink_operations_total')!.get()).values
        .length;
    for (let i = 0; i < 4_000; i += 1) {
      const target = `ns/p${i}-alive-http-ipv4`;
      targets = [status(target)];
      metrics.sinkOperation({
        sink: 'endpointslice',
        target,
        operation: 'apply',
        result: 'success',
      });
      await count();
      metrics.sinkOperation({
        sink: 'endpointslice',
        target,
        operation: 'delete',
        result: 'success',
      });
      targets = [];
      await count();
    }
    expect(await count()).toBeLessThanOrEqual(4);
  });
});

describe('guard-rail metrics', () => {
  it('exports pool_controller_sink_panic per pool and the held, would-add and would-remove counts', async () => {
    const registry = new Registry();
    const metrics = new CoordinationMetrics(registry);
    const observed: SinkTargetStatus = {
      ...status('ns/a-alive-http'),
      mode: 'observe',
      wouldAdd: ['10.0.0.1:80', '10.0.0.2:80'],
      wouldRemove: ['10.0.0.3:80'],
      heldByPanic: ['10.0.0.4:80'],
    };
    metrics.bind({
      leaseName: 'l',
      subscribers: () => 0,
      sinkStatus: () => [observed],
      panicPools: () => [
        { namespace: 'ns', pool: 'a', inPanic: true },
        { namespace: 'ns', pool: 'b', inPanic: false },
      ],
    });
    const panic = (await registry.getSingleMetric('pool_controller_sink_panic')!.get()).values;
    expect(panic.map((v) => `${v.labels.pool}=${v.value}`)).toEqual(['a=1', 'b=0']);
    const workers = (await registry.getSingleMetric('pool_controller_sink_workers')!.get()).values;
    const byState = Object.fromEntries(workers.map((v) => [v.labels.state, v.value]));
    expect(byState).toMatchObject({ held_by_panic: 1, would_add: 2, would_remove: 1 });
  });
});

describe('unmarked router workers', () => {
  it('counts a router\'s unmarked workers as pool_controller_sink_workers{state="unmarked"}', async () => {
    const registry = new Registry();
    const metrics = new CoordinationMetrics(registry);
    const router: SinkTargetStatus = {
      ...status('http://router:30000'),
      kind: 'sglang-router',
      unmarked: ['http://10.0.0.9:8000'],
    };
    metrics.bind({
      leaseName: 'l',
      subscribers: () => 0,
      sinkStatus: () => [router, status('ns/a-alive-http')],
      panicPools: () => [],
    });
    const workers = (await registry.getSingleMetric('pool_controller_sink_workers')!.get()).values;
    expect(
      workers.filter((v) => v.labels.state === 'unmarked').map((v) => [v.labels.target, v.value]),
    ).toEqual([['http://router:30000', 1]]);
  });
});
