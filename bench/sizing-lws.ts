/**
 * `npm run bench:sizing-lws -- --groups 1000`: the built service beside a LeaderWorkerSet of
 * 1,000 groups × 2 that the real controllers make (the e2e real-cluster lane: kube-controller-
 * manager, kube-scheduler, kwok nodes, the LWS controller and webhook; issue 35), through the
 * LWS's creation and a rolling update across every group. bench:sizing measures the service on
 * pods a test server makes up; this is the same service on pods shaped, and paced, by the real
 * controllers: 1,001 StatefulSets, every pod written several times on its way to Ready.
 *
 * For each phase (create, rolling update) it reports:
 * - the API's side: from the change to the last pod event (a watch of the namespace), and pods;
 * - **converge**: from that last pod event until `/api/v1/cells` equals the cells the API's pods
 *   imply (the lane's rule, test/e2e/real-cluster/support.ts), polled every `CELLS_POLL_MS`;
 * - the longest main-thread stall: the largest `nodejs_eventloop_lag_max_seconds` scraped every
 *   `SCRAPE_MS` (prom-client resets it at each scrape, so each is the worst stall since the last);
 * - RSS: the service's `VmRSS`, read from /proc every `SCRAPE_MS`, the largest.
 *
 * A benchmark always exits 0 unless the cluster or the service fails to come up or converge.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type V1Pod, Watch } from '@kubernetes/client-node';
import { startKubeEnvironment } from '../test/e2e/environment/index.js';
import { startRealCluster } from '../test/e2e/environment/real-cluster.js';
import {
  expectedCells,
  LwsClient,
  leaderWorkerSet,
  servedCells,
} from '../test/e2e/real-cluster/support.js';
import {
  bindShippedRoles,
  kubernetesSourceArgs,
  ROLE,
  type ServiceProcess,
  spawnService,
} from '../test/e2e/support-service.js';
import { parseBenchArgs } from './bench-args.js';

/** How often the service's cells are compared with the API's pods. */
const CELLS_POLL_MS = 500;
/** How often /metrics and /proc are read. */
const SCRAPE_MS = 1_000;
/** How long a phase may take before the bench gives up: thousands of pods on 2 loaded cores. */
const PHASE_TIMEOUT_MS = 30 * 60_000;
const MIB = 1024 * 1024;
const POOL = 'engine';

const USAGE =
  'usage: npm run bench:sizing-lws -- [--groups N (1000)] [--size N (2)] [--nodes N (4)] [--max-unavailable N (100)]';
const values = parseBenchArgs(
  {
    groups: { type: 'string', default: '1000' },
    size: { type: 'string', default: '2' },
    nodes: { type: 'string', default: '4' },
    'max-unavailable': { type: 'string', default: '100' },
  },
  USAGE,
);
const groups = Number(values.groups);
const size = Number(values.size);
const nodes = Number(values.nodes);
const maxUnavailable = Number(values['max-unavailable']);

/** The largest value of one sampled quantity over a phase. */
class Peak {
  value = 0;
  see(value: number | undefined): void {
    if (value !== undefined && Number.isFinite(value)) this.value = Math.max(this.value, value);
  }
}

function rssBytes(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

async function lagMaxSeconds(base: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(`${base}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('nodejs_eventloop_lag_max_seconds '));
    return line ? Number(line.split(' ')[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const env = await startKubeEnvironment({ watchCache: true });
  const cluster = await startRealCluster(env, { nodes });
  let service: ServiceProcess | undefined;
  try {
    const namespace = await env.createNamespace('bench-lws');
    await bindShippedRoles(env, namespace, [ROLE]);
    const core = env.kubeConfig.makeApiClient(CoreV1Api);
    const lws = new LwsClient(env.kubeConfig, namespace);
    service = spawnService([...kubernetesSourceArgs(env, namespace), '--leader-elect=false']);
    const base = await service.listening();
    const pid = service.child.pid!;
    console.log(
      `bench:sizing-lws: cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s ` +
        `(${nodes} kwok nodes); ${groups} groups × ${size}, rolling maxUnavailable ${maxUnavailable}`,
    );

    // The time of the last pod event, from a watch that is reopened (from the last version seen)
    // whenever the server ends it: with thousands of pods a single watch does not last a phase.
    let lastPodEvent = Date.now();
    let podEvents = 0;
    let watchOpens = 0;
    let resourceVersion: string | undefined;
    let watching = true;
    let abort: AbortController | undefined;
    const openWatch = async (): Promise<void> => {
      watchOpens += 1;
      abort = await new Watch(env.kubeConfig).watch(
        `/api/v1/namespaces/${namespace}/pods`,
        resourceVersion ? { resourceVersion, allowWatchBookmarks: true } : {},
        (type: string, pod: V1Pod) => {
          resourceVersion = pod.metadata?.resourceVersion ?? resourceVersion;
          if (type === 'BOOKMARK') return;
          lastPodEvent = Date.now();
          podEvents += 1;
        },
        (error: unknown) => {
          if (!watching) return;
          // A 410 (or any error): start over from now; a reopened list's ADDED events count.
          if (error) resourceVersion = undefined;
          void openWatch();
        },
      );
    };
    await openWatch();

    const phase = async (
      name: string,
      change: () => Promise<void>,
      settled: (pods: V1Pod[]) => boolean,
    ) => {
      const rss = new Peak();
      const stall = new Peak();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          rss.see(rssBytes(pid));
          stall.see(await lagMaxSeconds(base));
          await sleep(SCRAPE_MS);
        }
      })();
      const eventsBefore = podEvents;
      const t0 = Date.now();
      await change();
      const deadline = t0 + PHASE_TIMEOUT_MS;
      // The first poll that found the service matching the API, with no pod event since.
      let matchedSince: number | undefined;
      let pods: V1Pod[] = [];
      while (Date.now() < deadline) {
        const polled = Date.now();
        pods = (await core.listNamespacedPod({ namespace })).items;
        const matches =
          settled(pods) &&
          JSON.stringify(await servedCells(base)) === JSON.stringify(expectedCells(pods));
        if (!matches || lastPodEvent >= (matchedSince ?? polled)) matchedSince = undefined;
        if (matches && matchedSince === undefined && lastPodEvent < polled) matchedSince = polled;
        // Held for a whole poll with no pod event: the API and the service are both at rest.
        if (matchedSince !== undefined && polled - matchedSince >= CELLS_POLL_MS) break;
        await sleep(CELLS_POLL_MS);
      }
      const convergedAt = matchedSince;
      sampling = false;
      await sampler;
      if (convergedAt === undefined)
        throw new Error(`${name}: did not converge within ${PHASE_TIMEOUT_MS} ms`);
      // From the last pod event to the first poll that found the service matching: the service's
      // lag, bounded from above by one poll (CELLS_POLL_MS plus a LIST of every pod).
      const line =
        `${name}: ${pods.length} pods; API ${((lastPodEvent - t0) / 1000).toFixed(1)} s to the last ` +
        `pod event (${podEvents - eventsBefore} events, ${watchOpens} watch opens so far); service converged ` +
        `~${Math.max(0, convergedAt - lastPodEvent)} ms after it; longest main-thread stall ` +
        `${(stall.value * 1000).toFixed(0)} ms; peak RSS ${(rss.value / MIB).toFixed(0)} MiB`;
      console.log(line);
      return line;
    };

    const isReady = (p: V1Pod) =>
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    const allReady = (revision: string) => (pods: V1Pod[]) =>
      pods.length === groups * size &&
      pods.every(
        (p) =>
          isReady(p) &&
          !p.metadata?.deletionTimestamp &&
          p.metadata?.annotations?.['e2e/revision'] === revision,
      );
    const body = (revision: string) => {
      const lwsBody = leaderWorkerSet(POOL, groups, size, revision) as {
        spec: {
          rolloutStrategy: { rollingUpdateConfiguration: { maxUnavailable: number } };
          leaderWorkerTemplate: { workerTemplate: unknown };
        };
      };
      lwsBody.spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable = maxUnavailable;
      return lwsBody;
    };
    const lines = [
      await phase('create', () => lws.create(body('a')), allReady('a')),
      await phase(
        'rolling update',
        () =>
          lws.patch(POOL, {
            spec: {
              leaderWorkerTemplate: {
                workerTemplate: body('b').spec.leaderWorkerTemplate.workerTemplate,
              },
            },
          }),
        allReady('b'),
      ),
    ];
    watching = false;
    abort?.abort();
    service.child.kill('SIGTERM');
    console.log(
      `bench:sizing-lws: load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; total ${((Date.now() - started) / 1000).toFixed(0)} s\n${lines.join('\n')}`,
    );
  } finally {
    // Also when a phase failed: the service is a child of this process, not of the environment.
    if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
    await cluster.stop();
    await env.stop();
  }
}

await main();
