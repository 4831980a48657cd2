/**
 * `npm run bench:api -- --hostile`: the service under hostile load, bounded and loopback only.
 *
 * The built service (in its own process, with heap-after-GC samples) watches a fake
 * API server (bench/fake-list-server.ts) whose pods churn and carry 200 KB annotations — one of
 * them the cell-size annotation, which used to be echoed into every message, event and log line —
 * and, every fourth step, a cell size of 999,999,999 (issue 36's size attack).
 * Meanwhile, for `BENCH_DURATION_S` (60 s): 1,000 event-stream clients (half read, half never
 * do; those refused beyond `--max-event-streams` retry after `Retry-After`), mixed API load
 * (autocannon, 100 req/s: lists, store, the status page, a ReDoS-shaped `?types=`; `/metrics`
 * scraped every 2 s), and `/healthz`
 * probed by a process of its own on the probe listener and on the main one. Then (probes
 * stopped) 10,000 streams are opened and closed, to see whether any per-stream object stays
 * behind.
 *
 * Reported: peak RSS, heap after GC before the load, with the clients connected, after they left
 * and after the stream churn; `/healthz` p50/p99/max on both listeners. Targets: RSS ≤ 300 MiB,
 * `/healthz` p99 ≤ 50 ms (probe listener, what the kubelet uses), heap after the churn within
 * 1 MiB of before it. `--strict` exits 1 on a missed target.
 */
import { spawn } from 'node:child_process';
import { get, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { FakeListServer } from './fake-list-server.js';
import { startHostileBenchService } from './hostile-service.js';
import { scrapeMetric, waitFor } from './service-probe.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 60);
const STREAM_CLIENTS = Number(process.env.BENCH_STREAM_CLIENTS ?? 1_000);
const PODS = 200;
/** A churn step every 100 ms touches one cell (4 pods): 40 pod updates a second. */
const CHURN_INTERVAL_MS = 100;
const ANNOTATION_BYTES = 200 * 1024;
/** Issue 36's size attack: a cell size whose missing indices, listed one by one, killed the process. */
const SIZE_ATTACK = '999999999';
const STREAM_CHURN = 10_000;
/** A `/metrics` scrape this often, beside the mixed load. */
const SCRAPE_INTERVAL_MS = 2_000;
/** Requests a second of the mixed API load, over 8 connections. */
const MIXED_RATE = Number(process.env.BENCH_MIXED_RATE ?? 100);
const STREAM_CHURN_CONCURRENCY = 32;
const RSS_TARGET_MIB = 300;
const PROBE_P99_TARGET_MS = 50;
const HEAP_GROWTH_TARGET_MIB = 1;
const SIZE_ANNOTATION = 'leaderworkerset.sigs.k8s.io/size';
const strict = process.argv.includes('--strict');
const MIB = 1024 * 1024;

const fake = await FakeListServer.start({ pods: PODS });
const {
  process: service,
  base,
  probeBase,
  exited,
  questions,
} = await startHostileBenchService(fake, [
  // The most the flag allows: as many streams as the service can hold, each bounded.
  '--max-event-streams=512',
]);
const heapBefore = await questions.ask('gc');
console.log(
  `world: ${PODS} pods (${PODS / 4} cells) churning 40 pod updates/s with ${ANNOTATION_BYTES / 1024} KB annotations and size ${SIZE_ATTACK} on every fourth step; ${STREAM_CLIENTS} event-stream clients (half not reading); ${DURATION_S} s`,
);

// Churn: one cell per step; its size annotation flips between valid, 200 KB of junk and the size
// attack of issue 36 (999,999,999: listing every missing index killed every replica), and every
// touched pod carries a 200 KB annotation either way.
const junk = 'x'.repeat(ANNOTATION_BYTES);
let step = 0;
const churn = setInterval(() => {
  const phase = step % 4;
  fake.burst(4, {
    first: (step * 4) % PODS,
    annotate: (a) => {
      if (phase === 1) a[SIZE_ANNOTATION] = junk;
      else if (phase === 3) a[SIZE_ANNOTATION] = SIZE_ATTACK;
      else a['bench.pool-controller.dev/blob'] = junk;
    },
  });
  step += 1;
}, CHURN_INTERVAL_MS);

// A control: an idle bare server in a process of its own, probed alike. Its latencies are what
// this machine gives any process at the moment (other work on it included), not the service.
const control = spawn(
  process.execPath,
  [
    '-e',
    "require('node:http').createServer((q, s) => s.end('ok')).listen(0, '127.0.0.1', function () { console.log(this.address().port) })",
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const controlPort = await new Promise<number>((resolve) =>
  control.stdout.setEncoding('utf8').once('data', (chunk: string) => resolve(Number(chunk.trim()))),
);

// The prober, in its own process.
const prober = spawn(
  process.execPath,
  [
    fileURLToPath(new URL('./probe-client.js', import.meta.url)),
    `${probeBase}/healthz`,
    `${base}/healthz`,
    `http://127.0.0.1:${controlPort}/healthz`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let proberOut = '';
prober.stdout.setEncoding('utf8').on('data', (chunk: string) => {
  proberOut += chunk;
});

// 1,000 stream clients; half never read. Refused ones retry after Retry-After.
let loadOver = false;
const open = new Set<IncomingMessage>();
let refused = 0;
let readBytes = 0;
function streamClient(reading: boolean): void {
  if (loadOver) return;
  get(`${base}/api/v1/events`, { agent: false }, (res) => {
    if (res.statusCode !== 200) {
      refused += 1;
      res.resume();
      // Retry-After, spread as reconnecting clients spread (jitter up to as much again).
      const after = Number(res.headers['retry-after'] ?? 10) * 1000 * (1 + Math.random());
      setTimeout(() => streamClient(reading), after);
      return;
    }
    open.add(res);
    res.once('close', () => open.delete(res));
    if (reading) res.on('data', (chunk: Buffer) => (readBytes += chunk.length));
    else res.pause();
  }).on('error', () => {});
}
for (let i = 0; i < STREAM_CLIENTS; i += 1) {
  streamClient(i % 2 === 0);
  if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 50));
}

// Peak RSS, sampled every second (cheap; no collection).
let peakRss = 0;
const sampling = setInterval(() => {
  void questions.ask('rss').then(({ rss }) => {
    peakRss = Math.max(peakRss, rss);
  });
}, 1_000);

// Scrapes as Prometheus sends them, more often than it would (its shortest usual interval is
// 10–15 s): a render of every series is not what 100 req/s of API traffic is made of.
const scraping = setInterval(() => {
  void fetch(`${base}/metrics`).then(
    (r) => r.text(),
    () => '',
  );
}, SCRAPE_INTERVAL_MS);
await questions.ask('loop'); // from here on
// 3,000 characters: the 127 bytes that froze the process, 24 times over, within the header limit.
const hostileTypes = encodeURIComponent(`${',  '.repeat(1_000)}!`);
const mixed = await autocannon({
  url: base,
  ...(MIXED_RATE === 0 ? { amount: 1 } : {}),
  connections: 8,
  // A busy control plane's traffic (dashboards, scrapes, people, a hostile client), not a
  // saturation run: that is bench:api's throughput part, and would measure queueing instead.
  overallRate: MIXED_RATE || 1,
  duration: DURATION_S,
  requests: [
    { path: '/api/v1/cells' },
    { path: '/api/v1/pools' },
    { path: '/api/v1/store?objects=true' },
    { path: '/' },
    { path: `/api/v1/events?types=${hostileTypes}` },
    { path: '/api/v1/cells/engine-a-00003' },
  ],
});
if (MIXED_RATE === 0) await new Promise((resolve) => setTimeout(resolve, DURATION_S * 1000));
loadOver = true;
clearInterval(churn);
clearInterval(sampling);
clearInterval(scraping);
const loopDuringLoad = await questions.ask('loop');
// The probes measure the load, not the stream churn below.
prober.kill('SIGTERM');
await new Promise((resolve) => prober.once('exit', resolve));
const streamsAtEnd = open.size;
const dropped = await scrapeMetric(base, 'pool_controller_events_dropped_total');
const heapLoaded = await questions.ask('gc');
peakRss = Math.max(peakRss, heapLoaded.rss);
for (const res of open) res.destroy();
await waitFor(
  'the streams to close',
  async () => (await scrapeMetric(base, 'pool_controller_event_subscribers')) === 0,
);
const heapAfterClients = await questions.ask('gc');

// Stream churn: open and close 10,000 streams.
let churned = 0;
async function churnStreams(): Promise<void> {
  while (churned < STREAM_CHURN) {
    churned += 1;
    await new Promise<void>((resolve) => {
      get(`${base}/api/v1/events`, { agent: false }, (res) => {
        res.once('close', () => resolve());
        res.destroy();
      }).on('error', () => resolve());
    });
  }
}
await Promise.all(Array.from({ length: STREAM_CHURN_CONCURRENCY }, churnStreams));
await waitFor(
  'the churned streams to close',
  async () => (await scrapeMetric(base, 'pool_controller_event_subscribers')) === 0,
);
const heapAfterChurn = await questions.ask('gc');

service.kill('SIGTERM');
const code = await exited;
await fake.close();

interface ProbeSummary {
  url: string;
  probes: number;
  failures: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  slow: Array<[number, number]>;
  reasons: Record<string, number>;
}
const probes = proberOut
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as ProbeSummary);
const [onProbeListener, onMain, onControl] = probes as [ProbeSummary, ProbeSummary, ProbeSummary];
control.kill('SIGTERM');
const mib = (bytes: number | undefined): string => ((bytes ?? 0) / MIB).toFixed(1);
const ms = (v: number | null): string => (v === null ? '–' : v.toFixed(1));

console.log('\n| Measure | Value |\n|---|---:|');
console.log(`| peak RSS | ${mib(peakRss)} MiB |`);
console.log(`| heap after GC, before the load | ${mib(heapBefore.heapUsed)} MiB |`);
console.log(
  `| heap after GC, clients connected, after ${DURATION_S} s | ${mib(heapLoaded.heapUsed)} MiB |`,
);
console.log(`| heap after GC, clients gone | ${mib(heapAfterClients.heapUsed)} MiB |`);
console.log(
  `| heap after GC, after ${STREAM_CHURN.toLocaleString('en-US')} more streams opened and closed | ${mib(heapAfterChurn.heapUsed)} MiB |`,
);
for (const [name, p] of [
  ['probe listener', onProbeListener],
  ['main listener', onMain],
  ['control (an idle bare server, same machine)', onControl],
] as const) {
  console.log(
    `| /healthz on the ${name}: p50 / p99 / max (${p.probes} probes, ${p.failures} failed) | ${ms(p.p50Ms)} / ${ms(p.p99Ms)} / ${ms(p.maxMs)} ms |`,
  );
}
console.log(
  `| streams open at the end / refused with 503 (then retried) | ${streamsAtEnd} / ${refused} |`,
);
console.log(`| events dropped for slow clients (metric) | ${dropped} |`);
console.log(`| bytes read by the reading clients | ${mib(readBytes)} MiB |`);
console.log(
  `| mixed API load: requests, req/s, p99, non-2xx | ${mixed.requests.total}, ${Math.round(mixed.requests.average)}, ${mixed.latency.p99} ms, ${mixed.non2xx} |`,
);
console.log(`| churn steps (4 pods each) | ${step} |`);
console.log(
  `| the service's event-loop delay during the load: p99 / max | ${loopDuringLoad.loopP99Ms?.toFixed(1)} / ${loopDuringLoad.loopMaxMs?.toFixed(1)} ms |`,
);
console.log(
  `| slow probes on the probe listener (s since start, ms) | ${JSON.stringify(onProbeListener.slow)} |`,
);
console.log(`| failed probes by reason | ${JSON.stringify(onProbeListener.reasons)} |`);
console.log(`| service exit code | ${code} |`);

const growth = ((heapAfterChurn.heapUsed ?? 0) - (heapAfterClients.heapUsed ?? 0)) / MIB;
const verdicts: Array<[string, boolean]> = [
  [
    `peak RSS ${mib(peakRss)} MiB (target ≤ ${RSS_TARGET_MIB} MiB)`,
    peakRss <= RSS_TARGET_MIB * MIB,
  ],
  [
    `/healthz p99 on the probe listener ${ms(onProbeListener.p99Ms)} ms (target ≤ ${PROBE_P99_TARGET_MS} ms), ${onProbeListener.failures} failed`,
    (onProbeListener.p99Ms ?? Number.POSITIVE_INFINITY) <= PROBE_P99_TARGET_MS &&
      onProbeListener.failures === 0,
  ],
  [
    `heap growth over ${STREAM_CHURN.toLocaleString('en-US')} streams ${growth.toFixed(2)} MiB (target ≤ ${HEAP_GROWTH_TARGET_MIB} MiB)`,
    growth <= HEAP_GROWTH_TARGET_MIB,
  ],
  [`service exited ${code} (target 0)`, code === 0],
];
console.log('');
for (const [text, ok] of verdicts) console.log(`${ok ? 'PASS' : 'MISS'}  ${text}`);
if (strict && verdicts.some(([, ok]) => !ok)) process.exitCode = 1;
