/**
 * Environment self-test on the apiserver without a watch cache: after etcd is compacted, a watch
 * from an older resourceVersion is refused with a real 410 Gone — the fault the reflector's relist
 * exists for. Also pins down HOW the refusal arrives, which docs/testing-e2e.md records.
 */
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeEnvironment, startKubeEnvironment } from './kube-environment.js';
import { WatchProbe } from './watch-probe.js';

function pod(name: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { name, labels },
    spec: { containers: [{ name: 'main', image: 'registry.invalid/e2e:1' }] },
  };
}

describe('kube environment with the watch cache off', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: false });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('refuses a watch from a compacted resourceVersion with 410 Gone, as an in-stream ERROR event', async () => {
    const namespace = await env.createNamespace();
    const list = await core.listNamespacedPod({ namespace, labelSelector: 'app=watched' });
    const staleVersion = list.metadata!.resourceVersion!;

    // Writes outside the selector move etcd's revision past the cursor without touching the
    // watched set: the cursor is only stale, not behind on anything it selects.
    for (const name of ['noise-1', 'noise-2', 'noise-3']) {
      await core.createNamespacedPod({ namespace, body: pod(name, { app: 'noise' }) });
    }
    const compactedTo = await env.compactEtcdToHead();
    expect(compactedTo).toBeGreaterThan(Number(staleVersion));

    const probe = await WatchProbe.open(env.kubeConfig, `/api/v1/namespaces/${namespace}/pods`, {
      labelSelector: 'app=watched',
      resourceVersion: staleVersion,
    });
    try {
      // The server ends the stream after the error: wait for that, not just for the error.
      await probe.until((p) => p.ended);
    } finally {
      probe.close();
    }

    console.log(`e2e: 410 after compaction arrived as: ${JSON.stringify(probe.failure)}`);
    expect(probe.failure?.code).toBe(410);
    expect(probe.failure?.form).toBe('error-event');
    expect(probe.events.map((e) => e.type)).toEqual(['ERROR']);
    expect(probe.events[0]?.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it('still serves a watch from the current resourceVersion after compaction', async () => {
    const namespace = await env.createNamespace();
    await env.compactEtcdToHead();
    const list = await core.listNamespacedPod({ namespace, labelSelector: 'app=watched' });

    const probe = await WatchProbe.open(env.kubeConfig, `/api/v1/namespaces/${namespace}/pods`, {
      labelSelector: 'app=watched',
      resourceVersion: list.metadata!.resourceVersion!,
    });
    try {
      await core.createNamespacedPod({ namespace, body: pod('fresh', { app: 'watched' }) });
      await probe.until((p) => p.events.length > 0);
    } finally {
      probe.close();
    }
    expect(probe.failure).toBeUndefined();
    expect(probe.events.map((e) => [e.type, e.object?.metadata?.name])).toEqual([
      ['ADDED', 'fresh'],
    ]);
  });
});
