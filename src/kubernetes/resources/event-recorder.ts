/**
 * A Kubernetes Event recorder in the manner of client-go's `tools/events`: `record` never blocks
 * and never throws; a background drain writes through the `EventApi` one call at a time.
 *
 * Three bounds keep a flapping cell or a dead API server from growing memory or flooding etcd:
 * - **Series.** An occurrence with the same key as one seen within `SERIES_FINISH_MS` (regarding
 *   object, reason, action, type: client-go's `getKey`) is counted into that Event's series instead
 *   of making a new object; the series is written at most once per `SERIES_UPDATE_INTERVAL_MS`.
 * - **Per-object rate limit.** A new Event object costs a token from its regarding object's
 *   bucket (client-go's spam filter: a burst of 25, one more every 5 minutes); without one the
 *   occurrence is dropped. Series updates are free: they are already bounded by their interval.
 * - **Bounded queue.** At most `MAX_PENDING_EVENTS` writes wait; a new Event beyond is dropped, and
 *   a write that fails `MAX_EVENT_WRITE_ATTEMPTS` times in a row is dropped. Every drop is counted
 *   (`onDropped`); nothing waits in memory without a bound.
 *
 * Every wait goes through the injected `Clock`.
 *
 * Size: the recorder's three bounds (series, rate limit, queue) act on one queue of writes; the
 * API calls are event-api.ts.
 */
import { formatMicroTime } from '../../coordination/micro-time.js';
import { ExponentialBackoff } from '../../runtime/backoff.js';
import { type Clock, realClock } from '../../runtime/clock.js';
import { type Logger, silentLogger } from '../../runtime/logger.js';
import { ResourceApiError } from '../client/resource-api-error.js';
import type { EventApi, EventObjectReference, KubernetesEvent } from './event-api.js';

/** client-go's: a series not observed for 6 minutes is finished; the next occurrence is new. */
export const SERIES_FINISH_MS = 6 * 60_000;
/**
 * A series' count is written at most this often: 10 s makes a flapping cell's count current in
 * `kubectl get events` within seconds, for one PATCH per series per interval (client-go waits 30
 * minutes, which hides a flap in progress).
 */
export const SERIES_UPDATE_INTERVAL_MS = 10_000;
/** client-go's spam filter burst per object. */
export const EVENT_BURST_PER_OBJECT = 25;
/** client-go's spam filter refill: one new Event per object every 5 minutes past the burst. */
export const EVENT_REFILL_MS = 5 * 60_000;
/** Writes waiting at most: about a thousand cells flipping at once, a few MiB at worst. */
const MAX_PENDING_EVENTS = 1_000;
/** Series remembered at most (each a few hundred bytes); the least recently observed go first. */
const MAX_EVENT_SERIES = 4_096;
/** Objects whose bucket is remembered at most; a forgotten one starts with a full burst again. */
const MAX_EVENT_BUCKETS = 4_096;
/** Attempts of one write before it is dropped; client-go tries 12 times over about two minutes. */
export const MAX_EVENT_WRITE_ATTEMPTS = 5;
/** The first retry waits this long, doubling. */
const EVENT_RETRY_BASE_MS = 1_000;
/**
 * The last retry's wait (8 s): the attempts bound the doubling, so this cap only names where it
 * ends; a write is dropped rather than retried later.
 */
const EVENT_RETRY_MAX_MS = EVENT_RETRY_BASE_MS * 2 ** (MAX_EVENT_WRITE_ATTEMPTS - 2);
/** The Kubernetes limits on an Event's texts (note in bytes): the API server refuses longer. */
export const MAX_EVENT_NOTE_BYTES = 1_024;
/** The API server's limit on `reason`. */
const MAX_EVENT_REASON_LENGTH = 128;
/** The API server's limit on `reportingInstance`. */
const MAX_EVENT_INSTANCE_LENGTH = 128;
/** An object name is a DNS subdomain of at most 253 characters. */
const MAX_NAME_LENGTH = 253;

/** Why an occurrence never became a write: the label of `..._kubernetes_events_dropped_total`. */
export type EventDropCause = 'rate_limited' | 'queue_full' | 'failed';

/** One occurrence, as the caller records it. */
export interface EventOccurrence {
  regarding: EventObjectReference;
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

/** Options of `EventRecorder`; `maxPending` defaults to MAX_PENDING_EVENTS. */
interface EventRecorderOptions {
  api: EventApi;
  /** `reportingController`: a qualified name. */
  reportingController: string;
  /** `reportingInstance`: this replica (its leader-election identity). */
  reportingInstance: string;
  clock?: Clock;
  /** For `eventTime` and the series' `lastObservedTime`. */
  wallClock?: () => Date;
  logger?: Logger;
  /** A write reached the API server (a new Event or a series update). */
  onEmitted?: (reason: string) => void;
  onDropped?: (cause: EventDropCause) => void;
  maxPending?: number;
}

interface Series {
  key: string;
  occurrence: EventOccurrence;
  /** Set once the Event exists. */
  name: string | undefined;
  eventTime: string;
  count: number;
  written: number;
  lastObservedMs: number;
  lastObservedTime: string;
  lastWriteMs: number | undefined;
  dueAtMs: number;
  /** Failed writes in a row: sets the wait before the next one, and when the series is dropped. */
  retries: ExponentialBackoff;
  /** A write of it is in flight: a new count waits for that write's end and then its interval. */
  writing: boolean;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** Cuts `text` to at most `maxBytes` of UTF-8, on a character boundary. */
function boundBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > maxBytes - 3) break;
    out += ch;
    bytes += size;
  }
  return `${out}…`;
}

/**
 * Records occurrences without ever blocking or throwing, and writes them in the background under
 * the three bounds of this file's header: a caller on the reconcile path can report every
 * transition, and a dead API server costs at most `maxPending` queued writes.
 */
export class EventRecorder {
  readonly #options: EventRecorderOptions;
  readonly #clock: Clock;
  readonly #wallClock: () => Date;
  readonly #logger: Logger;
  readonly #maxPending: number;
  /** By key, least recently observed first (re-inserted on every observation). */
  readonly #series = new Map<string, Series>();
  /** Keys with a write due, in order. */
  readonly #pending = new Set<string>();
  readonly #buckets = new Map<string, Bucket>();
  readonly #lifetime = new AbortController();
  #timer: { atMs: number; cancel: AbortController } | undefined;
  #draining = false;
  #nameCounter = 0;

  constructor(options: EventRecorderOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#wallClock = options.wallClock ?? (() => new Date());
    this.#logger = options.logger ?? silentLogger;
    this.#maxPending = options.maxPending ?? MAX_PENDING_EVENTS;
  }

  /** Writes waiting now; for status and tests. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Series remembered now. */
  get seriesCount(): number {
    return this.#series.size;
  }

  /** Records one occurrence: counted into its series, or queued as a new Event, or dropped. */
  record(occurrence: EventOccurrence): void {
    if (this.#lifetime.signal.aborted) return;
    const now = this.#clock.now();
    const key = [
      occurrence.regarding.kind,
      occurrence.regarding.namespace,
      occurrence.regarding.name,
      occurrence.regarding.uid ?? '',
      occurrence.type,
      occurrence.reason,
      occurrence.action,
    ].join('\u0000');
    const series = this.#series.get(key);
    if (series && now - series.lastObservedMs <= SERIES_FINISH_MS) {
      series.count += 1;
      this.#observe(series, now);
      if (!this.#pending.has(key) && !series.writing) {
        series.dueAtMs =
          series.lastWriteMs === undefined ? now : series.lastWriteMs + SERIES_UPDATE_INTERVAL_MS;
        this.#pending.add(key);
      }
      this.#schedule();
      return;
    }
    if (this.#pending.size >= this.#maxPending) {
      this.#drop('queue_full', occurrence);
      return;
    }
    if (!this.#takeToken(occurrence.regarding, now)) {
      this.#drop('rate_limited', occurrence);
      return;
    }
    if (series) this.#series.delete(key);
    const wall = this.#wallClock();
    const fresh: Series = {
      key,
      occurrence: {
        ...occurrence,
        reason: occurrence.reason.slice(0, MAX_EVENT_REASON_LENGTH),
        note: boundBytes(occurrence.note, MAX_EVENT_NOTE_BYTES),
      },
      name: undefined,
      eventTime: formatMicroTime(wall),
      count: 1,
      written: 0,
      lastObservedMs: now,
      lastObservedTime: formatMicroTime(wall),
      lastWriteMs: undefined,
      dueAtMs: now,
      retries: new ExponentialBackoff({
        initialMs: EVENT_RETRY_BASE_MS,
        maxMs: EVENT_RETRY_MAX_MS,
      }),
      writing: false,
    };
    this.#series.set(key, fresh);
    this.#pending.add(key);
    this.#evictSeries();
    this.#schedule();
  }

  /** Stops: nothing more is written; an in-flight write is aborted. */
  stop(): void {
    this.#lifetime.abort(new Error('the event recorder stopped'));
    this.#timer?.cancel.abort();
    this.#timer = undefined;
    this.#pending.clear();
  }

  #observe(series: Series, now: number): void {
    series.lastObservedMs = now;
    series.lastObservedTime = formatMicroTime(this.#wallClock());
    // Most recently observed last, so eviction takes the stalest.
    this.#series.delete(series.key);
    this.#series.set(series.key, series);
  }

  #takeToken(regarding: EventObjectReference, now: number): boolean {
    const key = `${regarding.namespace}/${regarding.name}/${regarding.uid ?? ''}`;
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: EVENT_BURST_PER_OBJECT, updatedMs: now };
      if (this.#buckets.size >= MAX_EVENT_BUCKETS) {
        const oldest = this.#buckets.keys().next().value;
        if (oldest !== undefined) this.#buckets.delete(oldest);
      }
    } else {
      this.#buckets.delete(key);
      const refilled = Math.floor((now - bucket.updatedMs) / EVENT_REFILL_MS);
      if (refilled > 0) {
        bucket.tokens = Math.min(EVENT_BURST_PER_OBJECT, bucket.tokens + refilled);
        bucket.updatedMs += refilled * EVENT_REFILL_MS;
      }
    }
    this.#buckets.set(key, bucket);
    if (bucket.tokens < 1) return false;
    if (bucket.tokens === EVENT_BURST_PER_OBJECT) bucket.updatedMs = now;
    bucket.tokens -= 1;
    return true;
  }

  #evictSeries(): void {
    for (const [key] of this.#series) {
      if (this.#series.size <= MAX_EVENT_SERIES) return;
      if (this.#pending.has(key)) continue;
      this.#series.delete(key);
    }
  }

  #drop(cause: EventDropCause, occurrence: EventOccurrence): void {
    this.#options.onDropped?.(cause);
    this.#logger.debug(
      {
        cause,
        reason: occurrence.reason,
        regarding: `${occurrence.regarding.namespace}/${occurrence.regarding.name}`,
      },
      'kubernetes event dropped',
    );
  }

  /** Drains now if a write is due, else arms one timer for the earliest due write. */
  #schedule(): void {
    if (this.#draining || this.#lifetime.signal.aborted) return;
    let earliest: number | undefined;
    for (const key of this.#pending) {
      const due = this.#series.get(key)?.dueAtMs;
      if (due !== undefined && (earliest === undefined || due < earliest)) earliest = due;
    }
    if (earliest === undefined) return;
    if (this.#timer && this.#timer.atMs <= earliest) return;
    this.#timer?.cancel.abort();
    const cancel = new AbortController();
    const timer = { atMs: earliest, cancel };
    this.#timer = timer;
    this.#clock.sleep(Math.max(0, earliest - this.#clock.now()), cancel.signal).then(
      () => {
        if (this.#timer === timer) this.#timer = undefined;
        void this.#drain();
      },
      () => {},
    );
  }

  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (;;) {
        if (this.#lifetime.signal.aborted) return;
        const now = this.#clock.now();
        let due: Series | undefined;
        for (const key of this.#pending) {
          const series = this.#series.get(key);
          if (!series) {
            this.#pending.delete(key);
            continue;
          }
          if (series.dueAtMs <= now) {
            due = series;
            break;
          }
        }
        if (!due) return;
        this.#pending.delete(due.key);
        due.writing = true;
        try {
          await this.#write(due);
        } finally {
          due.writing = false;
        }
      }
    } finally {
      this.#draining = false;
      this.#schedule();
    }
  }

  async #write(series: Series): Promise<void> {
    const signal = this.#lifetime.signal;
    const count = series.count;
    const { occurrence } = series;
    const seriesField = { count, lastObservedTime: series.lastObservedTime };
    try {
      if (series.name !== undefined) {
        try {
          await this.#options.api.patchSeries(
            occurrence.regarding.namespace,
            series.name,
            seriesField,
            signal,
          );
        } catch (error) {
          // Gone (expired, deleted): create it again, as client-go does.
          if (!(error instanceof ResourceApiError && error.statusCode === 404)) throw error;
          series.name = undefined;
        }
      }
      if (series.name === undefined) {
        const name = this.#eventName(occurrence.regarding.name);
        const event: KubernetesEvent = {
          name,
          namespace: occurrence.regarding.namespace,
          eventTime: series.eventTime,
          ...(count > 1 ? { series: seriesField } : {}),
          reportingController: this.#options.reportingController,
          reportingInstance: this.#options.reportingInstance.slice(0, MAX_EVENT_INSTANCE_LENGTH),
          action: occurrence.action,
          reason: occurrence.reason,
          regarding: occurrence.regarding,
          note: occurrence.note,
          type: occurrence.type,
        };
        await this.#options.api.create(event, signal);
        series.name = name;
      }
    } catch (error) {
      if (signal.aborted) return; // stopped: nothing more is written
      const retryAfterMs = series.retries.next();
      if (series.retries.failures >= MAX_EVENT_WRITE_ATTEMPTS) {
        this.#logger.warn(
          {
            reason: occurrence.reason,
            error: (error as Error).message,
            attempts: series.retries.failures,
          },
          'kubernetes event: dropped after failed writes',
        );
        this.#options.onDropped?.('failed');
        // The count written so far stands; a new Event object is made next time if none exists.
        series.retries.reset();
        series.count = series.written;
        if (series.name === undefined) this.#series.delete(series.key);
        return;
      }
      series.dueAtMs = this.#clock.now() + retryAfterMs;
      this.#pending.add(series.key);
      return;
    }
    series.retries.reset();
    series.written = count;
    series.lastWriteMs = this.#clock.now();
    this.#options.onEmitted?.(occurrence.reason);
    if (series.count > series.written && !this.#pending.has(series.key)) {
      series.dueAtMs = series.lastWriteMs + SERIES_UPDATE_INTERVAL_MS;
      this.#pending.add(series.key);
    }
  }

  /** `<object>.<hex>` as client-go names Events, cut so the whole stays a valid object name. */
  #eventName(objectName: string): string {
    this.#nameCounter += 1;
    const suffix = `.${(this.#wallClock().getTime() * 1000 + (this.#nameCounter % 1000)).toString(16)}`;
    return `${objectName.slice(0, MAX_NAME_LENGTH - suffix.length).replace(/[.-]+$/, '')}${suffix}`;
  }
}
