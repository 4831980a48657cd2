/**
 * The status page's live behaviour in numbers and names, shared by the server (which names the
 * event id the log starts from) and the browser bundle (which subscribes, logs and re-fetches).
 */

/** How many events the page's log keeps: enough to see what just happened, short enough to read. */
export const EVENT_LOG_LENGTH = 20;
/**
 * The event types the page asks for. Each may change a section, so each schedules a re-fetch of
 * the JSON API; the log shows all but `STATUS_PAGE_QUIET_TYPES`.
 */
export const STATUS_PAGE_EVENT_TYPES: readonly string[] = [
  'cell.changed',
  'reconciliation.triggered',
  'reconciliation.started',
  'reconciliation.completed',
  'reconciliation.failed',
  'watch.state',
  'leadership.acquired',
  'leadership.lost',
  'leader.changed',
  'store.synced',
  'sink.applied',
  'sink.failed',
  'sink.observed',
  'pool.panic',
  'pool.capacity',
  'events.dropped',
  'events.missed',
];
/** Types the page asks for but does not log: a run's start and trigger show on its end line. */
export const STATUS_PAGE_QUIET_TYPES: readonly string[] = [
  'reconciliation.triggered',
  'reconciliation.started',
];
/** The types the log shows a line for. */
export const STATUS_PAGE_LOGGED_TYPES: readonly string[] = STATUS_PAGE_EVENT_TYPES.filter(
  (t) => !STATUS_PAGE_QUIET_TYPES.includes(t),
);
/**
 * How long the script gathers events before it re-fetches: a burst of changes (a rollout) costs
 * one round of requests, and a person still sees it within a quarter second.
 */
export const REFRESH_DEBOUNCE_MS = 250;
/** How often the script polls while the event stream is down: fresh enough to watch, cheap. */
export const POLL_INTERVAL_MS = 2000;
