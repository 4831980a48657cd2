/**
 * What the reflector e2e files share: a `WorkerPodSource` feeding a `ReconcileLoop` keyed by a
 * label, with every `SourceEvent` and reconcile recorded in order, pod writes through client-node,
 * and a polling wait with a deadline that says what it was waiting for and what it saw instead.
 *
 * Waits poll real time (this is e2e: the API server's clock is real); assertions never rest on a
 * fixed sleep, only on "this became true before the deadline".
 */

import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  type Pod,
  type PodSourceStats,
  ReconcileLoop,
  type Source,
  type SourceEvent,
  WorkerPodSource,
  type WorkerPodSourceOptions,
} from '../../src/index.js';
import { RecordingLogger } from '../support/recording-logger.js';
import {
  type KubeEnvironment,
  type KubeEnvironmentOptions,
  startKubeEnvironment,
} from './environment/index.js';

/** The label the loop groups pods by: its value is the parent (the "cell"). */
export const CELL_LABEL = 'e2e/cell';
/** The label the source's selector scopes on. */
export const MANAGED_LABEL = 'e2e/managed';
export const SELECTOR = `${MANAGED_LABEL}=yes`;

/**
 * How long a convergence may take before a test gives up. A healthy watch delivers in
 * milliseconds; the margin covers a loaded 2-core machine and one reflector backoff step.
 */
export const CONVERGE_MS = 20_000;
/** Poll interval of `waitUntil`: fast enough not to pad test time, slow enough to stay cheap. */
const POLL_MS = 50;
/**
 * Reflector backoff for e2e: client-go's shape, shorter numbers, so a reconnect after a restart
 * or a relist after a 410 happens within seconds instead of up to 30 s.
 */
export const E2E_BACKOFF = { initialMs: 200, maxMs: 2_000 } as const;

/** Polls `check` until it returns true, or throws after `timeoutMs` with `diagnose()` attached. */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  options: { timeoutMs?: number; diagnose?: () => string } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? CONVERGE_MS;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) {
      const seen = options.diagnose ? `\n${options.diagnose()}` : '';
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting until ${what}${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** A pod spec with the labels given: unbound (deleted at once) unless the caller binds it. */
export function podManifest(name: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { name, labels },
    spec: { containers: [{ name: 'engine', image: 'registry.invalid/e2e:1' }] },
  };
}

/** Labels of a pod the loop should track under `cell`. */
export function managed(cell: string): Record<string, string> {
  return { [MANAGED_LABEL]: 'yes', [CELL_LABEL]: cell };
}

/** Pod writes in one namespace, as an operator or another controller would make them. */
export class PodWriter {
  readonly namespace: string;
  readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  create(name: string, labels: Record<string, string>): Promise<V1Pod> {
    return this.createPod(podManifest(name, labels));
  }

  createPod(body: V1Pod): Promise<V1Pod> {
    return this.core.createNamespacedPod({ namespace: this.namespace, body });
  }

  /** Deletes with the default grace period: at once for an unbound pod. */
  async delete(name: string): Promise<void> {
    await this.core.deleteNamespacedPod({ namespace: this.namespace, name });
  }

  /** A JSON merge patch of the labels: a `null` value removes that label. */
  patchLabels(name: string, labels: Record<string, string | null>): Promise<V1Pod> {
    return this.core.patchNamespacedPod(
      { namespace: this.namespace, name, body: { metadata: { labels } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

/** One `SourceEvent` as the loop received it, reduced to what the assertions read. */
export type RecordedEvent =
  | { type: 'replace'; keys: string[] }
  | { type: 'upsert'; key: string; cell: string | undefined; managed: string | undefined }
  | { type: 'delete'; key: string };

function record(event: SourceEvent<Pod>): RecordedEvent {
  switch (event.type) {
    case 'replace':
      return { type: 'replace', keys: [...event.objects.keys()].sort() };
    case 'upsert':
      return {
        type: 'upsert',
        key: event.key,
        cell: event.object.metadata.labels[CELL_LABEL],
        managed: event.object.metadata.labels[MANAGED_LABEL],
      };
    case 'delete':
      return { type: 'delete', key: event.key };
  }
}

/**
 * Wraps a source so every event is recorded before the loop sees it, and a reopen can be held
 * back (`holdReopens`) to make "the reflector is disconnected" a state the test controls instead
 * of a race. `return()` goes straight to the inner stream, so closing is never delayed.
 */
class RecordingSource {
  readonly events: RecordedEvent[] = [];
  /** How many streams the loop has opened (the first one included). */
  opens = 0;
  #gate: Promise<void> | undefined;
  #release: (() => void) | undefined;
  readonly source: Source<Pod>;

  constructor(inner: Source<Pod>) {
    this.source = (signal) => ({
      [Symbol.asyncIterator]: (): AsyncIterator<SourceEvent<Pod>> => {
        this.opens += 1;
        const gate = this.#gate;
        let iterator: AsyncIterator<SourceEvent<Pod>> | undefined;
        let closed = false;
        return {
          next: async () => {
            if (!iterator) {
              await gate;
              if (closed) return { done: true, value: undefined };
              iterator = inner(signal)[Symbol.asyncIterator]();
            }
            const result = await iterator.next();
            if (!result.done) this.events.push(record(result.value));
            return result;
          },
          return: async () => {
            closed = true;
            await iterator?.return?.();
            return { done: true, value: undefined };
          },
        };
      },
    });
  }

  /** Streams opened from now on wait before they connect, until the returned function is called. */
  holdReopens(): () => void {
    this.#gate = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
    return () => {
      this.#release?.();
      this.#gate = undefined;
    };
  }
}

export interface WatchedLoopOptions {
  kubeconfigPath: string;
  namespace: string;
  labelSelector?: string;
  watchTimeoutSeconds?: number;
  /** The loop's wait before reopening a failed stream; default 200 ms (e2e wants it quick). */
  sourceRetryDelayMs?: number;
  source?: Partial<WorkerPodSourceOptions>;
}

/** A running `WorkerPodSource` + `ReconcileLoop` and everything recorded about them. */
export class WatchedLoop {
  readonly source: WorkerPodSource;
  readonly loop: ReconcileLoop<Pod>;
  readonly logger = new RecordingLogger();
  /** Parents in the order they were reconciled, with the member names each reconcile saw. */
  readonly reconciles: Array<{ parent: string; members: string[] }> = [];
  readonly #recording: RecordingSource;
  #releaseHeld: (() => void) | undefined;

  private constructor(options: WatchedLoopOptions) {
    this.source = new WorkerPodSource({
      kubeconfigPath: options.kubeconfigPath,
      namespace: options.namespace,
      labelSelector: options.labelSelector ?? SELECTOR,
      backoff: E2E_BACKOFF,
      logger: this.logger,
      ...(options.watchTimeoutSeconds ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
      ...options.source,
    });
    this.#recording = new RecordingSource(this.source.source);
    this.loop = new ReconcileLoop<Pod>({
      source: this.#recording.source,
      keyMap: (pod) => pod.metadata.labels[CELL_LABEL],
      reconcile: async (parent) => {
        this.reconciles.push({ parent, members: this.names(parent) });
      },
      resyncPeriodMs: null,
      sourceRetryDelayMs: options.sourceRetryDelayMs ?? 200,
      logger: this.logger,
    });
  }

  /** Starts the loop and resolves once its store holds the first LIST. */
  static async start(options: WatchedLoopOptions): Promise<WatchedLoop> {
    const watched = new WatchedLoop(options);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `the loop did not sync within ${CONVERGE_MS / 1000} s\n${watched.describe()}`,
            ),
          ),
        CONVERGE_MS,
      );
    });
    try {
      await Promise.race([watched.loop.start(), deadline]);
    } catch (error) {
      await watched.stop();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return watched;
  }

  /** Every SourceEvent the loop received, in order. */
  get events(): readonly RecordedEvent[] {
    return this.#recording.events;
  }

  /** Streams the loop has opened so far. */
  get opens(): number {
    return this.#recording.opens;
  }

  /** Streams the loop opens from now on wait (disconnected) until the returned function runs. */
  holdReopens(): () => void {
    const release = this.#recording.holdReopens();
    this.#releaseHeld = release;
    return release;
  }

  stats(): PodSourceStats {
    return this.source.stats();
  }

  /** Pod names under one parent, sorted. */
  names(parent: string): string[] {
    return this.loop.getByParent(parent).map((pod) => pod.metadata.name);
  }

  /** The whole store as parent → sorted pod names, parents sorted: what convergence compares. */
  membership(): Record<string, string[]> {
    const result: Record<string, string[]> = {};
    for (const parent of [...this.loop.parentKeys()].sort()) result[parent] = this.names(parent);
    return result;
  }

  /** The store equals `expected` (parent → pod names). */
  converged(expected: Record<string, string[]>): boolean {
    return JSON.stringify(this.membership()) === JSON.stringify(normalise(expected));
  }

  /** Waits until the store equals `expected`. */
  async waitForMembership(
    expected: Record<string, string[]>,
    timeoutMs = CONVERGE_MS,
  ): Promise<void> {
    await waitUntil(
      `the store holds ${JSON.stringify(normalise(expected))}`,
      () => this.converged(expected),
      { timeoutMs, diagnose: () => this.describe() },
    );
  }

  /** Waits until a reconcile of `parent` (after the `since`-th one) saw exactly `members`. */
  async waitForReconcile(parent: string, members: string[], since = 0): Promise<void> {
    const expected = [...members].sort().join();
    await waitUntil(
      `cell ${parent} is reconciled with members [${expected}]`,
      () =>
        this.reconciles
          .slice(since)
          .some((r) => r.parent === parent && r.members.join() === expected),
      { diagnose: () => `reconciles: ${JSON.stringify(this.reconciles.slice(since))}` },
    );
  }

  /** What a failed wait prints: store, stats, the last events and log lines. */
  describe(): string {
    const logs = this.logger.entries
      .slice(-15)
      .map((e) => `  ${e.level} ${e.msg ?? ''} ${safeJson(e.obj)}`)
      .join('\n');
    return [
      `store: ${JSON.stringify(this.membership())}`,
      `reflector stats: ${JSON.stringify(this.stats())}`,
      `streams opened: ${this.opens}; last events: ${JSON.stringify(this.events.slice(-10))}`,
      `last log lines:\n${logs}`,
    ].join('\n');
  }

  /** Stops the loop (closing its stream), then the worker pool. */
  async stop(): Promise<void> {
    this.#releaseHeld?.();
    try {
      await this.loop.stop();
    } catch {
      // never started, or a failed start: nothing of the loop is running
    }
    await this.source.close();
  }
}

function normalise(expected: Record<string, string[]>): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  for (const parent of Object.keys(expected).sort()) {
    const names = expected[parent] ?? [];
    if (names.length > 0) result[parent] = [...names].sort();
  }
  return result;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_, v) => (v instanceof Error ? v.message : v)) ?? '';
  } catch {
    return String(value);
  }
}

/** The key a recorded event carries for a pod in `namespace`. */
export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** What a reflector e2e file works with: its environment, a fresh namespace, started loops. */
export interface ReflectorSuite {
  readonly env: KubeEnvironment;
  setUp(): Promise<{ namespace: string; pods: PodWriter }>;
  startLoop(namespace: string, options?: Partial<WatchedLoopOptions>): Promise<WatchedLoop>;
}

/**
 * Registers a file's hooks: one environment for the file (started before its first test,
 * stopped after its last), and every loop a test started stopped after that test.
 */
export function useReflectorSuite(
  options: KubeEnvironmentOptions,
  namespacePrefix: string,
): ReflectorSuite {
  let env: KubeEnvironment | undefined;
  const started: WatchedLoop[] = [];
  beforeAll(async () => {
    env = await startKubeEnvironment(options);
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((watched) => watched.stop()));
  });
  afterAll(async () => {
    await env?.stop();
  });
  const current = (): KubeEnvironment => {
    if (!env) throw new Error('the e2e environment has not started');
    return env;
  };
  return {
    get env() {
      return current();
    },
    async setUp() {
      const namespace = await current().createNamespace(namespacePrefix);
      return { namespace, pods: new PodWriter(current().kubeConfig, namespace) };
    },
    async startLoop(namespace, loopOptions = {}) {
      const watched = await WatchedLoop.start({
        kubeconfigPath: current().kubeconfigPath,
        namespace,
        ...loopOptions,
      });
      started.push(watched);
      return watched;
    },
  };
}
