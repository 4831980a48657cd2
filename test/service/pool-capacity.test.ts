import { afterEach, describe, expect, it } from 'vitest';
import type { Workload } from '../../src/model/workload.js';
import type { ServiceEvent } from '../../src/service/service-events.js';
import { lwsPod } from '../support/lws-pod.js';
import {
  closeAll,
  DrivenWorkloadSource,
  type Harness,
  harness,
  remove,
  upsert,
  workload,
} from '../support/service-harness.js';
import { eventually, until } from '../support/until.js';

afterEach(closeAll);

async function started(
  pods = [lwsPod({ group: 0 }), lwsPod({ group: 1 })],
): Promise<{ h: Harness; workloads: DrivenWorkloadSource }> {
  const workloads = new DrivenWorkloadSource();
  const h = await harness({ pods, workloads });
  await until(() => workloads.fake.awaitingPull, { what: 'the workload stream to open' });
  return { h, workloads };
}

function replaceWorkloads(workloads: DrivenWorkloadSource, list: Workload[]): void {
  workloads.fake.push({
    type: 'replace',
    objects: new Map(list.map((w) => [`${w.namespace}/${w.name}`, w])),
  });
}

async function pools(h: Harness): Promise<Array<Record<string, unknown>>> {
  const res = await h.app.inject({ method: 'GET', url: '/api/v1/pools' });
  expect(res.statusCode).toBe(200);
  return res.json().pools;
}

/** The pools as the routes read them, without a request: for waiting on the workload loop. */
function poolsNow(h: Harness): Array<Record<string, unknown>> {
  return h.service.cells.pools() as unknown as Array<Record<string, unknown>>;
}

async function cellIds(h: Harness, query = ''): Promise<string[]> {
  const res = await h.app.inject({ method: 'GET', url: `/api/v1/cells${query}` });
  return res.json().cells.map((c: { id: string }) => c.id);
}

describe('each pool against its LeaderWorkerSet', () => {
  it('judges a pool by its cells alone until its LWS appears, created after its pods', async () => {
    const { h, workloads } = await started();
    replaceWorkloads(workloads, []);
    await eventually(() => {
      expect(poolsNow(h)).toMatchObject([
        {
          name: 'engine',
          cells: 2,
          aliveCells: 2,
          desiredCells: null,
          missingCells: [],
          capacity: 'Unknown',
          capacityReason: expect.stringMatching(/no LeaderWorkerSet ns\/engine/),
        },
      ]);
    });
    workloads.fake.push({
      type: 'upsert',
      key: 'ns/engine',
      object: workload('engine', 3, {
        readyReplicas: 2,
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'AllGroupsReady',
            message: null,
            lastTransitionTime: null,
          },
        ],
      }),
    });
    await eventually(() => {
      expect(poolsNow(h)).toMatchObject([
        {
          desiredCells: 3,
          missingCells: [2],
          readyReplicas: 2,
          workloadConditions: [{ type: 'Available', status: 'True' }],
          capacity: 'Degraded',
          capacityReason: '2 of 3 cells alive',
        },
      ]);
    });
    expect((await pools(h))[0]).toMatchObject({ capacity: 'Degraded', missingCells: [2] });
    expect(await cellIds(h)).toEqual(['engine-00000', 'engine-00001', 'engine-00002']);
    const placeholder = (
      await h.app.inject({ method: 'GET', url: '/api/v1/cells?alive=false' })
    ).json().cells[0];
    expect(placeholder.whyNotAlive).toEqual([
      {
        reason: 'NoPods',
        message: 'no pod of group 2 exists; the LeaderWorkerSet asks for it',
        indices: [2],
      },
    ]);
    // Placeholders never reach a sink: the coordinator renders from the published cells only.
    expect(h.service.registry.list().map((c) => c.id)).toEqual(['engine-00000', 'engine-00001']);
  });

  it('follows replicas changes: more is Degraded, as many or fewer is Full', async () => {
    const { h, workloads } = await started();
    replaceWorkloads(workloads, [workload('engine', 2)]);
    await eventually(() => expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Full' }));
    workloads.fake.push({ type: 'upsert', key: 'ns/engine', object: workload('engine', 4) });
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Degraded', missingCells: [2, 3] }),
    );
    workloads.fake.push({ type: 'upsert', key: 'ns/engine', object: workload('engine', 1) });
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({
        capacity: 'Full',
        desiredCells: 1,
        missingCells: [],
      }),
    );
    workloads.fake.push({ type: 'upsert', key: 'ns/engine', object: workload('engine', 0) });
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({
        capacity: 'Full',
        capacityReason: 'the LeaderWorkerSet asks for no cells',
      }),
    );
  });

  it('is Empty when no cell is alive, and counts a cell whose pods are all gone as missing', async () => {
    const { h, workloads } = await started([
      lwsPod({ group: 0, ready: false }),
      lwsPod({ group: 1 }),
    ]);
    replaceWorkloads(workloads, [workload('engine', 2)]);
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Degraded', aliveCells: 1 }),
    );
    await h.push(remove(lwsPod({ group: 1 })));
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({
        capacity: 'Empty',
        aliveCells: 0,
        missingCells: [1],
        capacityReason: 'no cell alive; 2 asked for',
      }),
    );
    await h.push(upsert(lwsPod({ group: 1 })), upsert(lwsPod({ group: 0 })));
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Full', missingCells: [] }),
    );
  });

  it('shows a renamed LWS as a new pool with every cell missing, the old one Unknown', async () => {
    const { h, workloads } = await started();
    replaceWorkloads(workloads, [workload('engine', 2)]);
    await eventually(() => expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Full' }));
    workloads.fake.push(
      { type: 'delete', key: 'ns/engine' },
      { type: 'upsert', key: 'ns/engine-v2', object: workload('engine-v2', 2) },
    );
    await eventually(() =>
      expect(poolsNow(h)).toMatchObject([
        { name: 'engine', capacity: 'Unknown', desiredCells: null, missingCells: [] },
        {
          name: 'engine-v2',
          cells: 0,
          aliveCells: 0,
          desiredCells: 2,
          missingCells: [0, 1],
          capacity: 'Empty',
        },
      ]),
    );
    expect(await cellIds(h, '?pool=engine-v2')).toEqual(['engine-v2-00000', 'engine-v2-00001']);
    const one = await h.app.inject({ method: 'GET', url: '/api/v1/pools/engine-v2' });
    expect(one.statusCode).toBe(200);
    expect(one.json().cells.map((c: { id: string }) => c.id)).toEqual([
      'engine-v2-00000',
      'engine-v2-00001',
    ]);
  });

  it('returns to Unknown when the LWS is deleted, and drops its placeholders', async () => {
    const { h, workloads } = await started();
    replaceWorkloads(workloads, [workload('engine', 3)]);
    await eventually(() => expect(h.service.cells.list()).toHaveLength(3));
    workloads.fake.push({ type: 'delete', key: 'ns/engine' });
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Unknown', missingCells: [] }),
    );
    expect(await cellIds(h)).toEqual(['engine-00000', 'engine-00001']);
  });

  it.each([
    ['not-served', 'the API server does not serve leaderworkersets.leaderworkerset.x-k8s.io'],
    [
      'forbidden',
      'the controller may not list leaderworkersets.leaderworkerset.x-k8s.io (HTTP 403)',
    ],
  ] as const)('says why every pool is Unknown when the LWS API is %s', async (state, message) => {
    const { h, workloads } = await started();
    replaceWorkloads(workloads, [workload('engine', 3)]);
    await eventually(() => expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Degraded' }));
    workloads.setStatus({ state, message });
    replaceWorkloads(workloads, []);
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({
        capacity: 'Unknown',
        capacityReason: message,
        cells: 2,
        aliveCells: 2,
      }),
    );
  });

  it('says capacity is Unknown, and why, when no workload source is configured', async () => {
    const h = await harness({ pods: [lwsPod({ group: 0 })] });
    expect(poolsNow(h)[0]).toMatchObject({
      capacity: 'Unknown',
      desiredCells: null,
      capacityReason: expect.stringMatching(/no workload source/),
    });
  });

  it('keeps since when the state held, and moves it when the state changes', async () => {
    const { h, workloads } = await started();
    replaceWorkloads(workloads, [workload('engine', 3)]);
    await eventually(() => expect(poolsNow(h)[0]).toMatchObject({ capacity: 'Degraded' }));
    const since = (await pools(h))[0]!.capacitySince;
    expect(typeof since).toBe('string');
    workloads.fake.push({ type: 'upsert', key: 'ns/engine', object: workload('engine', 4) });
    await eventually(() =>
      expect(poolsNow(h)[0]).toMatchObject({ desiredCells: 4, capacitySince: since }),
    );
  });

  it('publishes pool.capacity on each change of state, and the desired and alive series', async () => {
    const { h, workloads } = await started([
      lwsPod({ group: 0 }),
      lwsPod({ group: 1, ready: false }),
    ]);
    const events: ServiceEvent[] = [];
    const subscription = h.service.bus.subscribe({ bufferSize: 1_000 });
    void (async () => {
      for await (const event of subscription) events.push(event);
    })();
    replaceWorkloads(workloads, [workload('engine', 3)]);
    await eventually(() =>
      expect(events.filter((e) => e.type === 'pool.capacity')).toEqual([
        {
          type: 'pool.capacity',
          namespace: 'ns',
          pool: 'engine',
          from: 'Unknown',
          to: 'Degraded',
          aliveCells: 1,
          desiredCells: 3,
          missingCells: [2],
          missingCount: 1,
          notAliveCells: ['engine-00001'],
          notAliveCount: 1,
          reason: '1 of 3 cells alive',
        },
      ]),
    );
    const text = await h.service.metrics.render();
    expect(text).toContain('pool_controller_pool_desired_cells{namespace="ns",pool="engine"} 3');
    expect(text).toContain('pool_controller_pool_alive_cells{namespace="ns",pool="engine"} 1');
    // A change that keeps the state publishes nothing.
    workloads.fake.push({ type: 'upsert', key: 'ns/engine', object: workload('engine', 4) });
    await eventually(() => expect(poolsNow(h)[0]).toMatchObject({ desiredCells: 4 }));
    expect(events.filter((e) => e.type === 'pool.capacity')).toHaveLength(1);
    subscription.close();
  });
});
