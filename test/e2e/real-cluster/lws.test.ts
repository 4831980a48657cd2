/**
 * The service beside pods the real controllers make (issue 35): kube-controller-manager,
 * kube-scheduler, kwok nodes and the LeaderWorkerSet controller with its webhook, all on the e2e
 * API server. Each scenario changes a LeaderWorkerSet (or its pods) as a user would, waits for the
 * controllers to settle, and then requires `/api/v1/cells` to equal the cells the API's own pods
 * imply within 5 s. Across the file, every `cell.changed` event published alive is audited against
 * everything the API said: no cell may be published alive with a worker of another incarnation of
 * its group (LWS's rule: the worker's StatefulSet is owned by the leader's uid).
 */
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeEnvironment, startKubeEnvironment } from '../environment/index.js';
import {
  assertPodIpsInRange,
  type RealCluster,
  startRealCluster,
} from '../environment/real-cluster.js';
import { EventRecorder } from '../support-controller.js';
import {
  bindShippedRoles,
  kubernetesSourceArgs,
  LWS,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from '../support-service.js';
import {
  allReady,
  auditIncarnations,
  ClusterHistory,
  deletePod,
  expectConverged,
  LwsClient,
  leaderWorkerSet,
  noneOf,
  podUid,
  waitUntilASecondOld,
} from './support.js';

/** Leader replacements and rolling-update steps the file must see in total (issue 35). */
const MIN_LEADER_REPLACEMENTS = 20;

describe('the service beside LeaderWorkerSets made by the real controllers', () => {
  let env: KubeEnvironment;
  let cluster: RealCluster;
  let namespace: string;
  let lws: LwsClient;
  let history: ClusterHistory;
  let service: ServiceProcess;
  let events: EventRecorder;
  let base = '';
  const sizes = new Map<string, number>();
  const lags: number[] = [];

  const converged = async (settled: (pods: V1Pod[]) => boolean): Promise<void> => {
    lags.push(await expectConverged(env.kubeConfig, namespace, base, settled));
    await cluster.assertPodIpsInRange(namespace);
  };

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    cluster = await startRealCluster(env);
    namespace = await env.createNamespace('real-cluster');
    await bindShippedRoles(env, namespace, [ROLE]);
    lws = new LwsClient(env.kubeConfig, namespace);
    history = new ClusterHistory(env.kubeConfig, namespace);
    await history.start();
    service = spawnService(kubernetesSourceArgs(env, namespace));
    base = await service.listening();
    events = new EventRecorder(base, ['cell.changed']);
    await events.opened;
  });

  afterAll(async () => {
    await events?.close();
    history?.stop();
    if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
    await cluster?.stop();
    await env?.stop();
    if (lags.length > 0) {
      console.log(
        `real-cluster: ${lags.length} convergences, service lag after the API settled: ` +
          `max ${Math.max(...lags)} ms, median ${[...lags].sort((a, b) => a - b)[lags.length >> 1]} ms; ` +
          `leader replacements seen: ${history?.leaderReplacements()}`,
      );
    }
  });

  it('LWS 3×2: the webhook labels each pod and the cells match the API', async () => {
    sizes.set('engine', 2);
    await lws.create(leaderWorkerSet('engine', 3, 2));
    await converged(allReady('engine', 3, 2));
    const pods = (await env.kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({ namespace }))
      .items;
    const worker = pods.find((p) => p.metadata?.name === 'engine-0-1')!;
    expect(worker.metadata?.labels).toMatchObject({
      [`${LWS}/name`]: 'engine',
      [`${LWS}/group-index`]: '0',
      [`${LWS}/worker-index`]: '1',
    });
    expect(worker.metadata?.labels?.[`${LWS}/group-key`]).toBeTruthy();
    const cells = (await (await fetch(`${base}/api/v1/cells?pool=engine`)).json()) as {
      cells: Array<{ alive: boolean }>;
    };
    expect(cells.cells.map((c) => c.alive)).toEqual([true, true, true]);
  });

  it('the range assertion fails on a pod IP outside 127.0.0.0/8', async () => {
    const pods = (await env.kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({ namespace }))
      .items;
    expect(() => assertPodIpsInRange(pods)).not.toThrow();
    const moved = structuredClone(pods[0]!);
    moved.status = { ...moved.status, podIP: '10.0.1.4', podIPs: [{ ip: '10.0.1.4' }] };
    expect(() => assertPodIpsInRange([...pods, moved])).toThrow(/10\.0\.1\.4/);
  });

  it('LWS of size 1: one-pod groups', async () => {
    sizes.set('solo', 1);
    await lws.create(leaderWorkerSet('solo', 2, 1));
    await converged((pods) => allReady('solo', 2, 1)(pods) && allReady('engine', 3, 2)(pods));
  });

  it('scales up and down: 3 → 5 → 2 groups', async () => {
    await lws.patch('engine', { spec: { replicas: 5 } });
    await converged(allReady('engine', 5, 2));
    await lws.patch('engine', { spec: { replicas: 2 } });
    await converged(allReady('engine', 2, 2));
  });

  it('a deleted worker: LWS recreates its whole group', async () => {
    await waitUntilASecondOld(env.kubeConfig, namespace, 'engine');
    const before = await podUid(env.kubeConfig, namespace, 'engine-0-1');
    await deletePod(env.kubeConfig, namespace, 'engine-0-1');
    await converged(
      (pods) =>
        allReady('engine', 2, 2)(pods) &&
        pods.some((p) => p.metadata?.name === 'engine-0-1' && p.metadata.uid !== before),
    );
  });

  it('a deleted leader (background propagation) brings a new group, repeatedly', async () => {
    for (let round = 0; round < 8; round += 1) {
      const name = `engine-${round % 2}`;
      await waitUntilASecondOld(env.kubeConfig, namespace, 'engine');
      const before = await podUid(env.kubeConfig, namespace, name);
      await deletePod(env.kubeConfig, namespace, name);
      await converged(
        (pods) =>
          allReady('engine', 2, 2)(pods) &&
          pods.some((p) => p.metadata?.name === name && p.metadata.uid !== before),
      );
    }
  });

  it('rolling updates replace every group, one at a time', async () => {
    for (const revision of ['b', 'c', 'd']) {
      await waitUntilASecondOld(env.kubeConfig, namespace, 'engine');
      await lws.patch('engine', {
        spec: {
          replicas: 3,
          leaderWorkerTemplate: {
            workerTemplate: { metadata: { annotations: { 'e2e/revision': revision } } },
          },
        },
      });
      await converged(
        (pods) =>
          allReady('engine', 3, 2)(pods) &&
          pods
            .filter((p) => p.metadata?.labels?.[`${LWS}/name`] === 'engine')
            .every((p) => p.metadata?.annotations?.['e2e/revision'] === revision),
      );
    }
  });

  it('a container restart under RecreateGroupOnPodRestart recreates the group', async () => {
    const core = env.kubeConfig.makeApiClient(CoreV1Api);
    await waitUntilASecondOld(env.kubeConfig, namespace, 'engine');
    const leaderBefore = await podUid(env.kubeConfig, namespace, 'engine-1');
    const worker = await core.readNamespacedPodStatus({ namespace, name: 'engine-1-1' });
    const statuses = worker.status?.containerStatuses ?? [];
    // What the kubelet writes when the container restarts: the count goes up.
    await core.replaceNamespacedPodStatus({
      namespace,
      name: 'engine-1-1',
      body: {
        ...worker,
        status: {
          ...worker.status,
          containerStatuses: statuses.map((s) => ({
            ...s,
            restartCount: (s.restartCount ?? 0) + 1,
          })),
        },
      },
    });
    await converged(
      (pods) =>
        allReady('engine', 3, 2)(pods) &&
        pods.some((p) => p.metadata?.name === 'engine-1' && p.metadata.uid !== leaderBefore),
    );
  });

  it('enough leader replacements were seen, and no cell was ever alive with a stale member', async () => {
    // Top up with leader deletions until the file has seen MIN_LEADER_REPLACEMENTS.
    let round = 0;
    while (history.leaderReplacements() < MIN_LEADER_REPLACEMENTS) {
      const name = `engine-${round % 3}`;
      await waitUntilASecondOld(env.kubeConfig, namespace, 'engine');
      const before = await podUid(env.kubeConfig, namespace, name);
      await deletePod(env.kubeConfig, namespace, name);
      await converged(
        (pods) =>
          allReady('engine', 3, 2)(pods) &&
          pods.some((p) => p.metadata?.name === name && p.metadata.uid !== before),
      );
      round += 1;
    }
    await waitFor('the last events', async () => (events.events.length > 0 ? true : undefined));
    const audit = auditIncarnations(events.events, history, sizes);
    console.log(
      `real-cluster: ${history.leaderReplacements()} leader replacements; audited ${audit.audited} ` +
        `alive publications, ${audit.unidentified.length} unidentified, ${audit.stale.length} stale`,
    );
    expect(audit.audited).toBeGreaterThan(MIN_LEADER_REPLACEMENTS);
    expect(audit.stale).toEqual([]);
  });

  it('deleting the LWS removes every cell', async () => {
    await lws.delete('engine');
    await lws.delete('solo');
    await converged((pods) => noneOf('engine')(pods) && noneOf('solo')(pods));
    const body = (await (await fetch(`${base}/api/v1/cells`)).json()) as { cells: unknown[] };
    expect(body.cells).toEqual([]);
  });
});
