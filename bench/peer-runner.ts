/**
 * Running one measurement in a child process, for `bench:sync` and `bench:peers`: our Node
 * variants (bench/sync-variant.ts) and the client-go peer (bench/peers/client-go, a Go program
 * built once per source hash into ~/.cache/pool-controller/bench-peers/<hash>/).
 *
 * A child prints `{"ready":true}` when it wants the event burst (latency mode), then its result
 * as the last line on stdout.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEPLOYED_SEMI_SPACE_MIB } from './hostile-service.js';
import type { LatencyResult, VariantConfig, VariantName, VariantResult } from './sync-variant.js';

/**
 * The V8 flags of the image's `NODE_OPTIONS` that change what a sync costs the main thread: the
 * young generation's size sets how long each scavenge of the just-parsed pods takes. Our variants
 * run with them unless `--node-flags` says otherwise, so a bench measures the stalls as deployed.
 * (The heap share, `--max-old-space-size-percentage=50`, is left out: outside a container it
 * would take half of the machine.)
 */
export const DEPLOYED_NODE_FLAGS: readonly string[] = [
  `--max-semi-space-size=${DEPLOYED_SEMI_SPACE_MIB}`,
];

/**
 * `--node-flags` as given (split on spaces; `--node-flags=` for V8's own defaults), or the
 * deployed flags when it was not given.
 */
export function variantNodeFlags(given: string | undefined): readonly string[] {
  return given === undefined ? DEPLOYED_NODE_FLAGS : given.split(/\s+/).filter(Boolean);
}

/** What the client-go peer prints (bench/peers/client-go/main.go). */
export interface ClientGoResult {
  timeToSyncedMs: number;
  heapPerPodBytes: number;
  /** The peer's CPU (user + system) from its start to synced, in ms. */
  cpuMsAtSynced: number;
  /** From main() to the first request reaching client-go's transport; absent from older peers. */
  requestMs?: number;
  pods: number;
  startedAtMs: number;
  syncedAtMs: number;
  contentType: string;
  goVersion: string;
  latencyMs?: number[];
}

/**
 * Lines a child prints, each once, to say where it is, and what to do then: `{"ready":true}`
 * (synced and listening: the bench writes its burst), `{"relisting":true}` (synced and measured;
 * relists follow: the bench closes the API server's cost window of the sync).
 */
export interface ChildMarkers {
  ready?: () => void;
  relisting?: () => void;
}

/** Runs a child; calls each marker's handler when it prints it; resolves its last line, parsed. */
function runLines<R>(
  command: string,
  args: string[],
  what: string,
  markers: ChildMarkers,
): Promise<R> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const pending = new Map(Object.entries(markers));
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text;
    for (const [marker, handler] of pending) {
      if (out.includes(`{"${marker}":true}`)) {
        pending.delete(marker);
        handler();
      }
    }
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').at(-1);
      if (code !== 0 || !line) {
        reject(new Error(`${what} exited with ${code}`));
        return;
      }
      resolve(JSON.parse(line) as R);
    });
  });
}

export function runNodeVariant(
  name: VariantName,
  config: VariantConfig,
  nodeFlags: readonly string[],
  markers: ChildMarkers = {},
  /** Another build's sync-variant.js (bench:peers' `--baseline`); default this build's. */
  script = fileURLToPath(new URL('./sync-variant.js', import.meta.url)),
): Promise<VariantResult> {
  return runLines<VariantResult>(
    process.execPath,
    [...nodeFlags, script, name, JSON.stringify(config)],
    `variant ${name}`,
    markers,
  );
}

export interface ClientGoOptions {
  kubeconfig: string;
  namespace: string;
  selector: string;
  latencyEvents?: number;
  /** Default protobuf (with JSON accepted), what Kubernetes' own controllers set. */
  contentType?: string;
  /** Client-side rate limit; absent: client-go's default (5 QPS, burst 10); negative: none. */
  qps?: number;
  /** No informer: read the watch-list's frames to its end bookmark, decode nothing (`-wire-floor`). */
  wireFloor?: boolean;
}

export function runClientGo(
  binary: string,
  options: ClientGoOptions,
  markers: ChildMarkers = {},
): Promise<ClientGoResult> {
  const args = [
    `-kubeconfig=${options.kubeconfig}`,
    `-namespace=${options.namespace}`,
    `-selector=${options.selector}`,
    `-latency-events=${options.latencyEvents ?? 0}`,
  ];
  if (options.contentType) args.push(`-content-type=${options.contentType}`);
  if (options.qps !== undefined) args.push(`-qps=${options.qps}`);
  if (options.wireFloor) args.push('-wire-floor');
  return runLines<ClientGoResult>(binary, args, 'client-go peer', markers);
}

/** The peer's sources, in the repository (dist/bench/… → bench/peers/client-go). */
const PEER_DIR = fileURLToPath(new URL('../../bench/peers/client-go/', import.meta.url));

/**
 * Builds the client-go peer unless a build of exactly these sources is cached; returns the
 * binary's path, or why it cannot (no `go` on PATH, a failed build).
 */
export function clientGoPeer(): { binary: string } | { unavailable: string } {
  let go: string;
  try {
    go = execFileSync('go', ['env', 'GOROOT'], { encoding: 'utf8' }).trim();
  } catch {
    return { unavailable: '`go` is not on PATH: the client-go peer is skipped' };
  }
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go'])
    hash.update(readFileSync(join(PEER_DIR, file)));
  hash.update(go);
  const dir = join(
    homedir(),
    '.cache',
    'pool-controller',
    'bench-peers',
    hash.digest('hex').slice(0, 16),
  );
  const binary = join(dir, 'client-go-peer');
  if (existsSync(binary)) return { binary };
  mkdirSync(dir, { recursive: true });
  process.stderr.write(`building the client-go peer into ${dir} (first run only)…\n`);
  try {
    execFileSync('go', ['build', '-o', binary, '.'], { cwd: PEER_DIR, stdio: 'inherit' });
  } catch (err) {
    return { unavailable: `building the client-go peer failed: ${(err as Error).message}` };
  }
  return { binary };
}

export function latencyOf(ms: number[] | undefined): LatencyResult | undefined {
  if (!ms || ms.length === 0) return undefined;
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1) as number };
}
