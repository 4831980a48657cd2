/**
 * `npm run bench:sync -- --pods 10000`: how much a full sync of N realistic engine pods costs,
 * side by side for (a) our worker-backed source into a `ReconcileLoop`, (b) plain `fetch` +
 * `JSON.parse` of the same bytes, (c) client-node's `makeInformer` and (d) client-go's
 * SharedInformer (bench/peers/client-go, when `go` is on PATH; built once and cached under
 * ~/.cache/pool-controller/bench-peers/<hash>/). The issue is "Faster than the informers it
 * replaces".
 *
 * This process serves the LIST (bench/fake-list-server.ts; it refuses watch-list with 400, so
 * client-go falls back to a paged LIST like ours) and spawns one fresh child per variant and run,
 * interleaving the variants so machine load drifts over all of them alike. After each sync (and
 * its heap measurement) the server writes `--latency-events` MODIFIED events in a burst, each
 * stamped with its write time, and the child reports write → our reconcile start / client-node's
 * and client-go's handler call. Then it prints each run, the medians, and PASS/MISS against the
 * targets (at 10,000 pods; the 50,000-pod ones when both sizes ran):
 * - time to synced ≤ 0.8× client-node's informer (from the variant's start) and ≤ 1.2× plain
 *   parse (from the first LIST request);
 * - longest main-thread stall ≤ 15 ms; heap per cached pod ≤ 2.5 KiB;
 * - time to synced ≤ client-go's (from start), heap per pod ≤ ½ client-go's;
 * - event latency p50 and p99 ≤ client-node's;
 * - 50,000 pods: time to synced ≤ 5.5× the 10,000-pod one, stall ≤ 15 ms, heap per pod flat
 *   (within 10% of the 10,000-pod one).
 *
 * Options: `--pods N[,N…]` (10000; several sizes print a scaling table), `--runs N` (3),
 * `--variants worker,parse,informer,client-go`, `--latency-events N` (1000; 0: off),
 * `--warm-up-events N` (0: before the measured burst, an unmeasured one of N events, then
 * `WARM_UP_PAUSE_MS`, so the latency is measured on a path each client has run before),
 * `--watch-list` (the server serves watch-list, as an API server since v1.34 does, and ours reads
 * the world with it as the service does by default; client-go uses it too, client-node lists),
 * `--client-go-qps N` (client-go's client-side rate limit; default its own 5 QPS / burst 10,
 * which throttles its paged LIST here to 10 pages at once, then 5 a second; `=-1`: none),
 * `--tail-ms N` (500), `--page-size N` / `--chunk N` (the source's `listPageSize` /
 * `replaceChunkSize`), `--node-flags "..."` (the Node children's V8 flags; default the image's
 * `NODE_OPTIONS` semi-space, `--max-semi-space-size=8`, so the stalls are measured as deployed;
 * `--node-flags=` for V8's defaults), `--json` (raw results), `--check` (exit 1 on a missed
 * target; otherwise a benchmark always exits 0).
 *
 * Each run of ours lists its gaps over 10 ms twice: the longest, and the busiest (the most
 * main-thread CPU inside the gap). A gap the main thread did not spend on the CPU is the thread
 * waiting for a core on this 2-core machine (its worker thread, the server, other processes),
 * which the idle control process beside it sees too.
 */
import { loadavg } from 'node:os';
import { DEFAULT_LIST_PAGE_SIZE } from '../src/kubernetes/resources/http-pod-api.js';
import { defaultSelector, LWS_LABELS } from '../src/pools/labels.js';
import { parseBenchArgs } from './bench-args.js';
import { ENGINE_NAMESPACE } from './engine-pod.js';
import { FakeListServer } from './fake-list-server.js';
import { startIdleControl } from './idle-control.js';
import {
  clientGoPeer,
  latencyOf,
  runClientGo,
  runNodeVariant,
  variantNodeFlags,
} from './peer-runner.js';
import type { LatencyResult, VariantConfig, VariantName } from './sync-variant.js';

export const STALL_TARGET_MS = 15;
export const INFORMER_RATIO_TARGET = 0.8;
export const PARSE_RATIO_TARGET = 1.2;
export const HEAP_TARGET_BYTES_PER_POD = 2.5 * 1024;
export const SCALE_50K_RATIO_TARGET = 5.5;
export const HEAP_FLAT_TOLERANCE = 1.1;
/**
 * Between a warm-up burst and the measured one: every variant has handled 1,000 events within
 * ~150 ms here, so the measured burst meets an idle client, not the warm-up's tail.
 */
const WARM_UP_PAUSE_MS = 1_000;

type Name = VariantName | 'client-go';
const VARIANTS: readonly Name[] = ['worker', 'parse', 'informer', 'client-go'];

const USAGE =
  'usage: npm run bench:sync -- [--pods N[,N…] (10000)] [--runs N (3)] [--variants worker,parse,informer,client-go] [--latency-events N (1000)] [--warm-up-events N (0)] [--watch-list] [--client-go-qps N] [--tail-ms N (500)] [--page-size N] [--chunk N] [--node-flags "…"] [--json] [--check]';
const values = parseBenchArgs(
  {
    pods: { type: 'string', default: '10000' },
    'latency-events': { type: 'string', default: '1000' },
    'warm-up-events': { type: 'string', default: '0' },
    'watch-list': { type: 'boolean', default: false },
    'client-go-qps': { type: 'string' },
    runs: { type: 'string', default: '3' },
    variants: { type: 'string', default: VARIANTS.join(',') },
    'tail-ms': { type: 'string', default: '500' },
    'page-size': { type: 'string' },
    chunk: { type: 'string' },
    'node-flags': { type: 'string' },
    json: { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
  },
  USAGE,
);

function count(flag: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`--${flag} must be an integer >= ${min}, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return value;
}

const podCounts = values.pods.split(',').map((raw) => count('pods', raw.trim(), 1) as number);
const latencyEvents = count('latency-events', values['latency-events'], 0) as number;
const warmUpEvents = count('warm-up-events', values['warm-up-events'], 0) as number;
const runs = count('runs', values.runs, 1) as number;
const tailMs = count('tail-ms', values['tail-ms'], 0) as number;
const pageSize = count('page-size', values['page-size'], 1);
const chunk = count('chunk', values.chunk, 1);
let variants = values.variants.split(',').map((name) => name.trim()) as Name[];
for (const name of variants) {
  if (!VARIANTS.includes(name)) {
    process.stderr.write(`--variants: unknown variant ${JSON.stringify(name)} (${VARIANTS})\n`);
    process.exit(2);
  }
}
const nodeFlags = variantNodeFlags(values['node-flags']);

let goBinary: string | undefined;
if (variants.includes('client-go')) {
  const peer = clientGoPeer();
  if ('binary' in peer) {
    goBinary = peer.binary;
  } else {
    process.stdout.write(`${peer.unavailable}\n`);
    variants = variants.filter((name) => name !== 'client-go');
  }
}

function median(numbers: number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const ms = (value: number): string => `${value.toFixed(value < 100 ? 1 : 0)} ms`;
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(2)} KiB`;
const load = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** One child's numbers plus what the server saw of it. */
interface RunResult {
  variant: Name;
  syncedMs: number;
  /** From the process's start (module loading included; client-go: from main()). */
  fromProcessStartMs: number;
  /** From the first LIST request reaching the server to synced: the sync without process warm-up. */
  listToSyncedMs: number;
  /** From the variant's start to its first LIST request (worker thread start, module loading). */
  startupMs: number;
  settledMs?: number;
  /** Worse of the 1 ms ticker's longest gap and the ELD max (Node variants only). */
  stallMs?: number;
  maxGapMs?: number;
  eldMaxMs?: number;
  /** The main thread's CPU in its busiest gap over 10 ms (0: none): the stall of its own making. */
  busiestGapCpuMs?: number;
  heapBytesPerPod: number;
  latency?: LatencyResult;
}

interface Summary {
  variant: Name;
  syncedMs: number;
  fromProcessStartMs: number;
  listToSyncedMs: number;
  startupMs: number;
  settledMs?: number;
  stallMs?: number;
  maxGapMs?: number;
  eldMaxMs?: number;
  busiestGapCpuMs?: number;
  heapBytesPerPod: number;
  latencyP50Ms?: number;
  latencyP99Ms?: number;
  latencyMaxMs?: number;
}

const labels: Record<Name, string> = {
  worker: '(a) WorkerPodSource → ReconcileLoop',
  parse: '(b) fetch + JSON.parse',
  informer: '(c) client-node makeInformer',
  'client-go': '(d) client-go SharedInformer',
};

const optionalMedian = (list: RunResult[], pick: (r: RunResult) => number | undefined) => {
  const numbers = list.map(pick).filter((n): n is number => n !== undefined);
  return numbers.length > 0 ? median(numbers) : undefined;
};
const optMs = (value: number | undefined): string => (value === undefined ? '—' : ms(value));

async function measure(pods: number): Promise<{ summaries: Map<Name, Summary>; raw: unknown }> {
  const idleControl = await startIdleControl();
  const server = await FakeListServer.start({ pods, watchList: values['watch-list'] });
  // The unpaged body (plain parse, the informer) and the pages (ours, client-go's 500).
  server.prepare(0);
  server.prepare(pageSize ?? DEFAULT_LIST_PAGE_SIZE);
  server.prepare(500);
  const config: VariantConfig = {
    url: server.url,
    kubeconfig: server.writeKubeconfig(),
    pods,
    tailMs,
    latencyEvents,
    // With the server serving watch-list, ours runs as the service does by default
    // (`--initial-list`); without, with the source's own default, a LIST.
    ...(values['watch-list'] ? { initialList: 'watch-list' as const } : {}),
    ...(pageSize ? { listPageSize: pageSize } : {}),
    ...(chunk ? { replaceChunkSize: chunk } : {}),
  };
  log(
    `\nbench:sync — ${pods} pods, ${(server.bytesPerPod / 1024).toFixed(2)} KiB each as served ` +
      `(${((server.bytesPerPod * pods) / 1024 / 1024).toFixed(1)} MiB), ${runs} run(s), ` +
      `node ${process.version}${nodeFlags.length ? ` ${nodeFlags.join(' ')}` : ''}` +
      `${pageSize ? `, listPageSize ${pageSize}` : ''}${chunk ? `, replaceChunkSize ${chunk}` : ''}` +
      `${values['watch-list'] ? ', watch-list served (ours and client-go use it; client-node lists)' : ''}` +
      `, latency burst ${latencyEvents} events` +
      `${warmUpEvents > 0 ? ` after an unmeasured one of ${warmUpEvents} (${WARM_UP_PAUSE_MS} ms before it)` : ''}`,
  );
  const results = new Map<Name, RunResult[]>(variants.map((name) => [name, []]));
  const loads: string[] = [];
  /** The measured burst's write loop, per run, when one was written. */
  let burstWriteMs: number | undefined;
  const measuredBurst = (): void => {
    server.burst(latencyEvents);
    burstWriteMs = server.lastBurstWriteMs;
  };
  const burst = (): void => {
    if (warmUpEvents === 0) {
      measuredBurst();
      return;
    }
    // Unstamped, so no recorder counts them: the same events through the same path, which then
    // runs warm for the measured burst (what is left of its latency is not the first pass).
    server.burst(warmUpEvents, { stamped: false });
    setTimeout(measuredBurst, WARM_UP_PAUSE_MS);
  };
  for (let run = 1; run <= runs; run += 1) {
    for (const name of variants) {
      const before = load();
      server.takeCounts();
      burstWriteMs = undefined;
      let result: RunResult;
      let detail = '';
      if (name === 'client-go') {
        const peer = await runClientGo(
          goBinary as string,
          {
            kubeconfig: config.kubeconfig,
            namespace: ENGINE_NAMESPACE,
            selector: defaultSelector(LWS_LABELS),
            latencyEvents,
            ...(values['client-go-qps'] ? { qps: Number(values['client-go-qps']) } : {}),
          },
          { ready: burst },
        );
        const counts = server.takeCounts();
        if (peer.pods !== pods || counts.lists !== 1 || counts.firstListAtMs === undefined) {
          throw new Error(
            `client-go cached ${peer.pods} of ${pods} pods with ${counts.lists} LIST(s)`,
          );
        }
        const latency = latencyOf(peer.latencyMs);
        result = {
          variant: name,
          syncedMs: peer.timeToSyncedMs,
          fromProcessStartMs: peer.timeToSyncedMs,
          listToSyncedMs: peer.syncedAtMs - counts.firstListAtMs,
          startupMs: counts.firstListAtMs - peer.startedAtMs,
          heapBytesPerPod: peer.heapPerPodBytes,
          ...(latency ? { latency } : {}),
        };
        detail = `  ${counts.listPages} pages, watch-list refused ${counts.watchListsRefused}×, ${peer.goVersion}`;
      } else {
        const variantResult = await runNodeVariant(name, config, nodeFlags, { ready: burst });
        const counts = server.takeCounts();
        if (variantResult.cached !== pods) {
          throw new Error(`variant ${name} cached ${variantResult.cached} of ${pods} pods`);
        }
        // Every variant lists once; the two that keep a cache then watch (plain parse does not).
        const watches = name === 'parse' ? 0 : 1;
        if (counts.lists !== 1 || counts.watches < watches || counts.firstListAtMs === undefined) {
          throw new Error(
            `variant ${name} made ${counts.lists} LIST(s) and ${counts.watches} WATCH(es); expected 1 and ≥ ${watches}`,
          );
        }
        result = {
          variant: name,
          syncedMs: variantResult.syncedMs,
          fromProcessStartMs: variantResult.fromProcessStartMs,
          listToSyncedMs: variantResult.syncedAtMs - counts.firstListAtMs,
          startupMs: counts.firstListAtMs - variantResult.startedAtMs,
          settledMs: variantResult.settledMs,
          stallMs: Math.max(variantResult.maxGapMs, variantResult.eldMaxMs),
          maxGapMs: variantResult.maxGapMs,
          eldMaxMs: variantResult.eldMaxMs,
          busiestGapCpuMs: variantResult.busiestGaps?.[0]?.cpuMs ?? 0,
          heapBytesPerPod: variantResult.heapBytesPerPod,
          ...(variantResult.latency ? { latency: variantResult.latency } : {}),
        };
        detail =
          `  settled ${ms(variantResult.settledMs)}  max gap ${ms(variantResult.maxGapMs)}` +
          `  eld max ${ms(variantResult.eldMaxMs)}  rss +${(variantResult.rssDeltaBytes / 1024 / 1024).toFixed(0)} MiB` +
          `  gc max ${ms(variantResult.maxScavengeMs)} minor / ${ms(variantResult.maxMarkCompactMs)} major` +
          `${variantResult.replaceApplyMs === undefined ? '' : `  replace applied in ${ms(variantResult.replaceApplyMs)}`}` +
          `${variantResult.latencyToDriver ? `  latency to the driver p50 ${ms(variantResult.latencyToDriver.p50Ms)} p99 ${ms(variantResult.latencyToDriver.p99Ms)}` : ''}` +
          `\n      gaps > 10 ms (length, main-thread CPU in it @ end, from start): ${
            variantResult.gaps
              .map(
                (gap) =>
                  `${gap.ms.toFixed(0)}, cpu ${gap.cpuMs.toFixed(0)} @ ${gap.endedAtMs.toFixed(0)}`,
              )
              .join(', ') || 'none'
          }` +
          `\n      busiest gaps (main-thread CPU in it, length @ end): ${
            (variantResult.busiestGaps ?? [])
              .map(
                (gap) =>
                  `cpu ${gap.cpuMs.toFixed(0)}, ${gap.ms.toFixed(0)} @ ${gap.endedAtMs.toFixed(0)}`,
              )
              .join(', ') || 'none'
          }`;
      }
      results.get(name)?.push(result);
      loads.push(before);
      log(
        `run ${run} ${name.padEnd(9)} synced ${ms(result.syncedMs).padStart(8)}` +
          ` (${ms(result.fromProcessStartMs)} from process start)` +
          ` (start-up ${ms(result.startupMs)}, ${ms(result.listToSyncedMs)} from LIST)` +
          `  heap/pod ${kib(result.heapBytesPerPod)}` +
          `${result.latency ? `  latency p50 ${ms(result.latency.p50Ms)} p99 ${ms(result.latency.p99Ms)} max ${ms(result.latency.maxMs)} (${result.latency.count}; the server's write loop ${optMs(burstWriteMs)})` : ''}` +
          `  load ${before}${detail}`,
      );
    }
  }
  await server.close();
  const control = await idleControl.stop();

  const summaries = new Map<Name, Summary>();
  for (const [name, list] of results) {
    const summary: Summary = {
      variant: name,
      syncedMs: median(list.map((r) => r.syncedMs)),
      fromProcessStartMs: median(list.map((r) => r.fromProcessStartMs)),
      listToSyncedMs: median(list.map((r) => r.listToSyncedMs)),
      startupMs: median(list.map((r) => r.startupMs)),
      heapBytesPerPod: median(list.map((r) => r.heapBytesPerPod)),
    };
    const optional: Array<[keyof Summary, (r: RunResult) => number | undefined]> = [
      ['settledMs', (r) => r.settledMs],
      ['stallMs', (r) => r.stallMs],
      ['maxGapMs', (r) => r.maxGapMs],
      ['eldMaxMs', (r) => r.eldMaxMs],
      ['busiestGapCpuMs', (r) => r.busiestGapCpuMs],
      ['latencyP50Ms', (r) => r.latency?.p50Ms],
      ['latencyP99Ms', (r) => r.latency?.p99Ms],
      ['latencyMaxMs', (r) => r.latency?.maxMs],
    ];
    for (const [field, pick] of optional) {
      const value = optionalMedian(list, pick);
      if (value !== undefined) (summary as unknown as Record<string, number>)[field] = value;
    }
    summaries.set(name, summary);
  }

  log('');
  log(
    `${pods} pods, medians of ${runs} run(s); load average (1/5/15 min) before each: ${loads.join(' | ')}`,
  );
  log(
    '| variant | time to synced | from process start | start-up | from first LIST | settled | longest stall (ticker / ELD max; main-thread CPU in the busiest gap) | heap per cached pod | event latency p50 / p99 / max |',
  );
  log('|---|---|---|---|---|---|---|---|---|');
  for (const summary of summaries.values()) {
    log(
      `| ${labels[summary.variant]} | ${ms(summary.syncedMs)} | ${ms(summary.fromProcessStartMs)} | ${ms(summary.startupMs)} | ${ms(summary.listToSyncedMs)} | ` +
        `${optMs(summary.settledMs)} | ` +
        `${summary.maxGapMs === undefined ? '—' : `${ms(summary.maxGapMs)} / ${optMs(summary.eldMaxMs)}; ${optMs(summary.busiestGapCpuMs)}`} | ` +
        `${kib(summary.heapBytesPerPod)} | ` +
        `${summary.latencyP50Ms === undefined ? '—' : `${ms(summary.latencyP50Ms)} / ${optMs(summary.latencyP99Ms)} / ${optMs(summary.latencyMaxMs)}`} |`,
    );
  }
  log(
    `noise floor: an idle Node process's 1 ms ticker beside these runs saw ${control.gaps} gaps > 10 ms, ` +
      `the longest ${control.longestMs.map((gap) => gap.toFixed(0)).join(', ') || '—'} ms`,
  );
  idleFloor.set(pods, control.longestMs[0] ?? 0);
  return { summaries, raw: Object.fromEntries(results) };
}

const bySize = new Map<number, Map<Name, Summary>>();
/** Longest gap the idle control process saw, per pod count. */
const idleFloor = new Map<number, number>();
const raw: Record<number, unknown> = {};
for (const pods of podCounts) {
  const measured = await measure(pods);
  bySize.set(pods, measured.summaries);
  raw[pods] = measured.raw;
}

if (bySize.size > 1) {
  log('\nScaling: time to synced (from first LIST), longest stall, heap per cached pod');
  log(
    `| variant | ${[...bySize.keys()].map((n) => `${n.toLocaleString('en-US')} pods`).join(' | ')} |`,
  );
  log(`|---|${[...bySize.keys()].map(() => '---').join('|')}|`);
  for (const name of variants) {
    const cells = [...bySize.values()].map((summaries) => {
      const s = summaries.get(name);
      if (!s) return '—';
      return `${ms(s.syncedMs)} (${ms(s.listToSyncedMs)}), ${optMs(s.stallMs)}, ${kib(s.heapBytesPerPod)}`;
    });
    log(`| ${labels[name]} | ${cells.join(' | ')} |`);
  }
}

const verdicts: Array<{ target: string; value: string; pass: boolean }> = [];
const at10k = bySize.get(10_000) ?? bySize.get(podCounts[0] as number);
const worker = at10k?.get('worker');
const parse = at10k?.get('parse');
const informer = at10k?.get('informer');
const clientGo = at10k?.get('client-go');
if (worker) {
  if (informer) {
    // From each process's start: the informer's import of client-node counts as our worker's
    // start-up (which loads client-node too) does. The variant-start ratio is shown beside it.
    const ratio = worker.fromProcessStartMs / informer.fromProcessStartMs;
    verdicts.push({
      target: `time to synced ≤ ${INFORMER_RATIO_TARGET}× client-node's informer (from process start)`,
      value:
        `${ratio.toFixed(2)}× (${ms(worker.fromProcessStartMs)} / ${ms(informer.fromProcessStartMs)}; ` +
        `from the variant's start ${(worker.syncedMs / informer.syncedMs).toFixed(2)}×)`,
      pass: ratio <= INFORMER_RATIO_TARGET,
    });
  }
  if (parse) {
    const ratio = worker.listToSyncedMs / parse.listToSyncedMs;
    verdicts.push({
      target: `time to synced ≤ ${PARSE_RATIO_TARGET}× plain parse (from the first LIST)`,
      value: `${ratio.toFixed(2)}× (${ms(worker.listToSyncedMs)} / ${ms(parse.listToSyncedMs)})`,
      pass: ratio <= PARSE_RATIO_TARGET,
    });
  }
  verdicts.push({
    target: `main-thread stall ≤ ${STALL_TARGET_MS} ms`,
    value: `${optMs(worker.stallMs)} (an idle process beside it: up to ${ms(idleFloor.get(10_000) ?? idleFloor.get(podCounts[0] as number) ?? 0)})`,
    pass: (worker.stallMs ?? Number.POSITIVE_INFINITY) <= STALL_TARGET_MS,
  });
  verdicts.push({
    target: `heap per cached pod ≤ ${kib(HEAP_TARGET_BYTES_PER_POD)}`,
    value: kib(worker.heapBytesPerPod),
    pass: worker.heapBytesPerPod <= HEAP_TARGET_BYTES_PER_POD,
  });
  if (clientGo) {
    verdicts.push({
      target: "time to synced ≤ client-go's (from start)",
      value: `${(worker.syncedMs / clientGo.syncedMs).toFixed(2)}× (${ms(worker.syncedMs)} / ${ms(clientGo.syncedMs)}; from the first LIST ${ms(worker.listToSyncedMs)} / ${ms(clientGo.listToSyncedMs)})`,
      pass: worker.syncedMs <= clientGo.syncedMs,
    });
    verdicts.push({
      target: "heap per cached pod ≤ ½ client-go's",
      value: `${kib(worker.heapBytesPerPod)} vs ${kib(clientGo.heapBytesPerPod)}`,
      pass: worker.heapBytesPerPod <= clientGo.heapBytesPerPod / 2,
    });
  }
  if (informer?.latencyP50Ms !== undefined && worker.latencyP50Ms !== undefined) {
    for (const [label, ours, theirs] of [
      ['p50', worker.latencyP50Ms, informer.latencyP50Ms],
      ['p99', worker.latencyP99Ms, informer.latencyP99Ms],
    ] as const) {
      verdicts.push({
        target: `event latency ${label} ≤ client-node's (${latencyEvents}-event burst)`,
        value: `${optMs(ours)} vs ${optMs(theirs)}`,
        pass: (ours ?? Number.POSITIVE_INFINITY) <= (theirs ?? 0),
      });
    }
  }
}
const w10 = bySize.get(10_000)?.get('worker');
const w50 = bySize.get(50_000)?.get('worker');
if (w10 && w50) {
  verdicts.push({
    target: `50,000 pods: time to synced ≤ ${SCALE_50K_RATIO_TARGET}× the 10,000-pod one`,
    value: `${(w50.syncedMs / w10.syncedMs).toFixed(2)}× (${ms(w50.syncedMs)} / ${ms(w10.syncedMs)})`,
    pass: w50.syncedMs <= SCALE_50K_RATIO_TARGET * w10.syncedMs,
  });
  verdicts.push({
    target: `50,000 pods: main-thread stall ≤ ${STALL_TARGET_MS} ms`,
    value: optMs(w50.stallMs),
    pass: (w50.stallMs ?? Number.POSITIVE_INFINITY) <= STALL_TARGET_MS,
  });
  verdicts.push({
    target: `50,000 pods: heap per pod flat (≤ ${HEAP_FLAT_TOLERANCE}× the 10,000-pod one)`,
    value: `${kib(w50.heapBytesPerPod)} vs ${kib(w10.heapBytesPerPod)}`,
    pass: w50.heapBytesPerPod <= HEAP_FLAT_TOLERANCE * w10.heapBytesPerPod,
  });
}
log('');
for (const verdict of verdicts) {
  log(`${verdict.pass ? 'PASS' : 'MISS'}  ${verdict.target}: ${verdict.value}`);
}
if (values.json) log(JSON.stringify(raw));
if (values.check && verdicts.some((verdict) => !verdict.pass)) process.exit(1);
