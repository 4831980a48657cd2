/**
 * An in-process `Source<Pod>` that plays a scripted, repeating story (see simulated-story.ts):
 * what `--source simulated` runs, so the service can be tried, demonstrated and benchmarked
 * without a cluster, through exactly the same store, queue and reconcile as the real source.
 *
 * Like the reflector it stands in for, every stream opens with a `replace` of the whole world,
 * and opening a stream supersedes the previous one (the loop only ever reads one): the story
 * advances only through the newest stream, so a reopened stream resumes the story instead of
 * replaying it twice. All waiting goes through the injected `Clock`.
 */
import type { Pod } from '../model/pod.js';
import type { PodSource } from '../model/pod-source.js';
import type { PodSourceStats } from '../model/pod-source-stats.js';
import { DEFAULT_PORT_NAME, LWS_LABELS, type PoolLabels } from '../pools/labels.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import type { Source, SourceEvent } from '../runtime/source-event.js';
import { createStory, DEFAULT_SIMULATED_POOLS, type Story } from './simulated-story.js';
import {
  type SimulatedPoolSpec,
  SimulatedWorld,
  simulatedPodName,
  type WorldChange,
} from './simulated-world.js';

/** One story step every 3 s: slow enough to follow with `watch curl`, fast enough to see a cycle in a minute. */
export const DEFAULT_STEP_INTERVAL_MS = 3_000;

/** Pods rendered per event-loop turn when building a `replace` (~a few ms of work each). */
const SNAPSHOT_SLICE_SIZE = 500;

/** The namespace simulated pods live in unless `--namespace` names one. */
export const DEFAULT_SIMULATED_NAMESPACE = 'default';

/**
 * What the simulated source is built from; every field has a default, so `new SimulatedPodSource()`
 * plays the default story over the default pools on the real clock.
 */
interface SimulatedPodSourceOptions {
  clock?: Clock;
  /** Epoch ms for pod timestamps and the stats' wall-clock fields. */
  wallClock?: () => number;
  labels?: PoolLabels;
  namespace?: string;
  portName?: string;
  pools?: readonly SimulatedPoolSpec[];
  /**
   * `true` (default): play the story, starting from unscheduled pods. `false`: a static world of
   * ready cells that changes only through `relist()` (benchmarks, large worlds).
   */
  story?: boolean;
  stepIntervalMs?: number;
  logger?: Logger;
}

/** Mutable counters in PodSourceStats' shape. */
interface Counters {
  lists: number;
  relists: number;
  watchOpens: number;
  events: Record<string, number>;
  lastEventAtMs?: number;
  lastSyncAtMs?: number;
}

/**
 * The `--source simulated` pod source: the same `PodSource` shape as the Kubernetes one, so the
 * service cannot tell them apart except by `stats().source`. Benchmarks also use it without a story
 * (`story: false`), growing the world with `addReadyCells` and loading the service with `relist()`.
 */
export class SimulatedPodSource implements PodSource {
  readonly source: Source<Pod>;
  readonly #world: SimulatedWorld;
  readonly #story: Story | undefined;
  readonly #clock: Clock;
  readonly #wallClock: () => number;
  readonly #stepIntervalMs: number;
  readonly #logger: Logger;
  readonly #counters: Counters = { lists: 0, relists: 0, watchOpens: 0, events: {} };
  #step = 0;
  #current: SimulatedStream | undefined;
  #closed = false;

  constructor(options: SimulatedPodSourceOptions = {}) {
    this.#clock = options.clock ?? realClock;
    this.#wallClock = options.wallClock ?? Date.now;
    this.#logger = options.logger ?? silentLogger;
    this.#stepIntervalMs = options.stepIntervalMs ?? DEFAULT_STEP_INTERVAL_MS;
    if (!(this.#stepIntervalMs > 0) || !Number.isFinite(this.#stepIntervalMs)) {
      throw new RangeError(`stepIntervalMs must be a positive number, got ${this.#stepIntervalMs}`);
    }
    this.#world = new SimulatedWorld({
      labels: options.labels ?? LWS_LABELS,
      namespace: options.namespace ?? DEFAULT_SIMULATED_NAMESPACE,
      portName: options.portName ?? DEFAULT_PORT_NAME,
      wallClock: this.#wallClock,
    });
    const pools = options.pools ?? DEFAULT_SIMULATED_POOLS;
    if (options.story ?? true) {
      this.#story = createStory(this.#world, pools);
    } else {
      for (const pool of pools) {
        for (let group = 0; group < pool.cells; group += 1)
          this.#world.createReadyCell(pool, group);
      }
    }
    this.source = (signal) => this.#open(signal);
  }

  /** Pods in the simulated world now. */
  get podCount(): number {
    return this.#world.podCount;
  }

  /** The name of the story step that runs next (`undefined` without a story). */
  get nextStep(): string | undefined {
    if (!this.#story) return undefined;
    const { intro, cycle } = this.#story;
    return this.#step < intro.length
      ? intro[this.#step]!.name
      : cycle[(this.#step - intro.length) % cycle.length]!.name;
  }

  /**
   * Adds ready cells of `pool` that do not exist yet (groups `0..pool.cells-1`), without watch
   * events: like changes made during a watch gap, they reach the store with the next `relist()`.
   * For growing a benchmark world to a given size.
   */
  addReadyCells(pool: SimulatedPoolSpec): void {
    for (let group = 0; group < pool.cells; group += 1) {
      if (!this.#world.has(simulatedPodName(pool.name, group, 0))) {
        this.#world.createReadyCell(pool, group);
      }
    }
  }

  /**
   * Makes the open stream deliver a fresh `replace` of the whole world now, as a reflector does
   * after its cursor expires: the way to load the service with a relist on demand.
   */
  relist(): void {
    this.#current?.requestRelist();
  }

  stats(): PodSourceStats {
    const c = this.#counters;
    const open = this.#current !== undefined;
    return {
      phase: this.#closed ? 'stopped' : open ? 'watching' : 'idle',
      healthy: open && !this.#closed,
      cursor: open ? String(this.#world.resourceVersion) : undefined,
      lists: c.lists,
      relists: c.relists > 0 ? { other: c.relists } : {},
      watchOpens: c.watchOpens,
      // The simulated world hands out its state directly: there is no watch-list to fall back from.
      initialList: 'list',
      watchListFallbacks: 0,
      initialEventsTimeouts: 0,
      stalledWatches: 0,
      droppedEvents: {},
      events: { ...c.events },
      lastEventAtMs: c.lastEventAtMs,
      lastSyncAtMs: c.lastSyncAtMs,
      bytesDecoded: 0,
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#current?.end();
    this.#current = undefined;
  }

  /** A new stream, superseding the open one; `signal` aborting ends it as `return()` would. */
  #open(signal: AbortSignal | undefined): AsyncIterable<SourceEvent<Pod>> {
    if (this.#closed) throw new Error('the simulated source is closed');
    this.#current?.end();
    const stream = new SimulatedStream(this, signal);
    this.#current = stream;
    this.#counters.watchOpens += 1;
    if (signal?.aborted) stream.end(); // opened already done with: it delivers nothing
    return { [Symbol.asyncIterator]: () => stream };
  }

  // ----- used by SimulatedStream -----

  /** @internal */ get clock(): Clock {
    return this.#clock;
  }

  /** @internal */ get hasStory(): boolean {
    return this.#story !== undefined;
  }

  /** @internal */ get stepIntervalMs(): number {
    return this.#stepIntervalMs;
  }

  /** @internal A `replace` of the world now, counted as a LIST once built. */
  async snapshotEvent(isRelist: boolean): Promise<SourceEvent<Pod>> {
    // A zero sleep is a yield: HTTP requests run before the next slice of rendering.
    const objects = await this.#world.snapshot(SNAPSHOT_SLICE_SIZE, () => this.#clock.sleep(0));
    this.#counters.lists += 1;
    if (isRelist) this.#counters.relists += 1;
    const now = this.#wallClock();
    this.#counters.lastSyncAtMs = now;
    this.#counters.lastEventAtMs = now;
    return { type: 'replace', objects };
  }

  /** @internal Runs the next story step; only the newest stream may. */
  runStep(stream: SimulatedStream): WorldChange[] {
    if (stream !== this.#current || !this.#story) return [];
    const { intro, cycle } = this.#story;
    const step =
      this.#step < intro.length
        ? intro[this.#step]!
        : cycle[(this.#step - intro.length) % cycle.length]!;
    this.#step += 1;
    const changes = step.run();
    this.#logger.debug({ step: step.name, events: changes.length }, 'simulation step');
    return changes;
  }

  /** @internal Counts a delivered watch event. */
  delivered(change: WorldChange): void {
    const c = this.#counters;
    c.events[change.type] = (c.events[change.type] ?? 0) + 1;
    c.lastEventAtMs = this.#wallClock();
  }

  /** @internal */ streamEnded(stream: SimulatedStream): void {
    if (this.#current === stream) this.#current = undefined;
  }
}

/**
 * One stream. Hand-written rather than an async generator, so `return()` closes it at once even
 * while it sleeps between steps; its signal (RUNTIME.md, amendment 2) does the same, so the story
 * timer stops when the consumer is done with the stream, whether or not `return()` follows.
 */
class SimulatedStream implements AsyncIterator<SourceEvent<Pod>> {
  readonly #owner: SimulatedPodSource;
  readonly #pending: WorldChange[] = [];
  #opened = false;
  #ended = false;
  #relistRequested = false;
  /** Aborts the current sleep: on `end()` and on a relist request. */
  #wake: AbortController | undefined;

  /** The stream's signal, and the listener that ends the stream when it aborts. */
  readonly #signal: AbortSignal | undefined;
  readonly #endOnAbort = (): void => this.end();

  constructor(owner: SimulatedPodSource, signal: AbortSignal | undefined) {
    this.#owner = owner;
    this.#signal = signal;
    signal?.addEventListener('abort', this.#endOnAbort, { once: true });
  }

  requestRelist(): void {
    this.#relistRequested = true;
    this.#wake?.abort();
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#signal?.removeEventListener('abort', this.#endOnAbort);
    this.#pending.length = 0;
    this.#wake?.abort();
    this.#owner.streamEnded(this);
  }

  async next(): Promise<IteratorResult<SourceEvent<Pod>>> {
    for (;;) {
      if (this.#ended) return { done: true, value: undefined };
      if (!this.#opened || this.#relistRequested) {
        const isRelist = this.#opened;
        this.#opened = true;
        this.#relistRequested = false;
        // A relist supersedes whatever single events were still waiting: the replace holds them.
        this.#pending.length = 0;
        const replace = await this.#owner.snapshotEvent(isRelist);
        // Closed while the snapshot was being built: nothing more to deliver.
        if (this.#ended) return { done: true, value: undefined };
        return { done: false, value: replace };
      }
      const change = this.#pending.shift();
      if (change) {
        this.#owner.delivered(change);
        return { done: false, value: change.event };
      }
      const wake = new AbortController();
      this.#wake = wake;
      try {
        if (this.#owner.hasStory) {
          await this.#owner.clock.sleep(this.#owner.stepIntervalMs, wake.signal);
        } else {
          // No story: nothing happens until a relist request or the end.
          await new Promise<void>((_, reject) =>
            wake.signal.addEventListener('abort', () => reject(wake.signal.reason), { once: true }),
          );
        }
      } catch {
        continue; // woken: ended or asked to relist; the loop head decides which.
      } finally {
        this.#wake = undefined;
      }
      this.#pending.push(...this.#owner.runStep(this));
    }
  }

  async return(): Promise<IteratorResult<SourceEvent<Pod>>> {
    this.end();
    return { done: true, value: undefined };
  }
}
