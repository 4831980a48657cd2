import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/index.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

function withResourceVersion(pod: Pod, resourceVersion: string): Pod {
  return { ...pod, metadata: { ...pod.metadata, resourceVersion } };
}

const pods = () => [
  lwsPod({ group: 0, worker: 0 }),
  withResourceVersion(lwsPod({ group: 0, worker: 1 }), '4711'),
  lwsPod({ name: 'no-pool', noPoolLabel: true }),
];

describe('GET /api/v1/store', () => {
  it('shows the observed store: synced, object count and members per parent', async () => {
    const { app } = await harness({ pods: pods() });
    const res = await app.inject({ url: '/api/v1/store' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      synced: true,
      objects: 2,
      parentCount: 1,
      parents: [
        { key: 'ns/engine-00000', reconciled: true, members: ['ns/engine-0', 'ns/engine-0-1'] },
      ],
    });
  });

  it('adds a view of every pod with ?objects=true', async () => {
    const { app } = await harness({ pods: pods() });
    const res = await app.inject({ url: '/api/v1/store?objects=true' });
    const [parent] = res.json().parents;
    expect(parent.pods).toHaveLength(2);
    // A pod the store holds without a version shows `null`.
    expect(parent.pods[0].resourceVersion).toBeNull();
    expect(parent.pods[1]).toEqual({
      key: 'ns/engine-0-1',
      namespace: 'ns',
      resourceVersion: '4711',
      name: 'engine-0-1',
      uid: 'uid-engine-0-1',
      phase: 'Running',
      ready: true,
      podIP: '10.0.0.1',
      restarts: 0,
      deleting: false,
      workerIndex: 1,
      node: 'node-a',
      readinessGate: null,
    });
  });

  it('reports not synced, and nothing, before the first list', async () => {
    const { app } = await harness({ start: false });
    expect((await app.inject({ url: '/api/v1/store' })).json()).toMatchObject({
      synced: false,
      objects: 0,
      parents: [],
    });
  });

  it('rejects objects=yes with a 400', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/api/v1/store?objects=yes' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe(
      'query parameter objects: objects must be true or false, got "yes"',
    );
  });
});
