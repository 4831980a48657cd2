/**
 * The event bus as Server-Sent Events, for `GET /api/v1/events`: what a person watches through
 * `kubectl port-forward` with `curl -N` to see the controller think.
 *
 * `EventStreams` owns every open stream, and bounds them three ways, because a client is anyone
 * who can reach the port and a pod's texts are written by anyone who can create pods:
 * - at most `maxStreams` at once (the route answers 503 beyond), so streams cannot use up the
 *   server's connections;
 * - each event is serialized once, into one buffer every stream shares (its `id:` included: ids
 *   are of the process, not of the connection), so a thousand clients do not stringify it a
 *   thousand times;
 * - each stream holds at most `maxBytes` not yet taken by its socket; past that the oldest queued
 *   events are dropped and the client is told how many with an `events.dropped` event before the
 *   next one it gets. Bytes, not events: one event can be large.
 *
 * Every event carries an id (`<epoch>-<sequence>`, see event-history.ts) and its wall-clock
 * `time` (RFC 3339). The last events are kept in a bounded history, so a client reconnecting with
 * `Last-Event-ID` first receives what it missed; when that is no longer all held, or the id is
 * not of this process, it is told so with an `events.missed` event, and then knows to reread
 * the state instead of trusting the stream to be complete.
 *
 * A comment line every `heartbeatMs` keeps proxies and port-forwards from closing an idle stream.
 * Nothing outlives a stream: its timer and its signal listener are removed when it ends, however
 * it ends (no `AbortSignal.any`, which on Node 20 retains a little per call for as long as the
 * long-lived signals it combines live). The one bus listener, which feeds the history and every
 * stream, lives from construction to `close()`.
 *
 * Size: the streams and their three bounds share one per-stream state; the history is event-
 * history.ts.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { EventBus } from '../coordination/event-bus.js';
import type { Clock } from '../runtime/clock.js';
import { EventHistory, formatEventId, type HistoryEntry } from './event-history.js';
import type { ServiceEvent } from './service-events.js';

/** 15 s: well inside the idle timeouts of common proxies (60 s) and of kubectl port-forward. */
export const SSE_HEARTBEAT_MS = 15_000;
/**
 * Bytes one client may fall behind by before its oldest events are dropped: thousands of events
 * of a few hundred bytes (a relist of thousands of cells publishes one `cell.changed` each), and
 * at most 256 MiB counted over the default 256 streams — counted, since the event buffers are
 * shared between streams and with the history.
 */
export const SSE_MAX_CLIENT_BYTES = 1_048_576;
/**
 * Open streams at most: far more than people watching and dashboards need, far fewer than the
 * server's connection cap (`SERVER_TIMEOUTS.maxConnections`, 1,024), so streams held open by one
 * client can never starve probes, scrapes and the API.
 */
export const DEFAULT_MAX_EVENT_STREAMS = 256;
/** How long a client waits before reconnecting, sent once as the stream's `retry:` field. */
export const SSE_RETRY_MS = 2_000;
/**
 * What the socket side of a stream buffers before the stream waits (Readable `highWaterMark`):
 * small, so nearly everything a slow client has not taken is in the counted, droppable queue.
 */
const STREAM_HIGH_WATER_MARK = 16_384;

/**
 * What the event streams are built from. The limits default to `DEFAULT_MAX_EVENT_STREAMS`,
 * `SSE_MAX_CLIENT_BYTES` and the heartbeat constant above; the clock times the heartbeats.
 */
interface EventStreamsOptions {
  bus: EventBus<ServiceEvent>;
  clock: Clock;
  maxStreams?: number;
  maxBytes?: number;
  heartbeatMs?: number;
  /** Told each time events were dropped for a client (for the metric). */
  onDropped?: (count: number) => void;
  /** Epoch ms, for each event's `time`; default `Date.now`. */
  wallClock?: () => number;
  /** The first part of every id; default 8 random hex digits, new in every process. */
  epoch?: string;
  /** Bounds of the history a reconnecting client resumes from (event-history.ts). */
  historyEvents?: number;
  historyBytes?: number;
}

/** One SSE message: `id`, `event` and one `data` line of JSON. */
export function formatSseEvent(id: string | number, type: string, data: unknown): string {
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Builds one of the stream's own messages (a notice) with the id of sequence `seq`. */
type NoticeWriter = (seq: number, type: string, data: Record<string, unknown>) => Buffer;

/** A queued message, as shared bytes. */
interface Queued {
  body: Buffer;
  /** The event's sequence; `undefined` for a comment (heartbeat), never counted as dropped. */
  seq: number | undefined;
}

/**
 * Most bytes one write to a client carries: what is queued is sent in pieces of this size at
 * most, each one `push` (one socket write), instead of two writes per event.
 */
const WRITE_BATCH_BYTES = 65_536;

/** One client's stream. */
class EventStream extends Readable {
  readonly #types: ReadonlySet<string> | undefined;
  readonly #maxBytes: number;
  readonly #onDropped: ((count: number) => void) | undefined;
  /** Asks the owner to call `flush()` soon (batched with the other streams' flushes). */
  readonly #schedule: (stream: EventStream) => void;
  readonly #notice: NoticeWriter;
  readonly #queue: Queued[] = [];
  #head = 0;
  #queuedBytes = 0;
  #dropped = 0;
  /** The sequence of the newest event dropped: the id of the notice that reports the drop. */
  #lastDroppedSeq = 0;
  #totalDropped = 0;
  #wanting = false;
  #ending = false;

  constructor(
    types: readonly string[] | undefined,
    maxBytes: number,
    onDropped: ((count: number) => void) | undefined,
    schedule: (stream: EventStream) => void,
    notice: NoticeWriter,
  ) {
    super({ highWaterMark: STREAM_HIGH_WATER_MARK });
    this.#types = types === undefined ? undefined : new Set(types);
    this.#maxBytes = maxBytes;
    this.#onDropped = onDropped;
    this.#schedule = schedule;
    this.#notice = notice;
  }

  wants(type: string): boolean {
    return this.#types === undefined || this.#types.has(type);
  }

  /**
   * Queues `body` (the event of sequence `seq`, or a comment when `undefined`), dropping the
   * oldest queued events while over the byte bound.
   */
  offer(body: Buffer, seq: number | undefined): void {
    if (this.#ending || this.destroyed) return;
    this.#queue.push({ body, seq });
    this.#queuedBytes += body.length;
    while (this.#queuedBytes > this.#maxBytes && this.#head < this.#queue.length - 1) {
      const oldest = this.#queue[this.#head]!;
      this.#queue[this.#head] = undefined as never;
      this.#head += 1;
      this.#queuedBytes -= oldest.body.length;
      if (oldest.seq !== undefined) {
        this.#dropped += 1;
        this.#lastDroppedSeq = oldest.seq;
      }
    }
    this.#compact();
    if (this.#wanting) this.#schedule(this);
  }

  /** Whether anything is queued that the client has not taken. */
  get pending(): boolean {
    return this.#head < this.#queue.length || this.#dropped > 0;
  }

  /** Ends the stream once what is queued is sent; at once when nothing is. */
  finish(): void {
    if (this.#ending) return;
    this.#ending = true;
    if (!this.pending) this.push(null);
    else if (this.#wanting) this.#schedule(this);
  }

  override _read(): void {
    this.#wanting = true;
    this.flush();
  }

  /** Hands what is queued to the socket side, in batches of up to `WRITE_BATCH_BYTES`. */
  flush(): void {
    while (this.#wanting && !this.destroyed) {
      if (!this.pending) {
        if (this.#ending) this.push(null);
        return;
      }
      const pieces: Buffer[] = [];
      let bytes = 0;
      if (this.#dropped > 0) {
        const dropped = this.#dropped;
        this.#dropped = 0;
        this.#totalDropped += dropped;
        this.#onDropped?.(dropped);
        // The id of the newest event lost: a client resuming from here is not sent them again.
        const text = this.#notice(this.#lastDroppedSeq, 'events.dropped', {
          dropped,
          totalDropped: this.#totalDropped,
        });
        pieces.push(text);
        bytes += text.length;
      }
      while (this.#head < this.#queue.length && bytes < WRITE_BATCH_BYTES) {
        const next = this.#queue[this.#head]!;
        this.#queue[this.#head] = undefined as never;
        this.#head += 1;
        this.#queuedBytes -= next.body.length;
        pieces.push(next.body);
        bytes += next.body.length;
      }
      this.#compact();
      this.#wanting = this.push(pieces.length === 1 ? pieces[0] : Buffer.concat(pieces, bytes));
    }
  }

  /** Drops the consumed front of the queue once it is most of it, so the array stays small. */
  #compact(): void {
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
    } else if (this.#head > 1_024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }
}

/**
 * Streams flushed per turn of the event loop: one publish reaches every stream at once, and
 * writing to hundreds of sockets in one go would hold the loop (and so the probes) for tens of
 * milliseconds; a few dozen at a time, with I/O in between, keep each turn short.
 */
const FLUSHES_PER_TURN = 32;

/** Aborts a stream's heartbeat: one reason for all, since each `DOMException` costs a stack. */
const STREAM_ENDED = new Error('the event stream ended');

/** Every open event stream of the service, and the limits they share. */
export class EventStreams {
  readonly #bus: EventBus<ServiceEvent>;
  readonly #clock: Clock;
  readonly #maxStreams: number;
  readonly #maxBytes: number;
  readonly #heartbeatMs: number;
  readonly #onDropped: ((count: number) => void) | undefined;
  readonly #wallClock: () => number;
  /** The last `time` written, and its epoch ms: a burst within one millisecond formats it once. */
  #lastTime = { ms: Number.NaN, iso: '' };
  readonly #history: EventHistory;
  readonly #streams = new Set<EventStream>();
  readonly #ends = new Map<EventStream, () => void>();
  #unlisten: (() => void) | undefined;
  #closed = false;
  /** Streams with something to send, flushed `FLUSHES_PER_TURN` per turn. */
  readonly #dirty = new Set<EventStream>();
  #flushing = false;
  readonly #heartbeat: Buffer = Buffer.from(': heartbeat\n\n');

  constructor(options: EventStreamsOptions) {
    this.#bus = options.bus;
    this.#clock = options.clock;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS;
    this.#maxBytes = options.maxBytes ?? SSE_MAX_CLIENT_BYTES;
    this.#heartbeatMs = options.heartbeatMs ?? SSE_HEARTBEAT_MS;
    this.#onDropped = options.onDropped;
    this.#wallClock = options.wallClock ?? Date.now;
    this.#history = new EventHistory({
      epoch: options.epoch ?? randomBytes(4).toString('hex'),
      ...(options.historyEvents !== undefined ? { maxEvents: options.historyEvents } : {}),
      ...(options.historyBytes !== undefined ? { maxBytes: options.historyBytes } : {}),
    });
    this.#listen();
  }

  /** The history reconnecting clients resume from. */
  get history(): EventHistory {
    return this.#history;
  }

  /** Streams open now. */
  get count(): number {
    return this.#streams.size;
  }

  get maxStreams(): number {
    return this.#maxStreams;
  }

  /**
   * A new stream of events (filtered by `types`): those after `lastEventId` still held when
   * given, then every event published from now on. Ends when `signal` aborts, when its consumer
   * destroys it, or at `close()`. `undefined` when `maxStreams` are open already.
   */
  open(options: {
    types?: readonly string[];
    signal: AbortSignal;
    lastEventId?: string | undefined;
  }): Readable | undefined {
    if (this.#streams.size >= this.#maxStreams) return undefined;
    const stream = new EventStream(
      options.types,
      this.#maxBytes,
      this.#onDropped,
      (s) => this.#markDirty(s),
      (seq, type, data) => this.#message(seq, type, data),
    );
    stream.offer(
      Buffer.from(
        `retry: ${SSE_RETRY_MS}\n: connected; heartbeat every ${this.#heartbeatMs / 1000}s\n\n`,
      ),
      undefined,
    );
    if (this.#closed || options.signal.aborted) {
      stream.finish();
      return stream;
    }
    if (options.lastEventId !== undefined) this.#replay(stream, options.lastEventId);
    this.#streams.add(stream);
    const heartbeat = new AbortController();
    const { signal } = options;
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      signal.removeEventListener('abort', end);
      heartbeat.abort(STREAM_ENDED);
      this.#streams.delete(stream);
      this.#ends.delete(stream);
      stream.finish();
    };
    this.#ends.set(stream, end);
    signal.addEventListener('abort', end, { once: true });
    stream.once('close', end);
    void this.#beat(stream, heartbeat.signal);
    return stream;
  }

  /**
   * Ends every open stream; streams opened later end at once. A stream whose client has not
   * taken what is queued is destroyed instead: shutdown never waits on a client that does not read.
   */
  close(): void {
    this.#closed = true;
    this.#unlistenNow();
    for (const [stream, end] of [...this.#ends]) {
      end();
      if (stream.pending) stream.destroy();
    }
  }

  #markDirty(stream: EventStream): void {
    this.#dirty.add(stream);
    if (this.#flushing) return;
    this.#flushing = true;
    // A turn of the event loop, not a timer: I/O (a probe, a request) runs between batches.
    setImmediate(() => this.#flushSome());
  }

  #flushSome(): void {
    let budget = FLUSHES_PER_TURN;
    for (const stream of this.#dirty) {
      if (budget === 0) break;
      budget -= 1;
      this.#dirty.delete(stream);
      stream.flush();
    }
    if (this.#dirty.size > 0) setImmediate(() => this.#flushSome());
    else this.#flushing = false;
  }

  async #beat(stream: EventStream, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.#clock.sleep(this.#heartbeatMs, signal);
      } catch {
        return;
      }
      stream.offer(this.#heartbeat, undefined);
    }
  }

  /**
   * One bus listener for the history and all streams, from construction to `close()`: each event
   * serialized once, with its id and time, whether or not a stream is open (the history is for
   * the clients that are not connected right now).
   */
  #listen(): void {
    this.#unlisten = this.#bus.listen((event) => {
      const seq = this.#history.nextSeq;
      const entry = this.#history.record(event.type, this.#message(seq, event.type, event));
      for (const stream of this.#streams) {
        if (stream.wants(entry.type)) stream.offer(entry.body, entry.seq);
      }
    });
  }

  /** The message of sequence `seq`: `data` with the wall-clock `time` of now. */
  #message(seq: number, type: string, data: object): Buffer {
    const ms = this.#wallClock();
    if (ms !== this.#lastTime.ms) this.#lastTime = { ms, iso: new Date(ms).toISOString() };
    const time = this.#lastTime.iso;
    const id = formatEventId(this.#history.epoch, seq);
    return Buffer.from(formatSseEvent(id, type, { type, ...data, time }));
  }

  /** Queues what a client that last saw `lastEventId` missed, or says it cannot. */
  #replay(stream: EventStream, lastEventId: string): void {
    const point = this.#history.resume(lastEventId);
    if (point.kind === 'unknown') {
      const latest = this.#history.latest;
      stream.offer(this.#message(latest, 'events.missed', { missed: null }), latest);
      return;
    }
    if (point.kind === 'gap') {
      const notice = this.#message(point.lostThrough, 'events.missed', { missed: point.missed });
      stream.offer(notice, point.lostThrough);
    }
    const entries: readonly HistoryEntry[] = point.entries;
    for (const entry of entries) if (stream.wants(entry.type)) stream.offer(entry.body, entry.seq);
  }

  #unlistenNow(): void {
    this.#unlisten?.();
    this.#unlisten = undefined;
  }
}
