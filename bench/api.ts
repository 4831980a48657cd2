/**
 * `npm run bench:api`: load the control plane from this process over loopback (autocannon) while
 * the service runs in a second process (bench/api-server.ts), and compare with floors served by
 * a bare Fastify app in that same process.
 *
 * Targets: the cell list ≥ 80% of the floor's req/s (the same bytes, pre-serialized, on a bare
 * route) when idle; one cell ≥ 50% of a bare hello-world route; while 10k-pod relists are applied
 * back to back, every endpoint's p99 < 40 ms and ≤ 3× its idle p99 ("Faster than the informers it
 * replaces"), and the longest main-thread stall (event-loop delay max) ≤ 15 ms.
 *
 * `BENCH_DURATION_S` (default 10) sets each measurement's length; `--strict` exits 1 on a missed target.
 * `--hostile` runs the hostile cases instead: bench/hostile-load.ts (60 s by default), then
 * bench/hostile-reads.ts (16 clients looping on `/` and `/metrics` at 5,000 pools, 30 s);
 * `--hostile=reads` runs only the second.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

// `--hostile`: the bounded hostile-load runs instead (bench/hostile-load.ts, bench/hostile-reads.ts).
if (process.argv.includes('--hostile') || process.argv.includes('--hostile=reads')) {
  if (!process.argv.includes('--hostile=reads')) await import('./hostile-load.js');
  await import('./hostile-reads.js');
  process.exit();
}

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const WARMUP_S = 2;
/** Throughput runs: enough concurrent connections to keep the server's core busy. */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/**
 * Latency runs (idle and during relists): a few pollers. With 16 connections each fetching a
 * 1–2.5 MB list, queueing alone puts p99 past 100 ms even on the bare floor route; the p99 target
 * is about how long a poller waits, not about saturating the server.
 */
const LATENCY_CONNECTIONS = Number(process.env.BENCH_LATENCY_CONNECTIONS ?? 4);
/** The targets for the API during back-to-back 10k-pod relists. */
const P99_TARGET_MS = 40;
const IDLE_RATIO_TARGET = 3;
const STALL_TARGET_MS = 15;
const strict = process.argv.includes('--strict');

interface Ports {
  api: number;
  floor: number;
  cells: number;
  pods: number;
  listBytes: number;
}

interface Measurement {
  name: string;
  url: string;
  reqPerSec: number;
  p99Ms: number;
  errors: number;
}

function startServer(): Promise<{ ports: Ports; stop: () => Promise<void> }> {
  const script = fileURLToPath(new URL('./api-server.js', import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.once('exit', (code) => reject(new Error(`bench server exited early (${code})`)));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const newline = buffered.indexOf('\n');
      if (newline < 0) return;
      child.removeAllListeners('exit');
      const ports = JSON.parse(buffered.slice(0, newline)) as Ports;
      resolve({
        ports,
        stop: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}

async function load(
  name: string,
  url: string,
  durationS = DURATION_S,
  connections = CONNECTIONS,
): Promise<Measurement> {
  const result = await autocannon({ url, connections, duration: durationS });
  return {
    name,
    url,
    reqPerSec: result.requests.average,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

async function post(url: string): Promise<unknown> {
  const res = await fetch(url, { method: 'POST' });
  return res.json();
}

const { ports, stop } = await startServer();
const api = `http://127.0.0.1:${ports.api}`;
const floor = `http://127.0.0.1:${ports.floor}`;
const cell = `${api}/api/v1/cells/engine-00500`;
console.log(
  `world: ${ports.cells} cells, ${ports.pods} pods; list body ${ports.listBytes} bytes; ${CONNECTIONS} connections for throughput, ${LATENCY_CONNECTIONS} for latency; ${DURATION_S}s per measurement`,
);

const idleTargets: Array<[string, string]> = [
  ['floor: same bytes, bare route', `${floor}/list`],
  ['GET /api/v1/cells', `${api}/api/v1/cells`],
  ['floor: hello world, bare route', `${floor}/hello`],
  ['GET /api/v1/cells/{cell}', cell],
  ['GET /metrics', `${api}/metrics`],
];
const idle: Measurement[] = [];
for (const [name, url] of idleTargets) {
  await load(`${name} (warm-up)`, url, WARMUP_S);
  idle.push(await load(name, url));
}

const apiTargets = idleTargets.filter(([n]) => !n.startsWith('floor'));
const quiet: Measurement[] = [];
for (const [name, url] of apiTargets) {
  quiet.push(
    await load(
      `${name}, ${LATENCY_CONNECTIONS} pollers, idle`,
      url,
      DURATION_S,
      LATENCY_CONNECTIONS,
    ),
  );
}
const started = await post(`${floor}/control/relist/start`);
const during: Measurement[] = [];
for (const [name, url] of apiTargets) {
  during.push(
    await load(
      `${name}, ${LATENCY_CONNECTIONS} pollers, during relists`,
      url,
      DURATION_S,
      LATENCY_CONNECTIONS,
    ),
  );
}
const relists = (await post(`${floor}/control/relist/stop`)) as {
  relists: number;
  medianMs: number | null;
  maxMs: number | null;
  pods: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
};
await stop();

const byName = (list: Measurement[], name: string): Measurement =>
  list.find((m) => m.name.startsWith(name))!;
const listRatio =
  byName(idle, 'GET /api/v1/cells').reqPerSec / byName(idle, 'floor: same bytes').reqPerSec;
const cellRatio =
  byName(idle, 'GET /api/v1/cells/{cell}').reqPerSec / byName(idle, 'floor: hello').reqPerSec;
const worstP99 = Math.max(...during.map((m) => m.p99Ms));

const row = (m: Measurement): string =>
  `| ${m.name} | ${Math.round(m.reqPerSec).toLocaleString('en-US')} | ${m.p99Ms} | ${m.errors} |`;
console.log('\n| Endpoint | req/s | p99 ms | errors |\n|---|---:|---:|---:|');
for (const m of [...idle, ...quiet, ...during]) console.log(row(m));
console.log(
  `\nrelists during the load: ${relists.relists} of ${relists.pods} pods (started: ${JSON.stringify(started)}), median ${relists.medianMs?.toFixed(0)} ms, max ${relists.maxMs?.toFixed(0)} ms each (replace applied and every cell reconciled); event-loop delay p99 ${relists.loopDelayP99Ms.toFixed(0)} ms, max ${relists.loopDelayMaxMs.toFixed(0)} ms`,
);
const verdicts: Array<[string, boolean]> = [
  [`list / floor = ${(listRatio * 100).toFixed(0)}% (target ≥ 80%)`, listRatio >= 0.8],
  [`cell / hello-world = ${(cellRatio * 100).toFixed(0)}% (target ≥ 50%)`, cellRatio >= 0.5],
  [
    `worst p99 during relists = ${worstP99} ms (target < ${P99_TARGET_MS} ms)`,
    worstP99 < P99_TARGET_MS,
  ],
];
// The per-endpoint rule: during back-to-back relists, p99 < 40 ms and ≤ 3× its idle p99.
for (const m of during) {
  const endpoint = m.name.split(',')[0] as string;
  const before = quiet.find((q) => q.name.startsWith(`${endpoint},`));
  if (!before) continue;
  const limit = IDLE_RATIO_TARGET * Math.max(1, before.p99Ms);
  verdicts.push([
    `${endpoint}: p99 during relists ${m.p99Ms} ms vs idle ${before.p99Ms} ms (target < ${P99_TARGET_MS} ms and ≤ ${IDLE_RATIO_TARGET}× idle)`,
    m.p99Ms < P99_TARGET_MS && m.p99Ms <= limit,
  ]);
}
verdicts.push([
  `longest main-thread stall during relists (event-loop delay max) = ${relists.loopDelayMaxMs.toFixed(0)} ms (target ≤ ${STALL_TARGET_MS} ms)`,
  relists.loopDelayMaxMs <= STALL_TARGET_MS,
]);
console.log('');
for (const [text, ok] of verdicts) console.log(`${ok ? 'PASS' : 'MISS'}  ${text}`);
if (strict && verdicts.some(([, ok]) => !ok)) process.exitCode = 1;
