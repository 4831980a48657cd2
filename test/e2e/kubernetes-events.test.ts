/**
 * Kubernetes Events from the BUILT service against a real kube-apiserver, run as the unprivileged
 * user bound to exactly deploy/role.yaml and deploy/leader-election-role.yaml (so the Role's
 * Events rule is proven to be all the recorder needs):
 * - a cell going not alive and alive again shows as `CellNotAlive` / `CellAlive` Events regarding
 *   its leader pod, read back through events.k8s.io/v1 as `kubectl get events` does;
 * - a router that refuses connections shows as `SinkFailed` regarding the controller's own pod
 *   (`POD_NAME`, `POD_NAMESPACE`);
 * - 100 flaps of one cell within 10 s make a bounded number of Event objects: series, not copies.
 */
import { CoreV1Api, EventsV1Api, type EventsV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  bindShippedRoles,
  kubernetesSourceArgs,
  LEADER_ELECTION_ROLE,
  lwsPod,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from './support-service.js';

const SELF = 'pool-controller-e2e';
const FLAPS = 100;

describe('Kubernetes Events against a real apiserver', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let events: EventsV1Api;
  let kubelet: FakeKubelet;
  let namespace: string;
  let service: ServiceProcess;

  const list = async (): Promise<EventsV1Event[]> =>
    (await events.listNamespacedEvent({ namespace })).items;
  const about = async (name: string, reason: string): Promise<EventsV1Event[]> =>
    (await list()).filter((e) => e.regarding?.name === name && e.reason === reason);

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    events = env.kubeConfig.makeApiClient(EventsV1Api);
    namespace = await env.createNamespace('events');
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE]);
    for (const worker of [0, 1]) {
      const pod = lwsPod('engine', 0, worker, 2);
      await core.createNamespacedPod({ namespace, body: pod });
      await kubelet.markRunning(namespace, pod.metadata!.name!);
    }
    service = spawnService(
      [
        ...kubernetesSourceArgs(env, namespace),
        // Nothing listens on port 1: every apply to this router fails.
        '--sglang-router',
        'engine=http://127.0.0.1:1',
        '--log-format',
        'json',
      ],
      { POD_NAME: SELF, POD_NAMESPACE: namespace },
    );
    await service.listening();
    await waitFor('the service to lead and sync', async () => {
      const url = await service.listening();
      const coordinator = (await (await fetch(`${url}/api/v1/coordinator`)).json()) as {
        acting: boolean;
      };
      return coordinator.acting ? true : undefined;
    });
  });

  afterAll(async () => {
    if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
    await env?.stop();
  });

  it('records SinkFailed regarding its own pod when a router refuses', async () => {
    const [failed] = await waitFor(
      `a SinkFailed Event\n${service.output().slice(-2000)}`,
      async () => {
        const found = await about(SELF, 'SinkFailed');
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    expect(failed).toMatchObject({
      type: 'Warning',
      action: 'Deploy',
      reportingController: 'pool-controller',
      reportingInstance: SELF,
      regarding: { apiVersion: 'v1', kind: 'Pod', namespace, name: SELF },
    });
    expect(failed?.note).toContain('sglang-router http://127.0.0.1:1');
  });

  it('records CellNotAlive and CellAlive regarding the leader pod', async () => {
    const leader = await core.readNamespacedPod({ namespace, name: 'engine-0' });
    await kubelet.markNotReady(namespace, 'engine-0-1');
    const [notAlive] = await waitFor(
      'a CellNotAlive Event',
      async () => {
        const found = await about('engine-0', 'CellNotAlive');
        return found.length > 0 ? found : undefined;
      },
      15_000,
    );
    expect(notAlive).toMatchObject({
      type: 'Warning',
      action: 'Reconcile',
      regarding: { kind: 'Pod', namespace, name: 'engine-0', uid: leader.metadata!.uid },
    });
    expect(notAlive?.note).toContain('PodsNotReady: engine-0-1 is not ready');
    await kubelet.markRunning(namespace, 'engine-0-1');
    await waitFor(
      'a CellAlive Event',
      async () => ((await about('engine-0', 'CellAlive')).length > 0 ? true : undefined),
      15_000,
    );
  });

  it('turns 100 flaps of one cell within 10 s into a bounded number of Event objects', async () => {
    const startedAt = Date.now();
    for (let flap = 0; flap < FLAPS; flap += 1) {
      if (flap % 2 === 0) await kubelet.markNotReady(namespace, 'engine-0-1');
      else await kubelet.markRunning(namespace, 'engine-0-1');
    }
    const flapMs = Date.now() - startedAt;
    expect(flapMs).toBeLessThanOrEqual(10_000);
    // The series' counts are written within their update interval (10 s).
    const counted = await waitFor(
      'the series counts to grow',
      async () => {
        const cellEvents = (await list()).filter((e) => e.regarding?.name === 'engine-0');
        const total = cellEvents.reduce((sum, e) => sum + (e.series?.count ?? 1), 0);
        return total > 10 ? cellEvents : undefined;
      },
      30_000,
      500,
    );
    console.info(
      `kubernetes events: ${FLAPS} flaps in ${flapMs} ms → ${counted.length} Event objects, counts ${counted
        .map((e) => `${e.reason}=${e.series?.count ?? 1}`)
        .join(', ')}`,
    );
    // One object per reason (a series each), never one per flap.
    expect(counted.length).toBeLessThanOrEqual(4);
    expect(new Set(counted.map((e) => e.reason))).toEqual(new Set(['CellAlive', 'CellNotAlive']));
  });
});
