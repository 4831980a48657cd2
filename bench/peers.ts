/**
 * `npm run bench:peers`: our source against client-go's SharedInformer on a REAL kube-apiserver
 * (the e2e environment: kube-apiserver v1.37.2 + etcd, started here and stopped at the end)
 * loaded with the same N realistic engine pods as bench:sync (bench/engine-pod.ts; created with
 * their spec and then their status, so the objects match the loopback server's).
 *
 * Variants, interleaved run by run, each a fresh process:
 * - `worker`: our `WorkerPodSource` → `ReconcileLoop` as the service runs it (protobuf,
 *   watch-list: `--initial-list` defaults to it);
 * - `worker-list`: the same with a paged LIST of 500, then WATCH (`--initial-list list`);
 * - `worker-json`: watch-list asking for JSON (`--kube-api-content-type application/json`);
 * - `worker-gzip`, `worker-list-gzip`: `worker` and `worker-list` asking for gzip
 *   (`--kube-api-compression`: the LIST pages and the watch-list);
 * - `worker-http1`: `worker` over HTTP/1.1 (`--kube-api-http2=false`; client-go's counterpart is
 *   `DISABLE_HTTP2=1` in this process's environment, which its child inherits);
 * - `client-go`: client-go's defaults as Kubernetes' own controllers run them: protobuf, and
 *   watch-list (WATCH with sendInitialEvents=true, served from the watch cache) where the server
 *   supports it, which v1.37 does;
 * - `client-go-json`: the same with JSON;
 * - `wire-floor`: no informer: the Go peer reads the default watch-list's frames (protobuf, over
 *   client-go's transport) to its end bookmark and decodes nothing, from `main()`: when a sync's
 *   bytes can arrive from this API server at all, the floor under every client's time to synced;
 * - `baseline`: `worker` as another build runs it (`--baseline`);
 * - `service`: the built service itself (dist/src/main.js, its defaults, `--leader-elect=false`),
 *   timed from spawning its process to its `/readyz` answering 200: time to synced as a user sees
 *   it, module loading and the reflector thread's start included, as client-go's is from `main()`.
 * Measured: time to synced from the process's (variant's) start, the process's CPU to synced (every
 * thread; ours from the process's start, module loading included, as client-go's), and heap per cached pod (ours:
 * the main thread's heap; client-go: HeapAlloc after GC). The first LIST's arrival is not visible
 * on a real API server, so there is no "from the first LIST" column here. Also measured, per
 * variant's whole run (bench/process-cost.ts): the API server's CPU seconds and peak RSS, and
 * etcd's CPU seconds — what serving that client's initial sync cost the control plane.
 *
 * Options: `--pods N` (10000), `--runs N` (3), `--json`, `--list-probe` (before the variants: the
 * LIST alone, in this process, no worker thread: `HttpPodApi.listPods` per encoding and page size,
 * and the same pages fetched without decoding, so server time and decode time separate),
 * `--variants a,b` (run only these), `--baseline DIR` (adds variant `baseline`: the `worker`
 * variant of another build, alternated with this one's on the same server, for an A/B),
 * `--relists N` (default 1: after its sync and the measurements above, each of our variants aborts
 * its stream N times and times the loop's new stream to its `replace` applied, with the process's
 * CPU and the longest main-thread stall meanwhile; the stall target covers relists too),
 * `--idle-control` (an idle process with a 1 ms ticker beside every variant, bench/idle-control.ts:
 * the stall's noise floor; off by default, so that the timed runs have no fourth process),
 * `--node-flags='…'` (Node/V8 flags for this build's variants: with `--baseline` naming this
 * build's own folder, an A/B of the flags; `--node-flags=` for V8's defaults). Without it every
 * Node variant, the baseline's too, runs with the image's `NODE_OPTIONS` semi-space
 * (`DEPLOYED_NODE_FLAGS`: `--max-semi-space-size=8`), so its stall is measured as deployed; the
 * stall shown beside it is the main thread's CPU in its busiest gap (bench/sync-variant.ts). Needs the
 * e2e binaries (built from the Go module proxy on first use, like `npm run test:e2e`) and `go` for
 * the peer.
 */
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { loadavg } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { loadApiConnection } from '../src/kubernetes/client/connection.js';
import { HttpPodApi } from '../src/kubernetes/resources/http-pod-api.js';
import { defaultSelector, LWS_LABELS } from '../src/pools/labels.js';
import { startKubeEnvironment } from '../test/e2e/environment/kube-environment.js';
import { parseBenchArgs } from './bench-args.js';
import { ENGINE_NAMESPACE, enginePod } from './engine-pod.js';
import { startIdleControl } from './idle-control.js';
import {
  clientGoPeer,
  DEPLOYED_NODE_FLAGS,
  runClientGo,
  runNodeVariant,
  variantNodeFlags,
} from './peer-runner.js';
import { environmentPid, type ProcessCostResult, startProcessCost } from './process-cost.js';
import { timeServiceToReady } from './service-start.js';
import type { RelistResult } from './sync-variant.js';

const ALL_VARIANTS = [
  'worker',
  'worker-list',
  'worker-json',
  'worker-gzip',
  'worker-list-gzip',
  'worker-http1',
  'client-go',
  'client-go-json',
  'wire-floor',
  'baseline',
  'service',
] as const;
/** The variants the Go peer runs. */
const GO_VARIANTS: readonly Variant[] = ['client-go', 'client-go-json', 'wire-floor'];
type Variant = (typeof ALL_VARIANTS)[number];
const USAGE =
  'usage: npm run bench:peers -- [--pods N (10000)] [--runs N (3)] [--json] [--list-probe]' +
  ` [--variants a,b (all but baseline; of ${ALL_VARIANTS.join(', ')})] [--baseline DIR]` +
  ' [--relists N (after its sync, each of our variants relists N times in its warm process; default 1)]' +
  " [--node-flags='--flag …' (Node/V8 flags for this build's variants, not the baseline's; default --max-semi-space-size=8)]" +
  " [--idle-control (an idle process beside every variant: the stall's noise floor)]";
/** The issue's bound on the longest main-thread stall, unless the machine's own floor is above it. */
const STALL_TARGET_MS = 15;
/** Bytes `rawList` read off the wire (before any gzip is inflated), summed over its calls. */
let rawWireBytes = 0;

const values = parseBenchArgs(
  {
    pods: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
    'list-probe': { type: 'boolean', default: false },
    variants: { type: 'string' },
    baseline: { type: 'string' },
    'node-flags': { type: 'string' },
    'idle-control': { type: 'boolean', default: false },
    relists: { type: 'string', default: '1' },
  },
  USAGE,
);
/**
 * `--baseline DIR`: another build of this project (a checkout where `npm run build` ran, e.g. a
 * worktree of main), whose `worker` variant runs as `baseline`, alternated with this build's on
 * the same server: an A/B of a change that the run-to-run spread of separate benches would hide.
 */
const baselineScript = values.baseline
  ? `${values.baseline.replace(/\/$/, '')}/dist/bench/sync-variant.js`
  : undefined;
if (baselineScript && !existsSync(baselineScript)) {
  process.stderr.write(`--baseline: ${baselineScript} does not exist (run npm run build there)\n`);
  process.exit(2);
}
/** `--node-flags`: e.g. V8 heap or JIT flags, tried on this build with `--baseline` its own folder. */
const nodeFlags = variantNodeFlags(values['node-flags']);
const variants: readonly Variant[] = values.variants
  ? (values.variants.split(',') as Variant[])
  : ALL_VARIANTS.filter((variant) => variant !== 'baseline' || baselineScript);
const unknown = variants.filter((variant) => !ALL_VARIANTS.includes(variant));
if (unknown.length > 0 || variants.length === 0) {
  process.stderr.write(`--variants: unknown ${JSON.stringify(unknown)}; ${USAGE}\n`);
  process.exit(2);
}
if (variants.includes('baseline') && !baselineScript) {
  process.stderr.write('--variants baseline needs --baseline DIR\n');
  process.exit(2);
}
const pods = Number(values.pods);
const runs = Number(values.runs);
if (!(Number.isInteger(pods) && pods > 0 && Number.isInteger(runs) && runs > 0)) {
  process.stderr.write('--pods and --runs must be positive integers\n');
  process.exit(2);
}
/** `--relists N`: after its sync, each of our variants relists N times in its warm process. */
const relists = Number(values.relists);
if (!(Number.isInteger(relists) && relists >= 0)) {
  process.stderr.write('--relists must be a whole number (0: none)\n');
  process.exit(2);
}
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const ms = (value: number): string => `${value.toFixed(value < 100 ? 1 : 0)} ms`;
/** A time a run may not report (an older build or peer): `?` then. */
const reportedMs = (value: number | undefined): string => (value === undefined ? '?' : ms(value));
const kib = (bytes: number): string =>
  Number.isNaN(bytes) ? '—' : `${(bytes / 1024).toFixed(2)} KiB`;
const load = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

const peer = clientGoPeer();
if (!('binary' in peer)) {
  log(peer.unavailable);
  process.exit(0);
}

log(`bench:peers — starting kube-apiserver + etcd (watch cache on, the default); load ${load()}`);
// Profiling on (the e2e environment turns it off) for `settleApiServer`'s collection.
const env = await startKubeEnvironment({ watchCache: true, apiserverArgs: ['--profiling=true'] });
try {
  const opts: Record<string, unknown> = {};
  await env.kubeConfig.applyToHTTPSOptions(opts as never);
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const server = new URL(env.server);
  /**
   * One request to the API server as its admin, answering the body; a non-2xx status throws.
   * `via`: the loading's kept-alive pool by default; `false`: a connection of its own.
   */
  const call = (
    method: string,
    path: string,
    body?: unknown,
    via: Agent | false = agent,
  ): Promise<string> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = request(
        {
          ...opts,
          agent: via,
          host: server.hostname,
          port: server.port,
          method,
          path,
          timeout: 60_000,
          headers: {
            ...(payload
              ? {
                  'Content-Type':
                    method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
                  'Content-Length': payload.length,
                }
              : {}),
            Authorization: `Bearer ${env.token}`,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () =>
            (res.statusCode ?? 0) < 300
              ? resolve(text)
              : reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`)),
          );
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  const send = (method: string, path: string, body: unknown): Promise<void> =>
    call(method, path, body).then(() => {});
  const loadStarted = performance.now();
  await send('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: ENGINE_NAMESPACE },
  });
  // Create every pod (spec), then write its status, 16 requests in flight.
  const base = `/api/v1/namespaces/${ENGINE_NAMESPACE}/pods`;
  const inFlight = 16;
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const index = next++;
      if (index >= pods) return;
      const pod = enginePod(index, 1) as {
        metadata: Record<string, unknown>;
        spec: unknown;
        status: unknown;
      };
      const { resourceVersion, uid, creationTimestamp, managedFields, ...metadata } = pod.metadata;
      void resourceVersion;
      void uid;
      void creationTimestamp;
      void managedFields;
      const created = { apiVersion: 'v1', kind: 'Pod', metadata, spec: pod.spec };
      await send('POST', base, created);
      await send('PATCH', `${base}/${metadata.name}/status`, { status: pod.status });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  agent.destroy();
  log(`loaded ${pods} pods (spec + status) in ${ms(performance.now() - loadStarted)}`);

  const selector = defaultSelector(LWS_LABELS);
  if (values['list-probe']) await listProbe(env.kubeconfigPath, selector);
  type Row = {
    variant: string;
    syncedMs: number;
    heapBytesPerPod: number;
    apiserver: ProcessCostResult;
    apiserverAllocatedBytes: number;
    etcdCpuSeconds: number;
    /** The process's CPU (every thread) from its start to synced (the service: to ready). */
    cpuMs: number;
    /**
     * From the start to the first request (ours: the reflector beginning its read, from the
     * variant's start; client-go: the first request reaching its transport, from main()).
     */
    requestMs?: number;
    /** Ours: each relist after the sync, in the same warm process (`--relists`). */
    relists?: RelistResult[];
    /** Ours: the longest main-thread stall, and the idle control process's longest gap beside it. */
    stallMs?: number;
    idleFloorMs?: number;
  };
  const rows: Row[] = [];
  const apiserverPid = environmentPid(env.stateDir, 'kube-apiserver');
  /**
   * The API server's bytes allocated so far (its Go runtime's counter, from /metrics). Its RSS
   * stays at the high-water mark loading the pods left, so only this shows a client's memory cost.
   */
  const apiserverAllocated = async (): Promise<number> => {
    const text = await call('GET', '/metrics', undefined, false);
    const match = /^go_memstats_alloc_bytes_total (\S+)$/m.exec(text);
    if (!match) throw new Error('api server /metrics: no go_memstats_alloc_bytes_total');
    return Number(match[1]);
  };
  /** Has the API server run a full collection (Go's pprof heap endpoint does one first, `gc=1`). */
  const settleApiServer = async (): Promise<void> => {
    await call('GET', '/debug/pprof/heap?gc=1', undefined, false);
  };
  const etcdPid = environmentPid(env.stateDir, 'etcd');
  const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  const cost = (c: ProcessCostResult, allocated: number, etcdCpu: number): string =>
    `  api server ${c.cpuSeconds.toFixed(2)} CPU s, allocated ${mib(allocated)}, peak RSS ${mib(c.peakRssBytes)}` +
    ` (+${mib(c.peakRssBytes - c.rssBeforeBytes)}, ${c.peakFrom}); etcd ${etcdCpu.toFixed(2)} CPU s`;
  for (let run = 1; run <= runs; run += 1) {
    for (const variant of variants) {
      const before = load();
      // The API server's garbage from the load and the variants before is collected now, so
      // this variant's CPU is its own: without it, whichever variant came next paid for a
      // collection (0.4 against 1.0-1.2 CPU s at 10,000 pods, by position, not by client).
      await settleApiServer();
      // The API server's and etcd's cost of this variant's whole run (start, sync, the short tail).
      const allocatedBefore = await apiserverAllocated();
      const apiserverWindow = startProcessCost(apiserverPid);
      const etcdWindow = startProcessCost(etcdPid);
      /**
       * The sync's cost to the API server and etcd: taken when our variant starts its relists
       * (`--relists`), or at its end; the relists' own cost to the API server is measured apart.
       */
      let syncCost:
        | { apiserver: ProcessCostResult; etcdCpuSeconds: number; allocated: Promise<number> }
        | undefined;
      let relistWindow: ReturnType<typeof startProcessCost> | undefined;
      const closeSyncCost = (): NonNullable<typeof syncCost> => {
        if (!syncCost) {
          syncCost = {
            apiserver: apiserverWindow.stop(),
            etcdCpuSeconds: etcdWindow.stop().cpuSeconds,
            allocated: apiserverAllocated(),
          };
          relistWindow = startProcessCost(apiserverPid);
        }
        return syncCost;
      };
      // The stall target's noise floor (`--idle-control`), measured beside every variant,
      // client-go's too. Off by default: its 1 ms ticker is a fourth process waking a thousand
      // times a second on two cores, so the times to compare come from runs without it.
      const idleControl = values['idle-control'] ? await startIdleControl() : undefined;
      /** What the variant itself reports: its sync, its heap, and the rest of its log line. */
      let synced: {
        syncedMs: number;
        heapBytesPerPod: number;
        cpuMs: number;
        requestMs?: number;
        relists?: RelistResult[];
        detail: string;
        stallMs?: number;
        idleFloorMs?: number;
      };
      if (variant === 'service') {
        const result = await timeServiceToReady(env.kubeconfigPath, ENGINE_NAMESPACE);
        synced = {
          syncedMs: result.readyMs,
          heapBytesPerPod: Number.NaN,
          cpuMs: result.cpuMs,
          detail: `process CPU to ready ${ms(result.cpuMs)}  RSS at ready ${mib(result.rssBytes)}`,
        };
      } else if (!GO_VARIANTS.includes(variant)) {
        const result = await runNodeVariant(
          'worker',
          {
            url: env.server,
            kubeconfig: env.kubeconfigPath,
            pods,
            tailMs: 500,
            namespace: ENGINE_NAMESPACE,
            apiContentType: variant === 'worker-json' ? 'json' : 'protobuf',
            initialList:
              variant === 'worker-list' || variant === 'worker-list-gzip' ? 'list' : 'watch-list',
            apiCompression: variant === 'worker-gzip' || variant === 'worker-list-gzip',
            ...(variant === 'worker-http1' ? { apiHttp2: false } : {}),
            relists,
          },
          variant === 'baseline' ? DEPLOYED_NODE_FLAGS : nodeFlags,
          {
            relisting: () => {
              closeSyncCost();
            },
          },
          variant === 'baseline' ? baselineScript : undefined,
        );
        if (result.cached !== pods) throw new Error(`ours cached ${result.cached} of ${pods}`);
        const stallMs = Math.max(result.maxGapMs, result.eldMaxMs);
        const idleFloorMs = idleControl
          ? ((await idleControl.stop()).longestMs[0] ?? 0)
          : undefined;
        const relistDetail = (result.relists ?? [])
          .map(
            (relist) =>
              `  relist ${ms(relist.ms)} (read began ${reportedMs(relist.requestMs)}, replace received ${ms(relist.receivedMs)}, CPU ${ms(relist.cpuMs)}` +
              ` of which the main thread ${ms(relist.mainThreadCpuMs)}, stall ${ms(relist.stallMs)})`,
          )
          .join('');
        synced = {
          syncedMs: result.syncedMs,
          heapBytesPerPod: result.heapBytesPerPod,
          cpuMs: result.cpuMsAtSynced,
          ...(result.requestMs === undefined ? {} : { requestMs: result.requestMs }),
          ...(result.relists ? { relists: result.relists } : {}),
          stallMs,
          ...(idleFloorMs === undefined ? {} : { idleFloorMs }),
          detail:
            `read began ${reportedMs(result.requestMs)}  stall ${ms(stallMs)}` +
            ` (main-thread CPU in the busiest gap ${ms(result.busiestGaps?.[0]?.cpuMs ?? 0)}` +
            `${idleFloorMs === undefined ? '' : `; an idle process beside it: up to ${ms(idleFloorMs)}`})` +
            `  CPU to synced ${ms(result.cpuMsAtSynced)}${relistDetail}`,
        };
      } else {
        const result = await runClientGo(peer.binary, {
          kubeconfig: env.kubeconfigPath,
          namespace: ENGINE_NAMESPACE,
          selector,
          ...(variant === 'client-go-json' ? { contentType: 'application/json' } : {}),
          ...(variant === 'wire-floor' ? { wireFloor: true } : {}),
        });
        if (result.pods !== pods) throw new Error(`${variant} read ${result.pods} of ${pods} pods`);
        synced = {
          syncedMs: result.timeToSyncedMs,
          heapBytesPerPod: result.heapPerPodBytes,
          cpuMs: result.cpuMsAtSynced,
          ...(result.requestMs === undefined ? {} : { requestMs: result.requestMs }),
          detail: `(${result.contentType}, ${result.goVersion})  first request ${reportedMs(result.requestMs)}  CPU to synced ${ms(result.cpuMsAtSynced)}`,
        };
      }
      // Already stopped for ours, whose line includes its floor; stopping again returns the same.
      await idleControl?.stop();
      const relistApiserverCpu = relistWindow?.stop().cpuSeconds;
      const { apiserver, etcdCpuSeconds, allocated } = closeSyncCost();
      const apiserverAllocatedBytes = (await allocated) - allocatedBefore;
      const row: Row = {
        variant,
        syncedMs: synced.syncedMs,
        heapBytesPerPod: synced.heapBytesPerPod,
        cpuMs: synced.cpuMs,
        ...(synced.requestMs === undefined ? {} : { requestMs: synced.requestMs }),
        ...(synced.relists ? { relists: synced.relists } : {}),
        apiserver,
        apiserverAllocatedBytes,
        etcdCpuSeconds,
        ...(synced.stallMs === undefined ? {} : { stallMs: synced.stallMs }),
        ...(synced.idleFloorMs === undefined ? {} : { idleFloorMs: synced.idleFloorMs }),
      };
      log(
        `run ${run} ${variant.padEnd(14)} synced ${ms(row.syncedMs)}  heap/pod ${kib(row.heapBytesPerPod)}` +
          `  ${synced.detail}  load ${before}${cost(apiserver, apiserverAllocatedBytes, etcdCpuSeconds)}` +
          (relistApiserverCpu === undefined
            ? ''
            : `; api server for the relists ${relistApiserverCpu.toFixed(2)} CPU s`),
      );
      rows.push(row);
    }
  }
  const median = (numbers: number[]): number => {
    const sorted = [...numbers].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1
      ? (sorted[middle] as number)
      : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
  };
  const summary = new Map(
    variants.map((variant) => {
      const mine = rows.filter((row) => row.variant === variant);
      return [
        variant,
        {
          syncedMs: median(mine.map((row) => row.syncedMs)),
          heap: median(mine.map((row) => row.heapBytesPerPod)),
          cpuMs: median(mine.map((row) => row.cpuMs)),
          requestMs: median(
            mine.flatMap((row) => (row.requestMs === undefined ? [] : [row.requestMs])),
          ),
          apiserverCpu: median(mine.map((row) => row.apiserver.cpuSeconds)),
          apiserverPeak: median(mine.map((row) => row.apiserver.peakRssBytes)),
          apiserverGrowth: median(
            mine.map((row) => row.apiserver.peakRssBytes - row.apiserver.rssBeforeBytes),
          ),
          apiserverAllocated: median(mine.map((row) => row.apiserverAllocatedBytes)),
          etcdCpu: median(mine.map((row) => row.etcdCpuSeconds)),
        },
      ] as const;
    }),
  );
  log('');
  log(`real kube-apiserver ${pods} pods, medians of ${runs} run(s); load now ${load()}`);
  log(
    '| variant | time to synced (from start) | process CPU to synced | heap per cached pod | API server CPU s | API server allocated | API server peak RSS (growth) | etcd CPU s |',
  );
  log('|---|---|---|---|---|---|---|---|');
  const labels = {
    worker: '(a) WorkerPodSource → ReconcileLoop, service defaults (protobuf, watch-list)',
    'worker-list': '(a″) WorkerPodSource → ReconcileLoop, protobuf, LIST 500 + WATCH',
    'worker-json': '(a′) WorkerPodSource → ReconcileLoop, JSON (watch-list)',
    'worker-gzip': '(a‴) WorkerPodSource → ReconcileLoop, defaults + gzip (--kube-api-compression)',
    'worker-list-gzip': '(a⁗) WorkerPodSource → ReconcileLoop, LIST 500 + WATCH + gzip',
    'worker-http1':
      '(a⁽⁵⁾) WorkerPodSource → ReconcileLoop, defaults over HTTP/1.1 (--kube-api-http2=false)',
    'client-go': '(d) client-go SharedInformer, defaults (protobuf, watch-list)',
    'client-go-json': '(d′) client-go SharedInformer, JSON (watch-list)',
    'wire-floor':
      "(f) floor: the watch-list's frames read to its end bookmark by a Go process, nothing decoded",
    baseline: `(b) the --baseline build's (a), ${values.baseline ?? ''}`,
    service: '(s) the built service, process spawn → `/readyz` 200 (defaults)',
  };
  for (const [variant, s] of summary) {
    log(
      `| ${labels[variant]} | ${ms(s.syncedMs)} | ${ms(s.cpuMs)} | ${kib(s.heap)} | ${s.apiserverCpu.toFixed(2)} | ${mib(s.apiserverAllocated)} |` +
        ` ${mib(s.apiserverPeak)} (+${mib(s.apiserverGrowth)}) | ${s.etcdCpu.toFixed(2)} |`,
    );
  }
  const ours = summary.get('worker');
  const theirs = summary.get('client-go');
  if (ours && theirs) {
    log('');
    log(
      `${ours.syncedMs <= theirs.syncedMs ? 'PASS' : 'MISS'}  time to synced ≤ client-go's (defaults): ${ms(ours.syncedMs)} vs ${ms(theirs.syncedMs)}`,
    );
    log(
      `${ours.heap <= theirs.heap / 2 ? 'PASS' : 'MISS'}  heap per pod ≤ ½ client-go's: ${kib(ours.heap)} vs ${kib(theirs.heap)}`,
    );
    log(
      `${ours.apiserverCpu <= theirs.apiserverCpu ? 'PASS' : 'MISS'}  API server CPU ≤ client-go's: ${ours.apiserverCpu.toFixed(2)} vs ${theirs.apiserverCpu.toFixed(2)} s`,
    );
    log(
      `${ours.apiserverAllocated <= theirs.apiserverAllocated ? 'PASS' : 'MISS'}  API server bytes allocated ≤ client-go's: ${mib(ours.apiserverAllocated)} vs ${mib(theirs.apiserverAllocated)}`,
    );
    // Run by run: a stall is ours only where it passes both 15 ms and what an idle process saw
    // beside it in the same run (the issue's "≤ 15 ms or the idle control's noise floor").
    const stalls = rows
      .filter((row) => row.variant === 'worker' && row.stallMs !== undefined)
      .map((row) => ({
        ...row,
        // "During sync and relists": a run's stall is the longest of its sync's and its relists'.
        stallMs: Math.max(row.stallMs ?? 0, ...(row.relists ?? []).map((relist) => relist.stallMs)),
      }));
    const ownStalls = stalls.filter(
      (row) => (row.stallMs ?? 0) > Math.max(STALL_TARGET_MS, row.idleFloorMs ?? 0),
    );
    log(
      `${ownStalls.length === 0 ? 'PASS' : 'MISS'}  longest main-thread stall ≤ ${STALL_TARGET_MS} ms or the idle process's beside it, in every run: ` +
        stalls
          .map(
            (row) =>
              `${ms(row.stallMs ?? 0)} (idle ${row.idleFloorMs === undefined ? 'not measured: --idle-control' : ms(row.idleFloorMs)})`,
          )
          .join(', '),
    );
    const warm = rows.filter((row) => row.variant === 'worker').flatMap((row) => row.relists ?? []);
    if (warm.length > 0) {
      // Not a target: where the cold start's share of (a) shows. A relist runs the same code on
      // the same server in a thread and a process that are already warm.
      log(
        `INFO  (a)'s relists in its warm process, median of ${warm.length}: ${ms(median(warm.map((relist) => relist.ms)))}` +
          ` (process CPU ${ms(median(warm.map((relist) => relist.cpuMs)))}) against its first sync's ${ms(ours.syncedMs)}` +
          ` (CPU from process start ${ms(ours.cpuMs)}) and client-go's ${ms(theirs.syncedMs)} (CPU ${ms(theirs.cpuMs)})`,
      );
    }
    if (Number.isFinite(ours.requestMs) && Number.isFinite(theirs.requestMs)) {
      // Not a target: what each spends before it asks (ours: the thread's start, its code and
      // the kubeconfig loaded), and so how much of the gap comes before the first byte.
      const warmRequests = warm.flatMap((relist) =>
        relist.requestMs === undefined ? [] : [relist.requestMs],
      );
      log(
        `INFO  before the first request: (a) ${ms(ours.requestMs)} from its start, client-go ${ms(theirs.requestMs)} from main()` +
          (warmRequests.length > 0
            ? `; a warm relist ${ms(median(warmRequests))} from its stream's open`
            : ''),
      );
    }
    const floor = summary.get('wire-floor');
    if (floor) {
      // Not a target: how far each client is above the bytes' own arrival from this server.
      log(
        `INFO  the wire floor (f): ${ms(floor.syncedMs)} (CPU ${ms(floor.cpuMs)}); above it: ours ${ms(ours.syncedMs - floor.syncedMs)},` +
          ` client-go ${ms(theirs.syncedMs - floor.syncedMs)}`,
      );
    }
    const service = summary.get('service');
    if (service) {
      log(
        `${service.syncedMs <= theirs.syncedMs ? 'PASS' : 'MISS'}  the built service, spawn → ready ≤ client-go's main() → synced: ${ms(service.syncedMs)} vs ${ms(theirs.syncedMs)}`,
      );
    }
    // RSS peaks are printed, not judged: the API server keeps the memory loading the pods took,
    // so a sync's growth over it is within a page or two for every variant.
  }
  if (values.json) log(JSON.stringify(rows));
} finally {
  await env.stop();
}
process.exit(0);

/**
 * The LIST alone, in-process: decoded (`listPods`, pods read as the worker reads them: transcoded
 * into the hop's JSON) and raw (bytes only), per encoding and page size; then the same for a
 * watch-list's initial events.
 */
async function listProbe(kubeconfigPath: string, labelSelector: string): Promise<void> {
  const connection = await loadApiConnection({ kubeconfigPath });
  const variants = [
    ['protobuf', new HttpPodApi(connection, 'protobuf')],
    ['json', new HttpPodApi(connection, 'json')],
  ] as const;
  for (const [name, api] of variants) {
    const contentType = name === 'json' ? 'json' : 'protobuf';
    for (const limit of [500, 0]) {
      const decoded: number[] = [];
      const raw: number[] = [];
      const rawPlain: number[] = [];
      let bytes = 0;
      let gzipWire = 0;
      for (let run = 0; run < 3; run += 1) {
        let pageBytes = 0;
        const started = performance.now();
        const list = await api.listPods({
          namespace: ENGINE_NAMESPACE,
          labelSelector,
          limit,
          signal: AbortSignal.timeout(60_000),
          onBytes: (count) => {
            pageBytes += count;
          },
        });
        decoded.push(performance.now() - started);
        bytes = pageBytes;
        if (list.pods.length === 0) throw new Error('list probe: no pods');
        rawWireBytes = 0;
        raw.push(await rawList(connection, contentType, labelSelector, limit, true));
        gzipWire = rawWireBytes;
        rawPlain.push(await rawList(connection, contentType, labelSelector, limit, false));
      }
      const best = (values: number[]) => Math.min(...values);
      log(
        `list probe ${name.padEnd(8)} limit ${String(limit).padStart(3)}: listPods best ${ms(best(decoded))}` +
          `, raw fetch best ${ms(best(raw))} (gzip) ${ms(best(rawPlain))} (identity), ${(bytes / 1e6).toFixed(1)} MB (${(gzipWire / 1e6).toFixed(1)} MB gzipped); load ${load()}`,
      );
    }
  }
  // Watch-list: the initial events up to the initial-events-end bookmark, each frame's pod read.
  const watchVariants = [
    ['protobuf', new HttpPodApi(connection, 'protobuf')],
    ['json', new HttpPodApi(connection, 'json')],
    ['protobuf+gzip', new HttpPodApi(connection, 'protobuf', true)],
  ] as const;
  for (const [name, api] of watchVariants) {
    const times: number[] = [];
    let count = 0;
    for (let run = 0; run < 3; run += 1) {
      count = await timedWatchList(api, labelSelector, times);
    }
    log(
      `watch-list probe ${name.padEnd(8)}: initial events of ${count} pods best ${ms(Math.min(...times))}; load ${load()}`,
    );
  }
}

/** One watch-list read to its initial-events-end bookmark; pushes its time, answers its pods. */
async function timedWatchList(
  api: HttpPodApi,
  labelSelector: string,
  times: number[],
): Promise<number> {
  const controller = new AbortController();
  const started = performance.now();
  const stream = await api.watchPods({
    namespace: ENGINE_NAMESPACE,
    labelSelector,
    resourceVersion: '',
    sendInitialEvents: true,
    timeoutSeconds: 60,
    signal: controller.signal,
  });
  let count = 0;
  try {
    for await (const frame of stream) {
      if (frame.kind !== 'decoded') throw new Error(`watch-list probe: ${frame.error}`);
      const value = frame.value as { type?: string };
      if (value.type === 'BOOKMARK') break;
      count += 1;
    }
  } finally {
    controller.abort();
    stream.close();
  }
  times.push(performance.now() - started);
  return count;
}

/** Fetches every page of the LIST without decoding anything but the continue token. */
async function rawList(
  connection: Awaited<ReturnType<typeof loadApiConnection>>,
  contentType: 'protobuf' | 'json',
  labelSelector: string,
  limit: number,
  gzip: boolean,
): Promise<number> {
  const { peekContinueToken } = await import('../src/kubernetes/resources/http-pod-api.js');
  const { peekProtobufContinueToken } = await import('../src/kubernetes/codec/pod-protobuf.js');
  const started = performance.now();
  let token: string | undefined;
  do {
    const url = new URL(`${connection.server}/api/v1/namespaces/${ENGINE_NAMESPACE}/pods`);
    url.searchParams.set('labelSelector', labelSelector);
    if (limit > 0) url.searchParams.set('limit', String(limit));
    if (token) url.searchParams.set('continue', token);
    const prepared = await connection.requestOptions();
    const body = await new Promise<Buffer>((resolve, reject) => {
      const req = request(
        url,
        {
          ...prepared,
          headers: {
            ...prepared.headers,
            Accept:
              contentType === 'protobuf'
                ? 'application/vnd.kubernetes.protobuf'
                : 'application/json',
            ...(gzip ? { 'Accept-Encoding': 'gzip' } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            rawWireBytes += chunk.length;
          });
          res.on('end', () => {
            const all = Buffer.concat(chunks);
            resolve(res.headers['content-encoding'] === 'gzip' ? gunzipSync(all) : all);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    token =
      limit > 0
        ? contentType === 'protobuf'
          ? peekProtobufContinueToken(body)
          : peekContinueToken(body)
        : undefined;
  } while (token);
  return performance.now() - started;
}
