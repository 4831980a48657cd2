/**
 * Environment self-tests on the production-like apiserver (watch cache on): plain API semantics
 * the reflector relies on, proved with client-node directly.
 */
import { CoreV1Api, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type KubeEnvironment, startKubeEnvironment } from './kube-environment.js';
import { WatchProbe } from './watch-probe.js';

function pod(name: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { name, labels },
    spec: { containers: [{ name: 'main', image: 'registry.invalid/e2e:1' }] },
  };
}

describe('kube environment with the watch cache on', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let namespace: string;

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await env?.stop();
  });
  beforeEach(async () => {
    namespace = await env.createNamespace();
  });

  it('round-trips a pod: create, list by label selector, delete, list again', async () => {
    await core.createNamespacedPod({ namespace, body: pod('alpha', { app: 'pool', cell: 'a' }) });
    await core.createNamespacedPod({ namespace, body: pod('other', { app: 'unrelated' }) });

    const listed = await core.listNamespacedPod({ namespace, labelSelector: 'app=pool' });
    expect(listed.items.map((p) => p.metadata?.name)).toEqual(['alpha']);
    expect(listed.items[0]?.metadata?.labels).toEqual({ app: 'pool', cell: 'a' });

    // Unbound (no spec.nodeName), so the apiserver deletes it at once despite the grace period.
    await core.deleteNamespacedPod({ namespace, name: 'alpha' });
    const after = await core.listNamespacedPod({ namespace, labelSelector: 'app=pool' });
    expect(after.items).toEqual([]);
  });

  it("delivers a pod created after a LIST to a watch opened at the LIST's resourceVersion", async () => {
    const list = await core.listNamespacedPod({ namespace, labelSelector: 'app=pool' });
    const listVersion = list.metadata?.resourceVersion;
    expect(listVersion).toMatch(/^\d+$/);

    // Created before the watch opens: only the cursor can make the watch deliver it.
    const created = await core.createNamespacedPod({
      namespace,
      body: pod('late', { app: 'pool' }),
    });
    const probe = await WatchProbe.open(env.kubeConfig, `/api/v1/namespaces/${namespace}/pods`, {
      labelSelector: 'app=pool',
      resourceVersion: listVersion,
    });
    try {
      await probe.until((p) => p.events.some((e) => e.object?.metadata?.name === 'late'));
    } finally {
      probe.close();
    }
    const added = probe.events.find((e) => e.object?.metadata?.name === 'late');
    expect(added?.type).toBe('ADDED');
    expect(added?.object.metadata.uid).toBe(created.metadata?.uid);
    expect(BigInt(added?.object.metadata.resourceVersion)).toBeGreaterThan(BigInt(listVersion!));
    expect(probe.failure).toBeUndefined();
  });

  it('serves a watch from a recently compacted resourceVersion out of its cache (why the cache-off server exists)', async () => {
    const list = await core.listNamespacedPod({ namespace, labelSelector: 'app=watched' });
    const compactedVersion = list.metadata!.resourceVersion!;
    await core.createNamespacedPod({ namespace, body: pod('noise', { app: 'noise' }) });
    expect(await env.compactEtcdToHead()).toBeGreaterThan(Number(compactedVersion));

    const probe = await WatchProbe.open(env.kubeConfig, `/api/v1/namespaces/${namespace}/pods`, {
      labelSelector: 'app=watched',
      resourceVersion: compactedVersion,
    });
    try {
      await core.createNamespacedPod({ namespace, body: pod('watched', { app: 'watched' }) });
      await probe.until((p) => p.events.length > 0 || p.ended);
    } finally {
      probe.close();
    }
    expect(probe.failure).toBeUndefined();
    expect(probe.events.map((e) => [e.type, e.object?.metadata?.name])).toEqual([
      ['ADDED', 'watched'],
    ]);
  });

  it('authorizes by RBAC: the unprivileged user may list pods only once a Role is bound to it', async () => {
    const asUser = env.unprivileged.kubeConfig.makeApiClient(CoreV1Api);
    const denied = await asUser.listNamespacedPod({ namespace }).catch((e) => e);
    expect((denied as { code?: number }).code).toBe(403);

    const rbac = env.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'pod-reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'pod-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
        subjects: [
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: env.unprivileged.user },
        ],
      },
    });

    // The RBAC authorizer reads bindings through an informer, so the grant lands a moment later.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const listed = await asUser.listNamespacedPod({ namespace });
        expect(listed.items).toEqual([]);
        break;
      } catch (error) {
        if ((error as { code?: number }).code !== 403 || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  });

  it('survives an apiserver restart with what was written before still there', async () => {
    const before = await core.createNamespacedPod({
      namespace,
      body: pod('durable', { app: 'pool' }),
    });
    const server = env.server;

    await env.restartApiserver();

    expect(env.server).toBe(server);
    const after = await core.readNamespacedPod({ namespace, name: 'durable' });
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    // And it still takes writes.
    await core.createNamespacedPod({ namespace, body: pod('after-restart', { app: 'pool' }) });
    const listed = await core.listNamespacedPod({ namespace, labelSelector: 'app=pool' });
    expect(listed.items.map((p) => p.metadata?.name).sort()).toEqual(['after-restart', 'durable']);
  });
});
