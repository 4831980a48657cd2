/**
 * `npm run bench:sizing -- --pods 1000,10000,50000,150000`: what the built service needs, in
 * memory and CPU, to hold N pods, so an operator can set the chart's `resources` from
 * measurements rather than guesses (issue 22, item 6).
 *
 * For each N, this process serves N realistic engine pods (bench/engine-pod.ts, ~5.5 KiB each as
 * JSON) from the loopback LIST server and forks the built service on it (bench/service-with-gc.js,
 * which is dist/src/main.js plus a `gc` question) with `--kube-api-content-type=json`: JSON is the
 * costlier path for the reflector worker (a full `JSON.parse` of every pod), so the CPU and
 * transient memory measured here bound the protobuf default from above. The service's own process
 * is read from /proc every `SAMPLE_INTERVAL_MS` (RSS, and utime + stime), through three phases:
 *
 * 1. **Start → `/readyz` 200**: the initial watch-list (the service's default; the server serves
 *    it as an API server does) or, with `--initial-list list`, a LIST in pages of 500 and a WATCH;
 *    CPU seconds, wall time (from the fork to the first 200, polled every `READY_POLL_MS`), peak
 *    RSS.
 * 2. **Steady churn**: `--churn` pod updates a second (default 50) for `--steady-s` seconds
 *    (default 20): mean CPU in cores and the largest RSS sampled; then the heap after a full GC.
 * 3. **A relist**: every WATCH ended with 410 Expired, as compaction does; until the service's
 *    last-sync timestamp moves, i.e. the new LIST has replaced the store. While it runs the old
 *    store and the new pages are alive together, which is what sets the memory limit.
 *
 * It prints each size's numbers, then a table of suggested requests and limits (the rules are in
 * `suggest` below and in docs/operations.md). `--json` prints the raw results. A benchmark always
 * exits 0; a service that fails to start or to relist in time ends it with an error naming the
 * phase.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseBenchArgs } from './bench-args.js';
import { ENGINE_NAMESPACE } from './engine-pod.js';
import { FakeListServer } from './fake-list-server.js';
import { freePort, httpStatus, ServiceQuestions, scrapeMetric, waitFor } from './service-probe.js';

/** Often enough to see a sync's RSS peak on its way up; /proc reads cost microseconds. */
const SAMPLE_INTERVAL_MS = 50;
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks on every supported arch. */
const CLOCK_TICKS_PER_SECOND = 100;
/** How often `/readyz` is asked while the service starts: the start → ready time's resolution. */
const READY_POLL_MS = 5;
/** The page size the service lists with by default, prepared up front so serving costs nothing. */
const LIST_PAGE_SIZE = 500;
const MIB = 1024 * 1024;

/** Memory request = steady RSS × this: room for the heap's normal sawtooth under churn. */
const MEMORY_REQUEST_HEADROOM = 1.2;
/** Memory limit = peak RSS (sync or relist) × this: a relist during a burst, GC lagging behind. */
const MEMORY_LIMIT_HEADROOM = 1.5;
/** CPU request = steady cores × this, at least `CPU_REQUEST_FLOOR_MILLI`: churn comes in bursts. */
const CPU_REQUEST_HEADROOM = 2;
/** Below this a node's CPU contention alone delays probes by more than their timeouts allow. */
const CPU_REQUEST_FLOOR_MILLI = 100;
/**
 * The share of the container's memory the image gives V8's main-thread heap (the Dockerfile's
 * `--max-old-space-size-percentage`); the verification pass caps the heap at this share of the
 * suggested limit, as the container would.
 */
const IMAGE_HEAP_PERCENT = 50;

const USAGE =
  'usage: npm run bench:sizing -- [--pods N[,N…] (1000,10000,50000,150000)] [--churn N pod updates/s (50)] [--steady-s N (20)] [--initial-list watch-list|list (watch-list)] [--no-verify] [--json]';
const values = parseBenchArgs(
  {
    pods: { type: 'string', default: '1000,10000,50000,150000' },
    churn: { type: 'string', default: '50' },
    'steady-s': { type: 'string', default: '20' },
    json: { type: 'boolean', default: false },
    'no-verify': { type: 'boolean', default: false },
    'initial-list': { type: 'string', default: 'watch-list' },
  },
  USAGE,
);
const initialList = values['initial-list'];
if (initialList !== 'watch-list' && initialList !== 'list') {
  process.stderr.write(`--initial-list must be watch-list or list\n${USAGE}\n`);
  process.exit(2);
}
const sizes = values.pods.split(',').map(Number);
const churnPerSecond = Number(values.churn);
const steadySeconds = Number(values['steady-s']);
for (const [name, value] of [
  ['--pods', Math.min(...sizes)],
  ['--churn', churnPerSecond],
  ['--steady-s', steadySeconds],
] as const) {
  if (!Number.isInteger(value) || value < (name === '--churn' ? 0 : 1)) {
    process.stderr.write(`${name} must be a positive integer\n${USAGE}\n`);
    process.exit(2);
  }
}

/** One reading of the service's process from /proc. */
interface ProcSample {
  atMs: number;
  rssBytes: number;
  cpuSeconds: number;
}

function readProc(pid: number): ProcSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
  // Fields after the parenthesised command name, which may itself hold spaces.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  return {
    atMs: performance.now(),
    rssBytes: rssKiB * 1024,
    cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND,
  };
}

function peakRssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
}

/** The process's samples between two marks: CPU used, wall time, the largest RSS seen. */
interface Phase {
  wallMs: number;
  cpuSeconds: number;
  maxRssBytes: number;
}

class Sampler {
  readonly samples: ProcSample[] = [];
  readonly #timer: NodeJS.Timeout;
  constructor(private readonly pid: number) {
    this.take();
    // A process that has just exited has no /proc entry: skip the tick; the phase notices.
    this.#timer = setInterval(() => {
      try {
        this.take();
      } catch {}
    }, SAMPLE_INTERVAL_MS);
  }

  take(): ProcSample {
    const sample = readProc(this.pid);
    this.samples.push(sample);
    return sample;
  }

  phase(from: ProcSample, to: ProcSample): Phase {
    const within = this.samples.filter((s) => s.atMs >= from.atMs && s.atMs <= to.atMs);
    return {
      wallMs: to.atMs - from.atMs,
      cpuSeconds: to.cpuSeconds - from.cpuSeconds,
      maxRssBytes: Math.max(...within.map((s) => s.rssBytes)),
    };
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

interface SizeResult {
  pods: number;
  bytesPerPod: number;
  sync: Phase;
  steady: Phase & { meanCores: number; updates: number };
  heapAfterGcBytes: number;
  rssAfterGcBytes: number;
  relist: Phase;
  peakRssBytes: number;
  load: number[];
}

async function measure(pods: number, heapCapMiB?: number): Promise<SizeResult> {
  const fake = await FakeListServer.start({ pods, watchList: true });
  fake.prepare(LIST_PAGE_SIZE);
  const [apiPort, probePort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${apiPort}`;
  const probeBase = `http://127.0.0.1:${probePort}`;
  const load = [loadavg()[0] ?? 0];
  const service = fork(
    fileURLToPath(new URL('./service-with-gc.js', import.meta.url)),
    [
      '--source=kubernetes',
      `--kubeconfig=${fake.writeKubeconfig()}`,
      '--kube-api-content-type=json',
      `--initial-list=${initialList}`,
      `--namespace=${ENGINE_NAMESPACE}`,
      '--leader-elect=false',
      `--listen=127.0.0.1:${apiPort}`,
      `--health-probe-listen=127.0.0.1:${probePort}`,
      '--log-level=warn',
      '--log-format=json',
    ],
    {
      execArgv: heapCapMiB === undefined ? [] : [`--max-old-space-size=${heapCapMiB}`],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  const pid = service.pid;
  if (pid === undefined) throw new Error('the service did not start');
  const exited = new Promise<void>((resolve) => service.once('exit', () => resolve()));
  const sampler = new Sampler(pid);
  const questions = new ServiceQuestions(service);
  /** A service that died (say, of a heap cap) fails the phase now instead of at the timeout. */
  const alive = (): void => {
    if (service.exitCode !== null || service.signalCode !== null)
      throw new Error(`the service exited (${service.exitCode ?? service.signalCode})`);
  };
  try {
    const started = sampler.samples[0] as ProcSample;
    await waitFor(
      `the service to be ready with ${pods} pods`,
      async () => {
        alive();
        return (await httpStatus(`${probeBase}/readyz`)) === 200;
      },
      undefined,
      READY_POLL_MS,
    );
    const ready = sampler.take();
    const sync = sampler.phase(started, ready);
    load.push(loadavg()[0] ?? 0);

    // Steady churn: one burst every 100 ms, updates spread over the pods.
    const perTick = Math.max(0, Math.round(churnPerSecond / 10));
    let updates = 0;
    const churn = setInterval(() => {
      if (perTick === 0) return;
      fake.burst(perTick, { first: updates % pods });
      updates += perTick;
    }, 100);
    const steadyFrom = sampler.take();
    await new Promise((resolve) => setTimeout(resolve, steadySeconds * 1000));
    const steadyTo = sampler.take();
    alive();
    clearInterval(churn);
    const steadyPhase = sampler.phase(steadyFrom, steadyTo);
    const steady = {
      ...steadyPhase,
      meanCores: steadyPhase.cpuSeconds / (steadyPhase.wallMs / 1000),
      updates,
    };
    const afterGc = await questions.ask('gc');
    load.push(loadavg()[0] ?? 0);

    // A relist: until the last-sync timestamp moves past the one before the 410.
    const syncedBefore = await scrapeMetric(
      base,
      'pool_controller_reflector_last_sync_timestamp_seconds',
    );
    const relistFrom = sampler.take();
    if (fake.expire() === 0) throw new Error('the service had no WATCH open to expire');
    await waitFor(`the relist of ${pods} pods`, async () => {
      alive();
      return (
        (await scrapeMetric(base, 'pool_controller_reflector_last_sync_timestamp_seconds')) >
        syncedBefore
      );
    });
    const relistTo = sampler.take();
    load.push(loadavg()[0] ?? 0);
    return {
      pods,
      bytesPerPod: fake.bytesPerPod,
      sync,
      steady,
      heapAfterGcBytes: afterGc.heapUsed ?? Number.NaN,
      rssAfterGcBytes: afterGc.rss,
      relist: sampler.phase(relistFrom, relistTo),
      peakRssBytes: peakRssKiB(pid) * 1024,
      load,
    };
  } finally {
    sampler.stop();
    service.kill('SIGTERM');
    await exited;
    await fake.close();
  }
}

/** Rounds bytes up to a whole number of `step` MiB. */
function roundUpMiB(bytes: number, step: number): number {
  return Math.ceil(bytes / MIB / step) * step;
}

/** The requests and limits docs/operations.md's sizing table gives, from one size's run. */
function suggest(result: SizeResult): {
  memoryRequestMiB: number;
  memoryLimitMiB: number;
  cpuRequest: string;
} {
  const steadyRss = Math.max(result.steady.maxRssBytes, result.rssAfterGcBytes);
  const cpuMilli = Math.max(
    CPU_REQUEST_FLOOR_MILLI,
    Math.ceil((result.steady.meanCores * CPU_REQUEST_HEADROOM * 1000) / 50) * 50,
  );
  return {
    memoryRequestMiB: roundUpMiB(steadyRss * MEMORY_REQUEST_HEADROOM, 32),
    memoryLimitMiB: roundUpMiB(result.peakRssBytes * MEMORY_LIMIT_HEADROOM, 64),
    cpuRequest: `${cpuMilli}m`,
  };
}

const mib = (bytes: number): string => `${(bytes / MIB).toFixed(0)} MiB`;
const results: SizeResult[] = [];
/** The verification pass of each size, under the heap cap its suggested limit gives. */
const verified = new Map<number, { heapCapMiB: number; result?: SizeResult; error?: string }>();

function report(result: SizeResult): void {
  console.log(
    [
      `${result.pods} pods (${(result.bytesPerPod / 1024).toFixed(1)} KiB each as JSON), load ${result.load.map((l) => l.toFixed(1)).join(' → ')}:`,
      `  start → ready ${result.sync.wallMs.toFixed(0)} ms, ${result.sync.cpuSeconds.toFixed(2)} CPU s, RSS up to ${mib(result.sync.maxRssBytes)}`,
      `  steady (${result.steady.updates} updates in ${(result.steady.wallMs / 1000).toFixed(0)} s) ${(result.steady.meanCores * 1000).toFixed(0)}m CPU, RSS up to ${mib(result.steady.maxRssBytes)}; after GC heap ${mib(result.heapAfterGcBytes)} (${(result.heapAfterGcBytes / result.pods / 1024).toFixed(2)} KiB/pod), RSS ${mib(result.rssAfterGcBytes)}`,
      `  relist ${result.relist.wallMs.toFixed(0)} ms, ${result.relist.cpuSeconds.toFixed(2)} CPU s, RSS up to ${mib(result.relist.maxRssBytes)}`,
      `  peak RSS (VmHWM, any phase) ${mib(result.peakRssBytes)}`,
    ].join('\n'),
  );
}

console.log(
  `bench:sizing — ${availableParallelism()} cores, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(
      ' ',
    )}; churn ${churnPerSecond} pod updates/s for ${steadySeconds} s; JSON, ${initialList === 'list' ? `LIST in pages of ${LIST_PAGE_SIZE} + WATCH` : 'watch-list'}`,
);

for (const pods of sizes) {
  const result = await measure(pods);
  results.push(result);
  report(result);
  if (values['no-verify']) continue;
  const heapCapMiB = Math.floor((suggest(result).memoryLimitMiB * IMAGE_HEAP_PERCENT) / 100);
  console.log(`  verifying under the image's heap cap for that limit, ${heapCapMiB} MiB:`);
  try {
    const again = await measure(pods, heapCapMiB);
    verified.set(pods, { heapCapMiB, result: again });
    report(again);
  } catch (error) {
    verified.set(pods, { heapCapMiB, error: String(error) });
    console.log(`  FAILED under ${heapCapMiB} MiB: ${String(error)}`);
  }
}
console.log(
  '\n| pods | memory request | memory limit | CPU request | initial sync CPU s | under the limit |',
);
console.log('|---|---|---|---|---|---|');
for (const result of results) {
  const s = suggest(result);
  const check = verified.get(result.pods);
  const under = !check
    ? 'not verified'
    : check.result
      ? `${check.result.peakRssBytes <= s.memoryLimitMiB * MIB ? 'fits' : 'OVER'}: peak ${mib(check.result.peakRssBytes)}, heap cap ${check.heapCapMiB} MiB`
      : `FAILED, heap cap ${check.heapCapMiB} MiB`;
  console.log(
    `| ${result.pods.toLocaleString('en-US')} | ${s.memoryRequestMiB}Mi | ${s.memoryLimitMiB}Mi | ${s.cpuRequest} | ${result.sync.cpuSeconds.toFixed(1)} | ${under} |`,
  );
}
if (values.json) console.log(JSON.stringify({ results, verified: [...verified] }, null, 2));
