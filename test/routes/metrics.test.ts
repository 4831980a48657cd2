import { afterEach, describe, expect, it } from 'vitest';
import { METRICS_CACHE_MS } from '../../routes/metrics.js';
import { RECONCILE_TIME_BUCKETS } from '../../src/service/metrics.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness, upsert } from '../support/service-harness.js';

afterEach(closeAll);

/** `name{labels} value` lines of a metric family, as [labels, value]. */
function samples(text: string, name: string): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match && match[1] === name) out.push([match[2] ?? '', Number(match[3])]);
  }
  return out;
}

function value(text: string, name: string, labels: string): number | undefined {
  return samples(text, name).find(([l]) => l === labels)?.[1];
}

const pods = () => [
  lwsPod({ group: 0, worker: 0, size: 2 }),
  lwsPod({ group: 0, worker: 1, size: 2 }),
  lwsPod({ group: 1, worker: 0, size: 2, ready: false }),
];

describe('GET /metrics', () => {
  it('serves the Prometheus text format', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('exports pool_controller_build_info with the version, revision and Node.js as labels', async () => {
    const { app, service } = await harness({ start: false });
    const text = (await app.inject({ url: '/metrics' })).body;
    const { version, revision, nodeVersion } = service.buildInfo;
    expect(samples(text, 'pool_controller_build_info')).toEqual([
      [`{version="${version}",revision="${revision}",node_version="${nodeVersion}"}`, 1],
    ]);
    expect(nodeVersion).toBe(process.version);
  });

  it("pre-initialises controller-runtime's reconcile metrics before any reconcile", async () => {
    const { app } = await harness({ start: false });
    const text = (await app.inject({ url: '/metrics' })).body;
    expect(samples(text, 'controller_runtime_reconcile_total')).toEqual([
      ['{controller="cell",result="error"}', 0],
      ['{controller="cell",result="requeue_after"}', 0],
      ['{controller="cell",result="requeue"}', 0],
      ['{controller="cell",result="success"}', 0],
    ]);
    expect(value(text, 'controller_runtime_reconcile_errors_total', '{controller="cell"}')).toBe(0);
    expect(value(text, 'controller_runtime_max_concurrent_reconciles', '{controller="cell"}')).toBe(
      1,
    );
    expect(value(text, 'controller_runtime_active_workers', '{controller="cell"}')).toBe(0);
    for (const name of [
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_retries_total',
      'workqueue_unfinished_work_seconds',
      'workqueue_longest_running_processor_seconds',
    ]) {
      expect(value(text, name, '{name="cell",controller="cell"}'), name).toBe(0);
    }
  });

  it("uses controller-runtime's reconcile-time buckets and client-go's workqueue buckets", async () => {
    const { app } = await harness({ pods: pods() });
    const text = (await app.inject({ url: '/metrics' })).body;
    const les = (name: string) =>
      samples(text, name).map(([labels]) => /le="([^"]+)"/.exec(labels)?.[1]);
    expect(les('controller_runtime_reconcile_time_seconds_bucket')).toEqual([
      ...RECONCILE_TIME_BUCKETS.map(String),
      '+Inf',
    ]);
    const workqueue = [
      '1e-8',
      '1e-7',
      '0.000001',
      '0.00001',
      '0.0001',
      '0.001',
      '0.01',
      '0.1',
      '1',
      '10',
      '100',
      '1000',
      '+Inf',
    ];
    expect(les('workqueue_queue_duration_seconds_bucket')).toEqual(workqueue);
    expect(les('workqueue_work_duration_seconds_bucket')).toEqual(workqueue);
    expect(samples(text, 'workqueue_work_duration_seconds_bucket')[0]?.[0]).toBe(
      '{le="1e-8",name="cell",controller="cell"}',
    );
  });

  it('counts reconciles, queue adds and durations as they happen', async () => {
    const { app, push, clock } = await harness({ pods: pods() });
    let text = (await app.inject({ url: '/metrics' })).body;
    expect(
      value(text, 'controller_runtime_reconcile_total', '{controller="cell",result="success"}'),
    ).toBe(2);
    expect(value(text, 'workqueue_adds_total', '{name="cell",controller="cell"}')).toBe(2);
    expect(
      value(text, 'controller_runtime_reconcile_time_seconds_count', '{controller="cell"}'),
    ).toBe(2);
    expect(
      value(text, 'workqueue_queue_duration_seconds_count', '{name="cell",controller="cell"}'),
    ).toBe(2);
    await push(upsert(lwsPod({ group: 1, worker: 0, size: 2, ready: true })));
    // Served from the first render until it is METRICS_CACHE_MS old.
    await clock.advance(METRICS_CACHE_MS);
    text = (await app.inject({ url: '/metrics' })).body;
    expect(
      value(text, 'controller_runtime_reconcile_total', '{controller="cell",result="success"}'),
    ).toBe(3);
  });

  it('reports cells by pool and aliveness, pods by pool, and transitions', async () => {
    const { app } = await harness({ pods: pods() });
    const text = (await app.inject({ url: '/metrics' })).body;
    expect(samples(text, 'pool_controller_cells')).toEqual([
      ['{namespace="ns",pool="engine",alive="true"}', 1],
      ['{namespace="ns",pool="engine",alive="false"}', 1],
    ]);
    expect(samples(text, 'pool_controller_pods')).toEqual([['{namespace="ns",pool="engine"}', 3]]);
    expect(value(text, 'pool_controller_cell_transitions_total', '{transition="appeared"}')).toBe(
      2,
    );
    expect(value(text, 'pool_controller_cell_transitions_total', '{transition="gone"}')).toBe(0);
    expect(value(text, 'pool_controller_store_objects', '')).toBe(3);
    expect(value(text, 'pool_controller_source_info', '{source="kubernetes"}')).toBe(1);
  });

  it("mirrors the source's stats as reflector metrics", async () => {
    const { app, podSource } = await harness();
    podSource.current = {
      phase: 'watching',
      healthy: true,
      lists: 3,
      relists: { expired: 2 },
      watchOpens: 4,
      initialList: 'watch-list',
      watchListFallbacks: 0,
      initialEventsTimeouts: 2,
      stalledWatches: 3,
      events: { ADDED: 5, DELETED: 1 },
      droppedEvents: { stale: 7 },
      lastSyncAtMs: 1_700_000_000_000,
      lastEventAtMs: 1_700_000_001_000,
      bytesDecoded: 999,
    };
    const text = (await app.inject({ url: '/metrics' })).body;
    expect(value(text, 'pool_controller_reflector_lists_total', '')).toBe(3);
    // Every reason is a series from the start, 0 until it happens.
    expect(samples(text, 'pool_controller_reflector_relists_total')).toEqual([
      ['{reason="expired"}', 2],
      ['{reason="too-large"}', 0],
      ['{reason="malformed-frame"}', 0],
      ['{reason="error-frame"}', 0],
      ['{reason="list-failed"}', 0],
      ['{reason="regression"}', 0],
      ['{reason="other"}', 0],
    ]);
    expect(samples(text, 'pool_controller_reflector_dropped_events_total')).toEqual([
      ['{reason="stale"}', 7],
      ['{reason="out-of-scope"}', 0],
    ]);
    expect(value(text, 'pool_controller_reflector_watch_opens_total', '')).toBe(4);
    expect(value(text, 'pool_controller_reflector_initial_events_timeouts_total', '')).toBe(2);
    expect(value(text, 'pool_controller_reflector_stalled_watches_total', '')).toBe(3);
    expect(samples(text, 'pool_controller_reflector_events_total')).toEqual([
      ['{type="ADDED"}', 5],
      ['{type="DELETED"}', 1],
    ]);
    expect(value(text, 'pool_controller_reflector_last_sync_timestamp_seconds', '')).toBe(
      1_700_000_000,
    );
    expect(value(text, 'pool_controller_reflector_last_event_timestamp_seconds', '')).toBe(
      1_700_000_001,
    );
    expect(value(text, 'pool_controller_reflector_healthy', '')).toBe(1);
    expect(value(text, 'pool_controller_reflector_decoded_bytes_total', '')).toBe(999);
  });
});
