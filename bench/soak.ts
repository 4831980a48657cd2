/**
 * `npm run soak -- --minutes N`: the built service against a real kube-apiserver + etcd (started
 * here, test/e2e/environment), through the fault proxy, for N minutes of pod churn (creates,
 * label moves, readiness flips, container restarts, deletes) with a fault injected periodically.
 *
 * Every `--check-every` seconds the churn pauses and the service's store
 * (`GET /api/v1/store?objects=true`: name, uid, resourceVersion of every pod) must equal a direct
 * LIST within `--converge-timeout`; one that does not is a divergence (printed, then the soak goes
 * on). Each check also samples `process_resident_memory_bytes` and `nodejs_heap_size_used_bytes`
 * from /metrics. The last line is the summary; the exit status is 1 if any check diverged.
 *
 * Flags: --minutes N (default 5), --check-every S (10), --fault-every S (60), --fault-seconds S (4),
 * --converge-timeout S (90), --seed N (1).
 */
import { join } from 'node:path';
import {
  FakeKubelet,
  type KubeEnvironment,
  startKubeEnvironment,
} from '../test/e2e/environment/index.js';
import { FaultProxy, type ProxyFault } from '../test/e2e/fault-proxy.js';
import {
  adminCore,
  Churn,
  namespaceWithRole,
  ServiceProcess,
  waitForConvergence,
} from '../test/e2e/fault-support.js';

interface SoakOptions {
  minutes: number;
  checkEvery: number;
  faultEvery: number;
  faultSeconds: number;
  convergeTimeout: number;
  seed: number;
}

function parseArgs(argv: readonly string[]): SoakOptions {
  const options: SoakOptions = {
    minutes: 5,
    checkEvery: 10,
    faultEvery: 60,
    faultSeconds: 4,
    convergeTimeout: 90,
    seed: 1,
  };
  const names: Record<string, keyof SoakOptions> = {
    '--minutes': 'minutes',
    '--check-every': 'checkEvery',
    '--fault-every': 'faultEvery',
    '--fault-seconds': 'faultSeconds',
    '--converge-timeout': 'convergeTimeout',
    '--seed': 'seed',
  };
  for (let i = 0; i < argv.length; i += 1) {
    const [flag, inline] = (argv[i] ?? '').split('=', 2);
    const key = names[flag ?? ''];
    if (!key)
      throw new Error(`soak: unknown flag ${argv[i]} (known: ${Object.keys(names).join(' ')})`);
    const value = Number(inline ?? argv[++i]);
    if (!Number.isFinite(value) || value <= 0)
      throw new Error(`soak: ${flag} needs a positive number`);
    options[key] = value;
  }
  return options;
}

type SoakFault =
  | { kind: 'proxy'; name: string; fault: ProxyFault; resetFirst?: boolean }
  | { kind: 'apiserver-restart'; name: string }
  | { kind: 'etcd-restart'; name: string };

/** The rotation: each proxy fault, then an apiserver and an etcd restart. */
const FAULTS: readonly SoakFault[] = [
  { kind: 'proxy', name: 'reset', fault: { kind: 'reset' } },
  { kind: 'proxy', name: 'cut-mid-frame', fault: { kind: 'cut-mid-frame' } },
  {
    kind: 'proxy',
    name: '429',
    fault: { kind: 'status', status: 429, retryAfterSeconds: 1 },
    resetFirst: true,
  },
  { kind: 'proxy', name: 'drop-watch', fault: { kind: 'drop-watch' } },
  { kind: 'apiserver-restart', name: 'apiserver-restart' },
  { kind: 'proxy', name: '503', fault: { kind: 'status', status: 503 }, resetFirst: true },
  { kind: 'proxy', name: 'delay', fault: { kind: 'delay', ms: 200 } },
  { kind: 'etcd-restart', name: 'etcd-restart' },
];

const MB = 1024 * 1024;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function mb(bytes: number | undefined): string {
  return bytes === undefined || Number.isNaN(bytes) ? 'n/a' : `${(bytes / MB).toFixed(1)} MB`;
}

function log(message: string): void {
  console.log(`${new Date().toISOString()} soak: ${message}`);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const endAt = Date.now() + options.minutes * 60_000;
  log(`starting: ${JSON.stringify(options)}`);
  let env: KubeEnvironment | undefined;
  let proxy: FaultProxy | undefined;
  let service: ServiceProcess | undefined;
  const stopAll = async (): Promise<void> => {
    service?.kill();
    await proxy?.close();
    await env?.stop();
  };
  process.once('SIGINT', () => {
    void stopAll().then(() => process.exit(130));
  });

  try {
    env = await startKubeEnvironment({ watchCache: true });
    await new FakeKubelet(env.kubeConfig).registerNode();
    const core = adminCore(env);
    const namespace = await namespaceWithRole(env, 'soak');
    const churn = new Churn(env.kubeConfig, namespace, {
      pools: ['engine', 'draft', 'embed'],
      groups: 5,
      workers: 2,
      intervalMs: 100,
      maxOps: Number.POSITIVE_INFINITY,
      seed: options.seed,
    });
    await churn.seed();
    proxy = await FaultProxy.start({ upstream: env.server, upstreamCaPath: env.caPath });
    const kubeconfigPath = proxy.writeKubeconfig(
      join(env.stateDir, 'soak.kubeconfig.json'),
      env.unprivileged.token,
    );
    service = await ServiceProcess.start({ kubeconfigPath, namespace });
    const svc = service;
    const px = proxy;
    const live = env;
    await waitForConvergence(() => svc.store(namespace), core, namespace, 60_000, 'first sync');
    log(`service pid ${svc.pid} at ${svc.base}, synced; churning in ${namespace}`);

    let checks = 0;
    let divergences = 0;
    let faults = 0;
    const faultCounts: Record<string, number> = {};
    const heap: number[] = [];
    const rss: number[] = [];
    const convergeMs: number[] = [];
    let nextFaultAt = Date.now() + options.faultEvery * 1000;
    let faultIndex = 0;

    while (Date.now() < endAt) {
      churn.start();
      const checkAt = Date.now() + options.checkEvery * 1000;
      if (Date.now() >= nextFaultAt) {
        const fault = FAULTS[faultIndex % FAULTS.length]!;
        faultIndex += 1;
        faults += 1;
        faultCounts[fault.name] = (faultCounts[fault.name] ?? 0) + 1;
        log(`fault ${faults}: ${fault.name}`);
        try {
          if (fault.kind === 'proxy') {
            px.setFault(fault.fault);
            if (fault.resetFirst) px.resetConnections();
            await sleep(options.faultSeconds * 1000);
            px.clear();
          } else if (fault.kind === 'apiserver-restart') {
            await live.restartApiserver();
          } else {
            await live.restartEtcd();
          }
        } catch (error) {
          log(`fault ${fault.name} could not be applied fully: ${error}`);
          px.clear();
        }
        nextFaultAt = Date.now() + options.faultEvery * 1000;
      }
      await sleep(Math.max(0, checkAt - Date.now()));
      await churn.stop();

      checks += 1;
      try {
        const took = await waitForConvergence(
          () => svc.store(namespace),
          core,
          namespace,
          options.convergeTimeout * 1000,
        );
        convergeMs.push(took);
      } catch (error) {
        divergences += 1;
        const [truth, store] = await Promise.all([
          core
            .listNamespacedPod({ namespace })
            .then((l) => l.items.length)
            .catch(() => -1),
          svc.store(namespace).catch(() => [] as string[]),
        ]);
        log(`DIVERGENCE at check ${checks}: ${error} (API ${truth} pods, store ${store.length})`);
      }
      const [rssNow, heapNow] = await Promise.all([
        svc.metric('process_resident_memory_bytes').catch(() => Number.NaN),
        svc.metric('nodejs_heap_size_used_bytes').catch(() => Number.NaN),
      ]);
      rss.push(rssNow);
      heap.push(heapNow);
      if (checks % 6 === 0) {
        log(
          `check ${checks}: divergences ${divergences}, faults ${faults}, churn ops ${churn.total} ` +
            `(${churn.failures} failed calls), rss ${mb(rssNow)}, heap ${mb(heapNow)}`,
        );
      }
      if (svc.child.exitCode !== null) {
        log(`the service exited (${svc.child.exitCode}):\n${svc.tail()}`);
        divergences += 1;
        break;
      }
    }

    const avg = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const firstFive = (xs: number[]): number[] => xs.slice(0, 5);
    const lastFive = (xs: number[]): number[] => xs.slice(-5);
    const sorted = [...convergeMs].sort((a, b) => a - b);
    const p50 = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const max = sorted.at(-1) ?? 0;
    const summary =
      `soak summary: ${options.minutes} min, checks ${checks}, divergences ${divergences}, ` +
      `faults ${faults} ${JSON.stringify(faultCounts)}, churn ops ${churn.total} ` +
      `(${churn.failures} failed calls), converge p50 ${(p50 / 1000).toFixed(1)} s max ${(max / 1000).toFixed(1)} s, ` +
      `heap start ${mb(heap[0])} end ${mb(heap.at(-1))} (first-5 avg ${mb(avg(firstFive(heap)))}, ` +
      `last-5 avg ${mb(avg(lastFive(heap)))}, max ${mb(Math.max(...heap.filter((h) => !Number.isNaN(h))))}), ` +
      `rss start ${mb(rss[0])} end ${mb(rss.at(-1))} (max ${mb(Math.max(...rss.filter((r) => !Number.isNaN(r))))})`;

    process.kill(svc.pid, 'SIGTERM');
    const exit = await Promise.race([svc.exited, sleep(15_000).then(() => undefined)]);
    console.log(summary);
    console.log(`soak: service exit on SIGTERM: ${JSON.stringify(exit ?? 'timed out')}`);
    return divergences === 0 && exit?.code === 0 ? 0 : 1;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(
      `soak: failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`,
    );
    process.exit(1);
  },
);
