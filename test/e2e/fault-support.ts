/**
 * What the fault matrix (fault-matrix.test.ts) and the soak script (bench/soak.ts) share: pod
 * churn against the real API server, "the API server's truth" and "the controller's store" in
 * one comparable form (namespace/name, uid, resourceVersion), and the built service as a child
 * process reading the cluster as the user deploy/role.yaml grants.
 *
 * Nothing here imports vitest, so the soak script can run it compiled.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { FakeKubelet, type KubeEnvironment, onNode } from './environment/index.js';
import { bindShippedRoles } from './support-service.js';

/** The repository root: the nearest folder up with a package.json (also when run from dist/). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}
export const MAIN = join(repoRoot(), 'dist', 'src', 'main.js');
const ROLE = join(repoRoot(), 'deploy', 'role.yaml');
const LEADER_ELECTION_ROLE = join(repoRoot(), 'deploy', 'leader-election-role.yaml');
export const LWS = 'leaderworkerset.sigs.k8s.io';
export const POOL_LABEL = `${LWS}/name`;
export const GROUP_LABEL = `${LWS}/group-index`;
export const WORKER_LABEL = `${LWS}/worker-index`;
/** The service's default selector ("the pool label exists"), as a LIST selector. */
export const POOL_SELECTOR = POOL_LABEL;

/** A pod as the LWS controller creates it, already scheduled onto the fake node. */
export function lwsPod(name: string, pool: string, group: number, worker: number): V1Pod {
  return onNode({
    metadata: {
      name,
      labels: {
        [POOL_LABEL]: pool,
        [GROUP_LABEL]: String(group),
        [WORKER_LABEL]: String(worker),
      },
      annotations: { [`${LWS}/size`]: '2' },
    },
    spec: {
      containers: [
        {
          name: 'engine',
          image: 'registry.invalid/sglang:e2e',
          ports: [{ name: 'http', containerPort: 30000 }],
        },
      ],
    },
  });
}

/** An unscheduled pod (deleted at once, no kubelet step): for bursts. */
export function burstPod(name: string, group: number): V1Pod {
  const pod = lwsPod(name, 'burst', group, 0);
  delete pod.spec?.nodeName;
  return pod;
}

/** One pod as both sides are compared: `namespace/name uid resourceVersion`. */
export type PodIdentity = string;

/** The API server's truth: a direct LIST (admin credentials, no proxy) with the service's selector. */
export async function apiTruth(core: CoreV1Api, namespace: string): Promise<PodIdentity[]> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: POOL_SELECTOR });
  return list.items
    .map(
      (p) => `${namespace}/${p.metadata?.name} ${p.metadata?.uid} ${p.metadata?.resourceVersion}`,
    )
    .sort();
}

interface StoreBody {
  parents: Array<{
    pods?: Array<{ key: string; uid: string; resourceVersion: string | null }>;
  }>;
}

/** The built service's store as `GET /api/v1/store?objects=true` shows it, in one namespace. */
export async function serviceStore(base: string, namespace: string): Promise<PodIdentity[]> {
  const res = await fetch(`${base}/api/v1/store?objects=true`, {
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`GET /api/v1/store: HTTP ${res.status}`);
  const body = (await res.json()) as StoreBody;
  return body.parents
    .flatMap((p) => p.pods ?? [])
    .filter((p) => p.key.startsWith(`${namespace}/`))
    .map((p) => `${p.key} ${p.uid} ${p.resourceVersion}`)
    .sort();
}

/** What differs between two sorted identity lists, for a failure message (at most `limit` each). */
export function difference(
  store: readonly PodIdentity[],
  truth: readonly PodIdentity[],
  limit = 5,
): string {
  const inStore = new Set(store);
  const inTruth = new Set(truth);
  const missing = truth.filter((p) => !inStore.has(p));
  const extra = store.filter((p) => !inTruth.has(p));
  return (
    `store ${store.length} pods, API ${truth.length}; missing from the store: ` +
    `${JSON.stringify(missing.slice(0, limit))}${missing.length > limit ? ` (+${missing.length - limit})` : ''}; ` +
    `extra or stale in the store: ${JSON.stringify(extra.slice(0, limit))}` +
    `${extra.length > limit ? ` (+${extra.length - limit})` : ''}`
  );
}

export function sameIdentities(a: readonly PodIdentity[], b: readonly PodIdentity[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

/**
 * Polls until `readStore()` equals the API server's LIST, or throws after `timeoutMs` with the
 * last difference. Returns the time it took, in milliseconds.
 */
export async function waitForConvergence(
  readStore: () => Promise<PodIdentity[]>,
  core: CoreV1Api,
  namespace: string,
  timeoutMs: number,
  what = 'the store equals the API server',
): Promise<number> {
  const started = Date.now();
  let last = 'nothing compared yet';
  for (;;) {
    try {
      const truth = await apiTruth(core, namespace);
      const store = await readStore();
      if (sameIdentities(store, truth)) return Date.now() - started;
      last = difference(store, truth);
    } catch (error) {
      last = `comparison failed: ${error}`;
    }
    if (Date.now() - started > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting until ${what}: ${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A small deterministic PRNG (mulberry32), so a churn's sequence can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface ChurnOptions {
  /** Pools and groups the pods are spread over: names `<pool>-<group>` / `<pool>-<group>-<worker>`. */
  pools?: readonly string[];
  groups?: number;
  workers?: number;
  /** Pause between two operations. */
  intervalMs?: number;
  /** Stop after this many operations (bounded churn). */
  maxOps?: number;
  seed?: number;
}

export type ChurnOp = 'create' | 'delete' | 'relabel' | 'ready' | 'unready' | 'restart';

/**
 * Creates, deletes, relabels (moves a pod to another cell), flips readiness and restarts
 * containers of LWS-labelled pods in one namespace, through the admin client and `FakeKubelet`,
 * one operation at a time. Failures (the apiserver restarting, a 404 or 409 from a race) are
 * counted, not thrown: the world is whatever the API server says it is.
 */
export class Churn {
  readonly ops: Record<ChurnOp, number> = {
    create: 0,
    delete: 0,
    relabel: 0,
    ready: 0,
    unready: 0,
    restart: 0,
  };
  failures = 0;
  readonly #core: CoreV1Api;
  readonly #kubelet: FakeKubelet;
  readonly #namespace: string;
  readonly #options: Required<ChurnOptions>;
  readonly #random: () => number;
  /** Names this churn believes exist (a failed call may leave it wrong; only the picks suffer). */
  readonly #live = new Set<string>();
  #running: Promise<void> | undefined;
  #stopRequested = false;

  constructor(kubeConfig: KubeConfig, namespace: string, options: ChurnOptions = {}) {
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#kubelet = new FakeKubelet(kubeConfig);
    this.#namespace = namespace;
    this.#options = {
      pools: options.pools ?? ['engine', 'draft'],
      groups: options.groups ?? 3,
      workers: options.workers ?? 2,
      intervalMs: options.intervalMs ?? 40,
      maxOps: options.maxOps ?? 80,
      seed: options.seed ?? 1,
    };
    this.#random = seededRandom(this.#options.seed);
  }

  get total(): number {
    return Object.values(this.ops).reduce((a, b) => a + b, 0);
  }

  /** Creates every pod of every cell, Running and Ready: the starting world. */
  async seed(): Promise<void> {
    for (const name of this.#allNames()) await this.#create(name);
  }

  /** Starts churning in the background until `stop()` or `maxOps`. */
  start(): void {
    this.#stopRequested = false;
    this.#running = this.#loop();
  }

  /** Stops after the operation in progress; resolves once it has finished. */
  async stop(): Promise<void> {
    this.#stopRequested = true;
    await this.#running;
  }

  /** Resolves once the background churn has run its `maxOps` (or was stopped). */
  async done(): Promise<void> {
    await this.#running;
  }

  /** Runs `count` operations now, in the foreground. */
  async run(count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) await this.step();
  }

  async step(): Promise<void> {
    const op = this.#pickOp();
    try {
      await this.#do(op);
      this.ops[op] += 1;
    } catch {
      this.failures += 1;
    }
  }

  async #loop(): Promise<void> {
    let done = 0;
    while (!this.#stopRequested && done < this.#options.maxOps) {
      await this.step();
      done += 1;
      await new Promise((resolve) => setTimeout(resolve, this.#options.intervalMs));
    }
  }

  #allNames(): string[] {
    const names: string[] = [];
    for (const pool of this.#options.pools) {
      for (let group = 0; group < this.#options.groups; group += 1) {
        for (let worker = 0; worker < this.#options.workers; worker += 1) {
          names.push(worker === 0 ? `${pool}-${group}` : `${pool}-${group}-${worker}`);
        }
      }
    }
    return names;
  }

  #pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[Math.floor(this.#random() * items.length)];
  }

  #pickOp(): ChurnOp {
    const all = this.#allNames().length;
    // Keep the world around two thirds full: create when sparse, delete when crowded.
    if (this.#live.size < all / 3) return 'create';
    if (this.#live.size >= all) return this.#pick(['delete', 'relabel', 'ready', 'unready'])!;
    return this.#pick<ChurnOp>(['create', 'delete', 'relabel', 'ready', 'unready', 'restart'])!;
  }

  async #do(op: ChurnOp): Promise<void> {
    const live = [...this.#live].sort();
    const absent = this.#allNames().filter((n) => !this.#live.has(n));
    const name = op === 'create' ? this.#pick(absent) : this.#pick(live);
    if (name === undefined) return;
    switch (op) {
      case 'create':
        await this.#create(name);
        return;
      case 'delete':
        this.#live.delete(name);
        await this.#core.deleteNamespacedPod({
          namespace: this.#namespace,
          name,
          gracePeriodSeconds: 0,
        });
        return;
      case 'relabel': {
        const group = Math.floor(this.#random() * this.#options.groups);
        await this.#core.patchNamespacedPod(
          {
            namespace: this.#namespace,
            name,
            body: { metadata: { labels: { [GROUP_LABEL]: String(group) } } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return;
      }
      case 'ready':
        await this.#kubelet.markRunning(this.#namespace, name);
        return;
      case 'unready':
        await this.#kubelet.markNotReady(this.#namespace, name);
        return;
      case 'restart':
        await this.#kubelet.restartContainer(this.#namespace, name);
        return;
    }
  }

  async #create(name: string): Promise<void> {
    const [pool = 'engine', group = '0', worker = '0'] = name.split('-');
    this.#live.add(name);
    await this.#core.createNamespacedPod({
      namespace: this.#namespace,
      body: lwsPod(name, pool, Number(group), Number(worker)),
    });
    await this.#kubelet.markRunning(this.#namespace, name, { ready: this.#random() < 0.7 });
  }
}

/**
 * A fresh namespace whose unprivileged user holds exactly deploy/role.yaml, as the service's
 * ServiceAccount would in a cluster, and deploy/leader-election-role.yaml too with
 * `leaderElection` (the Lease lives in the same namespace).
 */
export async function namespaceWithRole(
  env: KubeEnvironment,
  prefix: string,
  options: { leaderElection?: boolean } = {},
): Promise<string> {
  const namespace = await env.createNamespace(prefix);
  const roles = options.leaderElection ? [ROLE, LEADER_ELECTION_ROLE] : [ROLE];
  await bindShippedRoles(
    env,
    namespace,
    roles.map((file) => pathToFileURL(file)),
  );
  return namespace;
}

/**
 * "The API server answers requests again", observed from beside the controller: a probe client
 * sends `GET /readyz` (admin token) through the same proxy the controller uses, one request every
 * `intervalMs` (each with a 1 s timeout, on a new connection), and records when each answered 200.
 * A fault's recovery time is the first 200 among the probes sent after the fault was lifted.
 */
export class AnswerProbe {
  /** `Date.now()` of every probe sent, and of its answer when it answered 200. */
  readonly #probes: Array<{ sentAt: number; answeredAt: number | undefined }> = [];
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;

  constructor(options: { url: string; caPath: string; token: string; intervalMs?: number }) {
    const ca = readFileSync(options.caPath);
    const interval = options.intervalMs ?? 100;
    const probeOnce = (): Promise<boolean> =>
      new Promise((resolve) => {
        const req = httpsRequest(
          `${options.url}/readyz`,
          {
            ca,
            agent: false,
            headers: { authorization: `Bearer ${options.token}` },
            timeout: 1_000,
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode === 200));
            res.on('error', () => resolve(false));
          },
        );
        req.on('timeout', () => req.destroy(new Error('probe timed out')));
        req.on('error', () => resolve(false));
        req.end();
      });
    this.#done = (async () => {
      while (!this.#stop.signal.aborted) {
        const probe = { sentAt: Date.now(), answeredAt: undefined as number | undefined };
        this.#probes.push(probe);
        if (await probeOnce()) probe.answeredAt = Date.now();
        await delay(interval, this.#stop.signal);
      }
    })();
  }

  /**
   * When the API server answered again after `liftedAt`: the answer time of the first probe sent
   * at or after it that got a 200. Waits for one, up to `timeoutMs`.
   */
  async answeringAfter(liftedAt: number, timeoutMs = 180_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const first = this.#probes.find((p) => p.sentAt >= liftedAt && p.answeredAt !== undefined);
      if (first?.answeredAt !== undefined) return first.answeredAt;
      if (Date.now() > deadline) {
        throw new Error(`the API server did not answer within ${timeoutMs / 1000} s of the lift`);
      }
      await delay(50);
    }
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }
}

/** A pause that ends early (resolving) when `signal` aborts. */
function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Recovered: the store equals the API server's LIST and the service's `/readyz` answers 200, both
 * in one poll (every 100 ms). Resolves with the time from `since` to the end of that poll, or
 * `undefined` when `until` (a `Date.now()` time) passed first; `last` says what differed then.
 */
export async function waitForRecovery(
  service: ServiceProcess,
  core: CoreV1Api,
  namespace: string,
  since: number,
  until: number,
): Promise<{ ms: number | undefined; last: string }> {
  let last = 'nothing compared yet';
  for (;;) {
    try {
      const truth = await apiTruth(core, namespace);
      const store = await service.store(namespace);
      const ready = await fetch(`${service.base}/readyz`, { signal: AbortSignal.timeout(5_000) });
      await ready.text();
      if (sameIdentities(store, truth) && ready.status === 200) {
        return { ms: Date.now() - since, last: 'converged' };
      }
      last = `${difference(store, truth)}; /readyz ${ready.status}`;
    } catch (error) {
      last = `comparison failed: ${error}`;
    }
    if (Date.now() > until) return { ms: undefined, last };
    await delay(100);
  }
}

export interface ServiceExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * `node dist/src/main.js --source kubernetes` in its own process group (so "nothing left running"
 * can be checked on the whole group), JSON logs collected, its port read from the listening line.
 */
export class ServiceProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<ServiceExit>;
  stdout = '';
  stderr = '';
  base = '';

  private constructor(child: ChildProcess) {
    this.child = child;
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      if (this.stdout.length > 4_000_000) this.stdout = this.stdout.slice(-2_000_000);
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  static async start(options: {
    kubeconfigPath: string;
    namespace: string;
    extraArgs?: readonly string[];
    timeoutMs?: number;
  }): Promise<ServiceProcess> {
    const child = spawn(
      process.execPath,
      [
        MAIN,
        '--source',
        'kubernetes',
        '--kubeconfig',
        options.kubeconfigPath,
        '--namespace',
        options.namespace,
        '--listen',
        '127.0.0.1:0',
        '--leader-elect=false',
        '--log-format',
        'json',
        ...(options.extraArgs ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH }, detached: true },
    );
    const service = new ServiceProcess(child);
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const line = service.stdout.split('\n').find((l) => l.includes('"control plane listening"'));
      if (line) {
        service.base = `http://127.0.0.1:${JSON.parse(line).address.port}`;
        return service;
      }
      if (child.exitCode !== null || Date.now() > deadline) {
        service.kill();
        throw new Error(`the service did not start listening:\n${service.tail()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The store, as comparable identities. */
  store(namespace: string): Promise<PodIdentity[]> {
    return serviceStore(this.base, namespace);
  }

  async json<T>(path: string): Promise<T> {
    const res = await fetch(`${this.base}${path}`, { signal: AbortSignal.timeout(10_000) });
    return (await res.json()) as T;
  }

  /** One sample of a /metrics series (first line starting with `series `), NaN if absent. */
  async metric(series: string): Promise<number> {
    const res = await fetch(`${this.base}/metrics`, { signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
  }

  /** Whether any process of the service's process group still exists. */
  groupAlive(): boolean {
    try {
      process.kill(-this.pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGKILLs the whole group (cleanup after a failure). */
  kill(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  tail(lines = 20): string {
    const out = this.stdout.trim().split('\n').slice(-lines).join('\n');
    return `--- service stdout (last ${lines} lines)\n${out}\n--- stderr\n${this.stderr.slice(-2000)}`;
  }
}

/** A CoreV1Api for the admin, straight to the apiserver (never through a proxy). */
export function adminCore(env: KubeEnvironment): CoreV1Api {
  return env.kubeConfig.makeApiClient(CoreV1Api);
}
