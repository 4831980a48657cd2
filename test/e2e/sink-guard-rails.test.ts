/**
 * The sinks' guard rails, proven with the BUILT service (`node dist/src/main.js --source
 * kubernetes`, as the unprivileged user bound to the shipped Roles) against a real kube-apiserver,
 * a real smg 1.13.0 router and fake engines on loopback:
 * - `--sink-mode observe` writes nothing to the router (its recording proxy sees only reads) or
 *   to EndpointSlices (their resourceVersions stay), while `/api/v1/sinks` reports the diff;
 * - `--sglang-router-ownership managed` (the default) leaves a hand-added worker in place while
 *   `all` removes it, and the marks it relies on are the router's own labels;
 * - `--sink-panic-threshold` holds removals while too few cells are alive and releases them once
 *   the pool is back at the threshold.
 * The scenarios build on each other (one router, one namespace, the cells one leaves).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointSliceName } from '../../src/sinks/endpointslice.js';
import { kubeEnvironmentRequired } from './environment/binaries.js';
import { type FakeEngine, startFakeEngine } from './environment/fake-engine.js';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  ensureRouters,
  type RunningRouter,
  routersUnavailableReason,
  startRouter,
} from './environment/routers.js';
import {
  bindShippedRoles,
  ControllerFleet,
  kubernetesSourceArgs,
  lwsPod,
  type RecordingProxy,
  ROLE,
  type RunningController,
  startRecordingProxy,
  waitFor,
} from './support-controller.js';
import { listWorkers } from './support-routers.js';
import { ENDPOINTSLICES_ROLE } from './support-service.js';

const apiKey = 'e2e-guard-key';
const CELL_SIZE = 2;
const MARK = { 'app.kubernetes.io/managed-by': 'pool-controller' };

const unavailable = routersUnavailableReason();
if (unavailable && kubeEnvironmentRequired()) throw new Error(`e2e: ${unavailable}`);

interface SinkBody {
  mode: string;
  panicThresholdPercent: number;
  panic: Array<{ namespace: string; pool: string; routable: number; known: number }>;
  sinks: Array<{
    kind: string;
    target: string;
    desired: string[];
    actual: string[];
    wouldAdd: string[];
    wouldRemove: string[];
    panic: boolean;
    heldByPanic: string[];
    ownership: { mode: string; by: string | null };
    lastAppliedAt: string | null;
    lastError: string | null;
  }>;
}

let env: KubeEnvironment;
let core: CoreV1Api;
let discovery: DiscoveryV1Api;
let kubelet: FakeKubelet;
let fleet: ControllerFleet;
let keyFile: string;
let namespace: string;
let router: RunningRouter;
let proxy: RecordingProxy;
let engines: FakeEngine[] = [];
let controller: RunningController | undefined;

const podName = (group: number, worker: number): string =>
  worker === 0 ? `engine-${group}` : `engine-${group}-${worker}`;

async function createCell(group: number, engine: FakeEngine): Promise<void> {
  for (let worker = 0; worker < CELL_SIZE; worker += 1) {
    await core.createNamespacedPod({
      namespace,
      body: lwsPod('engine', group, worker, CELL_SIZE, engine.port),
    });
  }
  for (let worker = CELL_SIZE - 1; worker >= 0; worker -= 1) {
    await kubelet.markRunning(namespace, podName(group, worker), { podIP: '127.0.0.1' });
  }
}

async function setLeaderReady(group: number, ready: boolean): Promise<void> {
  await kubelet.markRunning(namespace, podName(group, 0), { ready });
}

/** A worker POSTed straight to the router, as a person or another tool would. */
async function addByHand(url: string, labels?: Record<string, string>): Promise<void> {
  const response = await fetch(`${router.url}/workers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(labels ? { url, labels } : { url }),
  });
  expect(response.status).toBe(202);
}

async function untilListed(urls: string[], ms = 30_000): Promise<void> {
  const want = JSON.stringify([...urls].sort());
  let last = '';
  await waitFor(
    `router to list ${want}`,
    async () => {
      const listed = await listWorkers(router, apiKey);
      last = JSON.stringify(listed);
      const clean = listed.every((w) => w.status === undefined || w.status === 'ready');
      return clean && JSON.stringify(listed.map((w) => w.url).sort()) === want ? true : undefined;
    },
    ms,
    50,
  ).catch(async (error: unknown) => {
    const sinks = await controller?.get('/api/v1/sinks').catch((e: unknown) => String(e));
    throw new Error(
      `${error}\nlast listed: ${last}\nsinks: ${JSON.stringify(sinks)}\n${controller?.logTail(30) ?? ''}`,
    );
  });
}

async function routerTarget(c: RunningController): Promise<SinkBody['sinks'][number]> {
  const body = await c.get<SinkBody>('/api/v1/sinks');
  const target = body.sinks.find((s) => s.kind === 'sglang-router');
  if (!target) throw new Error(`no router target in ${JSON.stringify(body)}`);
  return target;
}

async function startController(name: string, extra: string[]): Promise<RunningController> {
  const started = await fleet.start({
    name,
    args: [
      ...kubernetesSourceArgs(env, namespace),
      '--leader-elect=false',
      '--drift-interval',
      '2s',
      '--sglang-router-api-key-file',
      keyFile,
      '--sink-allow-loopback',
      '--sglang-router',
      `engine=${proxy.url}`,
      ...extra,
    ],
  });
  controller = started;
  return started;
}

async function stopController(): Promise<void> {
  const running = controller;
  controller = undefined;
  if (running?.running) {
    const status = await running.terminate();
    expect(status, running.logTail(40)).toEqual({ code: 0, signal: null });
  }
}

async function slicesOf(): Promise<Record<string, { rv: string; endpoints: string[] }>> {
  const list = await discovery.listNamespacedEndpointSlice({ namespace });
  return Object.fromEntries(
    list.items.map((s) => [
      s.metadata?.name ?? '',
      {
        rv: s.metadata?.resourceVersion ?? '',
        endpoints: (s.endpoints ?? []).flatMap((e) => e.addresses).sort(),
      },
    ]),
  );
}

describe.skipIf(unavailable !== undefined)('sink guard rails on a real smg 1.13 router', () => {
  beforeAll(async () => {
    ensureRouters();
    fleet = ControllerFleet.create();
    keyFile = join(fleet.stateDir, 'router-api-key');
    writeFileSync(keyFile, `${apiKey}\n`, { mode: 0o600 });
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    discovery = env.kubeConfig.makeApiClient(DiscoveryV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('guard');
    await bindShippedRoles(env, namespace, [ROLE, ENDPOINTSLICES_ROLE]);
    for (let i = 0; i < 6; i += 1) engines.push(await startFakeEngine());
    router = await startRouter({ version: 'smg-1.13.0', apiKey });
    proxy = await startRecordingProxy(router.url);
  });

  afterAll(async () => {
    await stopController();
    await proxy?.close();
    await router?.dispose();
    await Promise.all(engines.map((e) => e.stop()));
    engines = [];
    await fleet?.dispose();
    await env?.stop();
  });

  it('observe mode writes nothing to the router or to EndpointSlices while reporting the diff', async () => {
    const [a, b, hand, leftover] = engines as [FakeEngine, FakeEngine, FakeEngine, FakeEngine];
    // A worker added by hand, and one a previous controller marked as its own.
    await addByHand(hand.url);
    await addByHand(leftover.url, MARK);
    await untilListed([hand.url, leftover.url]);
    await createCell(0, a);
    await createCell(1, b);
    // Slices a previous controller left: one for the cells' port holding a stale endpoint, one
    // for a port no cell uses. (The cells themselves are on loopback, which a slice refuses.)
    const port = a.port;
    const stale = endpointSliceName('engine-alive', port, 'IPv4');
    const unused = endpointSliceName('engine-alive', 1, 'IPv4');
    for (const [name, slicePort] of [
      [stale, port],
      [unused, 1],
    ] as const) {
      await discovery.createNamespacedEndpointSlice({
        namespace,
        body: {
          metadata: {
            name,
            labels: {
              'kubernetes.io/service-name': 'engine-alive',
              'endpointslice.kubernetes.io/managed-by': 'pool-controller',
            },
          },
          addressType: 'IPv4',
          endpoints: [{ addresses: ['10.9.9.9'], conditions: { ready: true } }],
          ports: [{ name: 'http', port: slicePort, protocol: 'TCP' }],
        },
      });
    }
    const slicesBefore = await slicesOf();

    const c = await startController('observe', [
      '--sink-mode',
      'observe',
      '--publish-endpointslices',
    ]);
    const target = await waitFor('the observe diff of the router', async () => {
      const t = await routerTarget(c);
      return t.lastAppliedAt !== null && t.wouldAdd.length === 2 ? t : undefined;
    });
    expect(target).toMatchObject({
      wouldAdd: [a.url, b.url].sort(),
      // The marked leftover would go; the hand-added worker would stay (managed).
      wouldRemove: [leftover.url],
      ownership: { mode: 'managed', by: 'labels' },
      lastError: null,
    });
    const body = await c.get<SinkBody>('/api/v1/sinks');
    expect(body.mode).toBe('observe');
    const slices = Object.fromEntries(
      body.sinks.filter((s) => s.kind === 'endpointslice').map((s) => [s.target, s]),
    );
    expect(slices[`${namespace}/${stale}`]).toMatchObject({
      wouldAdd: [],
      wouldRemove: [`10.9.9.9:${port}`],
    });
    expect(slices[`${namespace}/${unused}`]).toMatchObject({ wouldRemove: ['10.9.9.9:1'] });

    // Two drift runs later nothing has been written anywhere.
    const runs = proxy.requests.length;
    await waitFor('two more drift runs', async () =>
      proxy.requests.length >= runs + 2 ? true : undefined,
    );
    expect(proxy.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(await slicesOf()).toEqual(slicesBefore);
    const listed = (await listWorkers(router, apiKey)).map((w) => w.url).sort();
    expect(listed).toEqual([hand.url, leftover.url].sort());
    const metrics = await (await fetch(`${c.url}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(
        `pool_controller_sink_workers\\{sink="sglang-router",target="${proxy.url}",state="would_add"\\} 2`,
      ),
    );
    expect(
      c.logLines().filter((l) => String(l.msg).includes('observe mode')).length,
    ).toBeGreaterThanOrEqual(1);
    await stopController();
    // Clean up the slices so the next scenarios only concern the router.
    for (const name of [stale, unused]) {
      await discovery.deleteNamespacedEndpointSlice({ namespace, name });
    }
  });

  it('managed leaves a hand-added worker in place while all removes it', async () => {
    const [a, b, hand, leftover] = engines as [FakeEngine, FakeEngine, FakeEngine, FakeEngine];
    const managed = await startController('managed', []);
    // Adds the cells, removes the marked leftover, leaves the hand-added worker.
    await untilListed([a.url, b.url, hand.url]);
    expect(proxy.requests.some((r) => r.method === 'DELETE')).toBe(true);
    expect((await routerTarget(managed)).ownership).toEqual({ mode: 'managed', by: 'labels' });
    // Its own workers carry the mark on the router itself.
    const raw = (await (
      await fetch(`${router.url}/workers`, { headers: { authorization: `Bearer ${apiKey}` } })
    ).json()) as { workers: Array<{ url: string; labels?: Record<string, string> }> };
    const labelsOf = (url: string) => raw.workers.find((w) => w.url === url)?.labels ?? {};
    expect(labelsOf(a.url)).toMatchObject(MARK);
    expect(labelsOf(hand.url)).not.toHaveProperty('app.kubernetes.io/managed-by');
    void leftover;
    await stopController();

    await startController('all', ['--sglang-router-ownership', 'all']);
    await untilListed([a.url, b.url]);
    await stopController();
  });

  it('panic holds removals while too few cells are alive and releases them at the threshold', async () => {
    const [a, b, , , c, d] = engines as FakeEngine[] as [
      FakeEngine,
      FakeEngine,
      FakeEngine,
      FakeEngine,
      FakeEngine,
      FakeEngine,
    ];
    await createCell(2, c);
    await createCell(3, d);
    const first = await startController('panic-a', ['--sink-panic-threshold', '50']);
    await untilListed([a.url, b.url, c.url, d.url]);
    void first;
    await stopController();

    // Three of four cells go not ready at once (a partition: while no controller runs, so the
    // next one sees them all at its first run): 1/4 < 50 %, the pool is in panic.
    const deletesBefore = proxy.requests.filter((r) => r.method === 'DELETE').length;
    await setLeaderReady(1, false);
    await setLeaderReady(2, false);
    await setLeaderReady(3, false);
    const ctl = await startController('panic-b', ['--sink-panic-threshold', '50']);
    const inPanic = await waitFor('the pool to be in panic', async () => {
      const t = await routerTarget(ctl);
      return t.panic && t.heldByPanic.length === 3 ? t : undefined;
    });
    expect(inPanic.desired).toEqual([a.url]);
    expect(inPanic.heldByPanic).toEqual([b.url, c.url, d.url].sort());
    const body = await ctl.get<SinkBody>('/api/v1/sinks');
    expect(body.panic).toEqual([
      expect.objectContaining({ namespace, pool: 'engine', routable: 1, known: 4 }),
    ]);
    const metrics = await (await fetch(`${ctl.url}/metrics`)).text();
    expect(metrics).toContain(
      `pool_controller_sink_panic{namespace="${namespace}",pool="engine"} 1`,
    );
    // Two drift runs in panic: nothing removed.
    const runs = proxy.requests.length;
    await waitFor('two more drift runs', async () =>
      proxy.requests.length >= runs + 2 ? true : undefined,
    );
    expect(proxy.requests.filter((r) => r.method === 'DELETE').length).toBe(deletesBefore);
    expect((await listWorkers(router, apiKey)).map((w) => w.url).sort()).toEqual(
      [a.url, b.url, c.url, d.url].sort(),
    );
    const entries = ctl.logLines().filter((l) => String(l.msg).startsWith('pool entered panic'));
    expect(entries).toHaveLength(1);

    // One back: 2/4 = 50 %, out of panic; the two still dead are removed.
    await setLeaderReady(1, true);
    await untilListed([a.url, b.url]);
    expect((await routerTarget(ctl)).panic).toBe(false);
    expect(ctl.logLines().filter((l) => String(l.msg).startsWith('pool left panic'))).toHaveLength(
      1,
    );
    await stopController();
  });
});
