/**
 * `npm run bench:api -- --hostile`, second case: clients looping on the two read endpoints whose
 * answer grows with the fleet (`GET /` and `GET /metrics`) at 5,000 pools, as issue 36 found them
 * (3.7 MB and 0.16–0.32 s per request, probes timing out, RSS near the chart's limit): 16 on `/`
 * and 8 on `/metrics`, the issue's two cases at once.
 *
 * The built service (its own process, heap-after-GC samples, the heap cap it has in the chart's
 * default limit: bench/hostile-service.ts) watches a fake API server of 20,000 engine pods, with
 * `--pool-label` set to the LWS group key so that every group is a pool of its own: 5,000 pools
 * of one cell each. One cell is touched every `CHURN_INTERVAL_MS`, so the page does have changes
 * to render. For `BENCH_DURATION_S` (30 s) the clients loop on `/` and `/metrics`
 * (as fast as they are answered, without `Accept-Encoding` as `curl` asks, or with gzip under
 * `--gzip` as browsers and Prometheus ask), while a prober in its own process asks `/healthz` on
 * the probe listener and the main one; before that, for 10 s, the same without the looping
 * clients, as a control.
 *
 * Reported: `/healthz` p50/p99/max on both listeners, peak RSS, the looping clients' requests by
 * status (`BENCH_CPU_PROF=DIR` writes the service's CPU profile there). Targets: `/healthz` p99 ≤ 50 ms on the probe listener, no failed probe, peak RSS within
 * the chart's 512 Mi memory limit. `--strict` exits 1 on a missed target.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { FakeListServer } from './fake-list-server.js';
import {
  CHART_MEMORY_LIMIT_MIB,
  DEPLOYED_HEAP_MIB,
  startHostileBenchService,
} from './hostile-service.js';
import { waitFor } from './service-probe.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 30);
/** Probed first without the looping clients, as a control: the world's own cost on this machine. */
const QUIET_S = 10;
/** Four pods a cell, one cell a pool: 5,000 pools. */
const POOLS = 5_000;
const PODS = POOLS * 4;
/** The cases: 16 clients looping on the page, 8 on the metrics. */
const PAGE_CLIENTS = 16;
const METRICS_CLIENTS = 8;
/** One cell touched this often: the page has something new to show about every second. */
const CHURN_INTERVAL_MS = 1_000;
/** The LWS group key: unique per group, so each group is a pool of its own. */
const POOL_LABEL = 'leaderworkerset.sigs.k8s.io/group-key';
const RSS_TARGET_MIB = CHART_MEMORY_LIMIT_MIB;
const PROBE_P99_TARGET_MS = 50;
const strict = process.argv.includes('--strict');
/**
 * `--gzip`: the looping clients send `Accept-Encoding: gzip`, as browsers and Prometheus do; by
 * default they do not, as `curl` without `--compressed` (the hostile case: every byte sent).
 */
const acceptGzip = process.argv.includes('--gzip');
const MIB = 1024 * 1024;

const fake = await FakeListServer.start({ pods: PODS });
const {
  process: service,
  base,
  probeBase,
  exited,
  questions,
} = await startHostileBenchService(fake, [`--pool-label=${POOL_LABEL}`]);
await waitFor(`${POOLS} pools`, async () => {
  const body = (await (await fetch(`${base}/api/v1/pools`)).json()) as { pools?: unknown[] };
  return (body.pools?.length ?? 0) >= POOLS;
});
const sizes = await Promise.all(
  ['/', '/metrics'].map(
    async (path) => (await (await fetch(`${base}${path}`)).arrayBuffer()).byteLength,
  ),
);
console.log(
  `\nworld: ${POOLS.toLocaleString('en-US')} pools (${PODS.toLocaleString('en-US')} pods), one cell touched every ${CHURN_INTERVAL_MS} ms; ${PAGE_CLIENTS} clients looping on / (${(sizes[0]! / MIB).toFixed(1)} MiB) and ${METRICS_CLIENTS} on /metrics (${(sizes[1]! / MIB).toFixed(1)} MiB); ${DURATION_S} s; heap cap ${DEPLOYED_HEAP_MIB} MiB; ${acceptGzip ? 'clients accept gzip' : 'no Accept-Encoding'}`,
);

let step = 0;
const churn = setInterval(() => {
  fake.burst(4, { first: (step * 4) % PODS });
  step += 1;
}, CHURN_INTERVAL_MS);

interface ProbeSummary {
  probes: number;
  failures: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

/** Probes `/healthz` on both listeners from a process of its own until `during` settles. */
async function probed<T>(during: Promise<T>): Promise<{ result: T; probes: ProbeSummary[] }> {
  const prober = spawn(
    process.execPath,
    [
      fileURLToPath(new URL('./probe-client.js', import.meta.url)),
      `${probeBase}/healthz`,
      `${base}/healthz`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  prober.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const result = await during;
  prober.kill('SIGTERM');
  await new Promise((resolve) => prober.once('exit', resolve));
  const probes = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as ProbeSummary);
  return { result, probes };
}

// The same world, churning, without the looping clients: what probes see with no read load.
const quiet = await probed(new Promise((resolve) => setTimeout(resolve, QUIET_S * 1000)));

const beforeLoad = await questions.ask('rss');
let peakRss = 0;
let atPeak = beforeLoad;
const sampling = setInterval(() => {
  void questions.ask('rss').then((sample) => {
    if (sample.rss > peakRss) atPeak = sample;
    peakRss = Math.max(peakRss, sample.rss);
  });
}, 1_000);
await questions.ask('loop');
const statuses = new Map<number, number>();
const loaded = await probed(
  Promise.all(
    (
      [
        ['/', PAGE_CLIENTS],
        ['/metrics', METRICS_CLIENTS],
      ] as const
    ).map(([path, connections]) =>
      autocannon({
        url: `${base}${path}`,
        connections,
        duration: DURATION_S,
        ...(acceptGzip ? { headers: { 'accept-encoding': 'gzip' } } : {}),
      }),
    ),
  ),
);
const [onPage, onMetrics] = loaded.result as [autocannon.Result, autocannon.Result];
for (const looping of loaded.result) {
  for (const [code, count] of Object.entries(looping.statusCodeStats ?? {})) {
    statuses.set(Number(code), (statuses.get(Number(code)) ?? 0) + (count.count ?? 0));
  }
}
clearInterval(churn);
clearInterval(sampling);
const loop = await questions.ask('loop');
peakRss = Math.max(peakRss, loop.rss);
service.kill('SIGTERM');
const code = await exited;
await fake.close();

const [onProbeListener, onMain] = loaded.probes as [ProbeSummary, ProbeSummary];
const ms = (v: number | null): string => (v === null ? '–' : v.toFixed(1));

console.log(
  `\n| Measure (${PAGE_CLIENTS} + ${METRICS_CLIENTS} looping clients, 5,000 pools) | Value |\n|---|---:|`,
);
const mib = (bytes: number | undefined): string =>
  bytes === undefined ? '–' : (bytes / MIB).toFixed(1);
console.log(
  `| RSS before the looping clients (heap total / used, external, of it Buffers) | ${mib(beforeLoad.rss)} MiB (${mib(beforeLoad.heapTotal)} / ${mib(beforeLoad.heapUsed)}, ${mib(beforeLoad.external)}, ${mib(beforeLoad.arrayBuffers)}) |`,
);
console.log(
  `| peak RSS (heap total / used, external, of it Buffers, at that sample) | ${mib(peakRss)} MiB (${mib(atPeak.heapTotal)} / ${mib(atPeak.heapUsed)}, ${mib(atPeak.external)}, ${mib(atPeak.arrayBuffers)}) |`,
);
for (const [name, p] of [
  [`probe listener, ${QUIET_S} s without the looping clients`, quiet.probes[0]!],
  [`main listener, ${QUIET_S} s without the looping clients`, quiet.probes[1]!],
  ['probe listener, with the looping clients', onProbeListener],
  ['main listener, with the looping clients', onMain],
] as const) {
  console.log(
    `| /healthz on the ${name}: p50 / p99 / max (${p.probes} probes, ${p.failures} failed) | ${ms(p.p50Ms)} / ${ms(p.p99Ms)} / ${ms(p.maxMs)} ms |`,
  );
}
for (const [name, looping] of [
  [`${PAGE_CLIENTS} on /`, onPage],
  [`${METRICS_CLIENTS} on /metrics`, onMetrics],
] as const) {
  console.log(
    `| looping clients, ${name}: requests, req/s, p99, MiB/s | ${looping.requests.total}, ${Math.round(looping.requests.average)}, ${looping.latency.p99} ms, ${(looping.throughput.average / MIB).toFixed(0)} |`,
  );
}
console.log(
  `| looping clients' answers by status | ${JSON.stringify(Object.fromEntries(statuses))} |`,
);
console.log(
  `| the service's event-loop delay: p99 / max | ${loop.loopP99Ms?.toFixed(1)} / ${loop.loopMaxMs?.toFixed(1)} ms |`,
);
console.log(`| service exit code | ${code} |`);

const verdicts: Array<[string, boolean]> = [
  [
    `peak RSS ${(peakRss / MIB).toFixed(1)} MiB (target ≤ ${RSS_TARGET_MIB} MiB, the chart's limit)`,
    peakRss <= RSS_TARGET_MIB * MIB,
  ],
  [
    `/healthz p99 on the probe listener ${ms(onProbeListener.p99Ms)} ms (target ≤ ${PROBE_P99_TARGET_MS} ms), ${onProbeListener.failures} failed`,
    (onProbeListener.p99Ms ?? Number.POSITIVE_INFINITY) <= PROBE_P99_TARGET_MS &&
      onProbeListener.failures === 0,
  ],
  [`service exited ${code} (target 0)`, code === 0],
];
console.log('');
for (const [text, ok] of verdicts) console.log(`${ok ? 'PASS' : 'MISS'}  ${text}`);
if (strict && verdicts.some(([, ok]) => !ok)) process.exitCode = 1;
