import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/model/pod.js';
import { cellKeyMap } from '../../src/pools/cell-key.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { ReconcileLoop } from '../../src/runtime/reconcile-loop.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';
import {
  INFORMER_PROCESSING_LATENCY_BUCKETS,
  InformerMetrics,
  storeResourceVersionValue,
} from '../../src/service/informer-metrics.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSource } from '../support/fake-source.js';
import { lwsPod } from '../support/lws-pod.js';
import { remove, replaceWith, upsert } from '../support/service-harness.js';
import { until } from '../support/until.js';

const LABELS = 'group="",name="pool-controller",resource="pods",version="v1"';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((s) => s()));
});

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function setup(bindings: { queued?: number; cursor?: string } = {}) {
  const clock = new FakeClock();
  const registry = new Registry();
  const informer = new InformerMetrics({ registry, clock });
  const state = { queued: bindings.queued, cursor: bindings.cursor };
  informer.bind({ queuedItems: () => state.queued, cursor: () => state.cursor });
  const fake = new FakeSource<Pod>();
  const source = informer.instrument(fake.source, (pod) => pod.metadata.resourceVersion);
  const stream = source(new AbortController().signal)[Symbol.asyncIterator]();
  return { clock, registry, informer, state, fake, stream };
}

const pod = (group: number, resourceVersion: string): Pod => lwsPod({ group, resourceVersion });

describe('InformerMetrics', () => {
  it("exports client-go's three informer series, labelled name, group, version, resource, at 0", async () => {
    const { registry } = setup();
    const text = await registry.metrics();
    expect(text).toContain(
      '# HELP informer_queued_items Number of items currently queued in the FIFO.\n# TYPE informer_queued_items gauge',
    );
    expect(text).toContain(
      '# HELP informer_processing_latency_seconds Time taken to process events after popping from the queue.\n# TYPE informer_processing_latency_seconds histogram',
    );
    expect(text).toContain(
      '# HELP informer_store_resource_version The 15 least significant digits of the resource version of the store.\n# TYPE informer_store_resource_version gauge',
    );
    expect(value(text, `informer_queued_items{${LABELS}}`)).toBe(0);
    expect(value(text, `informer_processing_latency_seconds_count{${LABELS}}`)).toBe(0);
    expect(value(text, `informer_store_resource_version{${LABELS}}`)).toBe(0);
    const buckets = [...text.matchAll(/informer_processing_latency_seconds_bucket\{le="([^"]+)"/g)];
    expect(buckets.map(([, le]) => le)).toEqual([
      ...INFORMER_PROCESSING_LATENCY_BUCKETS.map(String),
      '+Inf',
    ]);
  });

  it('times an event from the pop until the consumer asks for the next one', async () => {
    const { clock, registry, fake, stream } = setup();
    fake.push(replaceWith([pod(0, '5')]));
    await stream.next();
    await clock.advance(30); // the consumer applies the replace
    const next = stream.next();
    let text = await registry.metrics();
    expect(value(text, `informer_processing_latency_seconds_count{${LABELS}}`)).toBe(1);
    expect(value(text, `informer_processing_latency_seconds_bucket{le="0.025",${LABELS}}`)).toBe(0);
    expect(value(text, `informer_processing_latency_seconds_bucket{le="0.05",${LABELS}}`)).toBe(1);
    fake.push(upsert(pod(1, '6')));
    await next;
    await clock.advance(2);
    await stream.return?.();
    text = await registry.metrics();
    expect(value(text, `informer_processing_latency_seconds_count{${LABELS}}`)).toBe(2);
    expect(value(text, `informer_processing_latency_seconds_sum{${LABELS}}`)).toBeCloseTo(0.032);
  });

  it("reports the queue depth the source reports, and the store's version once each event is processed", async () => {
    const { registry, state, fake, stream } = setup({ queued: 3, cursor: '900' });
    fake.push(replaceWith([pod(0, '12'), pod(1, '120'), pod(2, '99')]));
    await stream.next();
    // Popped, not yet processed: the store is at nothing yet.
    let text = await registry.metrics();
    expect(value(text, `informer_queued_items{${LABELS}}`)).toBe(3);
    expect(value(text, `informer_store_resource_version{${LABELS}}`)).toBe(0);
    const next = stream.next();
    // The replace is in the store, events still queued: its newest pod is the store's version.
    text = await registry.metrics();
    expect(value(text, `informer_store_resource_version{${LABELS}}`)).toBe(120);
    fake.push(remove(pod(1, '130')));
    await next;
    const after = stream.next();
    text = await registry.metrics();
    expect(value(text, `informer_store_resource_version{${LABELS}}`)).toBe(130);
    // Caught up (nothing queued, nothing in processing): the store is at the reflector's cursor.
    state.queued = 0;
    text = await registry.metrics();
    expect(value(text, `informer_queued_items{${LABELS}}`)).toBe(0);
    expect(value(text, `informer_store_resource_version{${LABELS}}`)).toBe(900);
    fake.push(upsert(pod(3, '140')));
    await after;
    expect(value(await registry.metrics(), `informer_store_resource_version{${LABELS}}`)).toBe(130);
  });

  it('keeps the 15 least significant digits of a long resourceVersion and ignores one that is no number', () => {
    expect(storeResourceVersionValue('1234567890123456789')).toBe(567890123456789);
    expect(storeResourceVersionValue('42')).toBe(42);
    expect(storeResourceVersionValue('opaque-v1')).toBeUndefined();
  });

  it('leaves the stream unchanged for the loop that reads it', async () => {
    const clock = new FakeClock();
    const informer = new InformerMetrics({ registry: new Registry(), clock });
    informer.bind({ queuedItems: () => 0, cursor: () => '77' });
    const fake = new FakeSource<Pod>();
    const seen: string[] = [];
    const loop = new ReconcileLoop<Pod>({
      source: informer.instrument(fake.source, (p) => p.metadata.resourceVersion),
      keyMap: cellKeyMap(LWS_LABELS),
      clock,
      resyncPeriodMs: null,
      reconcile: async (key) => {
        seen.push(key);
      },
    });
    stops.push(() => loop.stop());
    const started = loop.start();
    await until(() => fake.awaitingPull, { what: 'the loop to open its source' });
    const events: SourceEvent<Pod>[] = [replaceWith([pod(0, '70')]), upsert(pod(1, '71'))];
    fake.push(...events);
    await started;
    await until(() => seen.length === 2, { what: 'both cells reconciled' });
    expect(loop.objectCount).toBe(2);
    await until(() => fake.awaitingPull, { what: 'the loop to wait for more' });
    expect(informer.storeResourceVersion()).toBe('77');
  });
});
