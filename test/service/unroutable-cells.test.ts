/**
 * Per-cell validation through the whole service: a cell whose address is invalid, missing or
 * claimed by another cell is left out of the desired state and says why (on itself, in its
 * `cell.changed` event, in a gauge), while every other cell and pool deploys.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CellChangedEvent, ServiceEvent } from '../../src/service/service-events.js';
import { FakeSink } from '../support/fake-sink.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness, remove, upsert } from '../support/service-harness.js';

afterEach(closeAll);

async function setup(options: { sinkAllowLoopback?: boolean } = {}) {
  const sink = new FakeSink();
  const h = await harness({ driftIntervalMs: null, sinks: () => [sink], start: false, ...options });
  const events: ServiceEvent[] = [];
  const subscription = h.service.bus.subscribe({ bufferSize: 10_000 });
  void (async () => {
    for await (const event of subscription) events.push(event);
  })();
  const cellEvents = (): CellChangedEvent[] =>
    events.filter((e): e is CellChangedEvent => e.type === 'cell.changed');
  const unroutable = async (namespace: string, pool: string): Promise<number | undefined> => {
    const text = await h.service.metrics.render();
    const series = `pool_controller_cells_unroutable{namespace="${namespace}",pool="${pool}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? undefined : Number(line.slice(series.length));
  };
  return { h, sink, events, cellEvents, unroutable };
}

describe('cells left out of the desired state, one by one', () => {
  it('deploys another pool while two cells of one namespace claim one address', async () => {
    const { h, sink, cellEvents, unroutable } = await setup();
    await h.start([
      lwsPod({ namespace: 'a', group: 0, podIP: '10.1.0.1' }),
      lwsPod({ namespace: 'a', group: 1, podIP: '10.1.0.2' }),
      lwsPod({ namespace: 'b', pool: 'other', group: 0, podIP: '10.2.0.1' }),
    ]);
    await h.atRest();
    expect(sink.applied().at(-1)).toBe('engine=10.1.0.1:30000,10.1.0.2:30000 other=10.2.0.1:30000');

    // Cell 1 now claims cell 0's address; pool "other" gains a cell meanwhile.
    await h.push(
      upsert(lwsPod({ namespace: 'a', group: 1, podIP: '10.1.0.1' })),
      upsert(lwsPod({ namespace: 'b', pool: 'other', group: 1, podIP: '10.2.0.2' })),
    );
    await h.atRest();
    expect(sink.applied().at(-1)).toBe('engine= other=10.2.0.1:30000,10.2.0.2:30000');
    expect(h.service.coordinator().state.lastError).toBeUndefined();

    const body = (await h.app.inject({ url: '/api/v1/cells?namespace=a' })).json();
    for (const cell of body.cells) {
      expect(cell).toMatchObject({
        alive: true,
        routable: false,
        whyNotRoutable: [{ reason: 'AddressConflict' }],
      });
    }
    const changed = cellEvents().filter((e) => e.namespace === 'a' && !e.routable);
    expect([...new Set(changed.map((e) => e.cell))].sort()).toEqual([
      'engine-00000',
      'engine-00001',
    ]);
    expect(changed[0]?.whyNotRoutable[0]?.reason).toBe('AddressConflict');
    expect(await unroutable('a', 'engine')).toBe(2);
    expect(await unroutable('b', 'other')).toBe(0);

    // One claimant goes: the other is routed again, the pool's gauge series stays at 0.
    await h.push(remove(lwsPod({ namespace: 'a', group: 1, podIP: '10.1.0.1' })));
    await h.atRest();
    expect(sink.applied().at(-1)).toBe('engine=10.1.0.1:30000 other=10.2.0.1:30000,10.2.0.2:30000');
    expect(await unroutable('a', 'engine')).toBe(0);

    // A pool that vanishes loses its series.
    await h.push(remove(lwsPod({ namespace: 'a', group: 0, podIP: '10.1.0.1' })));
    await h.atRest();
    expect(await unroutable('a', 'engine')).toBeUndefined();
  });

  it('leaves out an alive cell whose leader has no --port-name port, and says NoServingPort', async () => {
    const { h, sink, cellEvents, unroutable } = await setup();
    await h.start([
      lwsPod({ group: 0, podIP: '10.1.0.1' }),
      lwsPod({ group: 1, podIP: '10.1.0.2', ports: [{ name: 'grpc', containerPort: 9000 }] }),
    ]);
    await h.atRest();
    expect(sink.applied().at(-1)).toBe('engine=10.1.0.1:30000');
    expect(cellEvents().find((e) => e.cell === 'engine-00001')).toMatchObject({
      alive: true,
      routable: false,
      whyNotRoutable: [{ reason: 'NoServingPort' }],
    });
    expect(await unroutable('ns', 'engine')).toBe(1);
  });

  it('leaves out a loopback cell unless --sink-allow-loopback, never a link-local one', async () => {
    const refused = await setup();
    await refused.h.start([
      lwsPod({ group: 0, podIP: '127.0.0.1' }),
      lwsPod({ group: 1, podIP: '10.1.0.2' }),
    ]);
    await refused.h.atRest();
    expect(refused.sink.applied().at(-1)).toBe('engine=10.1.0.2:30000');
    const cell = (await refused.h.app.inject({ url: '/api/v1/cells/engine-00000' })).json().cell;
    expect(cell.whyNotRoutable).toMatchObject([{ reason: 'AddressInvalid' }]);

    const allowed = await setup({ sinkAllowLoopback: true });
    await allowed.h.start([
      lwsPod({ group: 0, podIP: '127.0.0.1' }),
      lwsPod({ group: 1, podIP: '169.254.0.2' }),
    ]);
    await allowed.h.atRest();
    expect(allowed.sink.applied().at(-1)).toBe('engine=127.0.0.1:30000');
    expect(await allowed.unroutable('ns', 'engine')).toBe(1);
  });
});
