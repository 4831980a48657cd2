/**
 * The main-thread half of one worker-backed stream: turns the messages of a reflector task's
 * `MessagePort` back into `SourceEvent`s, as an async iterator the runtime's driver consumes.
 *
 * Buffering is bounded rather than back-pressured: the worker never waits for the driver (a slow
 * reconcile must not stall the watch into an idle timeout), but a stream whose consumer falls so
 * far behind that the buffer passes its bound fails, and the driver's reopen relists, which is
 * cheaper than holding an ever-growing backlog of stale events.
 */
import { type Pod, podKey } from '../../model/pod.js';
import type { PodSourceStats } from '../../model/pod-source-stats.js';
import { type Clock, realClock } from '../../runtime/clock.js';
import { type Logger, silentLogger } from '../../runtime/logger.js';
import type { ObjectKey, SourceEvent } from '../../runtime/source-event.js';
import { safeErrorMessage } from '../client/safe-error.js';
import { matchesLabelSelector, type SelectorRequirement } from '../resources/label-selector.js';
import { PodStringInterner } from './pod-string-interner.js';
import type { ChangeEvent, JsonBytes, MainMessage, WorkerMessage } from './protocol.js';

const decoder = new TextDecoder();

/** The worker validated these before encoding them; the main side only parses. */
function decode<T>(bytes: JsonBytes): T {
  return JSON.parse(decoder.decode(bytes)) as T;
}

/** How many FIFO items an event stands for: a replace queues each of its pods in client-go. */
function items(event: SourceEvent<Pod>): number {
  return event.type === 'replace' ? event.objects.size : 1;
}

/** The port's main-side surface this stream uses (a `MessagePort`, or a fake in tests). */
interface StreamPort {
  on(event: 'message', listener: (message: WorkerMessage) => void): unknown;
  postMessage(message: MainMessage): void;
  close(): void;
}

/**
 * What one stream is built from: the worker's port and task (created by the source, which owns the
 * piscina pool), the bound on events buffered for a slow consumer (past it the stream fails, and
 * the reopen relists), and how long a close waits for the worker before terminating the task.
 */
interface WorkerEventStreamOptions {
  port: StreamPort;
  /** The reflector task: settles when the worker ends the stream, rejects if the worker dies. */
  task: Promise<unknown>;
  /** Ends the task the hard way (piscina terminates the thread); used when `close` goes unheeded. */
  abortTask: () => void;
  maxBufferedEvents: number;
  /** How long `return()` waits for the worker to close its stream before terminating it. */
  closeGraceMs: number;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  onStats?: ((stats: PodSourceStats) => void) | undefined;
  /** The worker picked the task up (its `started` message arrived). */
  onStarted?: (() => void) | undefined;
  /** Shares the pods' repeated strings; the source's, for all its streams. Else one of its own. */
  interner?: PodStringInterner | undefined;
  /**
   * The watched label selector, parsed: a LIST item or a watch event upserting a pod it does not
   * select is dropped here and counted as `out-of-scope` (`#inScope`). Absent or empty: every pod.
   */
  labelSelector?: readonly SelectorRequirement[] | undefined;
}

/** What the log says of a pod dropped for the selector, by where it came from. */
const OUT_OF_SELECTOR_MESSAGES = {
  list: 'reflector dropped a LIST item for a pod the label selector does not select',
  watch: 'reflector dropped a watch event for a pod the label selector does not select',
} as const;

/** The worker's stream ended or failed without the main side asking. */
export class WorkerStreamError extends Error {
  override readonly name = 'WorkerStreamError';
}

/**
 * The async iterator the source driver reads one worker-backed stream through. It reassembles a
 * `replace` from its chunks (checking the announced count), decodes the JSON batches, and turns a
 * worker that ended, died or fell behind into a `WorkerStreamError`, so the driver's ordinary
 * reopen handles every way a stream can end.
 */
export class WorkerEventStream implements AsyncIterator<SourceEvent<Pod>> {
  readonly #port: StreamPort;
  readonly #abortTask: () => void;
  readonly #maxBuffered: number;
  readonly #closeGraceMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #onStats: (stats: PodSourceStats) => void;
  readonly #onStarted: () => void;
  readonly #taskSettled: Promise<void>;
  readonly #selector: readonly SelectorRequirement[];
  readonly #interner: PodStringInterner;
  /** LIST items and watch events dropped here for a pod the selector does not select, added to the stats. */
  #outOfSelector = 0;
  #queue: SourceEvent<Pod>[] = [];
  #head = 0;
  /** The queued events' items: one per upsert or delete, the pod count of a replace. */
  #queuedItems = 0;
  /**
   * The replace being reassembled: the pods kept, and how many the selector left out (the
   * worker's announced count includes them).
   */
  #assembling: { pods: Map<ObjectKey, Pod>; outOfScope: number } | undefined;
  /**
   * Replace chunks not decoded yet, and every message that arrived behind one, in order: one chunk
   * is decoded per turn of the event loop (`#readInbox`), since Node hands on every message queued
   * on a port (up to 1,000) in one task and the worker may have several chunks in flight.
   */
  #inbox: WorkerMessage[] = [];
  #inboxHead = 0;
  #inboxTurnScheduled = false;
  #failure: Error | undefined;
  #finished = false;
  #closing = false;
  #wake: (() => void) | undefined;

  constructor(options: WorkerEventStreamOptions) {
    this.#port = options.port;
    this.#abortTask = options.abortTask;
    this.#maxBuffered = options.maxBufferedEvents;
    this.#closeGraceMs = options.closeGraceMs;
    this.#clock = options.clock ?? realClock;
    this.#logger = options.logger ?? silentLogger;
    this.#selector = options.labelSelector ?? [];
    this.#interner = options.interner ?? new PodStringInterner();
    const onStats = options.onStats ?? (() => {});
    // The worker counts its own drops; the ones made here join them under the same reason.
    this.#onStats = (stats) =>
      onStats(
        this.#outOfSelector === 0
          ? stats
          : {
              ...stats,
              droppedEvents: {
                ...stats.droppedEvents,
                'out-of-scope': (stats.droppedEvents['out-of-scope'] ?? 0) + this.#outOfSelector,
              },
            },
      );
    this.#onStarted = options.onStarted ?? (() => {});
    this.#port.on('message', (message) => this.#receive(message));
    this.#taskSettled = options.task.then(
      () => this.#taskEnded(undefined),
      (error: unknown) => this.#taskEnded(error),
    );
  }

  /** Events waiting for the consumer. */
  get buffered(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * Pods waiting for the consumer, as client-go's FIFO counts them (`informer_queued_items`): one
   * per upsert or delete, and each pod of a waiting replace.
   */
  get queuedItems(): number {
    return this.#queuedItems;
  }

  async next(): Promise<IteratorResult<SourceEvent<Pod>>> {
    for (;;) {
      if (this.#head < this.#queue.length) {
        const value = this.#queue[this.#head] as SourceEvent<Pod>;
        this.#queue[this.#head] = undefined as unknown as SourceEvent<Pod>;
        this.#head += 1;
        this.#queuedItems -= items(value);
        if (this.#head === this.#queue.length) {
          this.#queue = [];
          this.#head = 0;
        }
        return { done: false, value };
      }
      if (this.#failure) {
        const failure = this.#failure;
        this.#failure = undefined;
        this.#finished = true;
        throw failure;
      }
      if (this.#finished || this.#closing) return { done: true, value: undefined };
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  /**
   * Asks the worker to close its stream (its reflector closes the connection), waits up to the
   * grace period for the task to end, and terminates the worker if it did not. Idempotent.
   */
  async return(): Promise<IteratorResult<SourceEvent<Pod>>> {
    if (!this.#closing) {
      this.#closing = true;
      this.#clearQueue();
      this.#wake?.();
      if (!this.#finished) {
        try {
          this.#port.postMessage({ kind: 'close' });
        } catch {
          // The port is already gone; the task is ending anyway.
        }
        const grace = new AbortController();
        const ended = await Promise.race([
          this.#taskSettled.then(() => true),
          this.#clock.sleep(this.#closeGraceMs, grace.signal).then(
            () => false,
            () => true,
          ),
        ]);
        grace.abort();
        if (!ended) {
          this.#logger.warn(
            { graceMs: this.#closeGraceMs },
            'reflector worker did not close its stream in time; terminating it',
          );
          this.#abortTask();
          await this.#taskSettled;
        }
      }
      this.#port.close();
    }
    return { done: true, value: undefined };
  }

  /**
   * Fails the stream from outside, for what only the source can see (the thread that was to run
   * the task is gone), then ends the task the hard way. The consumer gets `error` next.
   */
  abandon(error: WorkerStreamError): void {
    if (this.#closing || this.#finished) return;
    this.#fail(error);
    this.#abortTask();
  }

  #receive(message: WorkerMessage): void {
    if (this.#closing || this.#finished) return;
    if (message.kind === 'replace-chunk' || this.#inboxHead < this.#inbox.length) {
      this.#inbox.push(message);
      this.#scheduleInboxTurn();
      return;
    }
    this.#handle(message);
  }

  #scheduleInboxTurn(): void {
    if (this.#inboxTurnScheduled) return;
    this.#inboxTurnScheduled = true;
    void this.#clock.sleep(0).then(() => {
      this.#inboxTurnScheduled = false;
      this.#readInbox(1);
      if (this.#inboxHead < this.#inbox.length) this.#scheduleInboxTurn();
    });
  }

  /**
   * Handles the inbox's messages in order, up to and including its `chunks`th replace chunk (all
   * of them for `Infinity`). Stops once the stream is closing or finished.
   */
  #readInbox(chunks: number): void {
    let decoded = 0;
    while (this.#inboxHead < this.#inbox.length && decoded < chunks) {
      if (this.#closing || this.#finished) break;
      const message = this.#inbox[this.#inboxHead] as WorkerMessage;
      this.#inbox[this.#inboxHead] = undefined as unknown as WorkerMessage;
      this.#inboxHead += 1;
      this.#handle(message);
      if (message.kind === 'replace-chunk') decoded += 1;
    }
    if (this.#inboxHead === this.#inbox.length || this.#closing || this.#finished) {
      this.#inbox = [];
      this.#inboxHead = 0;
    }
  }

  #handle(message: WorkerMessage): void {
    switch (message.kind) {
      case 'started':
        this.#onStarted();
        return;
      case 'batch':
        if (message.events) {
          for (const event of decode<ChangeEvent[]>(message.events)) {
            if (event.type === 'upsert' && !this.#inScope(event.object, 'watch')) continue;
            if (event.type === 'upsert') this.#interner.internPod(event.object);
            this.#push(event);
          }
        }
        this.#onStats(message.stats);
        break;
      case 'replace-chunk': {
        if (message.restart) this.#assembling = undefined;
        this.#assembling ??= { pods: new Map(), outOfScope: 0 };
        for (const pod of decode<Pod[]>(message.pods)) {
          if (!this.#inScope(pod, 'list')) this.#assembling.outOfScope += 1;
          else this.#assembling.pods.set(podKey(pod), this.#interner.internPod(pod));
        }
        // At once: a chunk the worker sends on will wait in the inbox for a turn of its own.
        this.#port.postMessage({ kind: 'ack' });
        this.#onStats(message.stats);
        return;
      }
      case 'replace-end': {
        if (message.restart) this.#assembling = undefined;
        const received = (this.#assembling?.pods.size ?? 0) + (this.#assembling?.outOfScope ?? 0);
        if (received !== message.count) {
          // All or nothing: a replace that is not exactly the LIST must never reach the store.
          this.#fail(
            new WorkerStreamError(
              `the reflector worker announced a replace of ${message.count} pods but sent ${received}; reopen to relist`,
            ),
          );
          this.#assembling = undefined;
          this.#port.postMessage({ kind: 'close' });
          return;
        }
        // A replace is the whole truth: events still waiting before it are superseded (applying
        // them first would end in the same store), so a consumer that is behind skips them.
        this.#clearQueue();
        this.#push({ type: 'replace', objects: this.#assembling?.pods ?? new Map() });
        this.#assembling = undefined;
        this.#onStats(message.stats);
        break;
      }
      case 'log':
        this.#logger[message.level](message.obj, message.msg);
        return;
    }
    if (this.buffered > this.#maxBuffered) {
      this.#fail(
        new WorkerStreamError(
          `the consumer fell more than ${this.#maxBuffered} events behind the reflector; reopen to relist`,
        ),
      );
      this.#clearQueue();
      this.#port.postMessage({ kind: 'close' });
    }
    this.#wake?.();
  }

  /**
   * Whether a LIST item or an upserted pod is one the watched selector selects. The LIST and the
   * WATCH asked the server for the selector, so a pod it does not select came from a broken
   * server or something between (a proxy); applied, a stranger's pod would join a cell. It is
   * dropped, counted (`out-of-scope`) and logged, at warn the first time, at debug after.
   * Checked here rather than in the worker, whose transcoder never reads a pod's labels. A delete
   * is never dropped: a pod relabelled out of the selector comes as a DELETED carrying its new
   * labels, the server's way to say it left.
   */
  #inScope(pod: Pod, from: 'list' | 'watch'): boolean {
    if (this.#selector.length === 0 || matchesLabelSelector(this.#selector, pod.metadata.labels)) {
      return true;
    }
    this.#outOfSelector += 1;
    const entry = { key: podKey(pod) };
    const message = OUT_OF_SELECTOR_MESSAGES[from];
    if (this.#outOfSelector === 1) this.#logger.warn(entry, message);
    else this.#logger.debug(entry, message);
    return false;
  }

  #push(event: SourceEvent<Pod>): void {
    this.#queue.push(event);
    this.#queuedItems += items(event);
  }

  #clearQueue(): void {
    this.#queue = [];
    this.#head = 0;
    this.#queuedItems = 0;
  }

  #taskEnded(error: unknown): void {
    if (this.#closing || this.#finished) return;
    // What the worker sent before it ended is handled first, as it was sent.
    this.#readInbox(Infinity);
    if (!this.#failure) {
      this.#fail(
        new WorkerStreamError(
          error === undefined
            ? 'the reflector worker ended its stream unexpectedly'
            : // The worker's error text may quote a kubeconfig or a credential plugin's output:
              // only its redacted summary crosses, and the original is not kept as a cause.
              `the reflector worker failed: ${safeErrorMessage(error)}`,
        ),
      );
    }
    this.#finished = true;
    this.#wake?.();
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    this.#wake?.();
  }
}
