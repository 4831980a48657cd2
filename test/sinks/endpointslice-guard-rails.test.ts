/**
 * The EndpointSlice sink's guard rails: a pool in panic keeps every endpoint and slice it lists
 * (and still adds), and observe mode lists only, reporting what apply would change.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesEndpointSliceApi } from '../../src/kubernetes/resources/endpointslice-api.js';
import type { PoolRouting, RoutingState } from '../../src/pools/routing-state.js';
import { EndpointSliceSink, type EndpointSliceSinkOptions } from '../../src/sinks/endpointslice.js';
import type { SinkEvent } from '../../src/sinks/sink.js';
import { FakeEndpointSliceApiServer } from '../support/fake-endpointslice-apiserver.js';
import { RecordingLogger } from '../support/recording-logger.js';

const signal = new AbortController().signal;
let server: FakeEndpointSliceApiServer;
beforeEach(async () => {
  server = await FakeEndpointSliceApiServer.start();
});
afterEach(async () => {
  await server.close();
});

function state(addresses: string[], capacity?: PoolRouting['capacity']): RoutingState {
  const pool: PoolRouting = {
    namespace: 'inference',
    pool: 'engine',
    cells: addresses.map((address, i) => ({ cell: `engine-${i}`, generation: 'g1', address })),
  };
  if (capacity) pool.capacity = capacity;
  return { pools: [pool] };
}
const panic = { routable: 1, known: 4, thresholdPercent: 50, panic: true };

function sink(extra: Partial<EndpointSliceSinkOptions> = {}) {
  const events: SinkEvent[] = [];
  const logger = new RecordingLogger();
  const instance = new EndpointSliceSink({
    api: new KubernetesEndpointSliceApi({ connection: server.connection() }),
    namespace: 'inference',
    portName: 'http',
    wallClock: () => new Date('2026-01-02T03:04:05.000Z'),
    logger,
    publish: (event) => events.push(event),
    ...extra,
  });
  return { sink: instance, events, logger };
}

describe('EndpointSliceSink in panic', () => {
  it('keeps every listed endpoint and slice of a pool in panic, adds new ones, and removes them once out', async () => {
    const { sink: s } = sink();
    await s.apply(state(['10.1.0.1:30000', '10.1.0.2:30000', '10.1.0.3:31000']), signal);

    await s.apply(state(['10.1.0.9:30000'], panic), signal);
    expect(server.endpoints('inference', 'engine-alive-30000')).toEqual([
      '10.1.0.1:30000',
      '10.1.0.2:30000',
      '10.1.0.9:30000',
    ]);
    // The slice of a port only dead cells used is not deleted either.
    expect(server.endpoints('inference', 'engine-alive-31000')).toEqual(['10.1.0.3:31000']);
    expect(s.status()).toEqual([
      expect.objectContaining({
        target: 'inference/engine-alive-30000',
        desired: ['10.1.0.9:30000'],
        panic: true,
        heldByPanic: ['10.1.0.1:30000', '10.1.0.2:30000'],
      }),
      expect.objectContaining({
        target: 'inference/engine-alive-31000',
        desired: [],
        panic: true,
        heldByPanic: ['10.1.0.3:31000'],
      }),
    ]);

    // The same panic again writes nothing: the slice already holds the kept endpoints.
    server.clearRequests();
    await s.apply(state(['10.1.0.9:30000'], panic), signal);
    expect(server.sequence()).toEqual(['LIST inference']);

    await s.apply(state(['10.1.0.9:30000'], { ...panic, routable: 3, panic: false }), signal);
    expect(server.endpoints('inference', 'engine-alive-30000')).toEqual(['10.1.0.9:30000']);
    expect(server.endpoints('inference', 'engine-alive-31000')).toBeUndefined();
  });
});

describe('EndpointSliceSink in observe mode', () => {
  it('lists only, and reports what apply would add and remove per slice, once per change', async () => {
    const { sink: writer } = sink();
    await writer.apply(state(['10.1.0.1:30000', '10.1.0.3:31000']), signal);
    server.clearRequests();

    const { sink: s, events } = sink({ mode: 'observe' });
    await s.apply(state(['10.1.0.2:30000']), signal);
    await s.apply(state(['10.1.0.2:30000']), signal);
    expect(server.sequence()).toEqual(['LIST inference', 'LIST inference']);
    expect(server.endpoints('inference', 'engine-alive-30000')).toEqual(['10.1.0.1:30000']);
    expect(server.endpoints('inference', 'engine-alive-31000')).toEqual(['10.1.0.3:31000']);
    expect(s.status()).toEqual([
      expect.objectContaining({
        target: 'inference/engine-alive-30000',
        mode: 'observe',
        actual: ['10.1.0.1:30000'],
        wouldAdd: ['10.1.0.2:30000'],
        wouldRemove: ['10.1.0.1:30000'],
      }),
      expect.objectContaining({
        target: 'inference/engine-alive-31000',
        wouldAdd: [],
        wouldRemove: ['10.1.0.3:31000'],
      }),
    ]);
    expect(events.map((e) => e.type)).toEqual(['sink.observed', 'sink.observed']);
  });
});
