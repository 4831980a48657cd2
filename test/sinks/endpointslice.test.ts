import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesEndpointSliceApi } from '../../src/kubernetes/resources/endpointslice-api.js';
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  type EndpointSliceOperationRecord,
  EndpointSliceSink,
  type EndpointSliceSinkOptions,
  endpointSliceName,
} from '../../src/sinks/endpointslice.js';
import { SinkApplyError, type SinkEvent } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeEndpointSliceApiServer } from '../support/fake-endpointslice-apiserver.js';
import { RecordingLogger } from '../support/recording-logger.js';

const NOW = '2026-01-02T03:04:05.000Z';
const signal = new AbortController().signal;

let server: FakeEndpointSliceApiServer;
beforeEach(async () => {
  server = await FakeEndpointSliceApiServer.start();
});
afterEach(async () => {
  await server.close();
});

/** Pools of `namespace` with their cells' addresses. */
function state(pools: Record<string, string[]>, namespace = 'inference'): RoutingState {
  return {
    pools: Object.entries(pools).map(([pool, addresses]) => ({
      namespace,
      pool,
      cells: addresses.map((address, i) => ({ cell: `${pool}-${i}`, generation: 'g1', address })),
    })),
  };
}

function sink(extra: Partial<EndpointSliceSinkOptions> = {}) {
  const events: SinkEvent[] = [];
  const operations: EndpointSliceOperationRecord[] = [];
  const logger = new RecordingLogger();
  const instance = new EndpointSliceSink({
    api: new KubernetesEndpointSliceApi({ connection: server.connection() }),
    namespace: 'inference',
    portName: 'http',
    wallClock: () => new Date(NOW),
    logger,
    publish: (event) => events.push(event),
    onOperation: (record) => operations.push(record),
    ...extra,
  });
  return { sink: instance, events, operations, logger };
}

const ready = { ready: true, serving: true, terminating: false };

describe('EndpointSliceSink', () => {
  it('creates one slice per pool and port with the alive leaders, labelled for the Service', async () => {
    const { sink: s, events, operations } = sink();
    await s.apply(
      state({ engine: ['10.1.2.3:30000', '10.1.2.4:30000', '10.1.2.5:31000'] }),
      signal,
    );
    expect(server.sequence()).toEqual([
      'LIST inference',
      'APPLY engine-alive-30000',
      'APPLY engine-alive-31000',
    ]);
    const list = server.requests[0]!;
    expect(list.query.get('labelSelector')).toBe(
      'endpointslice.kubernetes.io/managed-by=pool-controller',
    );
    const apply = server.requests[1]!;
    expect(apply.headers['content-type']).toBe('application/apply-patch+yaml');
    expect(Object.fromEntries(apply.query)).toEqual({
      fieldManager: 'pool-controller',
      force: 'true',
      fieldValidation: 'Strict',
    });
    expect(apply.body).toEqual({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'engine-alive-30000',
        namespace: 'inference',
        labels: {
          'kubernetes.io/service-name': 'engine-alive',
          'endpointslice.kubernetes.io/managed-by': 'pool-controller',
        },
      },
      addressType: 'IPv4',
      endpoints: [
        { addresses: ['10.1.2.3'], conditions: ready },
        { addresses: ['10.1.2.4'], conditions: ready },
      ],
      ports: [{ name: 'http', port: 30000, protocol: 'TCP' }],
    });
    expect(server.endpoints('inference', 'engine-alive-31000')).toEqual(['10.1.2.5:31000']);
    expect(s.status()).toEqual([
      {
        kind: 'endpointslice',
        target: 'inference/engine-alive-30000',
        pool: 'engine',
        desired: ['10.1.2.3:30000', '10.1.2.4:30000'],
        actual: ['10.1.2.3:30000', '10.1.2.4:30000'],
        pending: [],
        lastAppliedAt: NOW,
        lastError: null,
        backoffUntil: null,
        mode: 'apply',
        wouldAdd: [],
        wouldRemove: [],
        panic: false,
        heldByPanic: [],
        ownership: { mode: 'managed', by: 'labels' },
      },
      expect.objectContaining({
        target: 'inference/engine-alive-31000',
        desired: ['10.1.2.5:31000'],
        actual: ['10.1.2.5:31000'],
      }),
    ]);
    expect(events).toEqual([
      {
        type: 'sink.applied',
        kind: 'endpointslice',
        target: 'inference/engine-alive-30000',
        pool: 'engine',
        added: ['10.1.2.3:30000', '10.1.2.4:30000'],
        removed: [],
      },
      expect.objectContaining({
        target: 'inference/engine-alive-31000',
        added: ['10.1.2.5:31000'],
      }),
    ]);
    expect(operations.map((o) => `${o.operation} ${o.target} ${o.result}`)).toEqual([
      'list inference/* success',
      'apply inference/engine-alive-30000 success',
      'apply inference/engine-alive-31000 success',
    ]);
    expect(operations.every((o) => o.sink === 'endpointslice')).toBe(true);
  });

  it('writes nothing when the slices already equal the desired state', async () => {
    const { sink: s, events } = sink();
    const desired = state({ engine: ['10.1.2.3:30000', '10.1.2.4:30000'] });
    await s.apply(desired, signal);
    server.clearRequests();
    events.length = 0;
    // A fresh sink (a new leader) finds the same slices: still nothing to write.
    const { sink: fresh } = sink();
    await s.apply(desired, signal);
    await fresh.apply(desired, signal);
    expect(server.sequence()).toEqual(['LIST inference', 'LIST inference']);
    expect(events).toEqual([]);
    expect(fresh.status()[0]).toMatchObject({
      desired: ['10.1.2.3:30000', '10.1.2.4:30000'],
      actual: ['10.1.2.3:30000', '10.1.2.4:30000'],
      lastAppliedAt: NOW,
      lastError: null,
    });
  });

  it('applies only the slice that changed, and repairs a slice edited by hand', async () => {
    const { sink: s, events } = sink();
    await s.apply(state({ a: ['10.0.0.1:8000'], b: ['10.0.0.2:8000'] }), signal);
    server.clearRequests();
    events.length = 0;
    await s.apply(state({ a: ['10.0.0.1:8000', '10.0.0.3:8000'], b: ['10.0.0.2:8000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY a-alive-8000']);
    expect(events).toEqual([
      expect.objectContaining({ target: 'inference/a-alive-8000', added: ['10.0.0.3:8000'] }),
    ]);

    const edited = server.slices.get('inference/b-alive-8000')!;
    server.put({ ...edited, endpoints: [{ addresses: ['10.9.9.9'], conditions: ready }] });
    server.clearRequests();
    events.length = 0;
    await s.apply(state({ a: ['10.0.0.1:8000', '10.0.0.3:8000'], b: ['10.0.0.2:8000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY b-alive-8000']);
    expect(server.endpoints('inference', 'b-alive-8000')).toEqual(['10.0.0.2:8000']);
    expect(events).toEqual([
      expect.objectContaining({ added: ['10.0.0.2:8000'], removed: ['10.9.9.9:8000'] }),
    ]);
  });

  it('leaves loopback addresses out, and says so once in the log and in status', async () => {
    const { sink: s, logger } = sink();
    const desired = state({ engine: ['127.0.0.1:30000', '10.1.2.3:30000', '[::1]:30000'] });
    await s.apply(desired, signal);
    await s.apply(desired, signal);
    await s.apply(desired, signal);
    // The API server would refuse the slice (422): it never sees a loopback address.
    expect(server.endpoints('inference', 'engine-alive-30000')).toEqual(['10.1.2.3:30000']);
    expect(server.endpoints('inference', 'engine-alive-30000-ipv6')).toEqual([]);
    const warnings = logger.entries.filter((e) => e.msg?.includes('left out'));
    expect(warnings).toHaveLength(2);
    expect(warnings.map((w) => (w.obj as { endpoints: string[] }).endpoints)).toEqual([
      ['127.0.0.1:30000 (loopback)'],
      ['[::1]:30000 (loopback)'],
    ]);
    const [v4, v6] = s.status();
    expect(v4).toMatchObject({
      desired: ['10.1.2.3:30000'],
      pending: [],
      lastAppliedAt: NOW,
      lastError: expect.stringContaining('127.0.0.1:30000 (loopback)'),
    });
    expect(v6?.lastError).toContain('[::1]:30000 (loopback)');

    // Gone from the desired state: the note goes; back again: logged again, once.
    await s.apply(state({ engine: ['10.1.2.3:30000'] }), signal);
    expect(s.status()).toEqual([
      expect.objectContaining({ target: 'inference/engine-alive-30000', lastError: null }),
    ]);
    await s.apply(desired, signal);
    await s.apply(desired, signal);
    expect(logger.entries.filter((e) => e.msg?.includes('left out'))).toHaveLength(4);
  });

  it('splits IPv4 and IPv6 cells into slices of their own address type', async () => {
    const { sink: s } = sink();
    await s.apply(
      state({ engine: ['10.1.2.3:30000', '[FD00:0:0::0a]:30000', '[fd00::b]:30000'] }),
      signal,
    );
    expect(server.sequence()).toEqual([
      'LIST inference',
      'APPLY engine-alive-30000',
      'APPLY engine-alive-30000-ipv6',
    ]);
    const v6 = server.slices.get('inference/engine-alive-30000-ipv6')!;
    expect(v6.addressType).toBe('IPv6');
    // Canonical form: the API server warns about (and newer ones refuse) anything else.
    expect(v6.endpoints).toEqual([
      { addresses: ['fd00::a'], conditions: ready },
      { addresses: ['fd00::b'], conditions: ready },
    ]);
    expect(server.slices.get('inference/engine-alive-30000')?.addressType).toBe('IPv4');
    expect(s.status().map((t) => t.desired)).toEqual([
      ['10.1.2.3:30000'],
      ['[fd00::a]:30000', '[fd00::b]:30000'],
    ]);
  });

  it('deletes the slices of a vanished pool and of a port no cell uses any more', async () => {
    const { sink: s, events } = sink();
    await s.apply(state({ a: ['10.0.0.1:8000', '10.0.0.2:9000'], b: ['10.0.0.3:8000'] }), signal);
    // Someone else's slice in the namespace (no managed-by label): never touched.
    server.put({
      metadata: {
        name: 'other',
        namespace: 'inference',
        labels: { 'kubernetes.io/service-name': 'other' },
      },
      addressType: 'IPv4',
      endpoints: [],
      ports: [],
    });
    server.clearRequests();
    events.length = 0;
    await s.apply(state({ a: ['10.0.0.1:8000'] }), signal);
    expect(server.sequence()).toEqual([
      'LIST inference',
      'DELETE a-alive-9000',
      'DELETE b-alive-8000',
    ]);
    // With the uid it was listed with as a precondition.
    expect(server.requests[1]?.body).toMatchObject({
      kind: 'DeleteOptions',
      preconditions: { uid: expect.any(String) },
    });
    expect([...server.slices.keys()].sort()).toEqual(['inference/a-alive-8000', 'inference/other']);
    expect(events).toEqual([
      expect.objectContaining({
        target: 'inference/a-alive-9000',
        pool: 'a',
        removed: ['10.0.0.2:9000'],
      }),
      expect.objectContaining({
        target: 'inference/b-alive-8000',
        pool: 'b',
        removed: ['10.0.0.3:8000'],
      }),
    ]);
    expect(s.status().map((t) => t.target)).toEqual(['inference/a-alive-8000']);

    // A pool whose cells are all dead is rendered with no cells: its slices go too.
    await s.apply(state({ a: [] }), signal);
    expect(server.slices.has('inference/a-alive-8000')).toBe(false);
    expect(s.status()).toEqual([]);
  });

  it('keeps converging the other pools when one fails, then throws SinkApplyError', async () => {
    const clock = new FakeClock();
    const { sink: s, events, operations } = sink({ clock });
    server.fail('PATCH /apis/discovery.k8s.io/v1/namespaces/inference/endpointslices/bad-alive');
    await expect(
      s.apply(state({ bad: ['10.0.0.1:8000'], good: ['10.0.0.2:8000'] }), signal),
    ).rejects.toSatisfy((error: unknown) => {
      expect(error).toBeInstanceOf(SinkApplyError);
      const failures = (error as SinkApplyError).failures;
      expect(failures.map((f) => [f.target, f.pool])).toEqual([
        ['inference/bad-alive-8000', 'bad'],
      ]);
      expect(failures[0]?.error).toContain('HTTP 500');
      return true;
    });
    expect(server.endpoints('inference', 'good-alive-8000')).toEqual(['10.0.0.2:8000']);
    expect(events.map((e) => `${e.type} ${e.target}`)).toEqual([
      'sink.failed inference/bad-alive-8000',
      'sink.applied inference/good-alive-8000',
    ]);
    expect(operations.filter((o) => o.result === 'error').map((o) => o.operation)).toEqual([
      'apply',
    ]);
    const bad = s.status().find((t) => t.pool === 'bad');
    expect(bad).toMatchObject({
      lastAppliedAt: null,
      lastError: expect.stringContaining('HTTP 500'),
    });
    // No token in any error.
    expect(JSON.stringify(events)).not.toContain('secret-token');

    server.heal();
    await clock.advance(1_000); // its backoff
    await s.apply(state({ bad: ['10.0.0.1:8000'], good: ['10.0.0.2:8000'] }), signal);
    expect(s.status().every((t) => t.lastError === null && t.lastAppliedAt === NOW)).toBe(true);
  });

  it('holds a slice whose last write failed until its backoff ends, while the other pools deploy', async () => {
    const clock = new FakeClock();
    const { sink: s, events } = sink({ clock, backoffMaxMs: 4_000 });
    server.fail('PATCH /apis/discovery.k8s.io/v1/namespaces/inference/endpointslices/bad-alive');
    await s
      .apply(state({ bad: ['10.0.0.1:8000'], good: ['10.0.0.2:8000'] }), signal)
      .catch(() => {});
    server.clearRequests();
    // A run begins at once (a cell changed): the held slice is not written, the other is.
    await expect(
      s.apply(state({ bad: ['10.0.0.1:8000'], good: ['10.0.0.2:8000', '10.0.0.3:8000'] }), signal),
    ).rejects.toThrow(/bad-alive-8000.*not called until 2026-01-02T03:04:06/);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY good-alive-8000']);
    expect(events.filter((e) => e.type === 'sink.failed')).toHaveLength(1);
    expect(s.nextAttemptAtMs()).toBe(1_000);
    expect(s.status().find((t) => t.pool === 'bad')?.backoffUntil).toBe('2026-01-02T03:04:06.000Z');

    server.heal();
    await clock.advance(1_000);
    server.clearRequests();
    await s.apply(
      state({ bad: ['10.0.0.1:8000'], good: ['10.0.0.2:8000', '10.0.0.3:8000'] }),
      signal,
    );
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY bad-alive-8000']);
    expect(s.nextAttemptAtMs()).toBeUndefined();
  });

  it('fails one pool with an invalid Service name without touching the others', async () => {
    const { sink: s } = sink();
    const long = 'x'.repeat(60);
    await expect(
      s.apply(state({ [long]: ['10.0.0.1:8000'], ok: ['10.0.0.2:8000'] }), signal),
    ).rejects.toBeInstanceOf(SinkApplyError);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY ok-alive-8000']);
  });

  it('reports a failed LIST and leaves that namespace as it was', async () => {
    const clock = new FakeClock();
    const { sink: s, events } = sink({ clock });
    await s.apply(state({ a: ['10.0.0.1:8000'] }), signal);
    server.fail('GET ', 503, 1);
    server.clearRequests();
    await expect(s.apply(state({}), signal)).rejects.toBeInstanceOf(SinkApplyError);
    expect(server.sequence()).toEqual(['LIST inference']);
    expect(server.slices.has('inference/a-alive-8000')).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'sink.failed', target: 'inference/*', pool: '*' });
    expect(s.status()[0]?.lastError).toContain('LIST');
    await clock.advance(1_000); // its backoff
    await s.apply(state({}), signal);
    expect(server.slices.size).toBe(0);
  });

  it('lists all namespaces at once when the watched namespace is all', async () => {
    const { sink: s } = sink({ namespace: undefined, serviceSuffix: '-routed' });
    await s.apply(
      {
        pools: [
          ...state({ a: ['10.0.0.1:8000'] }, 'one').pools,
          ...state({ a: ['10.0.0.2:8000'] }, 'two').pools,
        ],
      },
      signal,
    );
    expect(server.sequence()).toEqual(['LIST *', 'APPLY a-routed-8000', 'APPLY a-routed-8000']);
    expect(server.requests[0]?.path).toBe('/apis/discovery.k8s.io/v1/endpointslices');
    expect([...server.slices.keys()].sort()).toEqual(['one/a-routed-8000', 'two/a-routed-8000']);
    await s.apply(state({ a: ['10.0.0.1:8000'] }, 'one'), signal);
    expect([...server.slices.keys()]).toEqual(['one/a-routed-8000']);
  });

  it('sends nothing once the signal has aborted', async () => {
    const { sink: s } = sink();
    const aborted = AbortSignal.abort(new Error('lost the lease'));
    await expect(s.apply(state({ a: ['10.0.0.1:8000'] }), aborted)).rejects.toThrow(
      'lost the lease',
    );
    expect(server.requests).toEqual([]);
  });
});

describe('endpointSliceName', () => {
  it('is <service>-<port> (IPv6: -ipv6), hashed down to 63 characters', () => {
    expect(endpointSliceName('engine-alive', 30000, 'IPv4')).toBe('engine-alive-30000');
    expect(endpointSliceName('engine-alive', 30000, 'IPv6')).toBe('engine-alive-30000-ipv6');
    const long = endpointSliceName(`${'p'.repeat(57)}-alive`, 30000, 'IPv6');
    expect(long).toHaveLength(63);
    expect(long).toMatch(/^p+-[0-9a-f]{8}$/);
    expect(endpointSliceName(`${'p'.repeat(57)}-alive`, 30001, 'IPv6')).not.toBe(long);
  });
});
