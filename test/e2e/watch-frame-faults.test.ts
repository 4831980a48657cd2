/**
 * The reflector's defences against rewritten watch frames (issue 36, findings 5 and 9), on a real
 * kube-apiserver through the built service, with a `FaultProxy` rewriting its JSON WATCH frames:
 *
 * - every `k8s.io/initial-events-end` bookmark stripped: the watch-list's deadline (10 s after the
 *   last initial event) falls back to one LIST + WATCH, so the service is ready within the
 *   deadline plus one LIST (it was unready 61 s before the deadline existed), and the fallback is
 *   counted in `/api/v1/reflector`;
 * - every MODIFIED followed by a copy at resourceVersion − 1000 with the opposite readiness: every
 *   copy is dropped as stale and counted, the cursor never goes back, and no cell ever flips (read
 *   from `/api/v1/cells` and the `cell.changed` events of `/api/v1/events`), while a real
 *   readiness change still goes through;
 * - every MODIFIED followed by a copy as another pod whose labels the service's `--selector` does
 *   not select: every copy is dropped as `out-of-scope` and counted, and the stranger joins no
 *   cell and never reaches the store.
 *
 * The service asks for JSON (`--kube-api-content-type json`): the proxy rewrites JSON frames only.
 */
import { join } from 'node:path';
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { FaultProxy, type ProxyFault } from './fault-proxy.js';
import {
  adminCore,
  apiTruth,
  namespaceWithRole,
  ServiceProcess,
  sameIdentities,
} from './fault-support.js';
import { EventRecorder } from './support-controller.js';
import { type Cell, LWS, lwsPod, waitFor } from './support-service.js';

/** The reflector's `DEFAULT_INITIAL_EVENTS_DEADLINE_MS`: the end bookmark's deadline. */
const INITIAL_EVENTS_DEADLINE_MS = 10_000;
/** One LIST of a handful of pods, a process start and a loaded 2-core machine. */
const ONE_LIST_MS = 8_000;
/** How far behind the stale copies are, as in issue 36's finding. */
const BEHIND = 1_000;
/** Cells of two pods each (leader and one worker), all Ready. */
const CELLS = 2;
/** Annotation writes per pod: each is one MODIFIED, so one stale copy. */
const TOUCHES = 3;

interface ReflectorBody {
  healthy: boolean;
  cursor: string | null;
  lists: number;
  relists: Record<string, number>;
  initialList: string;
  watchListFallbacks: number;
  initialEventsTimeouts: number;
  droppedEvents: Record<string, number>;
  events: Record<string, number>;
}

describe('the reflector against rewritten watch frames (built service, JSON, real API server)', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let kubelet: FakeKubelet;
  const cleanups: Array<() => Promise<void> | void> = [];

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = adminCore(env);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  afterAll(async () => {
    await env?.stop();
  });

  /** A namespace with `CELLS` Ready cells, and a proxy in front of the API server with `fault`. */
  async function cluster(
    prefix: string,
    fault: ProxyFault,
    labels: Record<string, string> = {},
  ): Promise<{ namespace: string; proxy: FaultProxy; pods: string[]; kubeconfigPath: string }> {
    const namespace = await namespaceWithRole(env, prefix);
    const pods: string[] = [];
    for (let group = 0; group < CELLS; group += 1) {
      for (const worker of [0, 1]) {
        const pod = lwsPod('engine', group, worker, 2);
        Object.assign(pod.metadata!.labels!, labels);
        await core.createNamespacedPod({ namespace, body: pod });
        await kubelet.markRunning(namespace, pod.metadata!.name!);
        pods.push(pod.metadata!.name!);
      }
    }
    const proxy = await FaultProxy.start({ upstream: env.server, upstreamCaPath: env.caPath });
    cleanups.push(() => proxy.close());
    proxy.setFault(fault);
    const kubeconfigPath = proxy.writeKubeconfig(
      join(env.stateDir, `${namespace}.kubeconfig.json`),
      env.unprivileged.token,
    );
    return { namespace, proxy, pods, kubeconfigPath };
  }

  async function startService(
    namespace: string,
    kubeconfigPath: string,
    extraArgs: readonly string[] = [],
  ): Promise<ServiceProcess> {
    const service = await ServiceProcess.start({
      kubeconfigPath,
      namespace,
      extraArgs: ['--kube-api-content-type', 'json', '--initial-list', 'watch-list', ...extraArgs],
    });
    cleanups.push(() => service.kill());
    return service;
  }

  const ready = async (service: ServiceProcess): Promise<boolean> => {
    const res = await fetch(`${service.base}/readyz`, { signal: AbortSignal.timeout(5_000) });
    await res.text();
    return res.status === 200;
  };

  const cells = async (service: ServiceProcess): Promise<Cell[]> =>
    (await service.json<{ cells: Cell[] }>('/api/v1/cells')).cells;

  it('is ready within the deadline plus one LIST when every initial-events-end bookmark is stripped', async () => {
    const { namespace, proxy, kubeconfigPath } = await cluster('strip-end', {
      kind: 'strip-initial-events-end',
    });
    const startedAt = Date.now();
    const service = await startService(namespace, kubeconfigPath);
    await waitFor('readiness', async () => ((await ready(service)) ? true : undefined), 60_000);
    const readyMs = Date.now() - startedAt;
    console.log(
      `e2e watch frames: stripped end bookmarks: ready after ${readyMs} ms ` +
        `(deadline ${INITIAL_EVENTS_DEADLINE_MS} ms), proxy ${JSON.stringify(proxy.counters.injected)}`,
    );

    // The bookmark really was stripped, so readiness came from the fallback, after the deadline.
    expect(proxy.counters.injected['strip-initial-events-end']).toBeGreaterThanOrEqual(1);
    expect(readyMs).toBeGreaterThanOrEqual(INITIAL_EVENTS_DEADLINE_MS);
    expect(readyMs).toBeLessThan(INITIAL_EVENTS_DEADLINE_MS + ONE_LIST_MS);
    const reflector = await service.json<ReflectorBody>('/api/v1/reflector');
    expect(reflector.initialEventsTimeouts).toBeGreaterThanOrEqual(1);
    expect(reflector.watchListFallbacks).toBeGreaterThanOrEqual(1);
    expect(reflector.lists).toBeGreaterThanOrEqual(1);
    expect(reflector.healthy).toBe(true);
    expect(service.stdout).toContain('falling back to one LIST + WATCH');
    // The fallback's LIST read the world: the store is the API server's, every cell alive.
    expect(sameIdentities(await service.store(namespace), await apiTruth(core, namespace))).toBe(
      true,
    );
    const served = await cells(service);
    expect(served.length).toBe(CELLS);
    expect(served.every((c) => c.alive)).toBe(true);
  });

  it('drops every MODIFIED copy 1000 versions behind with the opposite readiness: no cell flips', async () => {
    const { namespace, proxy, pods, kubeconfigPath } = await cluster('stale-copy', {
      kind: 'stale-copy',
      behind: BEHIND,
    });
    const service = await startService(namespace, kubeconfigPath);
    await waitFor('every cell alive', async () => {
      const served = await cells(service);
      return served.length === CELLS && served.every((c) => c.alive) ? true : undefined;
    });
    const recorder = new EventRecorder(service.base, ['cell.changed']);
    cleanups.push(() => recorder.close());
    await recorder.opened;
    const cursorBefore = (await service.json<ReflectorBody>('/api/v1/reflector')).cursor;

    // MODIFIED frames that change nothing the cell model reads: each brings a stale copy that
    // says the pod's readiness turned. Cells are read between the writes, as a client would.
    const notAlive: string[] = [];
    for (let touch = 0; touch < TOUCHES; touch += 1) {
      for (const name of pods) {
        await core.patchNamespacedPod(
          { namespace, name, body: { metadata: { annotations: { 'e2e/touch': String(touch) } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        for (const c of await cells(service)) if (!c.alive) notAlive.push(c.id);
      }
    }
    const writes = TOUCHES * pods.length;
    const reflector = await waitFor('every stale copy dropped', async () => {
      const r = await service.json<ReflectorBody>('/api/v1/reflector');
      return (r.droppedEvents.stale ?? 0) >= writes ? r : undefined;
    });
    // The store holds the API server's versions (the fresh frames), never a copy's.
    await waitFor('the store to equal the API server', async () =>
      sameIdentities(await service.store(namespace), await apiTruth(core, namespace))
        ? true
        : undefined,
    );
    for (const c of await cells(service)) if (!c.alive) notAlive.push(c.id);
    console.log(
      `e2e watch frames: stale copies: ${writes} writes, proxy ${JSON.stringify(proxy.counters.injected)}, ` +
        `dropped ${JSON.stringify(reflector.droppedEvents)}, relists ${JSON.stringify(reflector.relists)}, ` +
        `cursor ${cursorBefore} -> ${reflector.cursor}`,
    );
    expect(proxy.counters.injected['stale-copy']).toBeGreaterThanOrEqual(writes);
    expect(reflector.droppedEvents.stale).toBe(proxy.counters.injected['stale-copy']);
    // Fresh and stale frames alternate: never 8 stale in a row, so no relist for regression.
    expect(reflector.relists.regression ?? 0).toBe(0);
    expect(BigInt(reflector.cursor ?? '0')).toBeGreaterThan(BigInt(cursorBefore ?? '0'));
    expect(notAlive).toEqual([]);
    expect(recorder.of('cell.changed')).toEqual([]);

    // A real readiness change still goes through, and its stale copy (Ready again) is dropped.
    const leader = pods[0]!;
    await kubelet.markNotReady(namespace, leader);
    const dropped = reflector.droppedEvents.stale ?? 0;
    await waitFor('the stale copy of the readiness change dropped', async () => {
      const r = await service.json<ReflectorBody>('/api/v1/reflector');
      return (r.droppedEvents.stale ?? 0) > dropped ? true : undefined;
    });
    const changed = await waitFor('the cell to be not alive', async () =>
      recorder.of('cell.changed').find((e) => e.data.alive === false),
    );
    const served = await cells(service);
    expect(served.filter((c) => !c.alive).map((c) => c.id)).toEqual([changed.data.cell]);
    expect(recorder.of('cell.changed').filter((e) => e.data.alive === true)).toEqual([]);
  });

  it('drops every copy of a MODIFIED as a pod the label selector does not select', async () => {
    const { namespace, proxy, pods, kubeconfigPath } = await cluster(
      'stranger',
      { kind: 'stranger-copy', labels: { team: 'b' } },
      { team: 'a' },
    );
    const service = await startService(namespace, kubeconfigPath, [
      '--selector',
      `${LWS}/name,team=a`,
    ]);
    await waitFor('every cell alive', async () => {
      const served = await cells(service);
      return served.length === CELLS && served.every((c) => c.alive) ? true : undefined;
    });
    for (const name of pods) {
      await core.patchNamespacedPod(
        { namespace, name, body: { metadata: { annotations: { 'e2e/touch': '1' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    const reflector = await waitFor('every stranger dropped', async () => {
      const r = await service.json<ReflectorBody>('/api/v1/reflector');
      return (r.droppedEvents['out-of-scope'] ?? 0) >= pods.length ? r : undefined;
    });
    await waitFor('the store to equal the API server', async () =>
      sameIdentities(await service.store(namespace), await apiTruth(core, namespace))
        ? true
        : undefined,
    );
    console.log(
      `e2e watch frames: strangers: ${pods.length} writes, proxy ${JSON.stringify(proxy.counters.injected)}, ` +
        `dropped ${JSON.stringify(reflector.droppedEvents)}`,
    );
    expect(proxy.counters.injected['stranger-copy']).toBeGreaterThanOrEqual(pods.length);
    expect(reflector.droppedEvents['out-of-scope']).toBe(proxy.counters.injected['stranger-copy']);
    expect(service.stdout).toContain(
      'reflector dropped a watch event for a pod the label selector does not select',
    );
    const members = (await cells(service)).flatMap((c) => c.members.map((m) => m.name));
    expect(members.sort()).toEqual([...pods].sort());
  });
});
