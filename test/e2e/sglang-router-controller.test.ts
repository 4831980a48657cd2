/**
 * The proof that the controller keeps SGLang routers equal to the alive cells: the BUILT service
 * (`node dist/src/main.js --source kubernetes`, as the unprivileged user bound to the shipped
 * Roles) against a real kube-apiserver, real routers (smg 1.13.0; the core scenarios also against
 * sglang-router 0.3.2) and fake engines on loopback.
 *
 * A cell is a LeaderWorkerSet group of two pods whose status the fake kubelet writes with podIP
 * 127.0.0.1; the leader declares its engine's loopback port as containerPort `http`, so the cell's
 * address is that engine's `127.0.0.1:<port>`. Every expectation is read from the router's own
 * `GET /workers`; the controller's `/api/v1/sinks`, `/api/v1/coordinator`, `/metrics` and event
 * stream are checked on top. Each controller calls the `engine` router through its own recording
 * proxy (support-controller.ts), so the test also knows which replica sent what, and when.
 *
 * The scenarios of a describe build on each other (the cells one leaves are the next one's start).
 *
 * Timings measured here are printed at the end of the file (`e2e timings:`).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_CACHE_MS } from '../../routes/metrics.js';
import { kubeEnvironmentRequired } from './environment/binaries.js';
import { type FakeEngine, startFakeEngine } from './environment/fake-engine.js';
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
  EventRecorder,
  kubernetesSourceArgs,
  LEADER_ELECTION_ROLE,
  lwsPod,
  type RecordingProxy,
  ROLE,
  type RunningController,
  startRecordingProxy,
  waitFor,
} from './support-controller.js';
import { generate, type ListedWorker, listWorkers } from './support-routers.js';

const apiKey = 'e2e-router-key';
const DRIFT_MS = 2_000;
/** smg 1.13 drains a removed worker ~5 s; a loaded 2-core machine gets a wide margin. */
const CONVERGE_MS = 30_000;
/** Slack on top of "within one drift interval" for a loaded machine (apply + router add). */
const DRIFT_SLACK_MS = 3_000;
const CELL_SIZE = 2;
/**
 * A request that reached a proxy this soon after the replica announced it stepped down may have
 * been sent before (undici writes a request a few ticks after fetch is called).
 */
const STEP_DOWN_GRACE_MS = 150;

const unavailable = routersUnavailableReason();
if (unavailable && kubeEnvironmentRequired()) throw new Error(`e2e: ${unavailable}`);

const timings: Array<[string, number]> = [];
function measured(what: string, ms: number): number {
  timings.push([what, ms]);
  return ms;
}

const urlsOf = (engines: readonly FakeEngine[]): string[] => engines.map((e) => e.url).sort();
const isClean = (w: ListedWorker): boolean => w.status === undefined || w.status === 'ready';

/**
 * Waits until `router` lists exactly `expected`, none draining; returns the ms it took. On a
 * timeout the error shows the last list, the controller's sinks view and both logs' tails.
 */
async function untilRouterLists(
  router: RunningRouter,
  expected: readonly FakeEngine[],
  controller: RunningController | undefined,
  ms = CONVERGE_MS,
): Promise<number> {
  const started = Date.now();
  const want = JSON.stringify(urlsOf(expected));
  let last: ListedWorker[] | undefined;
  try {
    await waitFor(
      `router ${router.version} ${router.url} to list ${want}`,
      async () => {
        last = await listWorkers(router, apiKey);
        const urls = JSON.stringify(last.map((w) => w.url).sort());
        return urls === want && last.every(isClean) ? true : undefined;
      },
      ms,
      50,
    );
  } catch (error) {
    const sinks = controller
      ? await controller.get('/api/v1/sinks').catch((e: unknown) => String(e))
      : 'n/a';
    throw new Error(
      `${error}\nlast listed: ${JSON.stringify(last)}\nsinks: ${JSON.stringify(sinks)}\n` +
        `--- router log:\n${router.logTail()}\n--- controller log:\n${controller?.logTail(30) ?? ''}`,
    );
  }
  return Date.now() - started;
}

/**
 * Samples a router's list every `intervalMs` in the background; records every sample in which a
 * URL appears twice (never allowed) and how many samples were taken.
 */
class ListSampler {
  readonly samples: Array<{ atMs: number; workers: ListedWorker[] }> = [];
  readonly duplicates: Array<{ atMs: number; workers: ListedWorker[] }> = [];
  readonly errors: string[] = [];
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(router: RunningRouter, intervalMs = 200) {
    this.#done = (async () => {
      while (!this.#stopped) {
        try {
          const workers = await listWorkers(router, apiKey);
          const atMs = Date.now();
          this.samples.push({ atMs, workers });
          if (new Set(workers.map((w) => w.url)).size !== workers.length) {
            this.duplicates.push({ atMs, workers });
          }
        } catch (error) {
          this.errors.push(String(error));
        }
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }
}

/** LWS groups of CELL_SIZE pods whose leader serves on its engine's loopback port. */
class Cells {
  constructor(
    readonly core: CoreV1Api,
    readonly kubelet: FakeKubelet,
    readonly namespace: string,
  ) {}

  static podName(pool: string, group: number, worker: number): string {
    return worker === 0 ? `${pool}-${group}` : `${pool}-${group}-${worker}`;
  }

  /** Creates the group's pods, then reports them Running and Ready at 127.0.0.1 (workers first). */
  async create(pool: string, group: number, engine: FakeEngine): Promise<void> {
    const { namespace } = this;
    for (let worker = 0; worker < CELL_SIZE; worker += 1) {
      await this.core.createNamespacedPod({
        namespace,
        body: lwsPod(pool, group, worker, CELL_SIZE, engine.port),
      });
    }
    for (let worker = CELL_SIZE - 1; worker >= 0; worker -= 1) {
      await this.kubelet.markRunning(namespace, Cells.podName(pool, group, worker), {
        podIP: '127.0.0.1',
      });
    }
  }

  /** The leader's readiness (its readiness probe passing or failing). */
  async setLeaderReady(pool: string, group: number, ready: boolean): Promise<void> {
    await this.kubelet.markRunning(this.namespace, Cells.podName(pool, group, 0), { ready });
  }

  /** A graceful delete of every pod (the cell goes not alive at once), then the kubelet's final delete. */
  async delete(pool: string, group: number): Promise<void> {
    const names = Array.from({ length: CELL_SIZE }, (_, w) => Cells.podName(pool, group, w));
    for (const name of names) {
      await this.core.deleteNamespacedPod({
        namespace: this.namespace,
        name,
        gracePeriodSeconds: 30,
      });
    }
    for (const name of names) await this.kubelet.finalizeDeletion(this.namespace, name);
  }
}

interface SinkStatus {
  kind: string;
  target: string;
  pool: string;
  desired: string[];
  actual: string[];
  pending: Array<{ operation: string; endpoint: string }>;
  lastAppliedAt: string | null;
  lastError: string | null;
}

interface CoordinatorBody {
  leading: boolean;
  acting: boolean;
  cellsSynced: boolean;
  state: {
    consecutiveFailures: number;
    lastError: { phase: string; message: string } | null;
    nextRetryAt: string | null;
  };
}

interface LeaderBody {
  identity: string;
  leading: boolean;
  leader: string | null;
}

async function sinkOf(controller: RunningController, target: string): Promise<SinkStatus> {
  const body = await controller.get<{ sinks: SinkStatus[] }>('/api/v1/sinks');
  const sink = body.sinks.find((s) => s.target === target);
  if (!sink) throw new Error(`no sink target ${target} in ${JSON.stringify(body)}`);
  return sink;
}

/** Waits until the controller's view of `target` says converged on `expected`. */
async function untilSinkConverged(
  controller: RunningController,
  target: string,
  expected: readonly FakeEngine[],
): Promise<SinkStatus> {
  const want = urlsOf(expected);
  return waitFor(
    `the controller's sink ${target} to show ${JSON.stringify(want)} converged`,
    async () => {
      const sink = await sinkOf(controller, target);
      return JSON.stringify(sink.desired) === JSON.stringify(want) &&
        JSON.stringify(sink.actual) === JSON.stringify(want) &&
        sink.pending.length === 0 &&
        sink.lastError === null
        ? sink
        : undefined;
    },
  );
}

/** One series' value from a Prometheus text page, matching the metric name and every label given. */
function seriesValue(
  text: string,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const labelText = line.slice(name.length + 1, close);
    if (Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) {
      return Number(line.slice(close + 1).trim());
    }
  }
  return undefined;
}

/** Exit 0 after SIGTERM; otherwise fails showing the end of the controller's log. */
async function expectCleanExit(
  controller: RunningController,
  status: { code: number | null; signal: NodeJS.Signals | null },
): Promise<void> {
  expect(status, `${controller.name} log:\n${controller.logTail(60)}`).toEqual({
    code: 0,
    signal: null,
  });
}

let env: KubeEnvironment;
let core: CoreV1Api;
let kubelet: FakeKubelet;
let fleet: ControllerFleet;
let keyFile: string;

function commonArgs(namespace: string): string[] {
  return [
    ...kubernetesSourceArgs(env, namespace),
    '--drift-interval',
    `${DRIFT_MS / 1000}s`,
    '--sglang-router-api-key-file',
    keyFile,
    // The fake engines and the routers share this host: their cells' addresses are loopback.
    '--sink-allow-loopback',
  ];
}

async function startEngines(count: number): Promise<FakeEngine[]> {
  const engines: FakeEngine[] = [];
  for (let i = 0; i < count; i += 1) engines.push(await startFakeEngine());
  return engines;
}

describe.skipIf(unavailable !== undefined)(
  'the controller keeps SGLang routers equal to the alive cells',
  () => {
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
      if (timings.length > 0) {
        console.log(
          `e2e timings:\n${timings.map(([what, ms]) => `  ${(ms / 1000).toFixed(2)} s  ${what}`).join('\n')}`,
        );
      }
    });

    describe.each<[RouterVersion, boolean]>([
      ['smg-1.13.0', true],
      ['sglang-router-0.3.2', false],
    ])('one replica (--leader-elect=false), %s', (version, full) => {
      let namespace: string;
      let cells: Cells;
      let engines: FakeEngine[];
      /** The router of pool `engine`, called through `proxy`; with `full`, `other` serves pool `other`. */
      let router: RunningRouter;
      let proxy: RecordingProxy;
      let other: RunningRouter | undefined;
      let controller: RunningController;
      /** The engines of the alive cells of pool `engine`, as the scenarios leave them. */
      let current: FakeEngine[] = [];

      beforeAll(async () => {
        namespace = await env.createNamespace('router-ctl');
        // No Lease Role: with --leader-elect=false the shipped pod Role is all it needs.
        await bindShippedRoles(env, namespace, [ROLE]);
        cells = new Cells(core, kubelet, namespace);
        engines = await startEngines(full ? 9 : 2);
        router = await startRouter({ version, apiKey });
        proxy = await startRecordingProxy(router.url);
        if (full) other = await startRouter({ version, apiKey });
        controller = await fleet.start({
          name: `single-${version}`,
          args: [
            ...commonArgs(namespace),
            '--leader-elect=false',
            // The whole list is the controller's here (managed: sink-guard-rails.test.ts).
            '--sglang-router-ownership=all',
            '--sglang-router',
            `engine=${proxy.url}`,
            ...(other ? ['--sglang-router', `other=${other.url}`] : []),
          ],
        });
        await waitFor('the controller to act', async () => {
          const c = await controller.get<CoordinatorBody>('/api/v1/coordinator');
          return c.acting && c.cellsSynced ? true : undefined;
        });
      });

      afterAll(async () => {
        if (controller?.running) await expectCleanExit(controller, await controller.terminate());
        await proxy?.close();
        await Promise.all([router?.dispose(), other?.dispose()]);
        await Promise.all((engines ?? []).map((e) => e.stop()));
      });

      it('lists exactly the alive cells, routes traffic to them, and reports it', async () => {
        const [a, b] = engines as [FakeEngine, FakeEngine];
        expect(await listWorkers(router, apiKey)).toEqual([]);
        await cells.create('engine', 0, a);
        await cells.create('engine', 1, b);
        current = [a, b];
        measured(
          `${version}: two cells alive → router lists both`,
          await untilRouterLists(router, current, controller),
        );
        const before = a.traffic() + b.traffic();
        await generate(router, apiKey);
        expect(a.traffic() + b.traffic()).toBe(before + 1);

        const sink = await untilSinkConverged(controller, proxy.url, current);
        expect(sink).toMatchObject({ kind: 'sglang-router', pool: 'engine' });
        expect(sink.lastAppliedAt).not.toBeNull();

        const metrics = await (await fetch(`${controller.url}/metrics`)).text();
        const target = { sink: 'sglang-router', target: proxy.url };
        const operations = (operation: string) =>
          seriesValue(metrics, 'pool_controller_sink_operations_total', {
            ...target,
            operation,
            result: 'success',
          });
        expect(operations('add')).toBe(2);
        expect(operations('list')).toBeGreaterThanOrEqual(2);
        const workers = (state: string) =>
          seriesValue(metrics, 'pool_controller_sink_workers', { ...target, state });
        expect([workers('desired'), workers('actual'), workers('pending')]).toEqual([2, 2, 0]);
      });

      it('removes a cell that goes not alive and re-adds it only once it has left the list', async () => {
        const [a, b] = engines as [FakeEngine, FakeEngine];
        const idBefore = (await listWorkers(router, apiKey)).find((w) => w.url === b.url)?.id;
        const sampler = new ListSampler(router, 100);
        const sentFrom = proxy.requests.length;
        try {
          const notReadyAt = Date.now();
          await cells.setLeaderReady('engine', 1, false);
          // The DELETE was sent: smg lists b as draining for ~5 s, 0.3.2 drops it at once.
          await waitFor(
            'the router to stop routing to b',
            async () => {
              const listed = await listWorkers(router, apiKey);
              return listed.some((w) => w.url === b.url && isClean(w)) ? undefined : true;
            },
            CONVERGE_MS,
            50,
          );
          measured(`${version}: leader not ready → removal sent`, Date.now() - notReadyAt);
          const draining = (await listWorkers(router, apiKey)).some((w) => w.url === b.url);

          // Alive again while (on smg) still draining: the add must wait until b left the list.
          await cells.setLeaderReady('engine', 1, true);
          measured(
            `${version}: alive again${draining ? ' (while draining)' : ''} → re-listed`,
            await untilRouterLists(router, current, controller),
          );
          // Nothing undoes the re-add later (an old drain finishing would remove b again).
          const holdUntil = Date.now() + 2_000;
          while (Date.now() < holdUntil) {
            const listed = await listWorkers(router, apiKey);
            expect(listed.map((w) => w.url).sort()).toEqual(urlsOf([a, b]));
            expect(listed.every(isClean)).toBe(true);
            await sleep(200);
          }
          if (version === 'smg-1.13.0') expect(draining).toBe(true);
        } finally {
          await sampler.stop();
        }
        expect(sampler.duplicates).toEqual([]);

        // From the controller's own calls: one DELETE, then exactly one POST of b, answered 202,
        // sent after a GET /workers that no longer listed b.
        const sent = proxy.requests.slice(sentFrom);
        expect(sent.filter((r) => r.method === 'DELETE')).toHaveLength(1);
        const posts = sent.filter(
          (r) => r.method === 'POST' && JSON.parse(r.requestBody ?? '{}').url === b.url,
        );
        expect(posts.map((r) => r.status)).toEqual([202]);
        const post = posts[0]!;
        const listBefore = sent
          .slice(0, sent.indexOf(post))
          .filter((r) => r.method === 'GET' && r.path === '/workers')
          .at(-1);
        const listedThen = (
          JSON.parse(listBefore?.responseBody ?? '{"workers":[]}') as {
            workers: ListedWorker[];
          }
        ).workers.map((w) => w.url);
        expect(listBefore).toBeDefined();
        expect(listedThen).not.toContain(b.url);
        // On smg the drained worker is gone and b is listed again as a new worker.
        const idAfter = (await listWorkers(router, apiKey)).find((w) => w.url === b.url)?.id;
        if (version === 'smg-1.13.0') expect(idAfter).not.toBe(idBefore);
      });

      if (full) {
        it('follows a pool that scales up and down', async () => {
          const [a, b, c, d] = engines as [FakeEngine, FakeEngine, FakeEngine, FakeEngine];
          await cells.create('engine', 2, c);
          await cells.create('engine', 3, d);
          current = [a, b, c, d];
          measured(
            `${version}: scale up 2 → 4 cells`,
            await untilRouterLists(router, current, controller),
          );
          await cells.delete('engine', 3);
          await cells.delete('engine', 0);
          current = [b, c];
          measured(
            `${version}: scale down 4 → 2 cells (incl. drain)`,
            await untilRouterLists(router, current, controller),
          );
          const before = b.traffic() + c.traffic();
          await generate(router, apiKey);
          expect(b.traffic() + c.traffic()).toBe(before + 1);
        });
      }

      it('repopulates a restarted router within one drift interval', async () => {
        await untilRouterLists(router, current, controller);
        const idsBefore = new Set((await listWorkers(router, apiKey)).map((w) => w.id));
        await router.restart(); // SIGKILL, then started again on the same port: it forgets all
        const restartedAt = Date.now();
        // It forgot: empty, or — when the controller's drift check has already run — listed again
        // under ids the router gave anew (a worker registered before would keep its old id).
        const afterRestart = await listWorkers(router, apiKey);
        if (afterRestart.length > 0 && afterRestart.every((w) => w.id !== undefined)) {
          expect(afterRestart.filter((w) => idsBefore.has(w.id))).toEqual([]);
        } else {
          expect(afterRestart).toEqual([]);
        }
        const ms = measured(
          `${version}: router restarted → repopulated (drift ${DRIFT_MS} ms)`,
          await untilRouterLists(router, current, controller),
        );
        expect(ms).toBeLessThan(DRIFT_MS + DRIFT_SLACK_MS);
        expect(Date.now() - restartedAt).toBeLessThan(DRIFT_MS + DRIFT_SLACK_MS);
        await generate(router, apiKey);
      });

      if (full) {
        it('with --sglang-router-ownership=all, removes a worker added by hand on the next run', async () => {
          const spare = engines[6]!;
          const response = await fetch(`${router.url}/workers`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
            body: JSON.stringify({ url: spare.url }),
          });
          expect(response.status).toBe(202);
          await waitFor('the hand-added worker to be listed', async () =>
            (await listWorkers(router, apiKey)).some((w) => w.url === spare.url && isClean(w))
              ? true
              : undefined,
          );
          const listedAt = Date.now();
          await waitFor('the controller to remove the hand-added worker', async () =>
            (await listWorkers(router, apiKey)).some((w) => w.url === spare.url && isClean(w))
              ? undefined
              : true,
          );
          const ms = measured(
            `${version}: hand-added worker → removal sent`,
            Date.now() - listedAt,
          );
          expect(ms).toBeLessThan(DRIFT_MS + DRIFT_SLACK_MS);
          measured(
            `${version}: hand-added worker → gone (incl. drain)`,
            (await untilRouterLists(router, current, controller)) + ms,
          );
        });

        it('retries while a router is down, keeps the other converged (even restarted), converges it when back', async () => {
          const otherRouter = other!;
          const e = engines[4]!;
          const f = engines[5]!;
          expect(await listWorkers(otherRouter, apiKey)).toEqual([]);
          const listErrors = async (): Promise<number> =>
            seriesValue(
              await (await fetch(`${controller.url}/metrics`)).text(),
              'pool_controller_sink_operations_total',
              { target: otherRouter.url, operation: 'list', result: 'error' },
            ) ?? 0;
          const errorsBefore = await listErrors();
          const stoppedAt = Date.now();
          await otherRouter.stop();
          await cells.create('other', 0, f);
          await cells.create('engine', 4, e);
          current = [...current, e];

          const down = await waitFor('the sink to name the unreachable router', async () => {
            const sink = await sinkOf(controller, otherRouter.url);
            return sink.lastError ? sink : undefined;
          });
          expect(down.lastError).toMatch(/GET \/workers/);
          expect(down.lastError).not.toContain(apiKey);
          // A target's failure is the sink's to report and back off: the runs succeed, so drift
          // goes on, and the deploy asks for a run when the router's backoff ends.
          const coordinator = await controller.get<CoordinatorBody>('/api/v1/coordinator');
          expect(coordinator.state.consecutiveFailures).toBe(0);
          expect(coordinator.state.lastError).toBeNull();

          // The reachable router converges meanwhile; its own status stays clean.
          measured(
            `${version}: other router down → reachable router converged`,
            await untilRouterLists(router, current, controller),
          );
          await untilSinkConverged(controller, proxy.url, current);
          // And it is still repaired within one drift interval while the other router is down.
          await router.restart();
          const ms = measured(
            `${version}: other router down, this one restarted → repopulated`,
            await untilRouterLists(router, current, controller),
          );
          expect(ms).toBeLessThan(DRIFT_MS + DRIFT_SLACK_MS);
          // Its own backoff (at least 1 s between calls) held it, however many runs began.
          // /metrics is rendered at most every METRICS_CACHE_MS: wait for a render that shows them.
          const calls = await waitFor(
            'the failed lists of the unreachable router in /metrics',
            async () => {
              const counted = (await listErrors()) - errorsBefore;
              return counted > 0 ? counted : undefined;
            },
            METRICS_CACHE_MS * 3,
          );
          expect(calls).toBeLessThanOrEqual(1 + Math.floor((Date.now() - stoppedAt) / 1_000));
          expect(otherRouter.running).toBe(false);

          await otherRouter.start();
          measured(
            `${version}: router back → converged`,
            await untilRouterLists(otherRouter, [f], controller),
          );
          await untilSinkConverged(controller, otherRouter.url, [f]);
          await untilSinkConverged(controller, proxy.url, current);
        });

        it('leaves out two cells that claim one address, says why, and keeps deploying the other pool', async () => {
          const otherRouter = other!;
          const f = engines[5]!;
          const shared = engines[6]!;
          const g = engines[7]!;
          // Two cells of pool engine, one engine port: both claim 127.0.0.1:<port>.
          await cells.create('engine', 5, shared);
          await cells.create('engine', 6, shared);
          type CellBody = {
            id: string;
            alive: boolean;
            routable: boolean;
            whyNotRoutable: Array<{ reason: string; message: string }>;
          };
          const clash = await waitFor('both claimants to say AddressConflict', async () => {
            const body = await controller.get<{ cells: CellBody[] }>('/api/v1/cells?pool=engine');
            const both = body.cells.filter(
              (c) => c.id === 'engine-00005' || c.id === 'engine-00006',
            );
            return both.length === 2 &&
              both.every(
                (c) => c.alive && !c.routable && c.whyNotRoutable[0]?.reason === 'AddressConflict',
              )
              ? both
              : undefined;
          });
          expect(clash[0]?.whyNotRoutable[0]?.message).toContain('engine-00006');

          // The other pool still deploys while the clash lasts; the clash reaches no router.
          await cells.create('other', 1, g);
          measured(
            `${version}: clash in pool engine → pool other still deployed`,
            await untilRouterLists(otherRouter, [f, g], controller),
          );
          await untilSinkConverged(controller, otherRouter.url, [f, g]);
          expect(urlsOf(current)).not.toContain(shared.url);
          await untilSinkConverged(controller, proxy.url, current);
          const coordinator = await controller.get<CoordinatorBody>('/api/v1/coordinator');
          expect(coordinator.state.lastError).toBeNull();
          const metrics = await (await fetch(`${controller.url}/metrics`)).text();
          expect(seriesValue(metrics, 'pool_controller_cells_unroutable', { pool: 'engine' })).toBe(
            2,
          );
          expect(seriesValue(metrics, 'pool_controller_cells_unroutable', { pool: 'other' })).toBe(
            0,
          );

          // One claimant goes: the other is routed.
          await cells.delete('engine', 6);
          current = [...current, shared];
          measured(
            `${version}: one claimant gone → the other routed`,
            await untilRouterLists(router, current, controller),
          );
          await untilSinkConverged(controller, proxy.url, current);
        });
      }
    });

    describe('two replicas with leader election, smg-1.13.0', () => {
      const version: RouterVersion = 'smg-1.13.0';
      let namespace: string;
      let cells: Cells;
      let engines: FakeEngine[];
      let router: RunningRouter;
      let sampler: ListSampler | undefined;
      const replicas: Array<{
        controller: RunningController;
        proxy: RecordingProxy;
        events: EventRecorder;
      }> = [];

      /** A replica whose router calls go through its own recording proxy. */
      async function startReplica(name: string): Promise<(typeof replicas)[number]> {
        const proxy = await startRecordingProxy(router.url);
        const controller = await fleet.start({
          name,
          args: [
            ...commonArgs(namespace),
            '--leader-elect-resource-namespace',
            namespace,
            '--leader-elect-lease-duration',
            '4s',
            '--leader-elect-renew-deadline',
            '3s',
            '--leader-elect-retry-period',
            '1s',
            '--sglang-router',
            `engine=${proxy.url}`,
          ],
        });
        const events = new EventRecorder(controller.url, [
          'leadership.acquired',
          'leadership.lost',
          'sink.applied',
        ]);
        await events.opened;
        const replica = { controller, proxy, events };
        replicas.push(replica);
        return replica;
      }

      async function untilActing(replica: (typeof replicas)[number]): Promise<void> {
        await waitFor(`${replica.controller.name} to lead and act`, async () => {
          const c = await replica.controller.get<CoordinatorBody>('/api/v1/coordinator');
          return c.leading && c.acting ? true : undefined;
        });
      }

      async function leaderOf(
        candidates: ReadonlyArray<(typeof replicas)[number]>,
      ): Promise<(typeof replicas)[number]> {
        return waitFor(
          'a replica to lead and act',
          async () => {
            for (const replica of candidates) {
              if (!replica.controller.running) continue;
              const c = await replica.controller
                .get<CoordinatorBody>('/api/v1/coordinator')
                .catch(() => undefined);
              if (c?.leading && c.acting) return replica;
            }
            return undefined;
          },
          CONVERGE_MS,
          50,
        );
      }

      /** Statuses of the `POST /workers` of `engine` that reached `replica`'s proxy. */
      const postsOf = (replica: (typeof replicas)[number], engine: FakeEngine) =>
        replica.proxy.requests
          .filter(
            (r) => r.method === 'POST' && JSON.parse(r.requestBody ?? '{}').url === engine.url,
          )
          .map((r) => r.status);

      /** Requests that reached `replica`'s proxy in [fromMs, toMs). */
      const sentBetween = (replica: (typeof replicas)[number], fromMs: number, toMs = Infinity) =>
        replica.proxy.requests.filter((r) => r.atMs >= fromMs && r.atMs < toMs);

      beforeAll(async () => {
        namespace = await env.createNamespace('router-ha');
        await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE]);
        cells = new Cells(core, kubelet, namespace);
        engines = await startEngines(4);
        router = await startRouter({ version, apiKey });
      });

      afterAll(async () => {
        await sampler?.stop();
        for (const replica of replicas) {
          await replica.events.close();
          if (replica.controller.running) await replica.controller.kill();
          await replica.proxy.close();
        }
        await router?.dispose();
        await Promise.all((engines ?? []).map((e) => e.stop()));
      });

      it('the new leader converges the router after SIGKILL, SIGTERM and a stolen Lease; a stepped-down leader sends nothing; no URL is listed twice', async () => {
        const [e0, e1, e2, e3] = engines as [FakeEngine, FakeEngine, FakeEngine, FakeEngine];
        const first = await startReplica('ha-1');
        await untilActing(first);
        const second = await startReplica('ha-2');
        await waitFor('ha-2 to see ha-1 lead', async () => {
          const l = await second.controller.get<LeaderBody>('/api/v1/leader');
          return l.leader?.startsWith('ha-1_') && !l.leading ? true : undefined;
        });
        await cells.create('engine', 0, e0);
        await cells.create('engine', 1, e1);
        await untilRouterLists(router, [e0, e1], first.controller);
        // The follower never called the router.
        expect(second.proxy.requests).toEqual([]);
        sampler = new ListSampler(router, 200);

        // --- SIGKILL the leader in the middle of changes (one before, one right after): no
        // release, so the follower waits for the Lease to expire (4 s) and then does the rest.
        await cells.setLeaderReady('engine', 1, false);
        const killedAt = Date.now();
        expect(await first.controller.kill()).toMatchObject({ signal: 'SIGKILL' });
        const goneAt = Date.now();
        await cells.create('engine', 2, e2);
        let leader = await leaderOf([second]);
        measured('failover: SIGKILL → follower acts', Date.now() - killedAt);
        await untilRouterLists(router, [e0, e2], leader.controller);
        measured(
          'failover: SIGKILL → router converged (lease expiry + drain)',
          Date.now() - killedAt,
        );
        expect(sentBetween(first, goneAt)).toEqual([]);
        expect(postsOf(second, e2)).toEqual([202]);

        // --- SIGTERM the leader in the middle of changes (one before, one during its shutdown):
        // it releases the Lease on the way out, so the follower takes over within ~1 retry period.
        const third = await startReplica('ha-3');
        await cells.setLeaderReady('engine', 1, true);
        const termAt = Date.now();
        const terminated = second.controller.terminate();
        await cells.delete('engine', 0);
        await expectCleanExit(second.controller, await terminated);
        const exitedAt = Date.now();
        measured('failover: SIGTERM → old leader exited', exitedAt - termAt);
        leader = await leaderOf([third]);
        measured('failover: SIGTERM → follower acts (Lease released)', Date.now() - termAt);
        await untilRouterLists(router, [e1, e2], leader.controller);
        measured('failover: SIGTERM → router converged (incl. drain)', Date.now() - termAt);
        expect(sentBetween(second, exitedAt)).toEqual([]);
        expect(sentBetween(third, termAt).some((r) => r.method === 'DELETE')).toBe(true);

        // --- The Lease stolen (holderIdentity overwritten): the leader steps down at its renew
        // deadline; from then on it sends nothing, even while the cells change.
        const fourth = await startReplica('ha-4');
        await waitFor('ha-4 to see ha-3 lead', async () => {
          const l = await fourth.controller.get<LeaderBody>('/api/v1/leader');
          return l.leader?.startsWith('ha-3_') ? true : undefined;
        });
        const leases = env.kubeConfig.makeApiClient(CoordinationV1Api);
        const lease = await leases.readNamespacedLease({ namespace, name: 'pool-controller' });
        expect(lease.spec?.holderIdentity).toMatch(/^ha-3_/);
        const stolenAt = Date.now();
        // A merge patch (no resourceVersion: last writer wins), as another process taking it would.
        const micro = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
        await leases.patchNamespacedLease(
          {
            namespace,
            name: 'pool-controller',
            body: {
              spec: {
                holderIdentity: 'thief',
                acquireTime: micro,
                renewTime: micro,
                leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
              },
            },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        const lost = await waitFor(
          'ha-3 to step down',
          async () => third.events.of('leadership.lost')[0],
          CONVERGE_MS,
          20,
        );
        measured(
          'stolen Lease → old leader stepped down (renew deadline 3 s)',
          lost.atMs - stolenAt,
        );
        expect((await third.controller.get<CoordinatorBody>('/api/v1/coordinator')).acting).toBe(
          false,
        );
        // Changes while nobody leads (the thief holds the Lease until it expires, 4 s).
        await cells.setLeaderReady('engine', 2, false);
        await cells.create('engine', 3, e3);
        leader = await leaderOf([third, fourth]);
        measured(`stolen Lease → ${leader.controller.name} acts`, Date.now() - stolenAt);
        await untilRouterLists(router, [e1, e3], leader.controller);
        measured('stolen Lease → router converged (incl. drain)', Date.now() - stolenAt);
        expect(postsOf(leader, e3)).toEqual([202]);

        // ha-3 sent nothing from its step-down until it (maybe) led again. The bounds come from
        // its own log (same machine clock as the proxy's): the elector logs 'stopped leading'
        // just before the hook that aborts the routing, and 'acquired leader lease' before the
        // next term begins; the SSE events can arrive later than requests sent after them.
        // `time` is ISO 8601 in the JSON log lines.
        const logTime = (msg: string, after: number): number | undefined =>
          third.controller
            .logLines()
            .filter((l) => l.msg === msg && typeof l.time === 'string')
            .map((l) => Date.parse(l.time as string))
            .find((t) => t >= after);
        const steppedDownAt = logTime('stopped leading', stolenAt);
        expect(steppedDownAt).toBeDefined();
        const reacquiredAt = logTime('acquired leader lease', steppedDownAt!) ?? Infinity;
        const quiet = sentBetween(third, steppedDownAt! + STEP_DOWN_GRACE_MS, reacquiredAt);
        expect(
          quiet,
          `stepped down at ${steppedDownAt}, led again at ${reacquiredAt}; requests ${JSON.stringify(
            third.proxy.requests
              .filter((r) => r.atMs >= stolenAt)
              .map((r) => [r.method, r.path, r.atMs]),
          )}`,
        ).toEqual([]);
        expect(
          third.events
            .of('sink.applied')
            .filter((e) => e.atMs > steppedDownAt! + STEP_DOWN_GRACE_MS && e.atMs < reacquiredAt),
        ).toEqual([]);
        if (leader === fourth) expect(reacquiredAt).toBe(Infinity);
        measured(
          `stolen Lease: ${third.controller.name} silent while not leading (${
            reacquiredAt === Infinity ? 'did not lead again' : 'then led again'
          })`,
          (reacquiredAt === Infinity ? Date.now() : reacquiredAt) - steppedDownAt!,
        );

        await sampler.stop();
        expect(sampler.errors).toEqual([]);
        expect(sampler.duplicates).toEqual([]);
        expect(sampler.samples.length).toBeGreaterThan(20);

        // The leader's view says converged; the follower deploys nothing.
        await untilSinkConverged(leader.controller, leader.proxy.url, [e1, e3]);
        const follower = leader === third ? fourth : third;
        const view = await follower.controller.get<CoordinatorBody>('/api/v1/coordinator');
        expect(view).toMatchObject({ leading: false, acting: false });
        const followerSince = Date.now();
        await new Promise((resolve) => setTimeout(resolve, DRIFT_MS + 500));
        expect(sentBetween(follower, followerSince)).toEqual([]);
        // The leader keeps running drift passes (a list every ~2 s).
        expect(sentBetween(leader, followerSince).some((r) => r.path === '/workers')).toBe(true);
      });
    });
  },
);
