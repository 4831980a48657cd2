/**
 * The cell model's defences on a real kube-apiserver, through the built service (protobuf, the
 * worker thread, the whole path): a pod annotated with a size of 999,999,999 (issue 36: it killed
 * every replica) leaves the service up and answering, and a worker of a previous LeaderWorkerSet
 * incarnation (issue 35: created before its leader, another template revision, another worker
 * StatefulSet) keeps its cell from being alive, with `creationTimestamp` and `ownerReferences` as
 * the API server writes them.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  bindShippedRoles,
  type Cell,
  kubernetesSourceArgs,
  lwsPod,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from './support-service.js';

const REVISION = 'leaderworkerset.sigs.k8s.io/template-revision-hash';

/** `pod` with a template revision and, for a worker, the worker StatefulSet as its controller. */
function incarnation(pod: V1Pod, revision: string, workerSet?: { name: string; uid: string }) {
  pod.metadata!.labels![REVISION] = revision;
  if (workerSet) {
    pod.metadata!.ownerReferences = [
      { apiVersion: 'apps/v1', kind: 'StatefulSet', controller: true, ...workerSet },
    ];
  }
  return pod;
}

describe('the cell model against hostile and stale pods, on a real API server', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let kubelet: FakeKubelet;
  let namespace: string;
  let service: ServiceProcess;
  let base = '';

  const cell = async (id: string): Promise<Cell | undefined> => {
    const res = await fetch(`${base}/api/v1/cells/${id}`);
    return res.status === 200 ? ((await res.json()) as { cell: Cell }).cell : undefined;
  };

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('cell-model');
    await bindShippedRoles(env, namespace, [ROLE]);
    service = spawnService(kubernetesSourceArgs(env, namespace));
    base = await service.listening();
    await waitFor('readiness', async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );
  });

  afterAll(async () => {
    if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
    await env?.stop();
  });

  it('stays up and answering with a pod that claims a cell of 999,999,999', async () => {
    await core.createNamespacedPod({ namespace, body: lwsPod('engine', 0, 0, 999_999_999) });
    await kubelet.markRunning(namespace, 'engine-0');
    const invalid = await waitFor('the size to be refused', async () => {
      const c = await cell('engine-00000');
      return c?.whyNotAlive.some((r) => r.reason === 'SizeInvalid') ? c : undefined;
    });
    expect(invalid.alive).toBe(false);
    const body = await (await fetch(`${base}/api/v1/cells`)).text();
    expect(body.length).toBeLessThan(16 * 1024);
    const latencies: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      const started = performance.now();
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);
    console.log(`/healthz with the size attack in the cache: p99 ${latencies[98]?.toFixed(1)} ms`);
    expect(service.child.exitCode).toBeNull();
  });

  it('never calls a cell alive with the Ready worker of a previous leader, and does once the new worker is there', async () => {
    // The previous incarnation's worker, made by the old worker StatefulSet, is Ready...
    const stale = incarnation(lwsPod('engine', 1, 1, 2), '54d9cfb9b8', {
      name: 'engine-1',
      uid: '00000000-0000-0000-0000-0000000000a1',
    });
    await core.createNamespacedPod({ namespace, body: stale });
    await kubelet.markRunning(namespace, 'engine-1-1');
    // ...when the new leader, of a new revision, is created at least a second later.
    const created = (await core.readNamespacedPod({ namespace, name: 'engine-1-1' })).metadata
      ?.creationTimestamp;
    await waitFor('a new second', async () =>
      Date.now() >= new Date(created ?? 0).getTime() + 1_100 ? true : undefined,
    );
    await core.createNamespacedPod({
      namespace,
      body: incarnation(lwsPod('engine', 1, 0, 2), '8658bd649f'),
    });
    await kubelet.markRunning(namespace, 'engine-1');
    const mixed = await waitFor('both pods in the cell', async () => {
      const c = await cell('engine-00001');
      return c?.members.length === 2 && c.whyNotAlive.every((r) => r.reason !== 'PodsNotReady')
        ? c
        : undefined;
    });
    expect(mixed.alive).toBe(false);
    expect(mixed.whyNotAlive).toEqual([
      expect.objectContaining({ reason: 'StaleMember', pods: ['engine-1-1'] }),
    ]);

    // The garbage collector removes the old worker; the new worker StatefulSet makes its own.
    await core.deleteNamespacedPod({ namespace, name: 'engine-1-1', gracePeriodSeconds: 0 });
    await waitFor('the stale worker to go', async () => {
      const c = await cell('engine-00001');
      return c?.members.length === 1 ? true : undefined;
    });
    await core.createNamespacedPod({
      namespace,
      body: incarnation(lwsPod('engine', 1, 1, 2), '8658bd649f', {
        name: 'engine-1',
        uid: '00000000-0000-0000-0000-0000000000b2',
      }),
    });
    await kubelet.markRunning(namespace, 'engine-1-1');
    const whole = await waitFor('the new incarnation', async () => {
      const c = await cell('engine-00001');
      return c?.alive ? c : undefined;
    });
    expect(whole.generation).not.toBe(mixed.generation);
  });

  it('tells a previous incarnation by creation time alone when the revision is the same (a deleted leader), as the API server stamps it', async () => {
    const stale = incarnation(lwsPod('engine', 2, 1, 2), 'r1', {
      name: 'engine-2',
      uid: '00000000-0000-0000-0000-0000000000c3',
    });
    await core.createNamespacedPod({ namespace, body: stale });
    await kubelet.markRunning(namespace, 'engine-2-1');
    const created = (await core.readNamespacedPod({ namespace, name: 'engine-2-1' })).metadata
      ?.creationTimestamp;
    await waitFor('a new second', async () =>
      Date.now() >= new Date(created ?? 0).getTime() + 1_100 ? true : undefined,
    );
    await core.createNamespacedPod({
      namespace,
      body: incarnation(lwsPod('engine', 2, 0, 2), 'r1'),
    });
    await kubelet.markRunning(namespace, 'engine-2');
    const mixed = await waitFor('both pods in the cell', async () => {
      const c = await cell('engine-00002');
      return c?.members.length === 2 && c.whyNotAlive.every((r) => r.reason !== 'PodsNotReady')
        ? c
        : undefined;
    });
    expect(mixed.alive).toBe(false);
    expect(mixed.whyNotAlive).toEqual([
      expect.objectContaining({
        reason: 'StaleMember',
        pods: ['engine-2-1'],
        message: expect.stringMatching(
          /^engine-2-1 belongs to a previous leader: it was created at .*Z, before the leader \(.*Z\)$/,
        ),
      }),
    ]);
  });
});
