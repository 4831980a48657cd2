/**
 * Pool capacity from the BUILT service against a real kube-apiserver serving a LeaderWorkerSet
 * CRD (a minimal one written here: the controller reads `spec.replicas` and `status` only), run
 * as the unprivileged user bound to exactly deploy/role.yaml and deploy/leader-election-role.yaml,
 * so the Role's LeaderWorkerSet rule is proven to be all the watch needs:
 * - a pool whose pods match its LWS is `Full`;
 * - scaling the LWS up to groups that have no pod (nothing schedules them here) makes the pool
 *   `Degraded` with the right `missingCells`, and `NoPods` placeholders, within 5 s;
 * - scaling back makes it `Full` again;
 * - each change is a Kubernetes Event regarding the LWS (`PoolDegraded`, `PoolRecovered`), as
 *   `kubectl describe lws` lists them, and the desired and alive series follow.
 */
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type EventsV1Event,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
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

const GROUP = 'leaderworkerset.x-k8s.io';
const PLURAL = 'leaderworkersets';

/** The served pool's fields this file reads. */
interface Pool {
  name: string;
  cells: number;
  aliveCells: number;
  desiredCells: number | null;
  missingCells: number[];
  capacity: string;
  capacityReason: string;
}

describe('pool capacity against a LeaderWorkerSet on a real apiserver', () => {
  let env: KubeEnvironment;
  let lws: CustomObjectsApi;
  let namespace: string;
  let service: ServiceProcess;
  let url: string;
  let events: EventsV1Api;
  let lwsUid: string;

  /** Events regarding the LWS with `reason`, as `kubectl describe lws engine` selects them. */
  const about = async (reason: string): Promise<EventsV1Event[]> =>
    (await events.listNamespacedEvent({ namespace })).items.filter(
      (e) =>
        e.regarding?.kind === 'LeaderWorkerSet' &&
        e.regarding.name === 'engine' &&
        e.regarding.uid === lwsUid &&
        e.reason === reason,
    );
  const series = async (name: string): Promise<number | undefined> => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const prefix = `${name}{namespace="${namespace}",pool="engine"} `;
    const line = text.split('\n').find((l) => l.startsWith(prefix));
    return line === undefined ? undefined : Number(line.slice(prefix.length));
  };

  const pool = async (): Promise<Pool | undefined> => {
    const body = (await (await fetch(`${url}/api/v1/pools`)).json()) as { pools: Pool[] };
    return body.pools.find((p) => p.name === 'engine');
  };
  const scale = (replicas: number) =>
    lws.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: 'v1',
        namespace,
        plural: PLURAL,
        name: 'engine',
        body: { spec: { replicas } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    const core = env.kubeConfig.makeApiClient(CoreV1Api);
    lws = env.kubeConfig.makeApiClient(CustomObjectsApi);
    events = env.kubeConfig.makeApiClient(EventsV1Api);
    await env.kubeConfig.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: { name: `${PLURAL}.${GROUP}` },
        spec: {
          group: GROUP,
          scope: 'Namespaced',
          names: {
            kind: 'LeaderWorkerSet',
            plural: PLURAL,
            singular: 'leaderworkerset',
            listKind: 'LeaderWorkerSetList',
          },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: {
                openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
              },
            },
          ],
        },
      },
    });
    namespace = await env.createNamespace('capacity');
    await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE]);
    await waitFor('the LeaderWorkerSet API to be served', async () => {
      await lws.listNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace,
        plural: PLURAL,
      });
      return true;
    });
    const created = await lws.createNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      namespace,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/v1`,
        kind: 'LeaderWorkerSet',
        metadata: { name: 'engine' },
        spec: { replicas: 2, leaderWorkerTemplate: { size: 1 } },
      },
    });
    lwsUid = (created as { metadata: { uid: string } }).metadata.uid;
    const kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    for (const group of [0, 1]) {
      const pod = lwsPod('engine', group, 0, 1);
      await core.createNamespacedPod({ namespace, body: pod });
      await kubelet.markRunning(namespace, pod.metadata!.name!);
    }
    service = spawnService([...kubernetesSourceArgs(env, namespace), '--log-format', 'json']);
    url = await service.listening();
    await waitFor('the service to lead and sync', async () => {
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

  it('shows a pool whose pods match its LWS as Full', async () => {
    const full = await waitFor('the pool to be Full', async () => {
      const p = await pool();
      return p?.capacity === 'Full' ? p : undefined;
    });
    expect(full).toMatchObject({ cells: 2, aliveCells: 2, desiredCells: 2, missingCells: [] });
    expect(service.output()).not.toMatch(/pool capacity is Unknown/);
  });

  it('turns Degraded with the right missing cells within 5 s of a scale-up, and Full after a scale-down', async () => {
    const started = Date.now();
    await scale(4);
    const degraded = await waitFor(
      'the pool to be Degraded',
      async () => {
        const p = await pool();
        return p?.capacity === 'Degraded' ? p : undefined;
      },
      5_000,
      50,
    );
    const elapsedMs = Date.now() - started;
    expect(elapsedMs).toBeLessThan(5_000);
    expect(degraded).toMatchObject({
      aliveCells: 2,
      desiredCells: 4,
      missingCells: [2, 3],
      capacityReason: '2 of 4 cells alive',
    });
    const cells = (await (await fetch(`${url}/api/v1/cells?alive=false`)).json()) as {
      cells: Array<{ id: string; whyNotAlive: Array<{ reason: string; message: string }> }>;
    };
    expect(cells.cells.map((c) => [c.id, c.whyNotAlive[0]?.reason])).toEqual([
      ['engine-00002', 'NoPods'],
      ['engine-00003', 'NoPods'],
    ]);

    // /metrics is rendered at most once every 5 s: wait for a render after the change.
    await waitFor('the desired series to say 4', async () =>
      (await series('pool_controller_pool_desired_cells')) === 4 ? true : undefined,
    );
    expect(await series('pool_controller_pool_alive_cells')).toBe(2);
    await scale(2);
    const full = await waitFor(
      'the pool to be Full again',
      async () => {
        const p = await pool();
        return p?.capacity === 'Full' ? p : undefined;
      },
      5_000,
      50,
    );
    expect(full).toMatchObject({ desiredCells: 2, missingCells: [] });
    const [degradedEvent] = await waitFor('the PoolDegraded Event on the LWS', async () => {
      const found = await about('PoolDegraded');
      return found.length > 0 ? found : undefined;
    });
    expect(degradedEvent?.type).toBe('Warning');
    expect(degradedEvent?.note).toBe(
      `pool ${namespace}/engine is degraded: 2 of 4 cells alive; no pod for groups: 2, 3`,
    );
    await waitFor('the PoolRecovered Event on the LWS', async () => {
      const found = await about('PoolRecovered');
      return found.length > 0 ? found : undefined;
    });
    await waitFor('the desired series to say 2 again', async () =>
      (await series('pool_controller_pool_desired_cells')) === 2 ? true : undefined,
    );
    expect(await series('pool_controller_pool_alive_cells')).toBe(2);
    console.log(`capacity e2e: LWS scaled 2→4, pool Degraded after ${elapsedMs} ms`);
  });
});
