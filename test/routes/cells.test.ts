import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_HEADER } from '../../src/http/error-shape.js';
import { DEFAULT_WORKLOADS_OFF_REASON } from '../../src/service/assemble.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness, remove, upsert, WALL_CLOCK_MS } from '../support/service-harness.js';

afterEach(closeAll);

/** Two engine cells (one alive, one with a not-ready worker) and a trainer cell. */
function world() {
  return [
    lwsPod({ group: 0, worker: 0, size: 2, podIP: '10.0.0.1' }),
    lwsPod({ group: 0, worker: 1, size: 2 }),
    lwsPod({ group: 1, worker: 0, size: 2, podIP: '10.0.0.3' }),
    lwsPod({ group: 1, worker: 1, size: 2, ready: false }),
    lwsPod({ pool: 'trainer', group: 0, worker: 0 }),
    lwsPod({ name: 'unrelated', noPoolLabel: true }),
  ];
}

describe('GET /api/v1/cells', () => {
  it('lists every reconciled cell in namespace/id order with the source', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/api/v1/cells' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json();
    expect(body.source).toBe('kubernetes');
    expect(body.synced).toBe(true);
    expect(body.count).toBe(3);
    expect(body.cells.map((c: { id: string }) => c.id)).toEqual([
      'engine-00000',
      'engine-00001',
      'trainer-00000',
    ]);
    expect(body.cells[0]).toMatchObject({
      key: 'ns/engine-00000',
      alive: true,
      address: '10.0.0.1:30000',
      leader: 'engine-0',
      lastTransitionTime: '2025-06-01T12:00:00.000Z',
      transitions: [{ at: '2025-06-01T12:00:00.000Z', alive: true, reasons: [] }],
    });
    expect(body.cells[1].transitions).toEqual([
      { at: '2025-06-01T12:00:00.000Z', alive: false, reasons: ['PodsNotReady'] },
    ]);
    expect(body.cells[1].whyNotAlive).toEqual([
      { reason: 'PodsNotReady', message: 'engine-1-1 is not ready', pods: ['engine-1-1'] },
    ]);
  });

  it('says whether the store has synced, so "no cells yet" differs from "no cells"', async () => {
    const h = await harness({ start: false });
    const before = (await h.app.inject({ url: '/api/v1/cells' })).json();
    expect(before).toEqual({ source: 'kubernetes', synced: false, count: 0, cells: [] });
    await h.start([]);
    const after = (await h.app.inject({ url: '/api/v1/cells' })).json();
    expect(after).toEqual({ source: 'kubernetes', synced: true, count: 0, cells: [] });
  });

  it('filters by pool and by aliveness', async () => {
    const { app } = await harness({ pods: world() });
    const ids = async (url: string) =>
      (await app.inject({ url })).json().cells.map((c: { id: string }) => c.id);
    expect(await ids('/api/v1/cells?pool=engine')).toEqual(['engine-00000', 'engine-00001']);
    expect(await ids('/api/v1/cells?alive=true')).toEqual(['engine-00000', 'trainer-00000']);
    expect(await ids('/api/v1/cells?pool=engine&alive=false')).toEqual(['engine-00001']);
    expect(await ids('/api/v1/cells?pool=nothing')).toEqual([]);
    expect(await ids('/api/v1/cells?namespace=elsewhere')).toEqual([]);
  });

  it('rejects alive=maybe with a 400 naming the parameter', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/api/v1/cells?alive=maybe' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      status: 400,
      error: 'Bad Request',
      message: 'query parameter alive: alive must be true or false, got "maybe"',
    });
  });

  it('shows the next reconcile result, not a stale cached body', async () => {
    const { app, push } = await harness({ pods: world() });
    const first = (await app.inject({ url: '/api/v1/cells?alive=true' })).json().count;
    await push(upsert(lwsPod({ group: 1, worker: 1, size: 2, ready: true })));
    const second = (await app.inject({ url: '/api/v1/cells?alive=true' })).json().count;
    expect([first, second]).toEqual([2, 3]);
    await push(remove(lwsPod({ pool: 'trainer', group: 0, worker: 0 })));
    expect((await app.inject({ url: '/api/v1/cells' })).json().count).toBe(2);
  });

  it('says where pods come from in a header on every response, errors included', async () => {
    const { app } = await harness({ pods: world() });
    for (const url of ['/api/v1/cells', '/api/v1/cells/missing', '/healthz', '/nowhere']) {
      expect((await app.inject({ url })).headers[SOURCE_HEADER]).toBe('kubernetes');
    }
  });
});

describe('GET /api/v1/cells/{cell}', () => {
  it('returns one cell by the id users see', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/api/v1/cells/engine-00001' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.source).toBe('kubernetes');
    expect(body.cell).toMatchObject({ id: 'engine-00001', alive: false, size: 2 });
    expect(body.cell.members.map((m: { name: string }) => m.name)).toEqual([
      'engine-1',
      'engine-1-1',
    ]);
  });

  it('answers 404 for an unknown cell', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/api/v1/cells/engine-00042' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      status: 404,
      error: 'Not Found',
      message: 'no cell "engine-00042"',
    });
  });

  it('serves a one-pod cell named after a pod name of the longest length Kubernetes allows', async () => {
    // 253 characters: a DNS subdomain, the longest pod name; the cell id is the pod name.
    const name = `${['p', 'q', 'r'].map((c) => c.repeat(63)).join('.')}.${'s'.repeat(61)}`;
    expect(name).toHaveLength(253);
    const { app } = await harness({ pods: [lwsPod({ name, group: null })] });
    const res = await app.inject({ url: `/api/v1/cells/${name}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().cell.id).toBe(name);
    const requeue = await app.inject({ method: 'POST', url: `/api/v1/cells/${name}/reconcile` });
    expect(requeue.json().queued).toEqual([`ns/${name}`]);
  });

  it('asks for ?namespace= when the id exists in several namespaces', async () => {
    const pods = [
      lwsPod({ namespace: 'blue', group: 0 }),
      lwsPod({ namespace: 'green', group: 0 }),
    ];
    const { app } = await harness({ pods });
    const ambiguous = await app.inject({ url: '/api/v1/cells/engine-00000' });
    expect(ambiguous.statusCode).toBe(409);
    expect(ambiguous.json().message).toBe(
      'cell "engine-00000" exists in several namespaces (blue, green); add ?namespace=',
    );
    const green = await app.inject({ url: '/api/v1/cells/engine-00000?namespace=green' });
    expect(green.json().cell.key).toBe('green/engine-00000');
    const none = await app.inject({ url: '/api/v1/cells/engine-00000?namespace=red' });
    expect(none.statusCode).toBe(404);
    expect(none.json().message).toBe('no cell "engine-00000" in namespace "red"');
  });
});

describe('GET /api/v1/pools', () => {
  it('lists pools with cell, alive-cell and pod counts', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/api/v1/pools' });
    expect(res.statusCode).toBe(200);
    // Without a workload source every pool's capacity is Unknown (test/service/pool-capacity.test.ts).
    const unknown = {
      desiredCells: null,
      missingCells: [],
      readyReplicas: null,
      workloadConditions: [],
      capacity: 'Unknown',
      capacitySince: new Date(WALL_CLOCK_MS).toISOString(),
      capacityReason: DEFAULT_WORKLOADS_OFF_REASON,
    };
    expect(res.json()).toEqual({
      source: 'kubernetes',
      count: 2,
      pools: [
        {
          namespace: 'ns',
          name: 'engine',
          cells: 2,
          aliveCells: 1,
          pods: 4,
          cellIds: ['engine-00000', 'engine-00001'],
          ...unknown,
        },
        {
          namespace: 'ns',
          name: 'trainer',
          cells: 1,
          aliveCells: 1,
          pods: 1,
          cellIds: ['trainer-00000'],
          ...unknown,
        },
      ],
    });
  });

  it('returns one pool with its cells', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/api/v1/pools/engine' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.pool).toMatchObject({ name: 'engine', cells: 2, aliveCells: 1 });
    expect(body.cells.map((c: { id: string }) => c.id)).toEqual(['engine-00000', 'engine-00001']);
  });

  it('answers 404 for an unknown pool and 409 for a pool name in several namespaces', async () => {
    const pods = [
      lwsPod({ namespace: 'blue', group: 0 }),
      lwsPod({ namespace: 'green', group: 0 }),
    ];
    const { app } = await harness({ pods });
    const missing = await app.inject({ url: '/api/v1/pools/nope' });
    expect([missing.statusCode, missing.json().message]).toEqual([404, 'no pool "nope"']);
    const ambiguous = await app.inject({ url: '/api/v1/pools/engine' });
    expect(ambiguous.statusCode).toBe(409);
    const blue = await app.inject({ url: '/api/v1/pools/engine?namespace=blue' });
    expect(blue.json().pool).toMatchObject({ namespace: 'blue', cells: 1 });
    const filtered = await app.inject({ url: '/api/v1/pools?namespace=green' });
    expect(filtered.json().pools.map((p: { namespace: string }) => p.namespace)).toEqual(['green']);
  });
});

describe('errors', () => {
  it('answers an unknown route with the JSON error shape', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/api/v2/cells' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      status: 404,
      error: 'Not Found',
      message: 'no route GET /api/v2/cells',
    });
  });
});
