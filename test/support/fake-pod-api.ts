/**
 * A scripted `PodApi`: every LIST and WATCH is recorded (so tests assert the sequence of
 * requests, client-go style), LIST answers come from a script or from a small in-memory world of
 * the model's `Pod`s (encoded as the JSON path of `HttpPodApi` encodes each item), and each WATCH
 * is a `FakeWatch` the test pushes frames into, ends, breaks, or leaves hanging.
 */
import { type EncodedPod, encodePod } from '../../src/kubernetes/codec/encoded-pod.js';
import type {
  ListPodsOptions,
  PodApi,
  PodList,
  WatchFrame,
  WatchPodsOptions,
  WatchStream,
} from '../../src/kubernetes/resources/pod-api.js';
import type { Pod } from '../../src/model/pod.js';
import { abortReason, type Clock } from '../../src/runtime/clock.js';

export interface RecordedRequest {
  verb: 'LIST' | 'WATCH';
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  limit?: number | undefined;
  resourceVersion?: string | undefined;
  timeoutSeconds?: number | undefined;
  /** A watch-list: the WATCH asked for the initial events first. */
  sendInitialEvents?: boolean | undefined;
  /** The fake clock's time when the request was made (0 without a clock). */
  at: number;
}

/** A LIST's answer as a test writes it: the model's pods, encoded when listed. */
export interface PodWorld {
  pods: Pod[];
  resourceVersion: string;
}

/** What one LIST does: answer, fail, or never answer (until its signal aborts). */
export type ListOutcome = PodWorld | Error | 'hang';

/** Each pod encoded once, so every LIST of the same world hands out the same `EncodedPod`s. */
const encoded = new WeakMap<Pod, EncodedPod>();

/** `pod` as the reflector holds it. */
export function encodedPod(pod: Pod): EncodedPod {
  let found = encoded.get(pod);
  if (!found) {
    found = encodePod(pod);
    encoded.set(pod, found);
  }
  return found;
}
/** What opening one WATCH does: open (default), fail, or never answer. */
export type WatchOutcome = 'open' | Error | 'hang';

function pendingUntilAborted<T>(signal: AbortSignal): Promise<T> {
  return new Promise<T>((_, reject) => {
    if (signal.aborted) reject(abortReason(signal));
    else signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
  });
}

type QueuedItem = { frame: WatchFrame } | { end: true } | { error: Error };

export class FakeWatch implements WatchStream {
  readonly options: WatchPodsOptions;
  /** `close()` was called. */
  closed = false;
  /** Opened with the `'hang'` outcome: the caller never got this stream. */
  hung = false;
  readonly #queue: QueuedItem[] = [];
  #wake: (() => void) | undefined;
  readonly #readyFrames: boolean;

  /**
   * `readyFrames`: frames pushed before the reader came back are handed out by `takeReady` (as
   * `HttpWatchStream` hands out one socket read's); false: one per `next()`, as a stream without
   * `takeReady` does.
   */
  constructor(options: WatchPodsOptions, readyFrames = true) {
    this.options = options;
    this.#readyFrames = readyFrames;
    options.signal.addEventListener('abort', () => this.#wake?.(), { once: true });
  }

  takeReady(): WatchFrame | undefined {
    if (!this.#readyFrames || this.released) return undefined;
    const head = this.#queue[0];
    if (head === undefined || !('frame' in head)) return undefined;
    this.#queue.shift();
    return head.frame;
  }

  /** Closed by the reflector, or its signal aborted: either way the connection is gone. */
  get released(): boolean {
    return this.closed || this.options.signal.aborted;
  }

  /**
   * The reader handled every frame pushed so far and waits for the next one: the signal that it
   * finished its step, so a test can then assert what did not happen.
   */
  get awaitingFrame(): boolean {
    return this.#wake !== undefined && this.#queue.length === 0 && !this.released;
  }

  /** One JSON frame, counted as its serialized size in bytes. */
  push(value: unknown): this {
    this.options.onBytes?.(JSON.stringify(value).length + 1);
    return this.#enqueue({ frame: { kind: 'decoded', value } });
  }

  /** A line that is not JSON. */
  pushGarbled(text = '{"type":"ADDED","object":'): this {
    this.options.onBytes?.(text.length + 1);
    return this.#enqueue({ frame: { kind: 'garbled', error: `Unexpected end of JSON: ${text}` } });
  }

  /** Bytes that do not complete a frame (part of a large one): activity without a frame. */
  trickle(count: number): this {
    this.options.onBytes?.(count);
    return this;
  }

  /** The server's clean end (its timeoutSeconds ran out). */
  end(): this {
    return this.#enqueue({ end: true });
  }

  /** The connection breaks. */
  fail(error: Error = new Error('socket hang up')): this {
    return this.#enqueue({ error });
  }

  close(): void {
    this.closed = true;
    this.#wake?.();
  }

  #enqueue(item: QueuedItem): this {
    this.#queue.push(item);
    this.#wake?.();
    return this;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchFrame> {
    for (;;) {
      const signal = this.options.signal;
      if (signal.aborted) throw abortReason(signal);
      if (this.closed) throw new Error('watch closed');
      const item = this.#queue.shift();
      if (!item) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
        continue;
      }
      if ('end' in item) return;
      if ('error' in item) throw item.error;
      yield item.frame;
    }
  }
}

export class FakeList {
  constructor(
    readonly options: ListPodsOptions,
    readonly outcome: ListOutcome,
  ) {}
  get aborted(): boolean {
    return this.options.signal.aborted;
  }
}

export class FakePodApi implements PodApi {
  readonly #clock: Pick<Clock, 'now'> | undefined;
  readonly requests: RecordedRequest[] = [];
  readonly lists: FakeList[] = [];
  readonly watches: FakeWatch[] = [];
  /** Answer for a LIST when the script is empty. */
  world: PodWorld = { pods: [], resourceVersion: '1' };
  /** Whether the WATCHes opened from now on hand out waiting frames at once (`takeReady`). */
  readyFrames = true;
  readonly #listScript: ListOutcome[] = [];
  readonly #watchScript: WatchOutcome[] = [];

  /** With a clock, every recorded request carries the time it was made. */
  constructor(clock?: Pick<Clock, 'now'>) {
    this.#clock = clock;
  }

  /** The next LISTs' outcomes, in order; after they run out, LIST answers with `world`. */
  queueList(...outcomes: ListOutcome[]): this {
    this.#listScript.push(...outcomes);
    return this;
  }

  /** The next WATCH opens' outcomes, in order; after they run out, a WATCH opens. */
  queueWatch(...outcomes: WatchOutcome[]): this {
    this.#watchScript.push(...outcomes);
    return this;
  }

  /** The requests as one line each: `LIST`, `WATCH rv=12`, `WATCH-LIST` (initial events first). */
  get log(): string[] {
    return this.requests.map((r) =>
      r.verb === 'LIST'
        ? 'LIST'
        : r.sendInitialEvents
          ? 'WATCH-LIST'
          : `WATCH rv=${r.resourceVersion ?? ''}`,
    );
  }

  /** The most recent WATCH. */
  get watch(): FakeWatch {
    const last = this.watches.at(-1);
    if (!last) throw new Error('no WATCH was opened');
    return last;
  }

  async listPods(options: ListPodsOptions): Promise<PodList> {
    this.requests.push({
      verb: 'LIST',
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      limit: options.limit,
      at: this.#clock?.now() ?? 0,
    });
    const outcome = this.#listScript.shift() ?? this.world;
    this.lists.push(new FakeList(options, outcome));
    if (outcome === 'hang') return pendingUntilAborted(options.signal);
    if (outcome instanceof Error) throw outcome;
    options.onBytes?.(JSON.stringify(outcome).length);
    return { pods: outcome.pods.map(encodedPod), resourceVersion: outcome.resourceVersion };
  }

  async watchPods(options: WatchPodsOptions): Promise<WatchStream> {
    this.requests.push({
      verb: 'WATCH',
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      resourceVersion: options.resourceVersion,
      timeoutSeconds: options.timeoutSeconds,
      ...(options.sendInitialEvents ? { sendInitialEvents: true } : {}),
      at: this.#clock?.now() ?? 0,
    });
    const outcome = this.#watchScript.shift() ?? 'open';
    const watch = new FakeWatch(options, this.readyFrames);
    this.watches.push(watch);
    if (outcome === 'hang') {
      watch.hung = true;
      return pendingUntilAborted(options.signal);
    }
    if (outcome instanceof Error) throw outcome;
    return watch;
  }
}
