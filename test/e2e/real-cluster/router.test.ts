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
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeEnvironmentRequired } from '../environment/binaries.js';
import { ipInRange, LANE_POD_RANGE } from '../environment/real-cluster.js';
import {
  ensureRouters,
  type RunningRouter,
  routersUnavailableReason,
  startRouter,
} from '../environment/routers.js';
import { generate, type ListedWorker, listWorkers } from '../support-routers.js';
import { ROLE, waitFor } from '../support-service.js';
import { PodEngines } from './pod-engines.js';
import { aliveIntervals, auditRouter, type RouterPoll, WorkerPolls } from './router-audit.js';
import {
  allAtRevision,
  allReady,
  ENGINE_PORT,
  httpPort,
  leaderWorkerSet,
  RealClusterLane,
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
    let lane: RealClusterLane;
    let engines: PodEngines;
    let router: RunningRouter;
    let polls: WorkerPolls;
    const measured: string[] = [];

    /** The leaders' URLs as the API holds them now. */
    const leaderUrls = async (): Promise<string[]> =>
      (await lane.leaders(POOL)).map((p) => `http://${p.status?.podIP}:${httpPort(p)}`).sort();
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
            `--- router:\n${router.logTail()}\n--- service:\n${lane.service.output().slice(-3000)}`,
        );
      }
      return Date.now() - started;
    };
    const converged = async (settled: (pods: V1Pod[]) => boolean, what: string): Promise<void> => {
      const lag = await lane.converged(settled);
      measured.push(
        `${what}: cells ${lag} ms, router ${await routerConverged()} ms after the API settled`,
      );
    };

    beforeAll(async () => {
      ensureRouters();
      engines = new PodEngines();
      lane = await RealClusterLane.start({
        namespace: 'rc-router',
        roles: [ROLE],
        onPodVersion: (version) => engines.follow(version),
      });
      router = await startRouter({ version: 'smg-1.13.0', apiKey: API_KEY });
      const keyFile = join(lane.env.stateDir, 'router-api-key');
      writeFileSync(keyFile, `${API_KEY}\n`, { mode: 0o600 });
      await lane.startService([
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
      polls = new WorkerPolls(() => listWorkers(router, API_KEY), POLL_EVERY_MS);
    });

    afterAll(async () => {
      await polls?.stop();
      await lane?.stop();
      await router?.dispose();
      await engines?.stop();
      if (measured.length > 0) console.log(`real-cluster router: ${measured.join('; ')}`);
    });

    it('lists the leaders of a new LWS’s groups and routes traffic to them', async () => {
      await lane.lws.create(leaderWorkerSet(POOL, GROUPS, SIZE));
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
        await lane.waitUntilASecondOld(POOL);
        const before = await leaderUrls();
        await lane.lws.roll(POOL, revision, { port });
        await converged(
          (pods) => allReady(POOL, GROUPS, SIZE)(pods) && allAtRevision(POOL, revision)(pods),
          `rolling update to ${revision}`,
        );
        // Every group was replaced: new leaders at new addresses.
        const after = await leaderUrls();
        expect(after).toHaveLength(GROUPS);
        expect(after.filter((url) => before.includes(url))).toEqual([]);
      }
      expect(lane.history.leaderReplacements()).toBeGreaterThanOrEqual(2 * GROUPS);
    });

    it('every poll of the router held only cells the API held alive', async () => {
      const intervals = aliveIntervals(lane.timeline.versions, lane.history.setOwners, POOL);
      const audit = auditRouter(polls.polls, intervals, REMOVE_WITHIN_MS);
      measured.push(
        `${audit.polls} polls, ${audit.judged} listed workers judged, longest listed after its ` +
          `cell stopped being alive ${audit.longestRemovalMs} ms, ${engines.count} engines`,
      );
      expect(audit.violations).toEqual([]);
      expect(audit.polls).toBeGreaterThan(50);
      expect(audit.judged).toBeGreaterThan(audit.polls);
      // Nothing the router was ever given is off this machine.
      const outside = polls.polls
        .flatMap((p) => p.workers.map((w) => new URL(w.url).hostname))
        .filter((host) => !ipInRange(host, LANE_POD_RANGE));
      expect(outside).toEqual([]);
      expect(engines.errors).toEqual([]);
      expect(polls.errors).toEqual([]);
    });

    it('the audit fails on a group listed before it was alive, or long after', async () => {
      const intervals = aliveIntervals(lane.timeline.versions, lane.history.setOwners, POOL);
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
