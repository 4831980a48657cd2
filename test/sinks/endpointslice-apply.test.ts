/**
 * The branches of `EndpointSliceSink.apply` that endpointslice.test.ts does not walk: a slice
 * whose addressType must change (deleted, then applied again, as the field is immutable), a
 * failed delete, a namespace held by the backoff of its failed LIST, a slice that differs only in
 * labels or ports, a target that vanished by itself, a hostname, and an abort in the middle.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesEndpointSliceApi } from '../../src/kubernetes/resources/endpointslice-api.js';
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  type EndpointSliceOperationRecord,
  EndpointSliceSink,
  type EndpointSliceSinkOptions,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SERVICE_NAME_LABEL,
} from '../../src/sinks/endpointslice.js';
import { SinkApplyError, type SinkEvent } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeEndpointSliceApiServer } from '../support/fake-endpointslice-apiserver.js';
import { RecordingLogger } from '../support/recording-logger.js';

const NOW = '2026-01-02T03:04:05.000Z';
const signal = new AbortController().signal;
const ready = { ready: true, serving: true, terminating: false };

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

/** A managed slice as this controller (or an older version of it) would have written it. */
function managed(
  name: string,
  addressType: 'IPv4' | 'IPv6',
  addresses: string[],
  port = 30000,
  service = 'engine-alive',
) {
  return {
    metadata: {
      name,
      namespace: 'inference',
      labels: { [SERVICE_NAME_LABEL]: service, [MANAGED_BY_LABEL]: MANAGED_BY },
    },
    addressType,
    endpoints: addresses.map((ip) => ({ addresses: [ip], conditions: ready })),
    ports: [{ name: 'http', port, protocol: 'TCP' }],
  };
}

/** The failures of a rejected apply, as `target: error`. */
async function failuresOf(applying: Promise<void>): Promise<string[]> {
  const error = await applying.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SinkApplyError);
  return (error as SinkApplyError).failures.map((f) => `${f.target}: ${f.error}`);
}

describe('EndpointSliceSink when a slice changes address type', () => {
  it('deletes an IPv6 slice under the IPv4 name before applying it as IPv4', async () => {
    server.put(managed('engine-alive-30000', 'IPv6', ['fd00::1']));
    const { sink: s, events } = sink();
    await s.apply(state({ engine: ['10.1.2.3:30000'] }), signal);
    // addressType is immutable: an apply over the IPv6 slice would be refused (422).
    expect(server.sequence()).toEqual([
      'LIST inference',
      'DELETE engine-alive-30000',
      'APPLY engine-alive-30000',
    ]);
    expect(server.requests[1]?.body).toMatchObject({ preconditions: { uid: expect.any(String) } });
    expect(server.slices.get('inference/engine-alive-30000')?.addressType).toBe('IPv4');
    expect(server.endpoints('inference', 'engine-alive-30000')).toEqual(['10.1.2.3:30000']);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'sink.applied',
        target: 'inference/engine-alive-30000',
        added: ['10.1.2.3:30000'],
        removed: ['[fd00::1]:30000'],
      }),
    ]);
    expect(s.status()).toEqual([
      expect.objectContaining({
        target: 'inference/engine-alive-30000',
        actual: ['10.1.2.3:30000'],
        lastAppliedAt: NOW,
        lastError: null,
      }),
    ]);
  });

  it('deletes an IPv4 slice under the IPv6 name before applying it as IPv6', async () => {
    server.put(managed('engine-alive-30000-ipv6', 'IPv4', ['10.9.9.9']));
    const { sink: s } = sink();
    await s.apply(state({ engine: ['[fd00::2]:30000'] }), signal);
    expect(server.sequence()).toEqual([
      'LIST inference',
      'DELETE engine-alive-30000-ipv6',
      'APPLY engine-alive-30000-ipv6',
    ]);
    expect(server.slices.get('inference/engine-alive-30000-ipv6')?.addressType).toBe('IPv6');
    expect(server.endpoints('inference', 'engine-alive-30000-ipv6')).toEqual(['[fd00::2]:30000']);
  });

  it('applies nothing and fails that slice when the delete before the change fails', async () => {
    server.put(managed('engine-alive-30000', 'IPv6', ['fd00::1']));
    server.fail('DELETE ', 500);
    const { sink: s, operations } = sink();
    expect(await failuresOf(s.apply(state({ engine: ['10.1.2.3:30000'] }), signal))).toEqual([
      expect.stringMatching(/^inference\/engine-alive-30000: .*HTTP 500/),
    ]);
    expect(server.sequence()).toEqual(['LIST inference', 'DELETE engine-alive-30000']);
    expect(server.slices.get('inference/engine-alive-30000')?.addressType).toBe('IPv6');
    expect(operations.map((o) => `${o.operation} ${o.result}`)).toEqual([
      'list success',
      'delete error',
    ]);
    expect(s.status()[0]).toMatchObject({
      actual: ['[fd00::1]:30000'],
      lastAppliedAt: null,
      lastError: expect.stringContaining('HTTP 500'),
    });
  });
});

describe('EndpointSliceSink deleting slices no pool wants', () => {
  it('reports a failed delete, keeps the slice as a target, and holds it until its backoff ends', async () => {
    const clock = new FakeClock();
    const { sink: s, events } = sink({ clock });
    await s.apply(state({ a: ['10.0.0.1:8000'], b: ['10.0.0.2:8000'] }), signal);
    server.fail('DELETE ', 500);
    server.clearRequests();
    events.length = 0;

    expect(await failuresOf(s.apply(state({ a: ['10.0.0.1:8000'] }), signal))).toEqual([
      expect.stringMatching(/^inference\/b-alive-8000: .*HTTP 500/),
    ]);
    expect(server.sequence()).toEqual(['LIST inference', 'DELETE b-alive-8000']);
    expect(server.slices.has('inference/b-alive-8000')).toBe(true);
    expect(events).toEqual([
      expect.objectContaining({ type: 'sink.failed', target: 'inference/b-alive-8000', pool: 'b' }),
    ]);
    expect(s.status().find((t) => t.pool === 'b')).toMatchObject({
      desired: [],
      actual: ['10.0.0.2:8000'],
      lastError: expect.stringContaining('HTTP 500'),
    });

    // At once again: the slice is held by its backoff, so no DELETE is sent.
    server.heal();
    server.clearRequests();
    expect(await failuresOf(s.apply(state({ a: ['10.0.0.1:8000'] }), signal))).toEqual([
      expect.stringMatching(/^inference\/b-alive-8000: .*not called until 2026-01-02T03:04:06/),
    ]);
    expect(server.sequence()).toEqual(['LIST inference']);

    await clock.advance(1_000);
    server.clearRequests();
    await s.apply(state({ a: ['10.0.0.1:8000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'DELETE b-alive-8000']);
    expect(s.status().map((t) => t.target)).toEqual(['inference/a-alive-8000']);
  });

  it('forgets a target that someone else deleted, without a request of its own', async () => {
    const { sink: s, events } = sink();
    await s.apply(state({ a: ['10.0.0.1:8000'], b: ['10.0.0.2:8000'] }), signal);
    server.slices.delete('inference/b-alive-8000');
    server.clearRequests();
    events.length = 0;
    await s.apply(state({ a: ['10.0.0.1:8000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference']);
    expect(events).toEqual([]);
    expect(s.status().map((t) => t.target)).toEqual(['inference/a-alive-8000']);
  });
});

describe('EndpointSliceSink when a LIST fails', () => {
  it('holds the namespace until the LIST backoff ends, keeping its targets as not read', async () => {
    const clock = new FakeClock();
    const { sink: s } = sink({ clock });
    await s.apply(state({ a: ['10.0.0.1:8000'] }), signal);
    server.fail('GET ', 503, 1);
    server.clearRequests();
    expect(await failuresOf(s.apply(state({ a: ['10.0.0.2:8000'] }), signal))).toEqual([
      expect.stringMatching(/^inference\/\*: .*HTTP 503/),
    ]);

    // At once again: the LIST itself is held, so nothing at all is sent.
    server.clearRequests();
    expect(await failuresOf(s.apply(state({ a: ['10.0.0.2:8000'] }), signal))).toEqual([
      expect.stringMatching(/^inference\/\*: .*not called until/),
    ]);
    expect(server.sequence()).toEqual([]);
    expect(s.status()[0]).toMatchObject({
      target: 'inference/a-alive-8000',
      actual: ['10.0.0.1:8000'],
      lastError: "not read: the LIST of inference's slices failed",
    });
    expect(server.endpoints('inference', 'a-alive-8000')).toEqual(['10.0.0.1:8000']);

    await clock.advance(1_000);
    server.clearRequests();
    await s.apply(state({ a: ['10.0.0.2:8000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY a-alive-8000']);
    expect(server.endpoints('inference', 'a-alive-8000')).toEqual(['10.0.0.2:8000']);
  });

  it('with every namespace listed at once, leaves every namespace as it was', async () => {
    const clock = new FakeClock();
    const { sink: s } = sink({ clock, namespace: undefined });
    const both: RoutingState = {
      pools: [
        ...state({ a: ['10.0.0.1:8000'] }, 'one').pools,
        ...state({ a: ['10.0.0.2:8000'] }, 'two').pools,
      ],
    };
    await s.apply(both, signal);
    server.fail('GET ', 503, 1);
    server.clearRequests();
    expect(await failuresOf(s.apply(state({}), signal))).toEqual([
      expect.stringMatching(/^\*\/\*: .*HTTP 503/),
    ]);
    expect(server.sequence()).toEqual(['LIST *']);
    expect([...server.slices.keys()].sort()).toEqual(['one/a-alive-8000', 'two/a-alive-8000']);
    expect(s.status().map((t) => t.lastError)).toEqual([
      "not read: the LIST of one's slices failed",
      "not read: the LIST of two's slices failed",
    ]);
  });
});

describe('EndpointSliceSink comparing slices', () => {
  it('re-applies a slice whose endpoints match but whose Service label or ports differ', async () => {
    const { sink: s, events } = sink();
    server.put(managed('engine-alive-30000', 'IPv4', ['10.1.2.3'], 30000, 'someone-else'));
    await s.apply(state({ engine: ['10.1.2.3:30000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY engine-alive-30000']);
    expect(server.slices.get('inference/engine-alive-30000')?.metadata.labels).toMatchObject({
      [SERVICE_NAME_LABEL]: 'engine-alive',
    });
    // Same endpoints, so nothing was added or removed: no event.
    expect(events).toEqual([]);

    const stored = server.slices.get('inference/engine-alive-30000')!;
    server.put({ ...stored, ports: [{ name: 'other', port: 30000, protocol: 'TCP' }] });
    server.clearRequests();
    await s.apply(state({ engine: ['10.1.2.3:30000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY engine-alive-30000']);
    expect(server.slices.get('inference/engine-alive-30000')?.ports).toEqual([
      { name: 'http', port: 30000, protocol: 'TCP' },
    ]);

    server.clearRequests();
    await s.apply(state({ engine: ['10.1.2.3:30000'] }), signal);
    expect(server.sequence()).toEqual(['LIST inference']);
  });

  it('leaves a hostname out, naming it in the log and in status', async () => {
    const { sink: s, logger } = sink();
    await s.apply(state({ engine: ['engine-0.example:30000', '10.1.2.3:30000'] }), signal);
    expect(server.endpoints('inference', 'engine-alive-30000')).toEqual(['10.1.2.3:30000']);
    expect(s.status()[0]?.lastError).toContain('engine-0.example:30000');
    expect(s.status()[0]?.lastError).toContain('a hostname, not an IP address');
    expect(logger.entries.filter((e) => e.msg?.includes('left out'))).toHaveLength(1);
  });
});

describe('EndpointSliceSink aborted mid-apply', () => {
  it('stops after the LIST when the signal aborts there, writing nothing', async () => {
    const controller = new AbortController();
    const reason = new Error('lost the lease');
    const { sink: s } = sink({
      onOperation: (record) => {
        if (record.operation === 'list') controller.abort(reason);
      },
    });
    await expect(s.apply(state({ a: ['10.0.0.1:8000'] }), controller.signal)).rejects.toBe(reason);
    expect(server.sequence()).toEqual(['LIST inference']);
    expect(server.slices.size).toBe(0);
  });

  it('stops before deleting when the signal aborts after the LIST', async () => {
    const { sink: first } = sink();
    await first.apply(state({ a: ['10.0.0.1:8000'] }), signal);
    server.clearRequests();
    const controller = new AbortController();
    const reason = new Error('lost the lease');
    const { sink: s } = sink({
      onOperation: (record) => {
        if (record.operation === 'list') controller.abort(reason);
      },
    });
    await expect(s.apply(state({}), controller.signal)).rejects.toBe(reason);
    expect(server.sequence()).toEqual(['LIST inference']);
    expect(server.slices.has('inference/a-alive-8000')).toBe(true);
  });

  it('rejects with the abort reason, not a SinkApplyError, when a write fails after the abort', async () => {
    const controller = new AbortController();
    const reason = new Error('lost the lease');
    server.fail('PATCH ', 500);
    const { sink: s, events } = sink({
      onOperation: (record) => {
        if (record.operation === 'apply') controller.abort(reason);
      },
    });
    await expect(
      s.apply(state({ a: ['10.0.0.1:8000'], b: ['10.0.0.2:8000'] }), controller.signal),
    ).rejects.toBe(reason);
    expect(server.sequence()).toEqual(['LIST inference', 'APPLY a-alive-8000']);
    expect(events.filter((e) => e.type === 'sink.failed')).toEqual([]);
  });
});
