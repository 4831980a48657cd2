/**
 * `npm run bench:sync -- --pods 10000`: how much a full sync of N realistic engine pods costs the
 * main thread, side by side for (a) our worker-backed source into a `ReconcileLoop`, (b) plain
 * `fetch` + `JSON.parse` of the same bytes and (c) client-node's `makeInformer` (issue 3).
 *
 * This process serves the LIST (bench/fake-list-server.ts) and spawns one fresh child per variant
 * and run (bench/sync-variant.ts), interleaving the variants so machine load drifts over all of
 * them alike, then prints each run, the medians, and PASS/MISS against the targets:
 * - the worker source's longest main-thread stall ≤ 20 ms;
 * - its time to synced ≤ 1.3× the plain parse's;
 * - its heap per cached pod ≤ 3.5 KiB.
 *
 * Options: `--pods N` (10000), `--runs N` (3), `--variants worker,parse,informer`,
 * `--tail-ms N` (500), `--page-size N` / `--chunk N` (the source's `listPageSize` /
 * `replaceChunkSize`; default: the source's defaults), `--node-flags "..."` (extra flags for the
 * children, e.g. `--max-semi-space-size=16`), `--json` (raw results), `--check` (exit 1 on a
 * missed target; otherwise a benchmark always exits 0).
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_LIST_PAGE_SIZE } from '../src/kubernetes/http-pod-api.js';
import { FakeListServer } from './fake-list-server.js';
import type { VariantConfig, VariantName, VariantResult } from './sync-variant.js';

export const STALL_TARGET_MS = 20;
export const SYNC_RATIO_TARGET = 1.3;
export const HEAP_TARGET_BYTES_PER_POD = 3.5 * 1024;

const VARIANTS: readonly VariantName[] = ['worker', 'parse', 'informer'];

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    variants: { type: 'string', default: VARIANTS.join(',') },
    'tail-ms': { type: 'string', default: '500' },
    'page-size': { type: 'string' },
    chunk: { type: 'string' },
    'node-flags': { type: 'string', default: '' },
    json: { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
  },
});

function count(flag: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`--${flag} must be an integer >= ${min}, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return value;
}

const pods = count('pods', values.pods, 1) as number;
const runs = count('runs', values.runs, 1) as number;
const tailMs = count('tail-ms', values['tail-ms'], 0) as number;
const pageSize = count('page-size', values['page-size'], 1);
const chunk = count('chunk', values.chunk, 1);
const variants = values.variants.split(',').map((name) => name.trim()) as VariantName[];
for (const name of variants) {
  if (!VARIANTS.includes(name)) {
    process.stderr.write(`--variants: unknown variant ${JSON.stringify(name)} (${VARIANTS})\n`);
    process.exit(2);
  }
}
const nodeFlags = values['node-flags'].split(/\s+/).filter(Boolean);

function runChild(name: VariantName, config: VariantConfig): Promise<VariantResult> {
  const script = fileURLToPath(new URL('./sync-variant.js', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--expose-gc', ...nodeFlags, script, name, JSON.stringify(config)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').at(-1);
      if (code !== 0 || !line) {
        reject(new Error(`variant ${name} exited with ${code}`));
        return;
      }
      resolve(JSON.parse(line) as VariantResult);
    });
  });
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

const server = await FakeListServer.start({ pods });
// The unpaged body (plain parse, the informer) and the source's pages, serialized up front.
server.prepare(0);
server.prepare(pageSize ?? DEFAULT_LIST_PAGE_SIZE);
const config: VariantConfig = {
  url: server.url,
  kubeconfig: server.writeKubeconfig(),
  pods,
  tailMs,
  ...(pageSize ? { listPageSize: pageSize } : {}),
  ...(chunk ? { replaceChunkSize: chunk } : {}),
};

const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
log(
  `bench:sync — ${pods} pods, ${(server.bytesPerPod / 1024).toFixed(2)} KiB each as served ` +
    `(${((server.bytesPerPod * pods) / 1024 / 1024).toFixed(1)} MiB), ${runs} run(s), ` +
    `node ${process.version}${nodeFlags.length ? ` ${nodeFlags.join(' ')}` : ''}` +
    `${pageSize ? `, listPageSize ${pageSize}` : ''}${chunk ? `, replaceChunkSize ${chunk}` : ''}`,
);

/** One child's numbers plus what the server saw of it. */
interface RunResult extends VariantResult {
  /** From the first LIST request reaching the server to synced: the sync without process warm-up. */
  listToSyncedMs: number;
  /** From the variant's start to its first LIST request (worker thread start, module loading). */
  startupMs: number;
}

const results = new Map<VariantName, RunResult[]>(variants.map((name) => [name, []]));
const loads: string[] = [];
for (let run = 1; run <= runs; run += 1) {
  for (const name of variants) {
    const before = load();
    server.takeCounts();
    const variantResult = await runChild(name, config);
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
    const result: RunResult = {
      ...variantResult,
      listToSyncedMs: variantResult.syncedAtMs - counts.firstListAtMs,
      startupMs: counts.firstListAtMs - variantResult.startedAtMs,
    };
    results.get(name)?.push(result);
    loads.push(before);
    log(
      `run ${run} ${name.padEnd(8)} synced ${ms(result.syncedMs).padStart(8)}` +
        ` (${ms(result.listToSyncedMs)} from LIST)` +
        `  settled ${ms(result.settledMs).padStart(8)}  max gap ${ms(result.maxGapMs).padStart(8)}` +
        `  eld max ${ms(result.eldMaxMs).padStart(8)}  heap/pod ${kib(result.heapBytesPerPod).padStart(10)}` +
        `  rss +${(result.rssDeltaBytes / 1024 / 1024).toFixed(0)} MiB` +
        `  gc max ${ms(result.maxScavengeMs)} minor / ${ms(result.maxMarkCompactMs)} major` +
        `${result.replaceApplyMs === undefined ? '' : `  replace applied in ${ms(result.replaceApplyMs)}`}` +
        `  load ${before}` +
        `\n      gaps > 10 ms (length @ end, from start): ${
          result.gaps
            .map((gap) => `${gap.ms.toFixed(0)} @ ${gap.endedAtMs.toFixed(0)}`)
            .join(', ') || 'none'
        }`,
    );
  }
}
await server.close();

interface Summary {
  variant: VariantName;
  syncedMs: number;
  listToSyncedMs: number;
  settledMs: number;
  stallMs: number;
  maxGapMs: number;
  eldMaxMs: number;
  heapBytesPerPod: number;
}

const summaries = new Map<VariantName, Summary>();
for (const [name, list] of results) {
  summaries.set(name, {
    variant: name,
    syncedMs: median(list.map((r) => r.syncedMs)),
    listToSyncedMs: median(list.map((r) => r.listToSyncedMs)),
    settledMs: median(list.map((r) => r.settledMs)),
    // The stall is the worse of the two probes in each run.
    stallMs: median(list.map((r) => Math.max(r.maxGapMs, r.eldMaxMs))),
    maxGapMs: median(list.map((r) => r.maxGapMs)),
    eldMaxMs: median(list.map((r) => r.eldMaxMs)),
    heapBytesPerPod: median(list.map((r) => r.heapBytesPerPod)),
  });
}

log('');
log(`medians of ${runs} run(s); load average (1/5/15 min) before each: ${loads.join(' | ')}`);
log(
  '| variant | time to synced | of which from first LIST | settled | longest stall (1 ms ticker / ELD max) | heap per cached pod |',
);
log('|---|---|---|---|---|---|');
const labels: Record<VariantName, string> = {
  worker: '(a) WorkerPodSource → ReconcileLoop',
  parse: '(b) fetch + JSON.parse',
  informer: '(c) client-node makeInformer',
};
for (const summary of summaries.values()) {
  log(
    `| ${labels[summary.variant]} | ${ms(summary.syncedMs)} | ${ms(summary.listToSyncedMs)} | ` +
      `${ms(summary.settledMs)} | ` +
      `${ms(summary.maxGapMs)} / ${ms(summary.eldMaxMs)} | ${kib(summary.heapBytesPerPod)} |`,
  );
}

const worker = summaries.get('worker');
const parse = summaries.get('parse');
const verdicts: Array<{ target: string; value: string; pass: boolean }> = [];
if (worker) {
  verdicts.push({
    target: `main-thread stall ≤ ${STALL_TARGET_MS} ms`,
    value: ms(worker.stallMs),
    pass: worker.stallMs <= STALL_TARGET_MS,
  });
  if (parse) {
    const ratio = worker.syncedMs / parse.syncedMs;
    verdicts.push({
      target: `time to synced ≤ ${SYNC_RATIO_TARGET}× plain parse`,
      value:
        `${ratio.toFixed(2)}× (${ms(worker.syncedMs)} / ${ms(parse.syncedMs)}; from the first ` +
        `LIST ${(worker.listToSyncedMs / parse.listToSyncedMs).toFixed(2)}×)`,
      pass: ratio <= SYNC_RATIO_TARGET,
    });
  }
  verdicts.push({
    target: `heap per cached pod ≤ ${kib(HEAP_TARGET_BYTES_PER_POD)}`,
    value: kib(worker.heapBytesPerPod),
    pass: worker.heapBytesPerPod <= HEAP_TARGET_BYTES_PER_POD,
  });
}
log('');
for (const verdict of verdicts) {
  log(`${verdict.pass ? 'PASS' : 'MISS'}  ${verdict.target}: ${verdict.value}`);
}
if (values.json) log(JSON.stringify(Object.fromEntries(results)));
if (values.check && verdicts.some((verdict) => !verdict.pass)) process.exit(1);
