/**
 * The recent events of `GET /api/v1/events`, already serialized, so that a client that
 * reconnects with `Last-Event-ID` (the standard Server-Sent Events resume) receives what it
 * missed, and the status page can show the last events when it loads.
 *
 * Every event the service publishes gets the next sequence number of this process; its SSE id is
 * `<epoch>-<sequence>`, where the epoch is random per process. An id is therefore meaningful only
 * to the process that sent it: one from another replica behind the same Service, or from before a
 * restart, is recognised as unknown instead of being mistaken for a position in this history.
 *
 * The history is a ring bounded twice, because one event can be large (a cell's reasons quote
 * pod texts): at most `maxEvents` events and at most `maxBytes` bytes; the oldest go first.
 */

/** 1,024 events: the last minutes of a busy controller; a relist of more cells overflows it. */
export const EVENT_HISTORY_EVENTS = 1_024;
/**
 * 512 KiB: half of what one stream may hold unsent (`SSE_MAX_CLIENT_BYTES`, 1 MiB), so a replay
 * of the whole history always fits into a stream's queue with room left for new events.
 */
export const EVENT_HISTORY_BYTES = 524_288;

/** One recorded event: its SSE message, shared by every stream that sends it. */
export interface HistoryEntry {
  readonly seq: number;
  readonly type: string;
  /** The whole message: `id:`, `event:` and `data:` lines and the blank line. */
  readonly body: Buffer;
}

/** A client's `Last-Event-ID` read against the history. */
type ResumePoint =
  /** Everything after the id is held: `entries` is exactly what the client has not seen. */
  | { kind: 'complete'; entries: readonly HistoryEntry[] }
  /**
   * The id is of this process, but `missed` events after it are gone from the ring; `entries`
   * is what is still held, and `lostThrough` the sequence of the newest event lost.
   */
  | { kind: 'gap'; missed: number; lostThrough: number; entries: readonly HistoryEntry[] }
  /** The id is not of this process (another replica, an earlier run): nothing is replayed. */
  | { kind: 'unknown' };

/** `<epoch>-<sequence>`: what this module writes as an SSE id. */
export function formatEventId(epoch: string, seq: number): string {
  return `${epoch}-${seq}`;
}

/** The sequence number in `id` when it is an id of `epoch`; `undefined` otherwise. */
export function sequenceOf(id: string, epoch: string): number | undefined {
  const prefix = `${epoch}-`;
  if (!id.startsWith(prefix)) return undefined;
  const digits = id.slice(prefix.length);
  // At most 15 digits: below 2^53, so the number is exact.
  if (digits.length === 0 || digits.length > 15) return undefined;
  for (let i = 0; i < digits.length; i += 1) {
    const c = digits.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
  }
  if (digits.length > 1 && digits.charCodeAt(0) === 0x30) return undefined;
  return Number(digits);
}

/**
 * Options of `EventHistory`: the process's id epoch (so ids of another process are told apart)
 * and the ring's two bounds, events and bytes; both default to the service's.
 */
interface EventHistoryOptions {
  /** This process's random id prefix. */
  epoch: string;
  maxEvents?: number;
  maxBytes?: number;
}

/** The bounded ring of recent events, with the sequence numbers that make them resumable. */
export class EventHistory {
  readonly epoch: string;
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #entries: HistoryEntry[] = [];
  #head = 0;
  #bytes = 0;
  /** The sequence the next event gets; 1 for the first. */
  #next = 1;

  constructor(options: EventHistoryOptions) {
    this.epoch = options.epoch;
    this.#maxEvents = options.maxEvents ?? EVENT_HISTORY_EVENTS;
    this.#maxBytes = options.maxBytes ?? EVENT_HISTORY_BYTES;
  }

  /** The sequence of the newest event recorded; 0 before the first. */
  get latest(): number {
    return this.#next - 1;
  }

  /** Events held now. */
  get size(): number {
    return this.#entries.length - this.#head;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The sequence the next `record` will use, so its message can carry its own id. */
  get nextSeq(): number {
    return this.#next;
  }

  /** Adds the next event's message (written for sequence `nextSeq`) and evicts past the bounds. */
  record(type: string, body: Buffer): HistoryEntry {
    const entry: HistoryEntry = { seq: this.#next, type, body };
    this.#next += 1;
    this.#entries.push(entry);
    this.#bytes += body.length;
    while (this.size > this.#maxEvents || (this.#bytes > this.#maxBytes && this.size > 1)) {
      const oldest = this.#entries[this.#head]!;
      this.#entries[this.#head] = undefined as never;
      this.#head += 1;
      this.#bytes -= oldest.body.length;
    }
    if (this.#head > 1_024 && this.#head * 2 > this.#entries.length) {
      this.#entries.splice(0, this.#head);
      this.#head = 0;
    }
    return entry;
  }

  /** Where a client that last saw `lastEventId` resumes. */
  resume(lastEventId: string): ResumePoint {
    const seq = sequenceOf(lastEventId, this.epoch);
    if (seq === undefined || seq > this.latest) return { kind: 'unknown' };
    const oldest = this.size > 0 ? this.#entries[this.#head]!.seq : this.#next;
    const entries = this.#after(Math.max(seq, oldest - 1));
    if (seq >= oldest - 1) return { kind: 'complete', entries };
    return { kind: 'gap', missed: oldest - 1 - seq, lostThrough: oldest - 1, entries };
  }

  /**
   * The id to resume from to receive the last `count` held events of `types` and all after them:
   * what the status page connects with, so it shows recent events on load and misses none
   * published between rendering and connecting.
   */
  replayCursor(types: ReadonlySet<string>, count: number): string {
    let found = 0;
    let from = this.latest;
    for (let i = this.#entries.length - 1; i >= this.#head && found < count; i -= 1) {
      const entry = this.#entries[i]!;
      if (!types.has(entry.type)) continue;
      found += 1;
      from = entry.seq - 1;
    }
    return formatEventId(this.epoch, from);
  }

  /** Held entries with a sequence above `seq`, oldest first. */
  #after(seq: number): HistoryEntry[] {
    // Sequences are consecutive in the ring, so the first one to send is found by arithmetic.
    if (this.size === 0) return [];
    const oldest = this.#entries[this.#head]!.seq;
    const start = this.#head + Math.max(0, seq + 1 - oldest);
    return this.#entries.slice(start);
  }
}
