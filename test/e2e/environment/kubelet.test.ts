/**
 * Self-tests of the kubelet stand-in against the real apiserver: it produces what a kubelet would
 * (Running, Ready, restarts) and the apiserver's graceful-deletion rules hold as kubelet.ts assumes.
 */
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type KubeEnvironment, startKubeEnvironment } from './kube-environment.js';
import { defaultNodeName, FakeKubelet, onNode } from './kubelet.js';

function pod(name: string): V1Pod {
  return {
    metadata: { name, labels: { app: 'pool' } },
    spec: { containers: [{ name: 'engine', image: 'registry.invalid/e2e:1' }] },
  };
}

function statusCode(error: unknown): number | undefined {
  return (error as { code?: number }).code;
}

describe('the kubelet stand-in', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let kubelet: FakeKubelet;
  let namespace: string;

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
  });
  afterAll(async () => {
    await env?.stop();
  });
  beforeEach(async () => {
    namespace = await env.createNamespace();
  });

  it('registers a Ready node', async () => {
    const node = await core.readNode({ name: defaultNodeName });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('brings a bound pod to Running and Ready', async () => {
    await core.createNamespacedPod({ namespace, body: onNode(pod('engine-0')) });

    await kubelet.markRunning(namespace, 'engine-0');

    const running = await core.readNamespacedPod({ namespace, name: 'engine-0' });
    expect(running.status?.phase).toBe('Running');
    expect(running.status?.podIP).toMatch(/^10\.244\.\d+\.\d+$/);
    const conditions = Object.fromEntries(
      (running.status?.conditions ?? []).map((c) => [c.type, c.status]),
    );
    expect(conditions).toMatchObject({
      Ready: 'True',
      ContainersReady: 'True',
      PodScheduled: 'True',
    });
    expect(running.status?.containerStatuses).toMatchObject([
      { name: 'engine', ready: true, restartCount: 0 },
    ]);
  });

  it('binds an unscheduled pod through the binding subresource, as the scheduler does', async () => {
    await core.createNamespacedPod({ namespace, body: pod('engine-1') });

    await kubelet.bind(namespace, 'engine-1');
    await kubelet.markRunning(namespace, 'engine-1', { ready: false });

    const bound = await core.readNamespacedPod({ namespace, name: 'engine-1' });
    expect(bound.spec?.nodeName).toBe(defaultNodeName);
    expect(bound.status?.phase).toBe('Running');
    expect(bound.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
  });

  it('counts container restarts', async () => {
    await core.createNamespacedPod({ namespace, body: onNode(pod('engine-2')) });
    await kubelet.markRunning(namespace, 'engine-2');

    await kubelet.restartContainer(namespace, 'engine-2');
    await kubelet.restartContainer(namespace, 'engine-2');

    const restarted = await core.readNamespacedPod({ namespace, name: 'engine-2' });
    expect(restarted.status?.containerStatuses?.[0]).toMatchObject({
      restartCount: 2,
      ready: true,
      lastState: { terminated: { exitCode: 1, reason: 'Error' } },
    });
  });

  it('keeps a gracefully deleted pod, with deletionTimestamp set, until the kubelet finalizes it', async () => {
    await core.createNamespacedPod({ namespace, body: onNode(pod('engine-3')) });
    await kubelet.markRunning(namespace, 'engine-3');

    await core.deleteNamespacedPod({ namespace, name: 'engine-3', gracePeriodSeconds: 30 });

    const terminating = await core.readNamespacedPod({ namespace, name: 'engine-3' });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    expect(terminating.metadata?.deletionGracePeriodSeconds).toBe(30);

    await kubelet.finalizeDeletion(namespace, 'engine-3');

    const gone = await core.readNamespacedPod({ namespace, name: 'engine-3' }).catch((e) => e);
    expect(statusCode(gone)).toBe(404);
  });

  it('sees an unbound pod deleted at once, whatever the grace period', async () => {
    await core.createNamespacedPod({ namespace, body: pod('never-scheduled') });

    await core.deleteNamespacedPod({ namespace, name: 'never-scheduled', gracePeriodSeconds: 30 });

    const gone = await core
      .readNamespacedPod({ namespace, name: 'never-scheduled' })
      .catch((e) => e);
    expect(statusCode(gone)).toBe(404);
  });
});
