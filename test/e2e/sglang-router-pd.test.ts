/**
 * The proof that the controller feeds a prefill/decode router: the BUILT service (`node
 * dist/src/main.js --source kubernetes`, as the unprivileged user bound to the shipped Role)
 * against a real kube-apiserver, a real router started with `--pd-disaggregation` and no worker
 * (smg 1.13.0, and sglang-router 0.3.2, which takes the same worker API), and fake engines on
 * loopback.
 *
 * Two pools of LeaderWorkerSet groups: `prefill` (`--sglang-router prefill=URL,role=prefill`) and
 * `decode` (`--sglang-router decode=URL,role=decode`), on one router. A prefill cell's leader
 * carries its bootstrap port in `sglang.ai/bootstrap-port`. Every expectation about the router is
 * read from its own `GET /workers` (worker_type, bootstrap_port); the controller's
 * `/api/v1/cells` and `/api/v1/sinks` are checked on top.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeEnvironmentRequired } from './environment/binaries.js';
import { type FakeEngine, fakeModel, startFakeEngine } from './environment/fake-engine.js';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  ensureRouters,
  type RouterVersion,
  type RunningRouter,
  routersUnavailableReason,
  startRouter,
} from './environment/routers.js';
import {
  bindShippedRoles,
  ControllerFleet,
  kubernetesSourceArgs,
  lwsPod,
  ROLE,
  type RunningController,
  waitFor,
} from './support-controller.js';

const apiKey = 'e2e-pd-router-key';
const CELL_SIZE = 2;
const BOOTSTRAP_ANNOTATION = 'sglang.ai/bootstrap-port';
/** An add is processed in the background (~0.1 s idle); a loaded 2-core machine gets margin. */
const CONVERGE_MS = 30_000;

const unavailable = routersUnavailableReason();
if (unavailable && kubeEnvironmentRequired()) throw new Error(`e2e: ${unavailable}`);

/** A worker as both routers list it in PD mode: the fields this test reads. */
interface PdWorker {
  url: string;
  worker_type: string;
  bootstrap_port?: number;
  status?: string;
}

/** `GET /workers` as `url type[:bootstrap]`, sorted, with every worker ready. */
async function pdWorkers(router: RunningRouter): Promise<string[] | undefined> {
  const response = await fetch(`${router.url}/workers`, {
    headers: { authorization: `Bearer ${apiKey}` },
    signal: AbortSignal.timeout(5_000),
  });
  if (response.status !== 200) throw new Error(`GET /workers: HTTP ${response.status}`);
  const { workers } = (await response.json()) as { workers: PdWorker[] };
  if (workers.some((w) => w.status !== undefined && w.status !== 'ready')) return undefined;
  return workers
    .map(
      (w) =>
        `${w.url} ${w.worker_type}${w.bootstrap_port === undefined ? '' : `:${w.bootstrap_port}`}`,
    )
    .sort();
}

interface CellBody {
  id: string;
  alive: boolean;
  routable: boolean;
  bootstrapPort: number | null;
  whyNotRoutable: Array<{ reason: string; message: string }>;
}

interface SinkBody {
  target: string;
  pool: string;
  role?: string;
  desired: string[];
  actual: string[];
  pending: unknown[];
  lastError: string | null;
}

let env: KubeEnvironment;
let core: CoreV1Api;
let kubelet: FakeKubelet;
let fleet: ControllerFleet;
let keyFile: string;

describe.skipIf(unavailable !== undefined)('the controller feeds prefill/decode routers', () => {
  beforeAll(async () => {
    ensureRouters();
    fleet = ControllerFleet.create();
    keyFile = join(fleet.stateDir, 'router-api-key');
    writeFileSync(keyFile, `${apiKey}\n`, { mode: 0o600 });
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
  });

  afterAll(async () => {
    await fleet?.dispose();
    await env?.stop();
  });

  describe.each<RouterVersion>(['smg-1.13.0', 'sglang-router-0.3.2'])(
    '%s --pd-disaggregation',
    (version) => {
      let namespace: string;
      let router: RunningRouter;
      let controller: RunningController;
      const engines: Record<'p0' | 'p1' | 'd0' | 'd1', FakeEngine> = {} as never;

      /** A cell of CELL_SIZE pods serving `engine`; the leader annotated with `bootstrap` if given. */
      async function createCell(
        pool: string,
        group: number,
        engine: FakeEngine,
        bootstrap?: string,
      ): Promise<void> {
        for (let worker = 0; worker < CELL_SIZE; worker += 1) {
          const body: V1Pod = lwsPod(pool, group, worker, CELL_SIZE, engine.port);
          if (worker === 0 && bootstrap !== undefined) {
            body.metadata!.annotations = {
              ...body.metadata!.annotations,
              [BOOTSTRAP_ANNOTATION]: bootstrap,
            };
          }
          await core.createNamespacedPod({ namespace, body });
        }
        for (let worker = CELL_SIZE - 1; worker >= 0; worker -= 1) {
          const name = worker === 0 ? `${pool}-${group}` : `${pool}-${group}-${worker}`;
          await kubelet.markRunning(namespace, name, { podIP: '127.0.0.1' });
        }
      }

      const coordinator = () =>
        controller.get<{ state: { lastCompleted: { id: number; result: string } | null } }>(
          '/api/v1/coordinator',
        );

      async function untilRouterLists(expected: string[]): Promise<void> {
        let last: string[] | undefined;
        try {
          await waitFor(
            `the PD router to list ${JSON.stringify(expected)}`,
            async () => {
              last = await pdWorkers(router);
              return JSON.stringify(last) === JSON.stringify(expected) ? true : undefined;
            },
            CONVERGE_MS,
            50,
          );
        } catch (error) {
          const sinks = await controller.get('/api/v1/sinks').catch((e: unknown) => String(e));
          throw new Error(
            `${error}\nlast listed: ${JSON.stringify(last)}\nsinks: ${JSON.stringify(sinks)}\n` +
              `--- router log:\n${router.logTail()}\n--- controller log:\n${controller.logTail(30)}`,
          );
        }
      }

      beforeAll(async () => {
        namespace = await env.createNamespace('router-pd');
        await bindShippedRoles(env, namespace, [ROLE]);
        for (const name of ['p0', 'p1', 'd0', 'd1'] as const)
          engines[name] = await startFakeEngine();
        router = await startRouter({ version, apiKey, pdDisaggregation: true });
        controller = await fleet.start({
          name: `pd-${version}`,
          args: [
            ...kubernetesSourceArgs(env, namespace),
            '--leader-elect=false',
            '--drift-interval',
            '2s',
            '--sglang-router-api-key-file',
            keyFile,
            // The fake engines and the router share this host: the cells' addresses are loopback.
            '--sink-allow-loopback',
            '--sglang-router',
            `prefill=${router.url},role=prefill`,
            '--sglang-router',
            `decode=${router.url},role=decode`,
          ],
        });
        await waitFor('the controller to act', async () => {
          const c = await controller.get<{ acting: boolean; cellsSynced: boolean }>(
            '/api/v1/coordinator',
          );
          return c.acting && c.cellsSynced ? true : undefined;
        });
      });

      afterAll(async () => {
        if (controller?.running) {
          const status = await controller.terminate();
          expect(status, controller.logTail(60)).toEqual({ code: 0, signal: null });
        }
        await router?.dispose();
        await Promise.all(Object.values(engines).map((e) => e.stop()));
      });

      it('lists prefill workers with their bootstrap ports and decode workers', async () => {
        const { p0, d0, d1 } = engines;
        expect(await pdWorkers(router)).toEqual([]);
        await createCell('prefill', 0, p0, '8998');
        await createCell('decode', 0, d0);
        await createCell('decode', 1, d1);
        await untilRouterLists(
          [`${p0.url} prefill:8998`, `${d0.url} decode`, `${d1.url} decode`].sort(),
        );

        // Two targets on one router, one per role, each showing only its own workers.
        const sinks = await waitFor('both targets converged', async () => {
          const body = await controller.get<{ sinks: SinkBody[] }>('/api/v1/sinks');
          const done = body.sinks.every(
            (s) =>
              s.pending.length === 0 &&
              s.lastError === null &&
              JSON.stringify(s.actual) === JSON.stringify(s.desired),
          );
          return done ? body.sinks : undefined;
        });
        expect(
          sinks.map(({ target, pool, role, actual }) => ({ target, pool, role, actual })),
        ).toEqual([
          { target: router.url, pool: 'prefill', role: 'prefill', actual: [p0.url] },
          { target: router.url, pool: 'decode', role: 'decode', actual: [d0.url, d1.url].sort() },
        ]);
      });

      it('routes a request through the prefill and a decode engine', async () => {
        const { p0, d0, d1 } = engines;
        const before = { prefill: p0.traffic(), decode: d0.traffic() + d1.traffic() };
        const response = await fetch(`${router.url}/generate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
          body: JSON.stringify({
            text: 'hello',
            model: fakeModel,
            sampling_params: { max_new_tokens: 1 },
          }),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        expect(response.status, `${text}\n${router.logTail()}`).toBe(200);
        expect(p0.traffic()).toBe(before.prefill + 1);
        expect(d0.traffic() + d1.traffic()).toBe(before.decode + 1);
      });

      it('keeps a prefill cell without a bootstrap port out, says NoBootstrapPort, and adds it once annotated', async () => {
        const { p0, p1, d0, d1 } = engines;
        await createCell('prefill', 1, p1);
        const cell = await waitFor('prefill-00001 to be reconciled alive', async () => {
          const body = await controller.get<{ cell: CellBody }>('/api/v1/cells/prefill-00001');
          return body.cell.alive ? body.cell : undefined;
        });
        expect(cell).toMatchObject({
          routable: false,
          bootstrapPort: null,
          whyNotRoutable: [{ reason: 'NoBootstrapPort' }],
        });
        expect(cell.whyNotRoutable[0]?.message).toContain(BOOTSTRAP_ANNOTATION);
        // A run that began after the cell was seen has deployed it: still only the annotated one.
        const seen = (await coordinator()).state.lastCompleted?.id ?? 0;
        await waitFor('a later run to complete', async () => {
          const last = (await coordinator()).state.lastCompleted;
          return last && last.id > seen && last.result === 'success' ? true : undefined;
        });
        expect(await pdWorkers(router)).toEqual(
          [`${p0.url} prefill:8998`, `${d0.url} decode`, `${d1.url} decode`].sort(),
        );

        await core.patchNamespacedPod(
          {
            namespace,
            name: 'prefill-1',
            body: { metadata: { annotations: { [BOOTSTRAP_ANNOTATION]: '9001' } } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        await untilRouterLists(
          [
            `${p0.url} prefill:8998`,
            `${p1.url} prefill:9001`,
            `${d0.url} decode`,
            `${d1.url} decode`,
          ].sort(),
        );
        const routed = await controller.get<{ cell: CellBody }>('/api/v1/cells/prefill-00001');
        expect(routed.cell).toMatchObject({
          routable: true,
          bootstrapPort: 9001,
          whyNotRoutable: [],
        });
      });
    },
  );
});
