/**
 * `WorkerPodSource`: the Kubernetes pod source for a `ReconcileLoop`, with the reflector running
 * in a worker thread.
 *
 * LIST/WATCH I/O, JSON decoding of multi-megabyte collections and schema validation all happen in
 * one piscina worker thread; the main thread (which owns the store, the queue and the HTTP control
 * plane) only receives the trimmed pods, a chunk at a time. Each `source()` stream is one piscina
 * task with its own `MessagePort`; a worker that crashes, runs out of memory or exits fails the
 * stream, the runtime's driver reopens it, and the new stream's LIST (a `replace`) repairs the store.
 *
 * Size: one class over one set of open streams, whose every way to open, adopt, fail and retire a
 * stream reads and writes that set and the pool; split, each piece would reach into the others'
 * state.
 */
import { MessageChannel } from 'node:worker_threads';
import type { Pod } from '../../model/pod.js';
import {
  DEFAULT_INITIAL_LIST,
  foldReflectorStats,
  initialReflectorStats,
  type PodSourceStats,
} from '../../model/pod-source-stats.js';
import { type Clock, realClock } from '../../runtime/clock.js';
import { type Logger, silentLogger } from '../../runtime/logger.js';
import type { Source, SourceEvent } from '../../runtime/source-event.js';
import type { ClusterOptions } from '../client/connection.js';
import { safeErrorMessage } from '../client/safe-error.js';
import { parseLabelSelector, type SelectorRequirement } from '../resources/label-selector.js';
import { FirstRequestSettings } from './first-request-settings.js';
import { WorkerEventStream, WorkerStreamError } from './main-thread-stream.js';
import { containerMemoryLimit, listMemoryBudget } from './memory-budget.js';
import { PodStringInterner } from './pod-string-interner.js';
import type { ReflectorSettings, ReflectorTaskOptions } from './protocol.js';
import {
  type ReflectorPool,
  type ReflectorThreadOptions,
  ReflectorThreads,
} from './reflector-threads.js';

/**
 * Pods per message of a `replace` (the first LIST's and every relist's). Each message is
 * deserialized in one main-thread task, so this bounds the stall a relist causes; ~250 trimmed
 * pods take a few milliseconds.
 */
const DEFAULT_REPLACE_CHUNK_SIZE = 250;
/**
 * Events the main side holds for a consumer that is behind before giving up on the stream (the
 * reopen relists). Far above any burst a healthy loop sees, far below a memory problem.
 */
const DEFAULT_MAX_BUFFERED_EVENTS = 50_000;
/** How long closing a stream waits for the worker to close its connection before killing it. */
const DEFAULT_CLOSE_GRACE_MS = 5_000;
/** The worker's old generation when `resourceLimits` leaves it out: V8's default on 64-bit. */
const DEFAULT_WORKER_HEAP_MB = 2048;
/**
 * How long a stream's task may wait for a thread to pick it up. A thread starts in well under a
 * second even on a loaded machine, so one that has not taken the task by then is wedged: the
 * source terminates it, the stream fails, and the driver's reopen starts on a fresh thread.
 */
const DEFAULT_STREAM_START_TIMEOUT_MS = 30_000;

/**
 * The reflector's settings (see `KubernetesReflectorOptions`) and where the cluster is (see
 * `ClusterOptions`), how its thread starts (see `ReflectorThreadOptions`), plus what only the
 * main-thread side has: the buffer and the timeouts.
 */
export interface WorkerPodSourceOptions
  extends ReflectorSettings,
    ClusterOptions,
    ReflectorThreadOptions {
  /** Receives the main side's messages and the worker's log lines, which travel over the port. */
  logger?: Logger;
  /**
   * The container's memory limit in bytes, `0` for none; read from the cgroup (`memory.max`) when
   * left out. One LIST may hold at most a quarter of it (./memory-budget.ts).
   */
  containerMemoryBytes?: number;
  /**
   * A thread started already (the command's entry starts it before loading the service, so the
   * two overlap: ./reflector-threads.ts), which this source then owns and closes. Its own
   * `resourceLimits` and compile cache apply; giving either here as well is an error.
   */
  threads?: ReflectorThreads;
  /**
   * Pods per message of a `replace`: smaller means shorter main-thread stalls during a relist but
   * more messages. Each chunk is acknowledged before the next is sent. Default
   * `DEFAULT_REPLACE_CHUNK_SIZE`.
   */
  replaceChunkSize?: number;
  /**
   * How many events may wait on the main side for a consumer that is behind (a whole `replace`
   * counts as one). Past it the stream fails and the driver reopens it: a fresh LIST is cheaper
   * than unbounded memory, and loses nothing. Default `DEFAULT_MAX_BUFFERED_EVENTS`.
   */
  maxBufferedEvents?: number;
  /**
   * How long closing a stream waits for the worker to close its connection and end the task
   * before the worker thread is terminated. Default `DEFAULT_CLOSE_GRACE_MS`.
   */
  closeGraceMs?: number;
  /**
   * How long a new stream may wait for a worker thread to start running it before the thread is
   * terminated and the stream fails. Default `DEFAULT_STREAM_START_TIMEOUT_MS`.
   */
  streamStartTimeoutMs?: number;
  /** Times the close grace period and the start timeout; the reflector's own timers run on the worker's real clock. */
  clock?: Clock;
}

/**
 * One open stream: its stats, whether a thread has picked its task up, and whether its consumer
 * asked it to close.
 */
interface OpenStream {
  latest: PodSourceStats | undefined;
  started: boolean;
  closeRequested: boolean;
  /** Set when the source failed the stream itself; the task's own error then is only its echo. */
  abandonedBecause: string | undefined;
  events: WorkerEventStream;
  iterator: AsyncIterator<SourceEvent<Pod>>;
  /** The piscina task: settles when the worker is done with the stream. */
  task: Promise<unknown>;
  /** Cancels the start timeout. */
  startWait: AbortController;
}

function positive(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${name} must be a positive number, got ${value}`);
  }
}

/**
 * The options' label selector, parsed, once every option is checked: throws `RangeError` for a
 * nonsensical tunable and `LabelSelectorError`, naming where, for a selector the API server would
 * refuse. A thread handed in is closed before it throws: the source owns it from the call on, and
 * one that is never built would otherwise leave it running.
 */
function checkedSelector(options: WorkerPodSourceOptions): readonly SelectorRequirement[] {
  try {
    positive('listPageSize', options.listPageSize);
    positive('watchTimeoutSeconds', options.watchTimeoutSeconds);
    positive('idleTimeoutMs', options.idleTimeoutMs);
    positive('replaceChunkSize', options.replaceChunkSize);
    positive('maxBufferedEvents', options.maxBufferedEvents);
    positive('closeGraceMs', options.closeGraceMs);
    positive('streamStartTimeoutMs', options.streamStartTimeoutMs);
    if (options.threads && (options.resourceLimits || options.compileCacheDir !== undefined)) {
      throw new RangeError(
        'resourceLimits and compileCacheDir belong to the threads given (new ReflectorThreads(…)), not to the source',
      );
    }
    return parseLabelSelector(options.labelSelector ?? '');
  } catch (error) {
    void options.threads?.close();
    throw error;
  }
}

/**
 * The service's Kubernetes pod source: a `KubernetesReflector` per stream, run in one worker
 * thread, seen from the main thread as a plain `Source<Pod>` plus `stats()` and `close()`.
 *
 * Why a thread: decoding and validating a LIST of tens of thousands of pods takes long enough to
 * stall the HTTP control plane and the reconciles; here the main thread only decodes trimmed pods,
 * a chunk per task. Why it is safe: anything that goes wrong in the worker (a crash, an OOM at
 * `resourceLimits`, a consumer too far behind) fails the stream, the loop's driver reopens it,
 * and the new stream's LIST repairs the store.
 */
export class WorkerPodSource {
  /**
   * Hand to `ReconcileLoop`: each call opens a fresh reflector stream, starting with a LIST; the
   * first takes over the one `openFirstStream` opened, if it did.
   */
  readonly source: Source<Pod>;
  readonly #pool: ReflectorPool;
  readonly #taskOptions: ReflectorTaskOptions;
  readonly #maxBufferedEvents: number;
  /** The label selector, parsed once: each stream drops watch events for pods it does not select. */
  readonly #labelSelector: readonly SelectorRequirement[];
  /** One for every stream, so the first pod of a relist shares with the last one seen before it. */
  readonly #interner = new PodStringInterner();
  /** Each stream's first request's credentials, resolved here for the worker. */
  readonly #firstRequest: FirstRequestSettings;
  readonly #closeGraceMs: number;
  readonly #streamStartTimeoutMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #open = new Set<OpenStream>();
  /** The stream `openFirstStream` opened, until the first `source()` call takes it over. */
  #early: OpenStream | undefined;
  /** A stream was opened early or asked for: opening one early now would be a second. */
  #firstAsked = false;
  #finished: PodSourceStats;
  #closing: Promise<void> | undefined;

  constructor(options: WorkerPodSourceOptions = {}) {
    this.#labelSelector = checkedSelector(options);
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? realClock;
    this.#maxBufferedEvents = options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS;
    this.#finished = initialReflectorStats(options.initialList ?? DEFAULT_INITIAL_LIST);
    this.#closeGraceMs = options.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS;
    this.#streamStartTimeoutMs = options.streamStartTimeoutMs ?? DEFAULT_STREAM_START_TIMEOUT_MS;
    const threads =
      options.threads ??
      new ReflectorThreads({
        ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
        ...(options.compileCacheDir !== undefined
          ? { compileCacheDir: options.compileCacheDir }
          : {}),
      });
    this.#taskOptions = {
      cluster: {
        ...(options.kubeconfigPath ? { kubeconfigPath: options.kubeconfigPath } : {}),
        ...(options.context ? { context: options.context } : {}),
        ...(options.apiContentType ? { apiContentType: options.apiContentType } : {}),
        ...(options.apiCompression ? { apiCompression: true } : {}),
        ...(options.apiHttp2 === false ? { apiHttp2: false } : {}),
      },
      ...(options.namespace ? { namespace: options.namespace } : {}),
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
      ...(options.listPageSize ? { listPageSize: options.listPageSize } : {}),
      ...(options.watchTimeoutSeconds ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
      ...(options.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.initialList ? { initialList: options.initialList } : {}),
      replaceChunkSize: options.replaceChunkSize ?? DEFAULT_REPLACE_CHUNK_SIZE,
      // As much JSON as the worker's old generation may hold (a LIST too large for the worker's
      // heap when its pods were objects stays too large now that they are bytes off the heap),
      // and never more than a share of the container's memory (./memory-budget.ts).
      maxListBytes: listMemoryBudget(
        (threads.resourceLimits.maxOldGenerationSizeMb ?? DEFAULT_WORKER_HEAP_MB) * 1024 * 1024,
        options.containerMemoryBytes === undefined
          ? containerMemoryLimit()
          : options.containerMemoryBytes || undefined,
      ),
    };
    this.#firstRequest = new FirstRequestSettings(this.#taskOptions.cluster, this.#clock);
    this.#pool = threads.pool;
    // A worker that dies between tasks is reported here (one inside a task fails that task).
    threads.adopt((error: unknown) =>
      this.#logger.error({ error: safeErrorMessage(error) }, 'reflector worker failed'),
    );
    // Piscina fails the tasks running on a thread that exits, but not the ones queued for it: a
    // thread that dies while starting leaves them queued with no thread to take them, and starts
    // no replacement (it reads a death in bootstrap as a script that cannot start). Those streams
    // would wait for good; failing them instead lets the driver reopen, which starts a thread.
    // After the current turn: piscina emits this before it fails the thread's own tasks.
    this.#pool.on('workerDestroy', () => queueMicrotask(() => this.#abandonOrphans()));
    this.source = (signal) => ({ [Symbol.asyncIterator]: () => this.#openStream(signal) });
  }

  /**
   * Counters since this source was made, across streams and worker restarts; phase, health and
   * cursor of the newest open stream. Cheap and synchronous: the worker pushes its stats with every
   * batch, so this only reads what arrived.
   */
  stats(): PodSourceStats {
    let stats = this.#finished;
    let latest: PodSourceStats | undefined;
    for (const stream of this.#open) {
      if (!stream.latest) continue;
      stats = foldReflectorStats(stats, stream.latest);
      latest = stream.latest;
    }
    if (latest) return stats;
    const idle: PodSourceStats = {
      ...stats,
      phase: this.#closing ? 'stopped' : 'idle',
      healthy: false,
    };
    delete idle.cursor;
    return idle;
  }

  /**
   * Pods the open streams hold for the loop and it has not taken yet (a waiting replace counts
   * each of its pods): client-go's FIFO depth, `informer_queued_items`.
   */
  queuedItems(): number {
    let queued = 0;
    for (const stream of this.#open) queued += stream.events.queuedItems;
    return queued;
  }

  /**
   * Opens the stream the first `source()` call will take over, now rather than when the loop asks
   * for it: the command calls this as soon as the source is made, so the first LIST (and with it
   * readiness) leaves while the rest of the service is still loading instead of after it. What
   * arrives meanwhile waits in the stream's buffer; a failure waits there too, for the loop's
   * first `next()`, so its driver reopens as for any failed stream. Does nothing once a stream was
   * opened or asked for, or the source closed.
   */
  openFirstStream(): void {
    if (this.#closing || this.#firstAsked) return;
    this.#firstAsked = true;
    this.#early = this.#startStream();
  }

  /** Closes every open stream (each closes its connection in the worker), then the pool. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      // An early stream no one took over is closed too, even one whose task already ended: its
      // port is released only by closing it.
      const streams = new Set(this.#open);
      if (this.#early) streams.add(this.#early);
      this.#early = undefined;
      await Promise.all([...streams].map((stream) => stream.iterator.return?.()));
      await this.#pool.destroy();
    })();
    return this.#closing;
  }

  /**
   * Kills the worker thread as a crash would: every open stream fails, and piscina starts a fresh
   * thread for the reopen. For fault injection (tests, e2e) and as a last resort for an operator.
   */
  async terminateWorker(): Promise<void> {
    await Promise.all(this.#pool.threads.map((thread) => thread.terminate()));
  }

  /**
   * The stream a `source()` call gets: the one opened early if it is the first call, else a new
   * reflector task. `signal` is the stream's own (RUNTIME.md, amendment 2): when it aborts, the
   * stream closes at once, as `return()` would, so the worker closes its connection even if the
   * consumer never gets to call `return()`.
   */
  #openStream(signal: AbortSignal | undefined): AsyncIterator<SourceEvent<Pod>> {
    this.#firstAsked = true;
    const early = this.#early;
    this.#early = undefined;
    if (this.#closing || signal?.aborted) {
      if (early) void early.iterator.return?.();
      const why = this.#closing ? 'WorkerPodSource is closed' : 'the stream was aborted';
      return {
        next: () => Promise.reject(new Error(why)),
        return: async () => ({ done: true, value: undefined }),
      };
    }
    const stream = early ?? this.#startStream();
    const closeOnAbort = (): void => {
      void stream.iterator.return?.();
    };
    signal?.addEventListener('abort', closeOnAbort, { once: true });
    // Whatever ends the task, the listener goes with it: a long-lived signal keeps nothing alive.
    stream.task.finally(() => signal?.removeEventListener('abort', closeOnAbort)).catch(() => {});
    return stream.iterator;
  }

  /** One reflector task, running (or queued for a thread) from now, its events buffered. */
  #startStream(): OpenStream {
    const { port1, port2 } = new MessageChannel();
    const abort = new AbortController();
    // The task leaves once its first request's settings are resolved (a few ms; bounded), while
    // the thread is still starting or busy closing the previous stream.
    const task = this.#firstRequest
      .next()
      .then((firstRequest) =>
        this.#pool.run(
          { port: port2, options: this.#taskOptions, ...(firstRequest ? { firstRequest } : {}) },
          { transferList: [port2], signal: abort.signal },
        ),
      );
    const stream: OpenStream = {
      latest: undefined,
      started: false,
      closeRequested: false,
      abandonedBecause: undefined,
      events: undefined as unknown as WorkerEventStream,
      iterator: undefined as unknown as AsyncIterator<SourceEvent<Pod>>,
      task,
      startWait: new AbortController(),
    };
    const events = new WorkerEventStream({
      port: port1,
      task,
      abortTask: () => abort.abort(new Error('reflector stream did not close in time')),
      maxBufferedEvents: this.#maxBufferedEvents,
      labelSelector: this.#labelSelector,
      interner: this.#interner,
      closeGraceMs: this.#closeGraceMs,
      clock: this.#clock,
      logger: this.#logger,
      onStats: (stats) => {
        stream.latest = stats;
      },
      onStarted: () => {
        stream.started = true;
        stream.startWait.abort();
      },
    });
    stream.events = events;
    this.#clock.sleep(this.#streamStartTimeoutMs, stream.startWait.signal).then(
      () => this.#startOverdue(stream),
      () => {},
    );
    stream.iterator = {
      next: () => events.next(),
      return: () => {
        stream.closeRequested = true;
        return events.return();
      },
    };
    this.#open.add(stream);
    task.then(
      () => this.#retire(stream, undefined),
      (error: unknown) => this.#retire(stream, error),
    );
    return stream;
  }

  /** A thread is gone and none is left: fail every stream that no thread had picked up. */
  #abandonOrphans(): void {
    if (this.#closing || this.#pool.threads.length > 0) return;
    for (const stream of this.#open) {
      if (!stream.started && !stream.closeRequested) {
        this.#abandon(stream, 'the reflector worker thread exited before it started the stream');
      }
    }
  }

  /** No thread took the stream within the start timeout: the thread is wedged, replace it. */
  #startOverdue(stream: OpenStream): void {
    if (stream.started || stream.closeRequested || !this.#open.has(stream)) return;
    this.#logger.warn(
      { timeoutMs: this.#streamStartTimeoutMs },
      'reflector worker did not start a stream in time; terminating it',
    );
    this.#abandon(
      stream,
      `no reflector worker thread started the stream within ${this.#streamStartTimeoutMs} ms`,
    );
    void this.terminateWorker();
  }

  #abandon(stream: OpenStream, reason: string): void {
    stream.abandonedBecause ??= reason;
    stream.events.abandon(new WorkerStreamError(`${reason}; reopen to start another`));
  }

  /** A stream's task is over: its counters join the totals, and a crash becomes `lastError`. */
  #retire(stream: OpenStream, error: unknown): void {
    this.#open.delete(stream);
    stream.startWait.abort();
    if (stream.latest) this.#finished = foldReflectorStats(this.#finished, stream.latest);
    if (error !== undefined && !stream.closeRequested) {
      // Redacted: the text crossed from the worker and may quote a kubeconfig
      // (../client/safe-error.ts).
      const message = stream.abandonedBecause ?? safeErrorMessage(error);
      this.#finished = { ...this.#finished, lastError: `reflector worker failed: ${message}` };
      this.#logger.error({ error: message }, 'reflector worker stream failed');
    }
  }
}
