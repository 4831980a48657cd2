/**
 * What a pod source reports about itself, for the control plane (`GET /api/v1/reflector`,
 * `/readyz`) and the reflector metrics. Plain data, so it crosses from the worker thread by
 * structured clone.
 */

/**
 * Where the reflector's state machine is now: its `State` kinds, plus `idle` for a source with no
 * stream open yet (or between streams).
 */
export type ReflectorPhase = 'idle' | 'listing' | 'watching' | 'backoff' | 'stopped';

/**
 * Why a relist (a LIST decided after the first LIST completed) happened: the cursor expired (410,
 * or reason Expired / Gone), the server refused it as newer than it has (504, or a
 * `ResourceVersionTooLarge` cause), a WATCH frame was unreadable with no version to skip to, the
 * WATCH stream carried another ERROR frame (500 InternalError, …: the cursor is left and the
 * reflector relists, as client-go does), or the previous relist's LIST itself failed and is
 * retried, or the WATCH kept sending frames older than the cursor (`regression`: the server's
 * history went back). Retries of a failed first LIST are not relists. `other` is reserved: nothing
 * reports it today, so its series stays at 0.
 */
export type RelistReason =
  | 'expired'
  | 'too-large'
  | 'malformed-frame'
  | 'error-frame'
  | 'list-failed'
  | 'regression'
  | 'other';

/** Every relist reason, so a metric can show each at 0 before it first happens. */
export const RELIST_REASONS: readonly RelistReason[] = [
  'expired',
  'too-large',
  'malformed-frame',
  'error-frame',
  'list-failed',
  'regression',
  'other',
];

/**
 * Why a watch frame or a LIST item was dropped rather than applied: `stale`, its resourceVersion
 * is older than the cursor (the newest version the stream applied) or than the copy of its pod
 * already read, so applying it would move the view back in time (KEP-5504 makes versions
 * comparable); `out-of-scope`, its pod is in a namespace other than the one watched, or (an
 * upsert or a LIST item) its labels are not selected by the watched label selector (the request
 * asked the server for that namespace
 * and selector only, so only a broken server or a proxy sends one; the selector is checked on the
 * main thread, where the pod's labels are read).
 */
export type DropReason = 'stale' | 'out-of-scope';

/** Every drop reason, so a metric can show each at 0 before it first happens. */
export const DROP_REASONS: readonly DropReason[] = ['stale', 'out-of-scope'];

/**
 * How a stream reads the whole world (its first sync and every relist): `watch-list`, one WATCH
 * that sends the initial state as events and then goes on as the watch (KEP-3157, client-go's
 * default since 1.35), or `list`, a paged LIST and then a WATCH from its version.
 *
 * The one list of both modes: the flag's parser and `--help` (src/cli/) read it; the API's
 * response schema (routes/schemas.ts, which may import only types) spells it, and
 * test/routes/schema-types.test.ts ties that spelling to this type.
 */
export const INITIAL_LIST_MODES = ['watch-list', 'list'] as const;
/** One of `INITIAL_LIST_MODES`. */
export type InitialListMode = (typeof INITIAL_LIST_MODES)[number];

/**
 * The library's default: LIST + WATCH works with every API server, proxy and fake. The service's
 * `--initial-list` defaults to `watch-list` instead, as client-go does since 1.35.
 */
export const DEFAULT_INITIAL_LIST: InitialListMode = 'list';

/**
 * A pod source's account of itself: counters since the source was made (they only grow, so the
 * metrics can mirror them into Prometheus counters) and the state of its newest stream.
 */
export interface PodSourceStats {
  /** Where the newest stream's state machine is. */
  phase: ReflectorPhase;
  /**
   * The one definition of "the watch is healthy" (what `/readyz` checks; the metric's HELP, the
   * response schema and the docs cite it): true while a WATCH is open and has proven itself —
   * delivered a frame other than an ERROR (a bookmark counts), stayed open for
   * `WATCH_HEALTHY_AFTER_MS`, or, for a watch-list, ended its initial events — rather than merely
   * been accepted; and, once the source has synced, through a relist or reconnect that is making
   * progress, until failures have lasted `unhealthyAfterMs` (30 s).
   */
  healthy: boolean;
  /** The resourceVersion the next WATCH resumes from; absent when the next step is a LIST. */
  cursor?: string | undefined;
  /**
   * Whole-world reads completed: LISTs, and watch-lists whose initial events ended (each published
   * a `replace`); a failed one is not counted.
   */
  lists: number;
  /**
   * Relists by reason, counted when the relist is decided (before its LIST runs), so a relist
   * whose LIST fails counts again under `list-failed` for its retry. Only after the first LIST
   * completed: retries of a failed first LIST are not relists.
   */
  relists: Partial<Record<RelistReason, number>>;
  /** WATCH requests sent, whether or not the server then accepted them (watch-lists included). */
  watchOpens: number;
  /**
   * How the newest stream reads the whole world now: what was asked for, or `list` once the
   * server showed it cannot serve watch-list (the fallback, logged once per stream).
   */
  initialList: InitialListMode;
  /**
   * Watch-list attempts that fell back to a LIST: a server that refused it, or a stream that
   * failed before its initial events ended.
   */
  watchListFallbacks: number;
  /**
   * Of those, the watch-lists whose `k8s.io/initial-events-end` bookmark did not come within the
   * deadline (10 s after the last initial event): a server or proxy that strips it.
   */
  initialEventsTimeouts: number;
  /**
   * WATCHes replaced because no whole frame came for two bookmark intervals (about two minutes)
   * from a server that sends bookmarks: bytes may have come, a frame did not.
   */
  stalledWatches: number;
  /**
   * Frames seen, by watch event type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR, and OTHER for an
   * unknown type or a frame that is not JSON), skipped unreadable ones included.
   */
  events: Record<string, number>;
  /**
   * Frames read but not applied, by reason (`DropReason`); they are counted under `events` too.
   * A bookmark that would move the cursor back counts as `stale`.
   */
  droppedEvents: Partial<Record<DropReason, number>>;
  /** Wall-clock (epoch ms) of the last frame or LIST; for humans and a staleness alert. */
  lastEventAtMs?: number | undefined;
  /** Wall-clock (epoch ms) of the last completed LIST (the last `replace` published). */
  lastSyncAtMs?: number | undefined;
  /** Bytes of LIST and WATCH response bodies read, after gzip decompression. */
  bytesDecoded: number;
  /** The last failure, one line, for a human debugging through port-forward. */
  lastError?: string | undefined;
  /**
   * The LIST under way, if any: pages and pods read so far and when it began (epoch ms), so a
   * long first sync of tens of thousands of pods shows it is moving. Absent outside `listing`.
   */
  listProgress?: ListProgress | undefined;
}

/** How far the LIST under way has got. */
export interface ListProgress {
  pages: number;
  pods: number;
  /** Wall-clock (epoch ms) when this LIST began. */
  startedAtMs: number;
}

/** Stats of a source that has not started a stream yet. */
export function initialReflectorStats(initialList: InitialListMode = 'list'): PodSourceStats {
  return {
    phase: 'idle',
    healthy: false,
    lists: 0,
    relists: {},
    watchOpens: 0,
    initialList,
    watchListFallbacks: 0,
    initialEventsTimeouts: 0,
    stalledWatches: 0,
    events: {},
    droppedEvents: {},
    bytesDecoded: 0,
  };
}

function addCounts<K extends string>(
  a: Partial<Record<K, number>>,
  b: Partial<Record<K, number>>,
): Partial<Record<K, number>> {
  const sum: Partial<Record<K, number>> = { ...a };
  for (const [key, value] of Object.entries(b) as Array<[K, number]>) {
    sum[key] = (sum[key] ?? 0) + value;
  }
  return sum;
}

function later(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

/**
 * Folds the stats of a newer stream (`current`) onto the totals of earlier ones (`base`):
 * counters add up, times keep the latest, and the state fields (phase, health, cursor) are
 * `current`'s. Each reflector stream counts from zero (a restarted worker starts afresh), so this
 * is what keeps "LIST count" meaning "LISTs since the process started".
 */
export function foldReflectorStats(base: PodSourceStats, current: PodSourceStats): PodSourceStats {
  const folded: PodSourceStats = {
    phase: current.phase,
    healthy: current.healthy,
    lists: base.lists + current.lists,
    relists: addCounts(base.relists, current.relists),
    watchOpens: base.watchOpens + current.watchOpens,
    initialList: current.initialList,
    watchListFallbacks: base.watchListFallbacks + current.watchListFallbacks,
    initialEventsTimeouts: base.initialEventsTimeouts + current.initialEventsTimeouts,
    stalledWatches: base.stalledWatches + current.stalledWatches,
    events: addCounts(base.events, current.events) as Record<string, number>,
    droppedEvents: addCounts(base.droppedEvents, current.droppedEvents),
    bytesDecoded: base.bytesDecoded + current.bytesDecoded,
  };
  if (current.cursor !== undefined) folded.cursor = current.cursor;
  const lastEventAtMs = later(base.lastEventAtMs, current.lastEventAtMs);
  if (lastEventAtMs !== undefined) folded.lastEventAtMs = lastEventAtMs;
  const lastSyncAtMs = later(base.lastSyncAtMs, current.lastSyncAtMs);
  if (lastSyncAtMs !== undefined) folded.lastSyncAtMs = lastSyncAtMs;
  const lastError = current.lastError ?? base.lastError;
  if (lastError !== undefined) folded.lastError = lastError;
  if (current.listProgress !== undefined) folded.listProgress = { ...current.listProgress };
  return folded;
}
