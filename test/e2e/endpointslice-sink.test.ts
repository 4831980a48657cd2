/**
 * The EndpointSlice sink against a real kube-apiserver, as the unprivileged user bound to the
 * optional component's Role (deploy/endpointslices/role.yaml), so it also proves that Role is all
 * the sink needs:
 * - driven directly with hand-built routing states: each pool's slice lists exactly its alive
 *   leaders, passes the server's strict validation, sits beside a selector-less `<pool>-alive`
 *   Service, is not rewritten when nothing changed, and goes when its pool does;
 * - then the built service (`node dist/src/main.js --source kubernetes --publish-endpointslices`)
 *   with LeaderWorkerSet-labelled pods made Running by the fake kubelet: the slice follows the
 *   cells becoming alive and not, and a deleted pool's slice is removed.
 */
import { CoreV1Api, DiscoveryV1Api, type V1EndpointSlice } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEndpointSliceApi } from '../../src/kubernetes/resources/endpointslice-api.js';
import type { RoutingState } from '../../src/pools/routing-state.js';
import { EndpointSliceSink } from '../../src/sinks/endpointslice.js';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  bindShippedRoles,
  ENDPOINTSLICES_ROLE,
  kubernetesSourceArgs,
  LEADER_ELECTION_ROLE,
  lwsPod,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from './support-service.js';

const MANAGED = 'endpointslice.kubernetes.io/managed-by=pool-controller';
const signal = new AbortController().signal;

/** `ip:port` of a slice's endpoints, sorted. */
function endpointsOf(slice: V1EndpointSlice): string[] {
  const ports = (slice.ports ?? []).map((p) => p.port);
  return (slice.endpoints ?? [])
    .flatMap((e) => e.addresses.flatMap((ip) => ports.map((port) => `${ip}:${port}`)))
    .sort();
}

describe('EndpointSlice sink against a real apiserver', () => {
  let env: KubeEnvironment;
  let discovery: DiscoveryV1Api;
  let core: CoreV1Api;

  /** The managed slices of `namespace` by name, as ip:port lists. */
  const slices = async (namespace: string): Promise<Record<string, string[]>> => {
    const list = await discovery.listNamespacedEndpointSlice({
      namespace,
      labelSelector: MANAGED,
    });
    return Object.fromEntries(list.items.map((s) => [s.metadata!.name!, endpointsOf(s)]));
  };

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    discovery = env.kubeConfig.makeApiClient(DiscoveryV1Api);
    core = env.kubeConfig.makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await env?.stop();
  });

  describe('driven directly', () => {
    let namespace: string;
    let sink: EndpointSliceSink;

    const routing = (pools: Record<string, string[]>): RoutingState => ({
      pools: Object.entries(pools).map(([pool, addresses]) => ({
        namespace,
        pool,
        cells: addresses.map((address, i) => ({ cell: `${pool}-${i}`, generation: 'g', address })),
      })),
    });

    beforeAll(async () => {
      namespace = await env.createNamespace('slices');
      await bindShippedRoles(env, namespace, [ENDPOINTSLICES_ROLE]);
      sink = new EndpointSliceSink({
        api: await connectEndpointSliceApi({ kubeconfigPath: env.unprivileged.kubeconfigPath }),
        namespace,
        portName: 'http',
      });
    });

    it('publishes exactly the alive leaders of each pool, one slice per port and family', async () => {
      await sink.apply(
        routing({
          engine: ['10.1.2.3:30000', '10.1.2.4:30000'],
          other: ['10.1.3.1:30000', '10.1.3.2:31000', '[fd00::1]:30000'],
        }),
        signal,
      );
      expect(await slices(namespace)).toEqual({
        'engine-alive-30000': ['10.1.2.3:30000', '10.1.2.4:30000'],
        'other-alive-30000': ['10.1.3.1:30000'],
        'other-alive-31000': ['10.1.3.2:31000'],
        'other-alive-30000-ipv6': ['fd00::1:30000'],
      });
      const engine = await discovery.readNamespacedEndpointSlice({
        namespace,
        name: 'engine-alive-30000',
      });
      expect(engine.addressType).toBe('IPv4');
      expect(engine.metadata?.labels).toMatchObject({
        'kubernetes.io/service-name': 'engine-alive',
        'endpointslice.kubernetes.io/managed-by': 'pool-controller',
      });
      expect(engine.ports).toEqual([{ name: 'http', port: 30000, protocol: 'TCP' }]);
      expect(engine.endpoints?.[0]?.conditions).toEqual({
        ready: true,
        serving: true,
        terminating: false,
      });
      expect(engine.metadata?.managedFields?.map((f) => [f.manager, f.operation])).toEqual([
        ['pool-controller', 'Apply'],
      ]);
      expect(sink.status().every((t) => t.lastError === null)).toBe(true);
    });

    it('sits beside a selector-less Service of the same name', async () => {
      const service = await core.createNamespacedService({
        namespace,
        body: {
          metadata: { name: 'engine-alive' },
          spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
        },
      });
      expect(service.spec?.selector).toBeUndefined();
      // No endpointslice controller writes for a selector-less Service: ours stays the only one.
      const all = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: 'kubernetes.io/service-name=engine-alive',
      });
      expect(all.items.map((s) => s.metadata?.name)).toEqual(['engine-alive-30000']);
    });

    it('rewrites nothing when nothing changed, and drops a loopback address without a 422', async () => {
      const before = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: MANAGED,
      });
      const versions = before.items.map((s) => s.metadata?.resourceVersion);
      const same = routing({
        engine: ['10.1.2.3:30000', '10.1.2.4:30000'],
        other: ['10.1.3.1:30000', '10.1.3.2:31000', '[fd00::1]:30000'],
      });
      await sink.apply(same, signal);
      const after = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: MANAGED,
      });
      expect(after.items.map((s) => s.metadata?.resourceVersion)).toEqual(versions);

      await sink.apply(
        routing({
          engine: ['10.1.2.3:30000', '127.0.0.1:30000'],
          other: ['10.1.3.1:30000', '10.1.3.2:31000', '[fd00::1]:30000'],
        }),
        signal,
      );
      expect((await slices(namespace))['engine-alive-30000']).toEqual(['10.1.2.3:30000']);
      const engine = sink.status().find((t) => t.target === `${namespace}/engine-alive-30000`);
      expect(engine?.lastError).toContain('127.0.0.1:30000 (loopback)');
    });

    it('removes the slices of a pool that went away, and of a port no cell uses', async () => {
      await sink.apply(routing({ other: ['10.1.3.1:30000'] }), signal);
      expect(await slices(namespace)).toEqual({ 'other-alive-30000': ['10.1.3.1:30000'] });
      expect(sink.status().map((t) => t.target)).toEqual([`${namespace}/other-alive-30000`]);
    });
  });

  describe('the built service', () => {
    let namespace: string;
    let kubelet: FakeKubelet;
    let service: ServiceProcess;

    const ipOf = async (name: string): Promise<string> =>
      (await core.readNamespacedPod({ namespace, name })).status!.podIP!;

    const startGroup = async (pool: string, group: number): Promise<void> => {
      for (const worker of [0, 1]) {
        const created = lwsPod(pool, group, worker, 2);
        await core.createNamespacedPod({ namespace, body: created });
        await kubelet.markRunning(namespace, created.metadata!.name!);
      }
    };

    beforeAll(async () => {
      namespace = await env.createNamespace('slices-service');
      kubelet = new FakeKubelet(env.kubeConfig);
      await kubelet.registerNode();
      // Everything the shipped deploy/ grants plus the component: nothing more.
      await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE, ENDPOINTSLICES_ROLE]);
      await startGroup('engine', 0);
      await startGroup('spare', 0);
      service = spawnService([...kubernetesSourceArgs(env, namespace), '--publish-endpointslices']);
    });

    afterAll(() => {
      if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
    });

    const expectSlices = async (expected: Record<string, string[]>): Promise<void> => {
      let last: Record<string, string[]> = {};
      await waitFor(
        `slices ${JSON.stringify(expected)} (last ${JSON.stringify(last)})\n${service.output().slice(-3000)}`,
        async () => {
          last = await slices(namespace);
          return JSON.stringify(last) === JSON.stringify(expected) ? true : undefined;
        },
        60_000,
        200,
      );
    };

    it('publishes the alive cells’ leaders as the pool’s slice', async () => {
      await expectSlices({
        'engine-alive-30000': [`${await ipOf('engine-0')}:30000`],
        'spare-alive-30000': [`${await ipOf('spare-0')}:30000`],
      });
    });

    it('follows a cell becoming alive and one that stops being ready', async () => {
      await startGroup('engine', 1);
      const leaders = [`${await ipOf('engine-0')}:30000`, `${await ipOf('engine-1')}:30000`].sort();
      await expectSlices({
        'engine-alive-30000': leaders,
        'spare-alive-30000': [`${await ipOf('spare-0')}:30000`],
      });
      await kubelet.markNotReady(namespace, 'engine-0-1');
      await expectSlices({
        'engine-alive-30000': [`${await ipOf('engine-1')}:30000`],
        'spare-alive-30000': [`${await ipOf('spare-0')}:30000`],
      });
    });

    it('removes the slice of a pool whose pods are all gone', async () => {
      for (const name of ['spare-0', 'spare-0-1']) await kubelet.finalizeDeletion(namespace, name);
      await expectSlices({ 'engine-alive-30000': [`${await ipOf('engine-1')}:30000`] });
      expect(service.output()).not.toContain('"level":"error"');
    });
  });
});
