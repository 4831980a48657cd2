/**
 * `KubernetesReflector`: LIST, then WATCH from the cursor, forever, as a stream of `EncodedPod`s (the model's `Pod` as JSON the main thread parses).
 *
 * The reflector is an explicit state machine, after kube-rs's `watcher`: each state (listing,
 * watching, backoff) is one step method that returns the next state, and the `switch` in `#run`
 * only dispatches on it; what a failure leads to is decided by the pure `classifyFailure`
 * (./reflector-failure.ts) rather than by scattered `catch` blocks. A stream never ends by itself:
 * it gives up on nothing, and only closing it (`return()` on its iterator) stops it.
 *
 * - A relist (forget the cursor, LIST again, publish a `replace`) happens only when the cursor is
 *   dead (410 / Expired / Gone, 504 / ResourceVersionTooLarge), a frame is unreadable with no
 *   version to skip to, or the LIST itself failed; anything else reconnects the WATCH from the
 *   cursor, and a clean server-side end reconnects at once.
 * - Every failure but that clean end waits first: one `Backoff` per stream (./backoff.ts) covers
 *   reconnects and relists alike. A failure the server answered grows it (800 ms doubling to
 *   30 s, never shorter than a Retry-After); one it never answered (refused, reset before any
 *   response) waits a short jittered 1–2 s without growing it; a WATCH that proves itself ends
 *   the streak. A cursor that expires after a WATCH proved it live is relisted at once.
 * - WATCHes ask for bookmarks (the adapter sets `allowWatchBookmarks`); a bookmark only moves the
 *   cursor, so a quiet watch resumes near the present instead of from an expiring version.
 * - `stats().healthy` is `PodSourceStats.healthy` (../../model/pod-source-stats.ts has the one
 *   definition): a WATCH that proved itself, or a synced stream recovering with progress for
 *   under 30 s, as ./reflector-health.ts decides it from what this machine reports.
 *
 * Size: one state machine (list, watch-list, watch, backoff) whose states share the cursor and the
 * stream's lifetime; the parts fed what it does are files of their own: failure classification,
 * retry policy, health, stats, a long read's progress lines.
 */

import { podKey } from '../../model/pod.js';
import {
  DEFAULT_INITIAL_LIST,
  type DropReason,
  type InitialListMode,
  type PodSourceStats,
  type ReflectorPhase,
} from '../../model/pod-source-stats.js';
import { type Clock, realClock } from '../../runtime/clock.js';
import { type Logger, silentLogger } from '../../runtime/logger.js';
import type { ObjectKey, SourceEvent } from '../../runtime/source-event.js';
import { ApiConnectionError, ApiStatusError, MalformedListError } from '../client/api-errors.js';
import { IdleWatchdog } from '../client/idle-watchdog.js';
import type { EncodedPod } from '../codec/encoded-pod.js';
import { readFrame } from '../codec/watch-frame-parser.js';
import type { WatchFrame } from '../codec/watch-framing.js';
import type { ListPodsOptions, PodApi, PodList, WatchStream } from '../resources/pod-api.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import { ListProgressLog } from './list-progress-log.js';
import {
  classifyFailure,
  describeFailure,
  type ReflectorAction,
  type ReflectorFailure,
  type RequestPhase,
  SHORT_WATCH_MS,
} from './reflector-failure.js';
import { ReflectorHealth } from './reflector-health.js';
import { ReflectorStats } from './reflector-stats.js';
import { compareResourceVersions } from './resource-version.js';

/**
 * client-go's `minWatchTimeout` (5 min): each WATCH asks the server to end it cleanly after a
 * random time in [5, 10) minutes, so many reflectors do not reconnect in lockstep.
 */
const MIN_WATCH_TIMEOUT_SECONDS = 300;

/** What the log says of a pod dropped for its namespace, by where it came from. */
const OUT_OF_NAMESPACE_MESSAGES = {
  list: 'reflector dropped a LIST item for a pod outside the watched namespace',
  watch: 'reflector dropped a watch event for a pod outside the watched namespace',
} as const;

/** Upper bound (exclusive) of the random WATCH timeout: client-go's `2 × minWatchTimeout`. */
const MAX_WATCH_TIMEOUT_SECONDS = 600;
/**
 * Longer than the API server's bookmark interval (about a minute) several times over, so a healthy
 * but quiet watch is never mistaken for a dead one; short enough that a dead connection is
 * replaced within minutes.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
/**
 * How often the API server sends a bookmark on a WATCH that asked for them: its watch cache
 * dispatches one to each watcher about every minute (`bookmarkFrequency`), quiet or not.
 */
const API_SERVER_BOOKMARK_INTERVAL_MS = 60_000;
/**
 * A WATCH that delivered no whole frame for this long is stalled, once its server has been seen
 * sending bookmarks: two bookmark intervals missed, plus 5 s for the server's once-a-second
 * dispatch tick and its jitter. Bytes do not count (`DEFAULT_IDLE_TIMEOUT_MS` is for those): a
 * proxy that writes half a frame and then nothing keeps a connection busy but the watch dead.
 * Against a server (or proxy) that never sends a bookmark, silence proves nothing and only the
 * idle limit applies.
 */
export const DEFAULT_STALL_TIMEOUT_MS = 2 * API_SERVER_BOOKMARK_INTERVAL_MS + 5_000;
/**
 * How long a watch-list waits for its `k8s.io/initial-events-end` bookmark after its last
 * initial event (or after it was sent, if none came) before it falls back to LIST + WATCH. The
 * API server sends that bookmark within its dispatch tick (about a second) of the last initial
 * event, and waits at most 3 s for its cache to be fresh before the first; ten seconds is all of
 * that with room to spare, and short next to the minute-long wait for the next plain bookmark a
 * server or proxy that strips the end bookmark would otherwise cost (client-go waits for ever:
 * kubernetes#140890).
 */
export const DEFAULT_INITIAL_EVENTS_DEADLINE_MS = 10_000;
/**
 * A WATCH the server accepted is not yet a healthy one: a server or proxy that ends it at once
 * accepted it too. It counts as healthy (proven) once it delivered a frame other than an ERROR,
 * or stayed open this long — the same second after which client-go no longer calls an empty watch
 * "very short". A proven WATCH ends the backoff's failure streak and makes its cursor live.
 */
const WATCH_HEALTHY_AFTER_MS = SHORT_WATCH_MS;
/**
 * How long a source that has synced stays healthy without good progress (a completed LIST, a
 * proven WATCH, a frame). A replica relisting after a 410 or reconnecting after a drop still
 * serves a correct, slightly stale view, so readiness holds while that recovery makes progress;
 * only a source failing for this long (a dead API server, RBAC revoked) turns unready. Half a
 * minute is one maximal backoff: a source that cannot get one good request through within it is
 * failing, not recovering.
 */
const DEFAULT_UNHEALTHY_AFTER_MS = 30_000;

/**
 * Frames in a row older than the cursor after which the WATCH is given up for a relist. One stale
 * frame between current ones is a replayed copy (a proxy, a cache) and is only dropped; a run of
 * them with nothing current between means the server's history went back (an etcd restored from
 * a backup) or the stream only replays the past, and only a LIST says what the server holds now.
 * Eight: longer than any replay of a few copies, a few seconds of a busy watch's events.
 */
export const STALE_FRAMES_BEFORE_RELIST = 8;

/** Options of `KubernetesReflector`; the constructor throws `RangeError` on bad numbers. */
export interface KubernetesReflectorOptions {
  /** LIST and WATCH for pods: `HttpPodApi` in the service, a fake in tests. */
  api: PodApi;
  /** Undefined or `''`: all namespaces. */
  namespace?: string | undefined;
  /** Scopes both the LIST and the WATCH: pods it excludes never cross the wire, let alone the cache. */
  labelSelector?: string | undefined;
  /**
   * LIST page size (`limit`); the adapter follows `continue`, and the pages still make one
   * `replace`. Default: the adapter's, `DEFAULT_LIST_PAGE_SIZE` (500) in `HttpPodApi`.
   */
  listPageSize?: number | undefined;
  /**
   * Largest LIST page body the adapter may read (`ListPodsOptions.maxPageBytes`): a server that
   * ignores `limit` fails the LIST instead of filling the memory. Unbounded when left out.
   */
  maxListPageBytes?: number | undefined;
  /**
   * A fixed `timeoutSeconds` for every WATCH instead of a random one in
   * [`MIN_WATCH_TIMEOUT_SECONDS`, `MAX_WATCH_TIMEOUT_SECONDS`); at least 1.
   */
  watchTimeoutSeconds?: number | undefined;
  /**
   * Longest silence (no bytes) before a request is torn down as dead, LIST responses included
   * (the time to the response headers counts). Default `DEFAULT_IDLE_TIMEOUT_MS`.
   */
  idleTimeoutMs?: number | undefined;
  /**
   * Longest wait for a whole frame on a WATCH, once the server has been seen sending bookmarks,
   * before the WATCH is replaced as stalled. Default `DEFAULT_STALL_TIMEOUT_MS`.
   */
  stallTimeoutMs?: number | undefined;
  /**
   * Longest wait for a watch-list's initial-events-end bookmark after its last initial event
   * before falling back to LIST + WATCH. Default `DEFAULT_INITIAL_EVENTS_DEADLINE_MS`.
   */
  initialEventsDeadlineMs?: number | undefined;
  /** Default `DEFAULT_UNHEALTHY_AFTER_MS`: how long a synced source stays healthy while failing. */
  unhealthyAfterMs?: number | undefined;
  /**
   * Overrides of the stream's backoff (./backoff.ts): answered failures as client-go's
   * (`DEFAULT_BACKOFF_INITIAL_MS`, `DEFAULT_BACKOFF_MAX_MS`, `DEFAULT_BACKOFF_JITTER`), unanswered
   * ones `DEFAULT_UNANSWERED_MIN_MS` to `DEFAULT_UNANSWERED_MAX_MS`.
   * Validated in the constructor, not at the first failure.
   */
  backoff?: Partial<Omit<BackoffOptions, 'random'>> | undefined;
  /** Monotonic time for backoff waits and the idle watchdog. */
  clock?: Clock | undefined;
  /** `[0, 1)`: drives backoff jitter and watch timeouts, injectable so tests are exact. */
  random?: (() => number) | undefined;
  /** Epoch milliseconds, for the human-facing timestamps in stats. */
  wallClock?: (() => number) | undefined;
  /** Relists, reconnects and skipped frames are logged here; silent by default. */
  logger?: Logger | undefined;
  /** Called after the stats changed; cheap to call often (the worker coalesces per turn). */
  onStatsChange?: (() => void) | undefined;
  /**
   * Hears each LIST page's pods as soon as the page is read and validated, before the LIST is
   * complete, so a consumer can start moving them (the worker streams them to the main thread).
   * They count only once the LIST's `replace` is yielded: `page === 1` starts a new LIST (a retry,
   * a relist or a fallback to an unpaged LIST), voiding every page heard before it, and a LIST
   * that fails yields nothing.
   */
  onListPage?: ((pods: readonly EncodedPod[], page: number) => void) | undefined;
  /**
   * How the whole world is read: `watch-list` (one WATCH with `sendInitialEvents`, whose
   * initial-events-end bookmark publishes the `replace` and proves the watch; it falls back to
   * LIST + WATCH when the server cannot serve it) or `list`. Default `DEFAULT_INITIAL_LIST`.
   */
  initialList?: InitialListMode | undefined;
}

/** Pods per `onListPage` batch while a watch-list's initial events arrive: a LIST page's worth. */
const WATCH_LIST_BATCH = 500;

/**
 * Status codes that say the server (or a proxy) does not serve watch-list at all: the request is
 * malformed to it (400, 422 for a server with the feature off), or the verb or media type is not
 * allowed. Such a stream falls back to LIST + WATCH for good; anything else falls back once.
 */
const WATCH_LIST_UNSUPPORTED_CODES = new Set([400, 403, 404, 405, 406, 415, 422, 501]);

/**
 * What the stream hands on at a time: a `replace` alone, or the changes of the frames one socket
 * read brought, in order (`watchBatches()`).
 */
export type EventBatch = readonly SourceEvent<EncodedPod>[];

/**
 * The states of one stream. Each is carried out by one step method of `KubernetesReflector`,
 * which returns the next state.
 */
type State =
  /**
   * No cursor: LIST everything (`#list`). Entered when a stream opens and whenever a relist is
   * decided. Leads to `watching` from the LIST's resourceVersion once the `replace` has been
   * yielded; a failed LIST leads to `backoff`, resuming into `listing` again.
   */
  | { kind: 'listing' }
  /**
   * A plain LIST (`#list`) whatever `initialList` says: the fallback after a watch-list failed.
   * Leads where `listing` does.
   */
  | { kind: 'list-once' }
  /**
   * One WATCH from `cursor` (`#watch`); the cursor advances with every frame that carries a
   * resourceVersion (changes, bookmarks, skipped unreadable pods). Leads to `watching` again at once when the server ends it cleanly, to
   * `backoff` then `watching` from the latest cursor on a connection failure, an idle timeout or
   * a refusal, and to `backoff` then `listing` when the cursor is dead or a frame is unreadable.
   */
  | { kind: 'watching'; cursor: string }
  /**
   * Waiting `delayMs` (`#backoff`), then `resume`: the state the failure led to, decided before
   * the wait so the wait cannot change it.
   */
  | {
      kind: 'backoff';
      delayMs: number;
      resume: { kind: 'listing' } | { kind: 'watching'; cursor: string };
    }
  /** The consumer closed the stream (its signal aborted) during a step. Nothing leads out. */
  | { kind: 'stopped' };

const STOPPED: State = { kind: 'stopped' };

/** Why a WATCH was torn down: no whole frame within the stall timeout. */
class StalledWatchError extends Error {
  override readonly name = 'StalledWatchError';
  constructor(readonly stallMs: number) {
    super(`no whole watch frame for ${stallMs} ms`);
  }
}

/** Why a watch-list was given up: its initial events did not end within the deadline. */
class InitialEventsTimeoutError extends Error {
  override readonly name = 'InitialEventsTimeoutError';
  constructor(readonly deadlineMs: number) {
    super(
      `the initial-events-end bookmark did not come within ${deadlineMs} ms of the last initial event`,
    );
  }
}

/** The reason a stream's requests are aborted when its consumer closes it. */
class StreamClosedError extends Error {
  override readonly name = 'StreamClosedError';
  constructor() {
    super('reflector stream closed');
  }
}

/** Maps what the adapter threw onto the classification's input. */
function failureFromError(error: unknown): ReflectorFailure {
  if (error instanceof ApiStatusError) {
    return { kind: 'status', status: error.status, inStream: false };
  }
  if (error instanceof MalformedListError)
    return { kind: 'malformed-list', message: error.message };
  if (error instanceof ApiConnectionError) {
    return { kind: 'connection', message: error.message, answered: error.answered };
  }
  // Not known to have failed before the server answered: assume it did work.
  return {
    kind: 'connection',
    message: error instanceof Error ? error.message : String(error),
    answered: true,
  };
}

/**
 * client-go's `Reflector` for pods, without the store: it turns LIST and WATCH into a restartable
 * stream of `EncodedPod`s (`watch()`) whose first event is always a `replace`, and counts what it did
 * (`stats()`) for the control plane and the metrics.
 *
 * The store lives on the consumer's side (`ObjectStore`), so a relist is just another `replace`
 * and deletions missed while disconnected are synthesized there. Each `watch()` stream runs its
 * own state machine; the stats are the reflector's, summed over its streams. The service runs it
 * in a worker thread through `WorkerPodSource`.
 */
export class KubernetesReflector {
  readonly #api: PodApi;
  readonly #namespace: string | undefined;
  readonly #labelSelector: string | undefined;
  readonly #listPageSize: number | undefined;
  readonly #maxListPageBytes: number | undefined;
  readonly #watchTimeoutSeconds: number | undefined;
  readonly #idleTimeoutMs: number;
  readonly #stallTimeoutMs: number;
  readonly #initialEventsDeadlineMs: number;
  /**
   * A bookmark came from this reflector's server: from then on a WATCH silent for
   * `stallTimeoutMs` is stalled, not merely quiet.
   */
  #bookmarksSeen = false;
  readonly #backoffOptions: Partial<Omit<BackoffOptions, 'random'>>;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #wallClock: () => number;
  readonly #logger: Logger;
  readonly #onStatsChange: () => void;
  readonly #onListPage: ((pods: readonly EncodedPod[], page: number) => void) | undefined;
  /** What the stream counts (./reflector-stats.ts), fed each step. */
  readonly #stats: ReflectorStats;
  /** What `listing` does now: the option, until the server shows it cannot serve watch-list. */
  #initialList: InitialListMode;
  /** The first out-of-scope event is logged at warn, later ones at debug: once per reflector. */
  #outOfScopeLogged = false;
  /** The first fallback is logged at warn, later ones at debug: once per reflector. */
  #fallbackLogged = false;
  /** Whether the running stream is healthy (./reflector-health.ts), fed as things happen. */
  readonly #health: ReflectorHealth;
  /**
   * A WATCH proved itself since the stream's last LIST began: its cursor was live, so a 410 on it
   * is news (a compaction, an API server restart) and is relisted at once.
   */
  #cursorProven = false;
  /** Aborts the pending timer that re-evaluates health when the grace after progress runs out. */
  #staleTimer: AbortController | undefined;

  constructor(options: KubernetesReflectorOptions) {
    this.#api = options.api;
    this.#namespace = options.namespace || undefined;
    this.#labelSelector = options.labelSelector || undefined;
    this.#listPageSize = options.listPageSize;
    this.#maxListPageBytes = options.maxListPageBytes;
    this.#watchTimeoutSeconds = options.watchTimeoutSeconds;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (!(this.#idleTimeoutMs > 0)) throw new RangeError('idleTimeoutMs must be positive');
    this.#stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    if (!(this.#stallTimeoutMs > 0)) throw new RangeError('stallTimeoutMs must be positive');
    this.#initialEventsDeadlineMs =
      options.initialEventsDeadlineMs ?? DEFAULT_INITIAL_EVENTS_DEADLINE_MS;
    if (!(this.#initialEventsDeadlineMs > 0)) {
      throw new RangeError('initialEventsDeadlineMs must be positive');
    }
    const unhealthyAfterMs = options.unhealthyAfterMs ?? DEFAULT_UNHEALTHY_AFTER_MS;
    if (!(unhealthyAfterMs >= 0)) {
      throw new RangeError('unhealthyAfterMs must not be negative');
    }
    this.#health = new ReflectorHealth(unhealthyAfterMs);
    if (this.#watchTimeoutSeconds !== undefined && !(this.#watchTimeoutSeconds >= 1)) {
      throw new RangeError('watchTimeoutSeconds must be at least 1');
    }
    this.#backoffOptions = options.backoff ?? {};
    // Validate the backoff options now, not at the first failure.
    new Backoff(this.#backoffOptions);
    this.#clock = options.clock ?? realClock;
    this.#random = options.random ?? Math.random;
    this.#wallClock = options.wallClock ?? Date.now;
    this.#logger = options.logger ?? silentLogger;
    this.#onStatsChange = options.onStatsChange ?? (() => {});
    this.#onListPage = options.onListPage;
    this.#initialList = options.initialList ?? DEFAULT_INITIAL_LIST;
    this.#stats = new ReflectorStats(this.#initialList, () => this.#onStatsChange());
  }

  /**
   * A fresh, independent stream: it opens with a LIST published as one `replace`, then WATCHes.
   * Closing the iterator (`return()`, or `break` in `for await`) aborts whatever is in flight
   * (a request, a backoff) and closes the connection before `return()` resolves.
   */
  watch(): AsyncIterable<SourceEvent<EncodedPod>> {
    return {
      [Symbol.asyncIterator]: () => {
        const batches = this.#open();
        let batch: EventBatch = [];
        let at = 0;
        return {
          next: async () => {
            while (at >= batch.length) {
              const result = await batches.next();
              if (result.done) return { done: true, value: undefined };
              batch = result.value;
              at = 0;
            }
            return { done: false, value: batch[at++] as SourceEvent<EncodedPod> };
          },
          return: async () => {
            await batches.return?.();
            return { done: true, value: undefined };
          },
        };
      },
    };
  }

  /**
   * `watch()` as it is produced: the events of the frames one socket read brought, together (a
   * `replace` alone in its batch), so that a consumer pays one step per read, not per event. The
   * worker thread reads this; the order and the closing are `watch()`'s.
   */
  watchBatches(): AsyncIterable<EventBatch> {
    return { [Symbol.asyncIterator]: () => this.#open() };
  }

  /** A snapshot: counters since this reflector was made, the phase and cursor of its stream. */
  stats(): PodSourceStats {
    return this.#stats.snapshot();
  }

  #open(): AsyncIterator<EventBatch> {
    const closer = new AbortController();
    const run = this.#run(closer.signal);
    return {
      next: () => run.next(),
      // Abort first: a `next()` may be pending on a quiet watch, and a generator's own return()
      // would queue behind it. The abort makes that `next()` finish (done), then return() runs.
      return: async () => {
        closer.abort(new StreamClosedError());
        await run.return(undefined);
        return { done: true, value: undefined };
      },
    };
  }

  async *#run(signal: AbortSignal): AsyncGenerator<EventBatch, void, undefined> {
    const backoff = new Backoff({ ...this.#backoffOptions, random: this.#random });
    let state: State = { kind: 'listing' };
    try {
      while (!signal.aborted) {
        switch (state.kind) {
          case 'listing':
            state =
              this.#initialList === 'watch-list'
                ? yield* this.#watchList(signal, backoff)
                : yield* this.#list(signal, backoff);
            break;
          case 'list-once':
            state = yield* this.#list(signal, backoff);
            break;
          case 'watching':
            state = yield* this.#watch(state.cursor, signal, backoff);
            break;
          case 'backoff':
            state = await this.#backoff(state, signal);
            break;
          case 'stopped':
            return;
        }
      }
    } finally {
      this.#health.hear({ kind: 'stopped' }, this.#clock.now());
      this.#stats.hear({ kind: 'healthy', healthy: false }, this.#wallClock());
      this.#enter('stopped');
    }
  }

  /** `listing`: LIST everything, publish it as one `replace`, continue from its version. */
  async *#list(
    signal: AbortSignal,
    backoff: Backoff,
  ): AsyncGenerator<EventBatch, State, undefined> {
    this.#beginWholeRead();
    const watchdog = new IdleWatchdog(this.#clock, this.#idleTimeoutMs, signal);
    const progressLog = new ListProgressLog(
      this.#logger,
      'reflector LIST in progress',
      this.#clock.now(),
    );
    let list: PodList;
    /** The API reported the LIST's pages: their strangers were dropped and counted as they came. */
    let pagesReported = false;
    try {
      list = await this.#api.listPods({
        ...this.#requestScope(watchdog),
        limit: this.#listPageSize,
        maxPageBytes: this.#maxListPageBytes,
        onPage: ({ pages, pods }, items) => {
          // Counted before the page is handed on: what it carries (a chunk) shows it.
          this.#stats.hear({ kind: 'pages', pages, pods }, this.#wallClock());
          pagesReported = true;
          this.#onListPage?.(
            items.filter((pod) => !this.#outOfScope(podKey(pod), 'list')),
            pages,
          );
          progressLog.heard(pages, pods, this.#clock.now());
        },
      });
    } catch (error) {
      this.#stats.hear({ kind: 'whole-read-ended' }, this.#wallClock());
      if (signal.aborted) return STOPPED;
      const failure = this.#requestFailure(watchdog, error);
      return this.#act('list', failure, undefined, backoff);
    } finally {
      await watchdog.release();
    }
    this.#stats.hear({ kind: 'whole-read-ended' }, this.#wallClock());
    const objects = new Map<ObjectKey, EncodedPod>();
    for (const pod of list.pods) {
      const key = podKey(pod);
      const kept = pagesReported ? this.#inNamespace(key) : !this.#outOfScope(key, 'list');
      if (kept) objects.set(key, pod);
    }
    this.#wholeReadDone(list.resourceVersion);
    this.#progress(signal);
    this.#logger.debug(
      { pods: objects.size, resourceVersion: list.resourceVersion },
      'reflector listed pods',
    );
    yield [{ type: 'replace', objects }];
    return { kind: 'watching', cursor: list.resourceVersion };
  }

  /**
   * `listing` by watch-list: one WATCH with `sendInitialEvents` from the freshest state; its
   * ADDED events are the world, streamed to `onListPage` in batches as a LIST's pages are; the
   * bookmark annotated `k8s.io/initial-events-end` publishes them as one `replace` at its version
   * and proves the watch, which then goes on as the watch (`#follow`). An API server that cannot
   * serve it (refuses the request, or sends a bookmark without the annotation) makes the stream
   * fall back to LIST + WATCH for good; any other failure before the end falls back once, at
   * once, as client-go does. A request nothing answered is retried as watch-list after the short
   * wait: the server is down, not lacking the feature.
   */
  async *#watchList(
    signal: AbortSignal,
    backoff: Backoff,
  ): AsyncGenerator<EventBatch, State, undefined> {
    this.#beginWholeRead();
    this.#stats.hear({ kind: 'watch-opened' }, this.#wallClock());
    const watchdog = new IdleWatchdog(this.#clock, this.#idleTimeoutMs, signal);
    const listStartedAt = this.#clock.now();
    const progressLog = new ListProgressLog(
      this.#logger,
      'reflector watch-list in progress',
      listStartedAt,
    );
    let stream: WatchStream | undefined;
    let handedOn = false;
    // The deadline for the initial-events-end bookmark: it runs from the request, and every
    // initial event moves it, until a frame that is not one shows the initial events are over.
    const initialPhase = new AbortController();
    let lastInitialAt = listStartedAt;
    let initialEventsOnly = true;
    void this.#deadline(
      this.#initialEventsDeadlineMs,
      () => lastInitialAt,
      AbortSignal.any([signal, initialPhase.signal]),
      () => {
        watchdog.expire(new InitialEventsTimeoutError(this.#initialEventsDeadlineMs));
        return true;
      },
    );
    try {
      stream = await this.#api.watchPods({
        ...this.#requestScope(watchdog),
        resourceVersion: '',
        sendInitialEvents: true,
        timeoutSeconds: this.#timeoutSeconds(),
      });
      const frames = stream[Symbol.asyncIterator]();
      // `let`, let go of once handed on: the generator's frame lives on while it follows the watch,
      // and would keep every pod of the world in the worker a second time (the main side has them).
      let objects = new Map<ObjectKey, EncodedPod>();
      let batch: EncodedPod[] = [];
      let page = 0;
      /**
       * Pages were heard and then voided (a DELETE): the next page must be page 1 even when no pod
       * is left, or the consumer would keep the void pages as the world.
       */
      let voided = false;
      const flush = (): void => {
        if (batch.length === 0 && !voided) return;
        voided = false;
        page += 1;
        this.#stats.hear({ kind: 'pages', pages: page, pods: objects.size }, this.#wallClock());
        this.#onListPage?.(batch, page);
        batch = [];
      };
      for (;;) {
        // The frames a read brought are taken without a promise each; the first waits.
        let frame = stream.takeReady?.();
        if (frame === undefined) {
          const next = await frames.next();
          if (next.done) {
            return this.#fallBack('the watch ended before its initial events did', false);
          }
          frame = next.value;
        }
        const reading = readFrame(frame);
        this.#countFrame(reading.type);
        if (reading.type !== 'ADDED') initialEventsOnly = false;
        else if (initialEventsOnly) lastInitialAt = this.#clock.now();
        if (reading.kind === 'failure') {
          const why = describeFailure(reading.failure);
          const unsupported =
            reading.failure.kind === 'status' &&
            WATCH_LIST_UNSUPPORTED_CODES.has(reading.failure.status.code ?? 0);
          return this.#fallBack(why, unsupported);
        }
        if (reading.kind === 'bookmark') {
          this.#bookmarksSeen = true;
          if (!reading.initialEventsEnd) {
            // A server that ignored sendInitialEvents: its bookmarks never end the initial events.
            return this.#fallBack('a bookmark without the initial-events-end annotation', true);
          }
          if (reading.resourceVersion === undefined) {
            return this.#fallBack('the initial-events-end bookmark has no resourceVersion', false);
          }
          initialPhase.abort();
          flush();
          this.#stats.hear({ kind: 'whole-read-ended' }, this.#wallClock());
          const cursor = this.#wholeReadDone(reading.resourceVersion);
          this.#logger.debug(
            { pods: objects.size, resourceVersion: cursor, pages: page },
            'reflector received the initial events of a watch-list',
          );
          yield [{ type: 'replace', objects }];
          objects = new Map();
          handedOn = true;
          return yield* this.#follow(stream, frames, cursor, {
            signal,
            backoff,
            watchdog,
            proven: true,
          });
        }
        if (reading.kind !== 'change') continue;
        const event = reading.event;
        if (event.type !== 'replace' && this.#outOfScope(event.key, 'watch')) continue;
        if (event.type === 'upsert') {
          const held = objects.get(event.key);
          if (held !== undefined && this.#olderThanHeld(event.object, held)) continue;
          objects.set(event.key, event.object);
          batch.push(event.object);
          if (batch.length >= WATCH_LIST_BATCH) flush();
        } else if (event.type === 'delete' && objects.delete(event.key)) {
          // Not sent during initial events; if it is, the pages heard so far are void: start over.
          batch = [...objects.values()];
          if (page > 0) voided = true;
          page = 0;
        }
        progressLog.heard(page, objects.size, this.#clock.now());
      }
    } catch (error) {
      if (signal.aborted) return STOPPED;
      const reason: unknown = watchdog.signal.reason;
      if (reason instanceof InitialEventsTimeoutError) {
        this.#stats.hear({ kind: 'initial-events-timeout' }, this.#wallClock());
        return this.#fallBack(reason.message, false);
      }
      const failure = this.#requestFailure(watchdog, error);
      if (failure.kind === 'connection' && !failure.answered) {
        // Nothing answered: the server is away, not lacking the feature. Watch-list again soon.
        return this.#act('list', failure, undefined, backoff);
      }
      const unsupported =
        failure.kind === 'status' && WATCH_LIST_UNSUPPORTED_CODES.has(failure.status.code ?? 0);
      return this.#fallBack(describeFailure(failure), unsupported);
    } finally {
      initialPhase.abort();
      if (!handedOn) {
        this.#stats.hear({ kind: 'whole-read-ended' }, this.#wallClock());
        stream?.close();
        await watchdog.release();
        this.#updateHealth(signal);
      }
    }
  }

  /**
   * A watch-list that did not end its initial events: LIST + WATCH now, as client-go falls back
   * ("making progress is better than deadlocking"), and for good when the server showed it does
   * not serve watch-list. Logged at warn once, then at debug.
   */
  #fallBack(why: string, forGood: boolean): State {
    if (forGood) this.#initialList = 'list';
    this.#stats.hear({ kind: 'watch-list-fallback', why, forGood }, this.#wallClock());
    const entry = { error: why, forGood };
    const message = forGood
      ? 'reflector: the API server does not serve watch-list; using LIST + WATCH'
      : 'reflector: watch-list failed; falling back to one LIST + WATCH';
    if (this.#fallbackLogged) this.#logger.debug(entry, message);
    else this.#logger.warn(entry, message);
    this.#fallbackLogged = true;
    return { kind: 'list-once' };
  }

  /** `watching`: one WATCH from `cursor`, until it ends, fails or brings the cursor's death. */
  async *#watch(
    cursor: string,
    signal: AbortSignal,
    backoff: Backoff,
  ): AsyncGenerator<EventBatch, State, undefined> {
    this.#stats.hear({ kind: 'watch-opened' }, this.#wallClock());
    this.#enter('watching');
    const watchdog = new IdleWatchdog(this.#clock, this.#idleTimeoutMs, signal);
    let stream: WatchStream;
    try {
      stream = await this.#api.watchPods({
        ...this.#requestScope(watchdog),
        resourceVersion: cursor,
        timeoutSeconds: this.#timeoutSeconds(),
      });
    } catch (error) {
      await watchdog.release();
      this.#updateHealth(signal);
      if (signal.aborted) return STOPPED;
      const failure = this.#requestFailure(watchdog, error);
      return this.#act('watch', failure, cursor, backoff);
    }
    return yield* this.#follow(stream, stream[Symbol.asyncIterator](), cursor, {
      signal,
      backoff,
      watchdog,
      proven: false,
    });
  }

  /**
   * Follows an open WATCH from `cursor` until it ends, fails or brings the cursor's death: the
   * rest of `#watch`, and of `#watchList` once its initial events are in. `proven` says the
   * stream already proved itself (a watch-list's initial-events-end bookmark does).
   */
  async *#follow(
    stream: WatchStream,
    frames: AsyncIterator<WatchFrame>,
    cursor: string,
    scope: { signal: AbortSignal; backoff: Backoff; watchdog: IdleWatchdog; proven: boolean },
  ): AsyncGenerator<EventBatch, State, undefined> {
    const { signal, backoff, watchdog } = scope;
    let position = cursor;
    let count = 0;
    /** Frames in a row older than the cursor, and the version of the last of them. */
    let staleInARow = 0;
    let staleVersion = '';
    /** The first stale frame of each WATCH is logged at warn, the rest at debug. */
    let staleLogged = false;
    /**
     * Whether a frame at `version` is older than `position`: the cursor is the newest version the
     * stream applied, so every pod the consumer holds is at or below it and a frame below it can
     * only move the view back. Such a frame is dropped (the cursor stays), counted and logged.
     * Versions KEP-5504 does not make comparable are applied as before.
     */
    const stale = (version: string | undefined, key?: ObjectKey): boolean => {
      if (version === undefined || !((compareResourceVersions(version, position) ?? 0) < 0)) {
        staleInARow = 0;
        return false;
      }
      staleInARow += 1;
      staleVersion = version;
      this.#countDrop('stale');
      const entry = { resourceVersion: version, cursor: position, ...(key ? { key } : {}) };
      const message = 'reflector dropped a watch frame older than its cursor';
      if (staleLogged) this.#logger.debug(entry, message);
      else this.#logger.warn(entry, message);
      staleLogged = true;
      return true;
    };
    // Ends with this WATCH: cancels the timer that would call it healthy, and the stall deadline.
    const watchScope = new AbortController();
    this.#enter('watching');
    const openedAt = this.#clock.now();
    /** When the last whole frame arrived (the opening, before the first). */
    let lastFrameAt = openedAt;
    let stalled = false;
    void this.#deadline(
      this.#stallTimeoutMs,
      () => lastFrameAt,
      watchScope.signal,
      () => {
        // A server that has never sent a bookmark may be quiet for good reason: only bytes count.
        if (!this.#bookmarksSeen) return false;
        watchdog.expire(new StalledWatchError(this.#stallTimeoutMs));
        return true;
      },
    );
    try {
      // A proven WATCH is a healthy server now: it ends the backoff's failure streak and makes
      // the cursor live. An accepted WATCH alone proves nothing (a server or proxy that ends it
      // at once accepted it too), and neither does an ERROR frame.
      const proven = (): void => {
        this.#health.hear({ kind: 'watch-proven' }, this.#clock.now());
        this.#cursorProven = true;
        backoff.reset();
        this.#updateHealth(signal);
      };
      if (scope.proven) proven();
      else this.#clock.sleep(WATCH_HEALTHY_AFTER_MS, watchScope.signal).then(proven, () => {});
      /**
       * Reads one frame: its change (if any, and in scope and not stale) goes into `batch`, the
       * cursor moves; returns the next state when the frame ends the watch.
       */
      const take = (frame: WatchFrame, batch: SourceEvent<EncodedPod>[]): State | undefined => {
        count += 1;
        lastFrameAt = this.#clock.now();
        const reading = readFrame(frame);
        if (reading.kind === 'bookmark') this.#bookmarksSeen = true;
        // Once proven, a frame changes nothing more: health holds until the watch ends, and the
        // watch's end stamps the progress time itself.
        if (!this.#health.watchProven && reading.kind !== 'failure') proven();
        this.#countFrame(reading.type);
        switch (reading.kind) {
          case 'change':
            if (reading.event.type !== 'replace' && this.#outOfScope(reading.event.key, 'watch'))
              break;
            if (
              stale(
                reading.resourceVersion,
                reading.event.type === 'replace' ? undefined : reading.event.key,
              )
            )
              break;
            if (reading.resourceVersion !== undefined)
              position = this.#setCursor(reading.resourceVersion);
            batch.push(reading.event);
            break;
          case 'bookmark':
          case 'ignored':
            if (stale(reading.resourceVersion)) break;
            if (reading.resourceVersion !== undefined)
              position = this.#setCursor(reading.resourceVersion);
            break;
          case 'failure': {
            const action = classifyFailure('watch', reading.failure);
            if (action.kind === 'skip') {
              this.#logger.warn(
                { error: describeFailure(reading.failure), resourceVersion: action.advanceTo },
                'reflector skipped an unreadable pod frame',
              );
              this.#stats.hear(
                { kind: 'error', message: describeFailure(reading.failure) },
                this.#wallClock(),
              );
              if (!stale(action.advanceTo)) position = this.#setCursor(action.advanceTo);
              break;
            }
            return this.#act('watch', reading.failure, position, backoff);
          }
        }
        if (staleInARow >= STALE_FRAMES_BEFORE_RELIST) {
          const regression: ReflectorFailure = {
            kind: 'regression',
            cursor: position,
            resourceVersion: staleVersion,
            frames: staleInARow,
          };
          return this.#act('watch', regression, position, backoff);
        }
        return undefined;
      };
      for (;;) {
        const next = await frames.next();
        if (next.done) break;
        // This frame and every frame already decoded behind it (one socket read's), their
        // changes handed on together, before the watch ends if one of them ends it.
        const batch: SourceEvent<EncodedPod>[] = [];
        let ending: State | undefined;
        for (let frame: WatchFrame | undefined = next.value; frame !== undefined; ) {
          ending = take(frame, batch);
          if (ending !== undefined) break;
          frame = stream.takeReady?.();
        }
        if (batch.length > 0) yield batch;
        if (ending !== undefined) return ending;
      }
      const lastedMs = this.#clock.now() - openedAt;
      const end: ReflectorFailure =
        lastedMs < SHORT_WATCH_MS
          ? { kind: 'short-watch', lastedMs, frames: count }
          : { kind: 'ended' };
      return this.#act('watch', end, position, backoff);
    } catch (error) {
      if (signal.aborted) return STOPPED;
      const failure = this.#requestFailure(watchdog, error);
      if (failure.kind === 'stalled') {
        stalled = true;
        this.#stats.hear({ kind: 'stalled-watch' }, this.#wallClock());
      }
      return this.#act('watch', failure, position, backoff);
    } finally {
      // Every path ends here: the connection is closed explicitly, whether the watch ended,
      // failed, went idle, met an ERROR frame, or the consumer closed the stream mid-frame.
      watchScope.abort();
      stream.close();
      await watchdog.release();
      // A proven watch was good until this moment: the grace for what follows starts now. A
      // stalled one was good only until its last frame, long enough ago that readiness falls now.
      this.#health.hear(
        stalled ? { kind: 'watch-ended', lastProgressAt: lastFrameAt } : { kind: 'watch-ended' },
        this.#clock.now(),
      );
      this.#updateHealth(signal);
    }
  }

  /**
   * What every LIST and WATCH of the stream carries: the scope, and the watchdog that hears the
   * request's bytes (counted in the stats) and tears the request down when it falls silent.
   */
  #requestScope(
    watchdog: IdleWatchdog,
  ): Pick<ListPodsOptions, 'namespace' | 'labelSelector' | 'signal' | 'onBytes'> {
    return {
      namespace: this.#namespace,
      labelSelector: this.#labelSelector,
      signal: watchdog.signal,
      onBytes: (count) => {
        watchdog.touch();
        this.#countBytes(count);
      },
    };
  }

  /**
   * What a failed LIST or WATCH was: idle when the watchdog tore it down (the error is then only
   * the teardown's echo), else what the error says.
   */
  #requestFailure(watchdog: IdleWatchdog, error: unknown): ReflectorFailure {
    if (watchdog.timedOut) return { kind: 'idle', idleMs: this.#idleTimeoutMs };
    const reason: unknown = watchdog.signal.reason;
    if (reason instanceof StalledWatchError) return { kind: 'stalled', stallMs: reason.stallMs };
    return failureFromError(error);
  }

  /**
   * Calls `expire` each time `ms` have passed since `lastAt()` (read again after every wait, so
   * progress only moves the deadline), until `until` aborts or `expire` returns true. On the
   * injected clock, so tests drive it.
   */
  async #deadline(
    ms: number,
    lastAt: () => number,
    until: AbortSignal,
    expire: () => boolean,
  ): Promise<void> {
    while (!until.aborted) {
      let remaining = lastAt() + ms - this.#clock.now();
      if (remaining <= 0) {
        if (expire()) return;
        remaining = ms;
      }
      try {
        await this.#clock.sleep(remaining, until);
      } catch {
        return;
      }
    }
  }

  /** `backoff`: wait, then carry on into the state the failure led to. */
  async #backoff(state: Extract<State, { kind: 'backoff' }>, signal: AbortSignal): Promise<State> {
    this.#enter('backoff');
    try {
      await this.#clock.sleep(state.delayMs, signal);
    } catch {
      return STOPPED;
    }
    return state.resume;
  }

  #act(
    phase: RequestPhase,
    failure: ReflectorFailure,
    position: string | undefined,
    backoff: Backoff,
  ): State {
    const action = classifyFailure(phase, failure, { cursorProven: this.#cursorProven });
    return this.#carryOut(action, failure, position, backoff);
  }

  /** Turns a classified failure into the next state, with the wait the action asks for. */
  #carryOut(
    action: ReflectorAction,
    failure: ReflectorFailure,
    position: string | undefined,
    backoff: Backoff,
  ): State {
    const description = describeFailure(failure);
    let next: { kind: 'listing' } | { kind: 'watching'; cursor: string };
    switch (action.kind) {
      case 'skip':
        // Only frames are skipped, and #watch handles those in place; a skip here means there is
        // a version to resume from, which is exactly a reconnect.
        return { kind: 'watching', cursor: action.advanceTo };
      case 'reconnect':
        if (position === undefined) {
          next = { kind: 'listing' };
        } else {
          next = { kind: 'watching', cursor: position };
        }
        if (failure.kind === 'ended') {
          this.#logger.debug({ resourceVersion: position }, 'reflector watch ended; reconnecting');
        } else {
          this.#stats.hear({ kind: 'error', message: description }, this.#wallClock());
          this.#logger.warn(
            { error: description, resourceVersion: position },
            'reflector watch failed; reconnecting from the cursor',
          );
        }
        break;
      case 'relist':
        // A LIST retried before any LIST completed is still the first LIST, not a relist.
        this.#stats.hear({ kind: 'relist', reason: action.reason }, this.#wallClock());
        this.#stats.hear({ kind: 'error', message: description }, this.#wallClock());
        this.#setCursor(undefined);
        this.#logger.warn({ error: description, reason: action.reason }, 'reflector will relist');
        next = { kind: 'listing' };
        break;
    }
    switch (action.wait.kind) {
      case 'none':
        return next;
      case 'unanswered':
        return { kind: 'backoff', delayMs: backoff.unanswered(), resume: next };
      case 'backoff':
        return {
          kind: 'backoff',
          delayMs: Math.max(action.wait.atLeastMs ?? 0, backoff.next()),
          resume: next,
        };
    }
  }

  /** A LIST or a watch-list begins: no cursor, none proven, progress from zero. */
  #beginWholeRead(): void {
    this.#cursorProven = false;
    this.#stats.hear({ kind: 'whole-read-begun' }, this.#wallClock());
  }

  /**
   * A LIST or a watch-list read the whole world at `resourceVersion`: counted only now (`lists`
   * is what `..._lists_total` reports), and the cursor is its version.
   */
  #wholeReadDone(resourceVersion: string): string {
    this.#stats.hear({ kind: 'whole-read-done', resourceVersion }, this.#wallClock());
    return resourceVersion;
  }

  /** Good progress now: a LIST completed, a WATCH proved itself or delivered a frame. */
  #progress(signal: AbortSignal): void {
    this.#health.hear({ kind: 'progress' }, this.#clock.now());
    this.#updateHealth(signal);
  }

  /**
   * Publishes the health record's answer now (./reflector-health.ts). When it is healthy only by
   * the grace after progress, a timer asks again when that grace runs out (later progress just
   * moves the deadline, found when it fires), so health falls without any event.
   */
  #updateHealth(signal: AbortSignal): void {
    const { healthy, recheckInMs } = this.#health.at(this.#clock.now());
    this.#stats.hear({ kind: 'healthy', healthy }, this.#wallClock());
    if (recheckInMs === undefined || signal.aborted) {
      this.#staleTimer?.abort();
      this.#staleTimer = undefined;
      return;
    }
    if (this.#staleTimer) return;
    const timer = new AbortController();
    this.#staleTimer = timer;
    this.#clock.sleep(recheckInMs, AbortSignal.any([signal, timer.signal])).then(
      () => {
        if (this.#staleTimer === timer) this.#staleTimer = undefined;
        this.#updateHealth(signal);
      },
      () => {
        if (this.#staleTimer === timer) this.#staleTimer = undefined;
      },
    );
  }

  #timeoutSeconds(): number {
    if (this.#watchTimeoutSeconds !== undefined) return this.#watchTimeoutSeconds;
    const span = MAX_WATCH_TIMEOUT_SECONDS - MIN_WATCH_TIMEOUT_SECONDS;
    return Math.min(
      MAX_WATCH_TIMEOUT_SECONDS - 1,
      MIN_WATCH_TIMEOUT_SECONDS + Math.floor(this.#random() * span),
    );
  }

  #enter(phase: ReflectorPhase): void {
    this.#stats.hear({ kind: 'phase', phase }, this.#wallClock());
  }

  #setCursor(cursor: string): string;
  #setCursor(cursor: undefined): undefined;
  #setCursor(cursor: string | undefined): string | undefined {
    this.#stats.hear({ kind: 'cursor', cursor }, this.#wallClock());
    return cursor;
  }

  #countBytes(count: number): void {
    this.#stats.hear({ kind: 'bytes', count }, this.#wallClock());
  }

  /**
   * A watch-list's initial event for a pod already read is older than the copy held: both
   * versions comparable (KEP-5504) and the event's below the held one's. Counted as dropped.
   */
  #olderThanHeld(event: EncodedPod, held: EncodedPod): boolean {
    const eventVersion = event.metadata.resourceVersion;
    const heldVersion = held.metadata.resourceVersion;
    if (eventVersion === undefined || heldVersion === undefined) return false;
    if (!((compareResourceVersions(eventVersion, heldVersion) ?? 0) < 0)) return false;
    this.#countDrop('stale');
    this.#logger.debug(
      { key: podKey(event), resourceVersion: eventVersion, held: heldVersion },
      'reflector dropped an initial event older than the copy it holds',
    );
    return true;
  }

  /**
   * A LIST item or a change for a pod outside the watched namespace: the LIST and the WATCH asked
   * the server for that namespace only, so this came from a broken server or something between
   * (a proxy). Applied, it would put a stranger's pod in the store, and the leader would write
   * its status. Dropped, counted, and logged at warn the first time, at debug after (it may come
   * with every event).
   */
  #outOfScope(key: ObjectKey, from: 'list' | 'watch'): boolean {
    if (this.#inNamespace(key)) return false;
    this.#countDrop('out-of-scope');
    const entry = { key, namespace: this.#namespace };
    const message = OUT_OF_NAMESPACE_MESSAGES[from];
    if (this.#outOfScopeLogged) this.#logger.debug(entry, message);
    else this.#logger.warn(entry, message);
    this.#outOfScopeLogged = true;
    return true;
  }

  /** Whether `key` (`namespace/name`) is in the watched namespace; always, watching all. */
  #inNamespace(key: ObjectKey): boolean {
    const namespace = this.#namespace;
    return (
      namespace === undefined ||
      (key.indexOf('/') === namespace.length && key.startsWith(namespace))
    );
  }

  #countDrop(reason: DropReason): void {
    this.#stats.hear({ kind: 'dropped', reason }, this.#wallClock());
  }

  #countFrame(type: string): void {
    this.#stats.hear({ kind: 'frame', type }, this.#wallClock());
  }
}
