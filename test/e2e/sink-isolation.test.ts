/**
 * Issue 36, finding 2, on the built service against a real kube-apiserver and a real router
 * (smg 1.13.0): a router that never answers `POST /workers` beside a healthy one must not delay
 * the healthy router's changes. Before sink isolation one deploy waited for the dead router's
 * POSTs (5 s each, one after another), so removing a dead cell from the healthy router took tens
 * of seconds; now each router applies on its own worker.
 */

import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const apiKey = 'e2e-router-key';
const CELLS = 3;
const CELL_SIZE = 2;
/**
 * The bound this test holds on a loaded 2-core machine; the target is 1 s (what an idle
 * machine measures is printed), and before isolation it took 35–42 s with 10 cells.
 */
const REMOVAL_BOUND_MS = 3_000;

const unavailable = routersUnavailableReason();
if (unavailable && kubeEnvironmentRequired()) throw new Error(`e2e: ${unavailable}`);

/** A router that lists nothing and never answers `POST /workers`; it counts the POSTs it holds. */
async function startDeadRouter(): Promise<{ url: string; posts: number; close(): Promise<void> }> {
  const held: Array<() => void> = [];
  const dead = { url: '', posts: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    if (req.method === 'POST') {
      dead.posts += 1;
      held.push(() => res.destroy());
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/workers' ? JSON.stringify({ workers: [], total: 0 }) : '{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  dead.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dead.close = () =>
    new Promise<void>((resolve) => {
      for (const release of held.splice(0)) release();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return dead;
}

describe.skipIf(unavailable !== undefined)('sink isolation (smg-1.13.0)', () => {
  let env: KubeEnvironment;
  let fleet: ControllerFleet;
  let kubelet: FakeKubelet;
  let core: CoreV1Api;
  let namespace: string;
  let engines: FakeEngine[] = [];
  let router: RunningRouter;
  let proxy: RecordingProxy;
  let dead: Awaited<ReturnType<typeof startDeadRouter>>;
  let controller: RunningController;

  beforeAll(async () => {
    ensureRouters();
    fleet = ControllerFleet.create();
    const keyFile = join(fleet.stateDir, 'router-api-key');
    writeFileSync(keyFile, `${apiKey}\n`, { mode: 0o600 });
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('isolation');
    await bindShippedRoles(env, namespace, [ROLE]);
    for (let i = 0; i < CELLS; i += 1) engines.push(await startFakeEngine());
    router = await startRouter({ version: 'smg-1.13.0', apiKey });
    proxy = await startRecordingProxy(router.url);
    dead = await startDeadRouter();
    for (let group = 0; group < CELLS; group += 1) {
      for (let worker = 0; worker < CELL_SIZE; worker += 1) {
        await core.createNamespacedPod({
          namespace,
          body: lwsPod('engine', group, worker, CELL_SIZE, engines[group]!.port),
        });
      }
      for (let worker = CELL_SIZE - 1; worker >= 0; worker -= 1) {
        const name = worker === 0 ? `engine-${group}` : `engine-${group}-${worker}`;
        await kubelet.markRunning(namespace, name, { podIP: '127.0.0.1' });
      }
    }
    controller = await fleet.start({
      name: 'isolation',
      args: [
        ...kubernetesSourceArgs(env, namespace),
        '--leader-elect=false',
        '--sglang-router-api-key-file',
        keyFile,
        '--sink-allow-loopback',
        '--sglang-router',
        `engine=${proxy.url}`,
        '--sglang-router',
        `engine=${dead.url}`,
      ],
    });
  });

  afterAll(async () => {
    await fleet?.dispose();
    await dead?.close();
    await proxy?.close();
    await router?.dispose();
    await Promise.all(engines.map((e) => e.stop()));
    engines = [];
    await env?.stop();
  });

  it('removes a dead cell from the healthy router at once while the other router holds every POST', async () => {
    const want = JSON.stringify(engines.map((e) => e.url).sort());
    await waitFor(
      'the healthy router to list every cell',
      async () => {
        const urls = (await listWorkers(router, apiKey)).map((w) => w.url).sort();
        return JSON.stringify(urls) === want ? true : undefined;
      },
      30_000,
      50,
    );
    await waitFor('the dead router to hold a POST', async () =>
      dead.posts > 0 ? true : undefined,
    );

    const deletes = () => proxy.requests.filter((r) => r.method === 'DELETE');
    expect(deletes()).toEqual([]);
    const notReadyAt = Date.now();
    await kubelet.markRunning(namespace, 'engine-0', { ready: false });
    const removal = await waitFor(
      'the healthy router to be told to remove the dead cell',
      async () => deletes()[0],
      30_000,
      10,
    );
    const ms = removal.atMs - notReadyAt;
    console.log(
      `e2e timings:\n  ${(ms / 1000).toFixed(2)} s  dead cell removed from the healthy router beside a router that never answers POST /workers`,
    );
    expect(ms, controller.logTail(30)).toBeLessThan(REMOVAL_BOUND_MS);
    // The dead router still lists none of them: its adds hang on its own worker.
    const { sinks } = await controller.get<{
      sinks: Array<{ target: string; actual: string[] }>;
    }>('/api/v1/sinks');
    const held = sinks.find((s) => s.target === dead.url);
    expect(held?.actual).toEqual([]);
  });
});
