/**
 * A real SGLang router (smg 1.13.0) fed by the built service while LeaderWorkerSet groups the
 * real controllers make roll (issue 35). Each pod's IP is a loopback address from its kwok node's
 * podCIDR, and a fake engine listens on it at the port the template declares (pod-engines.ts), so
 * the router really reaches every cell the service gives it.
 *
 * The router's `GET /workers` is polled throughout and every poll is audited against every pod
 * version the API served (router-audit.ts): a worker is listed only while its cell is alive in the
 * API (by the documented rule and LWS's incarnation rule), or for at most REMOVE_WITHIN_MS after;
 * never before it was alive (a half-formed group, or one with a worker of another incarnation).
 * After each rolling update the router lists exactly the new groups' leaders.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeEnvironmentRequired } from '../environment/binaries.js';
import { type KubeEnvironment, startKubeEnvironment } from '../environment/index.js';
import {
  ipInRange,
  LANE_POD_RANGE,
  type RealCluster,
  startRealCluster,
} from '../environment/real-cluster.js';
import {
  ensureRouters,
  type RunningRouter,
  routersUnavailableReason,
  startRouter,
} from '../environment/routers.js';
import { generate, type ListedWorker, listWorkers } from '../support-routers.js';
import {
  bindShippedRoles,
  kubernetesSourceArgs,
  LWS,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from '../support-service.js';
import { PodEngines } from './pod-engines.js';
import { PodTimeline } from './pod-timeline.js';
import { aliveIntervals, auditRouter, type RouterPoll } from './router-audit.js';
import {
  allReady,
  ClusterHistory,
  ENGINE_PORT,
  expectConverged,
  httpPort,
  LwsClient,
  leaderWorkerSet,
  waitUntilASecondOld,
} from './support.js';

const unavailable = routersUnavailableReason();
if (unavailable && kubeEnvironmentRequired()) throw new Error(`e2e: ${unavailable}`);

const API_KEY = 'e2e-real-cluster-router-key';
const POOL = 'engine';
const GROUPS = 3;
const SIZE = 2;
/**
 * The longest a worker may stay listed after its cell stopped being alive in the API: the
 * service's watch, its reconcile and the router's DELETE, on a loaded 2-core machine.
 */
const REMOVE_WITHIN_MS = 3_000;
/** smg 1.13 keeps a removed worker listed as draining ~5–6 s; a loaded machine gets a margin. */
const ROUTER_CONVERGE_MS = 30_000;
/** Between two reads of the router's list. */
const POLL_EVERY_MS = 50;

const isClean = (w: ListedWorker): boolean => w.status === undefined || w.status === 'ready';

describe.skipIf(unavailable !== undefined)(
  'a real router fed by the service while real LeaderWorkerSet groups roll',
  () => {
    let env: KubeEnvironment;
    let cluster: RealCluster;
    let namespace: string;
    let core: CoreV1Api;
    let lws: LwsClient;
    let timeline: PodTimeline;
    let history: ClusterHistory;
    let engines: PodEngines;
    let router: RunningRouter;
    let service: ServiceProcess;
    let base = '';
    const polls: RouterPoll[] = [];
    const pollErrors: string[] = [];
    let polling = true;
    let poller: Promise<void> = Promise.resolve();
    const measured: string[] = [];

    /** The leaders' URLs as the API holds them now. */
    const leaderUrls = async (): Promise<string[]> =>
      (await core.listNamespacedPod({ namespace, labelSelector: `${LWS}/name=${POOL}` })).items
        .filter((p) => p.metadata?.labels?.[`${LWS}/worker-index`] === '0')
        .map((p) => `http://${p.status?.podIP}:${httpPort(p)}`)
        .sort();
    /** Waits until the router lists exactly the API's leaders, none draining; returns the ms. */
    const routerConverged = async (): Promise<number> => {
      const started = Date.now();
      let last: ListedWorker[] = [];
      let want: string[] = [];
      try {
        await waitFor(
          'the router to list exactly the API’s leaders',
          async () => {
            want = await leaderUrls();
            last = await listWorkers(router, API_KEY);
            const urls = last.map((w) => w.url).sort();
            return JSON.stringify(urls) === JSON.stringify(want) && last.every(isClean)
              ? true
              : undefined;
          },
          ROUTER_CONVERGE_MS,
          POLL_EVERY_MS,
        );
      } catch (error) {
        throw new Error(
          `${error}\nwant ${JSON.stringify(want)}\nlisted ${JSON.stringify(last)}\n` +
            `--- router:\n${router.logTail()}\n--- service:\n${service.output().slice(-3000)}`,
        );
      }
      return Date.now() - started;
    };
    const converged = async (settled: (pods: V1Pod[]) => boolean, what: string): Promise<void> => {
      const lag = await expectConverged(env.kubeConfig, namespace, base, settled);
      await cluster.assertPodIpsInRange(namespace);
      measured.push(
        `${what}: cells ${lag} ms, router ${await routerConverged()} ms after the API settled`,
      );
    };

    beforeAll(async () => {
      ensureRouters();
      env = await startKubeEnvironment({ watchCache: true });
      cluster = await startRealCluster(env);
      namespace = await env.createNamespace('rc-router');
      core = env.kubeConfig.makeApiClient(CoreV1Api);
      await bindShippedRoles(env, namespace, [ROLE]);
      lws = new LwsClient(env.kubeConfig, namespace);
      engines = new PodEngines();
      timeline = new PodTimeline(env.kubeConfig, namespace);
      timeline.onVersion((version) => engines.follow(version));
      await timeline.start();
      history = new ClusterHistory(env.kubeConfig, namespace);
      await history.start();
      router = await startRouter({ version: 'smg-1.13.0', apiKey: API_KEY });
      const keyFile = join(env.stateDir, 'router-api-key');
      writeFileSync(keyFile, `${API_KEY}\n`, { mode: 0o600 });
      service = spawnService([
        ...kubernetesSourceArgs(env, namespace),
        '--leader-elect=false',
        // The router is this pool's alone: every worker that is not an alive cell goes.
        '--sglang-router-ownership=all',
        '--sglang-router',
        `${POOL}=${router.url}`,
        '--sglang-router-api-key-file',
        keyFile,
        // Cell addresses are the pods' loopback IPs.
        '--sink-allow-loopback',
      ]);
      base = await service.listening();
      poller = (async () => {
        while (polling) {
          try {
            const workers = await listWorkers(router, API_KEY);
            polls.push({ at: Date.now(), workers });
          } catch (error) {
            pollErrors.push(String(error));
          }
          await new Promise((resolve) => setTimeout(resolve, POLL_EVERY_MS));
        }
      })();
    });

    afterAll(async () => {
      polling = false;
      await poller;
      timeline?.stop();
      history?.stop();
      if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
      await router?.dispose();
      await engines?.stop();
      await cluster?.stop();
      await env?.stop();
      if (measured.length > 0) console.log(`real-cluster router: ${measured.join('; ')}`);
    });

    it('lists the leaders of a new LWS’s groups and routes traffic to them', async () => {
      await lws.create(leaderWorkerSet(POOL, GROUPS, SIZE));
      await converged(allReady(POOL, GROUPS, SIZE), 'create');
      const text = await generate(router, API_KEY);
      expect(text).toContain(`from ${ENGINE_PORT}`);
    });

    it('through rolling updates lists no group the API does not hold alive, and converges to the new groups', async () => {
      // Each revision serves on a port of its own: kwok hands a freed IP to the next pod at once,
      // so only the port tells a new incarnation's address from the old one's.
      for (const [revision, port] of [
        ['b', ENGINE_PORT + 1],
        ['c', ENGINE_PORT + 2],
      ] as const) {
        await waitUntilASecondOld(env.kubeConfig, namespace, POOL);
        const before = await leaderUrls();
        const next = leaderWorkerSet(POOL, GROUPS, SIZE, revision, { port }) as {
          spec: { leaderWorkerTemplate: { workerTemplate: unknown } };
        };
        await lws.patch(POOL, {
          spec: {
            leaderWorkerTemplate: { workerTemplate: next.spec.leaderWorkerTemplate.workerTemplate },
          },
        });
        await converged(
          (pods) =>
            allReady(POOL, GROUPS, SIZE)(pods) &&
            pods
              .filter((p) => p.metadata?.labels?.[`${LWS}/name`] === POOL)
              .every((p) => p.metadata?.annotations?.['e2e/revision'] === revision),
          `rolling update to ${revision}`,
        );
        // Every group was replaced: new leaders at new addresses.
        const after = await leaderUrls();
        expect(after).toHaveLength(GROUPS);
        expect(after.filter((url) => before.includes(url))).toEqual([]);
      }
      expect(history.leaderReplacements()).toBeGreaterThanOrEqual(2 * GROUPS);
    });

    it('every poll of the router held only cells the API held alive', async () => {
      const intervals = aliveIntervals(timeline.versions, history.setOwners, POOL);
      const audit = auditRouter(polls, intervals, REMOVE_WITHIN_MS);
      measured.push(
        `${audit.polls} polls, ${audit.judged} listed workers judged, longest listed after its ` +
          `cell stopped being alive ${audit.longestRemovalMs} ms, ${engines.count} engines`,
      );
      expect(audit.violations).toEqual([]);
      expect(audit.polls).toBeGreaterThan(50);
      expect(audit.judged).toBeGreaterThan(audit.polls);
      // Nothing the router was ever given is off this machine.
      const outside = polls
        .flatMap((p) => p.workers.map((w) => new URL(w.url).hostname))
        .filter((host) => !ipInRange(host, LANE_POD_RANGE));
      expect(outside).toEqual([]);
      expect(engines.errors).toEqual([]);
      expect(pollErrors).toEqual([]);
    });

    it('the audit fails on a group listed before it was alive, or long after', async () => {
      const intervals = aliveIntervals(timeline.versions, history.setOwners, POOL);
      const [address, [[from, to] = [0, 0]] = []] = [...intervals].find(
        ([, spans]) => spans[0]![1] !== Infinity,
      )!;
      const listed = (at: number, url = `http://${address}`): RouterPoll => ({
        at,
        workers: [{ url }],
      });
      expect(
        auditRouter([listed(from), listed(to + REMOVE_WITHIN_MS)], intervals, REMOVE_WITHIN_MS)
          .violations,
      ).toEqual([]);
      expect(
        auditRouter([listed(from - 1_000)], intervals, REMOVE_WITHIN_MS).violations,
      ).toHaveLength(1);
      expect(
        auditRouter([listed(to + REMOVE_WITHIN_MS + 1)], intervals, REMOVE_WITHIN_MS).violations,
      ).toHaveLength(1);
      // A group never alive (a half-formed one): any listing fails.
      expect(
        auditRouter([listed(to, 'http://127.16.250.250:30000')], intervals, REMOVE_WITHIN_MS)
          .violations,
      ).toHaveLength(1);
    });
  },
);
