/**
 * One measurement of `bench:sync`, in a process of its own so that no variant's heap, JIT state or
 * garbage is seen by another's: `node dist/bench/sync-variant.js <variant> <json>` (its full
 * collections through ./forced-gc.ts, not `--expose-gc`).
 *
 * Variants, each syncing the same LIST from the bench's loopback server:
 * - `worker`: our `WorkerPodSource` (reflector in a worker thread) into a real `ReconcileLoop`
 *   keyed by cell, with a trivial reconcile that reads its cell's pods;
 * - `parse`: plain `fetch` of the whole collection + `JSON.parse`, the floor any client pays;
 * - `informer`: `@kubernetes/client-node`'s `makeInformer` over `CoreV1Api.listNamespacedPod`.
 *
 * Measured from just before the variant starts until it has synced (and, for the loop, until
 * every queued cell was reconciled), plus a quiet tail with the watch open:
 * - `syncedMs`: until the cache holds the whole LIST;
 * - the longest main-thread stall, two ways: the largest gap seen by a 1 ms interval timer, and
 *   `monitorEventLoopDelay`'s maximum;
 * - heap per cached pod: `heapUsed` after full GCs with the cache alive, minus the same before
 *   the variant started, over the number of pods (the worker thread's heap is not in this number;
 *   `rssDelta` shows the whole process).
 *
 * With `latencyEvents` (worker and informer), after those measurements the child prints
 * `{"ready":true}`, the bench's server writes that many MODIFIED events in a burst, each pod
 * stamped with its write time (`WRITTEN_AT_ANNOTATION`), and the child records for each stamp the
 * time until our loop's reconcile of that pod's cell starts (worker) or client-node's `update`
 * handler is called (informer).
 *
 * Prints one JSON line (`VariantResult`) on stdout, last.
 */
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { type Pod, ReconcileLoop, type Source, WorkerPodSource } from '../src/index.js';
import { importKubeConfig } from '../src/kubernetes/client/connection.js';
import { cellKeyMap } from '../src/pools/cell-key.js';
import { defaultSelector, LWS_LABELS } from '../src/pools/labels.js';
import { silentLogger } from '../src/runtime/logger.js';
import { ENGINE_NAMESPACE } from './engine-pod.js';
import { unixNowMs, WRITTEN_AT_ANNOTATION } from './fake-list-server.js';
import { forcedGc } from './forced-gc.js';

export type VariantName = 'worker' | 'parse' | 'informer';

export interface VariantConfig {
  url: string;
  kubeconfig: string;
  pods: number;
  /** Quiet time measured after sync (watch open, bookmarks arriving): late GC shows up here. */
  tailMs: number;
  /** `WorkerPodSource` options under test; absent: the source's defaults. */
  listPageSize?: number;
  replaceChunkSize?: number;
  /** After the measurements, receive this many stamped events and report their latency. */
  latencyEvents?: number;
  /** Namespace to sync (default: the engine pods' namespace). */
  namespace?: string;
  /** The encoding the worker source asks for (default: its own, protobuf; the loopback server answers JSON). */
  apiContentType?: 'protobuf' | 'json';
  /** How the worker source reads the world (default: its own, LIST + WATCH). */
  initialList?: 'watch-list' | 'list';
  /** Ask for gzip on the LIST pages and the watch-list (`--kube-api-compression`); default off. */
  apiCompression?: boolean;
  /** Read over HTTP/2 when the server offers it (`--kube-api-http2`); default the source's own, on. */
  apiHttp2?: boolean;
  /**
   * Worker variant: after the measurements above, relist this many times (the open stream aborted,
   * a new one opened by the loop, its `replace` applied), one after another.
   */
  relists?: number;
}

/** Write → reconcile start (or → handler call) per stamped event, in ms. */
export interface LatencyResult {
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface VariantResult {
  variant: VariantName;
  pods: number;
  /** Objects in the variant's cache once synced: must equal `pods`. */
  cached: number;
  syncedMs: number;
  /**
   * The process's CPU (user + system, every thread: the worker's decode and inflate included)
   * from its start to synced.
   */
  cpuMsAtSynced: number;
  /**
   * From this process's start (`performance.now()` at synced): includes loading the variant's
   * modules — for the informer, importing client-node, which `syncedMs` leaves out.
   */
  fromProcessStartMs: number;
  /** Start and synced instants in ms since the epoch, to line up with the server's request log. */
  startedAtMs: number;
  /**
   * The start on the monotonic clock (`process.hrtime`, in ms), which V8's CPU profiles and
   * `--trace-gc` lines are stamped on: a gap's `endedAtMs` plus this is its place in a profile.
   */
  startedAtMonotonicMs: number;
  syncedAtMs: number;
  /** For the loop: until every queued cell was reconciled (equals `syncedMs` elsewhere). */
  settledMs: number;
  /**
   * Worker variant: from the variant's start to its reflector beginning the first read (the
   * watch-list request leaves next, with the TLS handshake): the thread's start, its code and the
   * kubeconfig loaded. What comes before the first byte that client-go's `requestMs` compares to.
   */
  requestMs?: number;
  maxGapMs: number;
  /** The longest gaps (over 10 ms), longest first, at most five. */
  gaps: Gap[];
  /**
   * The gaps (over 10 ms) in which the main thread itself was busiest, most CPU first, at most
   * five: the stalls our own code or GC made, whatever the machine's load added to them. Absent
   * from builds older than it (bench:peers' `--baseline`).
   */
  busiestGaps?: Gap[];
  eldMaxMs: number;
  eldP99Ms: number;
  heapBytesPerPod: number;
  rssDeltaBytes: number;
  reconciles?: number;
  /** The longest young-generation (scavenge) and full (mark-compact) GC pause in the window. */
  maxScavengeMs: number;
  maxMarkCompactMs: number;
  /**
   * Worker variant: from the loop receiving the `replace` to it asking for the next event, all in
   * one main-thread task: the store's apply, queueing every cell, and the first reconciles.
   */
  replaceApplyMs?: number;
  latency?: LatencyResult;
  /** Worker variant with `relists`: each relist, in order. */
  relists?: RelistResult[];
  /**
   * Worker variant: write → the driver taking the event from the worker's stream (the worker
   * thread's decode and validation, the hop, the main side's decode, waiting for the driver).
   */
  latencyToDriver?: LatencyResult;
}

/**
 * Collects the stamps seen (one per written event: pod name + stamp) and their latency. Latency
 * is the reader's clock at the hook minus the writer's stamp, both Unix ms from
 * `performance.timeOrigin` (same machine).
 */
class LatencyRecorder {
  readonly #seen = new Set<string>();
  readonly latencies: number[] = [];
  #wanted = 0;
  #done: (() => void) | undefined;

  note(name: string, annotations: Record<string, string> | undefined, now: number): void {
    const stamp = annotations?.[WRITTEN_AT_ANNOTATION];
    if (stamp === undefined) return;
    const id = `${name}@${stamp}`;
    if (this.#seen.has(id)) return;
    this.#seen.add(id);
    this.latencies.push(now - Number(stamp));
    if (this.#wanted > 0 && this.latencies.length >= this.#wanted) this.#done?.();
  }

  wait(count: number, timeoutMs: number): Promise<void> {
    this.#wanted = count;
    if (this.latencies.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`saw ${this.latencies.length} of ${count} stamped events`)),
        timeoutMs,
      );
      this.#done = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

export function latencySummary(latencies: number[]): LatencyResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1) ?? 0 };
}

/** A variant: starts syncing, resolves once synced with a way to count its cache and close it. */
interface Running {
  cached: () => number;
  /** Resolves once follow-up work (the loop's reconciles) is done; the stall window covers it. */
  settled: () => Promise<void>;
  close: () => Promise<void>;
  reconciles?: () => number;
  replaceApplyMs?: () => number | undefined;
  /** Worker variant: one relist of the warm process (`timingReplace`'s `relist`). */
  relist?: () => Promise<Omit<RelistResult, 'stallMs'>>;
  /** Worker variant: when (wall clock, ms since the epoch) the first read began, if seen. */
  firstReadAtMs?: () => number | undefined;
}

/**
 * When the worker's reflector begins each whole read (the request about to leave), from the
 * source's stats, where a read under way carries its wall-clock start (`listProgress`). Polled
 * every millisecond only between `watch()` and the next start seen (or `stop()`), so that the
 * work measured runs without the poll.
 */
class ReadStarts {
  readonly #source: WorkerPodSource;
  #seen: number | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(source: WorkerPodSource) {
    this.#source = source;
  }

  /** Polls for the next read's start (one other than the last seen). */
  watch(): void {
    this.stop();
    const before = this.#seen;
    this.#timer = setInterval(() => {
      const startedAt = this.#source.stats().listProgress?.startedAtMs;
      if (startedAt === undefined || startedAt === before) return;
      this.#seen = startedAt;
      this.stop();
    }, 1);
  }

  /** Stops polling; the newest start seen (wall clock, ms since the epoch), if any. */
  stop(): number | undefined {
    clearInterval(this.#timer);
    this.#timer = undefined;
    return this.#seen;
  }
}

const gc = forcedGc();

async function fullGc(): Promise<void> {
  for (let i = 0; i < 3; i += 1) {
    gc();
    await nextTurn();
  }
}

/**
 * A gap between ticks: how long, when it ended (ms after the variant started), and how much CPU
 * the main thread itself used meanwhile. A gap the main thread spent on the CPU is its own work
 * (code or GC); one it did not is the thread waiting for a core (two cores, shared with the
 * worker thread, the bench's server and anything else on the machine), which no code can help.
 */
export interface Gap {
  ms: number;
  endedAtMs: number;
  cpuMs: number;
}

/** Gaps above this are kept (with their time), so a run can say which task stalled. */
const NOTABLE_GAP_MS = 10;

/** The main thread's CPU time so far (user + system), in ms. */
function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** The process's CPU so far (user + system, every thread), in ms. */
function processCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * The gaps between ticks of a 1 ms timer: the longest is what a request arriving then would have
 * waited. Gaps over `NOTABLE_GAP_MS` are kept with their time and CPU, longest first.
 */
function startTicker(t0: number): { stop: () => Gap[] } {
  let last = performance.now();
  let lastCpu = threadCpuMs();
  const gaps: Gap[] = [];
  const note = (now: number): void => {
    const cpu = threadCpuMs();
    if (now - last > NOTABLE_GAP_MS) {
      gaps.push({ ms: now - last, endedAtMs: now - t0, cpuMs: cpu - lastCpu });
    }
    last = now;
    lastCpu = cpu;
  };
  const timer = setInterval(() => note(performance.now()), 1);
  return {
    stop: () => {
      clearInterval(timer);
      note(performance.now());
      return gaps.sort((a, b) => b.ms - a.ms);
    },
  };
}

/** The longest GC pause of each kind while observing. */
function startGcObserver(): { stop: () => { scavenge: number; markCompact: number } } {
  let scavenge = 0;
  let markCompact = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        scavenge = Math.max(scavenge, entry.duration);
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        markCompact = Math.max(markCompact, entry.duration);
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop: () => {
      observer.disconnect();
      return { scavenge, markCompact };
    },
  };
}

/** One relist of a warm process (`VariantConfig.relists`): a new stream, synced again. */
export interface RelistResult {
  /** From the new stream's open to its `replace` applied by the loop (store, queue). */
  ms: number;
  /** From the open to the reflector beginning its read (`VariantResult.requestMs`, warm). */
  requestMs?: number;
  /** From the open to the `replace` reaching the loop (the worker's read and decode, the hop). */
  receivedMs: number;
  /** The process's CPU (both threads) from the open to the `replace` applied. */
  cpuMs: number;
  /** The main thread's share of `cpuMs`: the rest is the reflector's thread. */
  mainThreadCpuMs: number;
  /** The longest main-thread gap from the open until every cell was reconciled again. */
  stallMs: number;
}

/** A relist as `timingReplace` times it: its stream's open (`performance.now()`) kept. */
type TimedRelist = Omit<RelistResult, 'stallMs' | 'requestMs'> & { openedAt: number };

/**
 * The source, timing how long the consumer spends between receiving a `replace` and asking for
 * the next event: the loop applies an event synchronously in between, so this is the main-thread
 * task that applies the world. `relist()` aborts the open stream (as a stop or a lost connection
 * does), so that the loop opens a new one, and resolves once that stream's `replace` is applied:
 * a sync in a process whose thread and code are warm, what every later relist costs.
 */
function timingReplace(
  source: Source<Pod>,
  pulled?: LatencyRecorder,
): {
  source: Source<Pod>;
  applyMs: () => number | undefined;
  relist: () => Promise<TimedRelist>;
} {
  let applyMs: number | undefined;
  /** Aborts the stream open now. */
  let abortOpen: (() => void) | undefined;
  /** A relist asked for: whom to tell, and, once its stream opened, when and at what CPU. */
  let relisting:
    | {
        resolve: (result: TimedRelist) => void;
        opened?: { at: number; cpuMs: number; mainThreadCpuMs: number };
        receivedAt?: number;
      }
    | undefined;
  const timed: Source<Pod> = (signal) => ({
    [Symbol.asyncIterator]: () => {
      const own = new AbortController();
      abortOpen = () => own.abort();
      if (relisting && !relisting.opened) {
        relisting.opened = {
          at: performance.now(),
          cpuMs: processCpuMs(),
          mainThreadCpuMs: threadCpuMs(),
        };
      }
      const inner = source(AbortSignal.any([signal, own.signal]))[Symbol.asyncIterator]();
      let replacedAt: number | undefined;
      return {
        next: async () => {
          if (replacedAt !== undefined) {
            const appliedAt = performance.now();
            if (applyMs === undefined) applyMs = appliedAt - replacedAt;
            const opened = relisting?.opened;
            const receivedAt = relisting?.receivedAt;
            if (relisting && opened && receivedAt !== undefined) {
              relisting.resolve({
                openedAt: opened.at,
                ms: appliedAt - opened.at,
                receivedMs: receivedAt - opened.at,
                cpuMs: processCpuMs() - opened.cpuMs,
                mainThreadCpuMs: threadCpuMs() - opened.mainThreadCpuMs,
              });
              relisting = undefined;
            }
            replacedAt = undefined;
          }
          const result = await inner.next();
          if (!result.done && result.value.type === 'replace') {
            replacedAt = performance.now();
            if (relisting?.opened) relisting.receivedAt = replacedAt;
          }
          if (pulled && !result.done && result.value.type === 'upsert') {
            const pod = result.value.object;
            pulled.note(pod.metadata.name, pod.metadata.annotations, unixNowMs());
          }
          return result;
        },
        return: async () => (await inner.return?.()) ?? { done: true, value: undefined },
      };
    },
  });
  const relist = (): Promise<TimedRelist> =>
    new Promise((resolve) => {
      relisting = { resolve };
      abortOpen?.();
    });
  return { source: timed, applyMs: () => applyMs, relist };
}

/** The loop's reopen wait after a relist's abort: short, as the stream ended on purpose. */
const RELIST_REOPEN_DELAY_MS = 20;

async function startWorker(
  config: VariantConfig,
  latency: LatencyRecorder,
  pulled: LatencyRecorder,
): Promise<Running> {
  const source = new WorkerPodSource({
    kubeconfigPath: config.kubeconfig,
    namespace: config.namespace ?? ENGINE_NAMESPACE,
    labelSelector: defaultSelector(LWS_LABELS),
    ...(config.listPageSize ? { listPageSize: config.listPageSize } : {}),
    ...(config.replaceChunkSize ? { replaceChunkSize: config.replaceChunkSize } : {}),
    ...(config.apiContentType ? { apiContentType: config.apiContentType } : {}),
    ...(config.initialList ? { initialList: config.initialList } : {}),
    ...(config.apiCompression ? { apiCompression: true } : {}),
    ...(config.apiHttp2 === false ? { apiHttp2: false } : {}),
  });
  const readStarts = new ReadStarts(source);
  readStarts.watch();
  let reconciles = 0;
  const timed = timingReplace(source.source, pulled);
  // A trivial reconcile: read the cell's pods. (The loop's worker yields the event loop every few
  // milliseconds of back-to-back reconciles by itself.)
  const loop: ReconcileLoop<Pod> = new ReconcileLoop<Pod>({
    source: timed.source,
    keyMap: cellKeyMap(LWS_LABELS),
    resyncPeriodMs: null,
    // A relist aborts the open stream on purpose: reopen at once and say nothing about it.
    ...(config.relists ? { sourceRetryDelayMs: RELIST_REOPEN_DELAY_MS, logger: silentLogger } : {}),
    reconcile: async (parent) => {
      const now = unixNowMs();
      const pods = loop.getByParent(parent);
      if (pods.length > 0) reconciles += 1;
      for (const pod of pods) latency.note(pod.metadata.name, pod.metadata.annotations, now);
    },
  });
  await loop.start();
  return {
    cached: () => loop.objectCount,
    settled: async () => {
      for (;;) {
        const state = loop.state();
        if (state.queued.length === 0 && !state.inFlight) return;
        await sleep(2);
      }
    },
    close: async () => {
      await loop.stop();
      await source.close();
    },
    reconciles: () => reconciles,
    replaceApplyMs: timed.applyMs,
    relist: async () => {
      const before = readStarts.stop();
      readStarts.watch();
      const { openedAt, ...timing } = await timed.relist();
      const readAtMs = readStarts.stop();
      return readAtMs === undefined || readAtMs === before
        ? timing
        : { ...timing, requestMs: readAtMs - performance.timeOrigin - openedAt };
    },
    firstReadAtMs: () => readStarts.stop(),
  };
}

async function startParse(config: VariantConfig): Promise<Running> {
  const query = new URLSearchParams({ labelSelector: defaultSelector(LWS_LABELS) });
  const response = await fetch(
    `${config.url}/api/v1/namespaces/${config.namespace ?? ENGINE_NAMESPACE}/pods?${query}`,
    { headers: { Accept: 'application/json' } },
  );
  if (!response.ok) throw new Error(`LIST failed: ${response.status}`);
  const list = JSON.parse(await response.text()) as { items: unknown[] };
  return {
    cached: () => list.items.length,
    settled: async () => {},
    close: async () => {},
  };
}

async function startInformer(
  config: VariantConfig,
  k8s: typeof import('@kubernetes/client-node'),
  latency: LatencyRecorder,
): Promise<Running> {
  const namespace = config.namespace ?? ENGINE_NAMESPACE;
  const kubeconfig = new k8s.KubeConfig();
  kubeconfig.loadFromFile(config.kubeconfig);
  const api = kubeconfig.makeApiClient(k8s.CoreV1Api);
  const labelSelector = defaultSelector(LWS_LABELS);
  const informer = k8s.makeInformer(
    kubeconfig,
    `/api/v1/namespaces/${namespace}/pods`,
    () => api.listNamespacedPod({ namespace, labelSelector }),
    labelSelector,
  );
  informer.on('update', (pod) => {
    const now = unixNowMs();
    latency.note(pod.metadata?.name ?? '', pod.metadata?.annotations, now);
  });
  let stopping = false;
  informer.on('error', (error: unknown) => {
    // Stopping aborts the open WATCH, which the informer reports as an error.
    if (!stopping) process.stderr.write(`informer error: ${error}\n`);
  });
  await informer.start();
  return {
    cached: () => informer.list(namespace).length,
    settled: async () => {},
    close: () => {
      stopping = true;
      return informer.stop();
    },
  };
}

export async function runVariant(name: VariantName, config: VariantConfig): Promise<VariantResult> {
  // Module loading is not part of any measurement (the worker thread's own start is: it is what
  // every start of the service pays). client-node's KubeConfig is loaded on this thread for the
  // worker variant too: the service has it there before its source exists (its kubeconfig check at
  // start), and the source resolves each stream's first request's credentials with it.
  const k8s = name === 'informer' ? await import('@kubernetes/client-node') : undefined;
  if (name === 'worker') await importKubeConfig();
  await fullGc();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage().rss;

  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  const t0 = performance.now();
  const t0Monotonic = Number(process.hrtime.bigint()) / 1e6;
  const ticker = startTicker(t0);
  const gcs = startGcObserver();
  const latency = new LatencyRecorder();
  const pulled = new LatencyRecorder();
  const running =
    name === 'worker'
      ? await startWorker(config, latency, pulled)
      : name === 'parse'
        ? await startParse(config)
        : await startInformer(config, k8s as typeof import('@kubernetes/client-node'), latency);
  const syncedAt = performance.now();
  const cpuMsAtSynced = processCpuMs();
  const firstReadAtMs = running.firstReadAtMs?.();
  const syncedMs = syncedAt - t0;
  await running.settled();
  const settledMs = performance.now() - t0;
  await sleep(config.tailMs);
  const gaps = ticker.stop();
  eld.disable();
  const pauses = gcs.stop();

  await fullGc();
  const heapAfter = process.memoryUsage().heapUsed;
  const rssAfter = process.memoryUsage().rss;
  const cached = running.cached();
  const result: VariantResult = {
    variant: name,
    pods: config.pods,
    cached,
    syncedMs,
    cpuMsAtSynced,
    startedAtMs: performance.timeOrigin + t0,
    startedAtMonotonicMs: t0Monotonic,
    syncedAtMs: performance.timeOrigin + syncedAt,
    fromProcessStartMs: syncedAt,
    settledMs,
    ...(firstReadAtMs === undefined
      ? {}
      : { requestMs: firstReadAtMs - performance.timeOrigin - t0 }),
    maxGapMs: gaps[0]?.ms ?? 0,
    gaps: gaps.slice(0, 5),
    busiestGaps: [...gaps].sort((a, b) => b.cpuMs - a.cpuMs).slice(0, 5),
    eldMaxMs: eld.max / 1e6,
    eldP99Ms: eld.percentile(99) / 1e6,
    heapBytesPerPod: (heapAfter - heapBefore) / Math.max(1, cached),
    rssDeltaBytes: rssAfter - rssBefore,
    maxScavengeMs: pauses.scavenge,
    maxMarkCompactMs: pauses.markCompact,
  };
  if (running.reconciles) result.reconciles = running.reconciles();
  const applyMs = running.replaceApplyMs?.();
  if (applyMs !== undefined) result.replaceApplyMs = applyMs;
  if (config.relists && running.relist) {
    // The bench closes the API server's cost window of the sync here: the relists cost it too.
    process.stdout.write(`${JSON.stringify({ relisting: true })}\n`);
    result.relists = [];
    for (let relist = 0; relist < config.relists; relist += 1) {
      const relistTicker = startTicker(performance.now());
      const timing = await running.relist();
      await running.settled();
      const relistGaps = relistTicker.stop();
      result.relists.push({ ...timing, stallMs: relistGaps[0]?.ms ?? 0 });
    }
  }
  const events = config.latencyEvents ?? 0;
  if (events > 0 && name !== 'parse') {
    process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
    await latency.wait(events, 60_000);
    result.latency = latencySummary(latency.latencies);
    if (pulled.latencies.length > 0) result.latencyToDriver = latencySummary(pulled.latencies);
  }
  await running.close();
  return result;
}

const [variant, rawConfig] = process.argv.slice(2);
if (variant === 'worker' || variant === 'parse' || variant === 'informer') {
  const result = await runVariant(variant, JSON.parse(rawConfig ?? '{}') as VariantConfig);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  // An open keep-alive socket or timer in a client must not keep a finished measurement alive.
  process.exit(0);
} else {
  process.stderr.write('usage: sync-variant.js worker|parse|informer <config json>\n');
  process.exit(2);
}
