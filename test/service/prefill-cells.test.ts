/**
 * Prefill cells through the whole service: a cell of a prefill pool is routed with its leader's
 * bootstrap port, and one without a valid port is left out, saying `NoBootstrapPort` on itself,
 * in its `cell.changed` event and in the unroutable gauge, while its pool's other cells deploy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CellChangedEvent, ServiceEvent } from '../../src/service/service-events.js';
import { FakeSink } from '../support/fake-sink.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness, upsert } from '../support/service-harness.js';

afterEach(closeAll);

const annotation = 'sglang.ai/bootstrap-port';

async function setup() {
  const sink = new FakeSink();
  const h = await harness({
    driftIntervalMs: null,
    sinks: () => [sink],
    start: false,
    prefillPools: new Set(['prefill']),
  });
  const events: ServiceEvent[] = [];
  const subscription = h.service.bus.subscribe({ bufferSize: 10_000 });
  void (async () => {
    for await (const event of subscription) events.push(event);
  })();
  const cellEvents = (): CellChangedEvent[] =>
    events.filter((e): e is CellChangedEvent => e.type === 'cell.changed');
  return { h, sink, cellEvents };
}

/** The last deployed state, as `pool=address[#bootstrap],…`. */
function lastDeployed(sink: FakeSink): string {
  const call = sink.calls.at(-1);
  return (call?.desired.pools ?? [])
    .map(
      (p) =>
        `${p.pool}=${p.cells.map((c) => (c.bootstrapPort ? `${c.address}#${c.bootstrapPort}` : c.address)).join(',')}`,
    )
    .join(' ');
}

describe('prefill cells', () => {
  it('routes a prefill cell with its bootstrap port, leaves out one without, and says why', async () => {
    const { h, sink, cellEvents } = await setup();
    await h.start([
      lwsPod({
        pool: 'prefill',
        group: 0,
        podIP: '10.1.0.1',
        annotations: { [annotation]: '8998' },
      }),
      lwsPod({ pool: 'prefill', group: 1, podIP: '10.1.0.2' }),
      lwsPod({ pool: 'decode', group: 0, podIP: '10.2.0.1' }),
    ]);
    await h.atRest();
    expect(lastDeployed(sink)).toBe('decode=10.2.0.1:30000 prefill=10.1.0.1:30000#8998');

    const body = (await h.app.inject({ url: '/api/v1/cells/prefill-00001' })).json();
    expect(body.cell).toMatchObject({
      alive: true,
      routable: false,
      bootstrapPort: null,
      whyNotRoutable: [{ reason: 'NoBootstrapPort' }],
    });
    expect(
      (await h.app.inject({ url: '/api/v1/cells/prefill-00000' })).json().cell.bootstrapPort,
    ).toBe(8998);
    expect(cellEvents().find((e) => e.cell === 'prefill-00001')).toMatchObject({
      routable: false,
      whyNotRoutable: [{ reason: 'NoBootstrapPort' }],
    });
    const metrics = await h.service.metrics.render();
    expect(metrics).toContain('pool_controller_cells_unroutable{namespace="ns",pool="prefill"} 1');

    // The annotation arrives: the cell becomes routable and a run deploys it at once.
    await h.push(
      upsert(
        lwsPod({
          pool: 'prefill',
          group: 1,
          podIP: '10.1.0.2',
          annotations: { [annotation]: '9000' },
        }),
      ),
    );
    await h.atRest();
    expect(lastDeployed(sink)).toBe(
      'decode=10.2.0.1:30000 prefill=10.1.0.1:30000#8998,10.1.0.2:30000#9000',
    );
  });
});
