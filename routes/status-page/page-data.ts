/**
 * What the status page shows, as plain data: the server builds it from the control plane
 * (`statusPageData` in routes/status-page.ts), the browser from the JSON API
 * (routes/status-page/api-views.ts), and one renderer (routes/status-page/sections.ts) draws it
 * for both. No imports, so the browser bundle can take it as it is.
 */

/** One reason a cell is not alive, as the page shows it. */
interface StatusReason {
  reason: string;
  message: string;
}

/**
 * One row of the Cells table, as both renderers draw it: the published cell reduced to what the
 * page shows (`podsReady`/`pods` instead of the members).
 */
export interface StatusCell {
  key: string;
  namespace: string;
  id: string;
  pool: string;
  alive: boolean;
  whyNotAlive: StatusReason[];
  /** False: left out of every sink, for the reasons in `whyNotRoutable`. */
  routable: boolean;
  whyNotRoutable: StatusReason[];
  generation: string;
  address: string | null;
  podsReady: number;
  pods: number;
  /** RFC 3339: since when the cell has been alive or not alive (the API's `lastTransitionTime`). */
  lastTransitionTime: string;
  /** The last few alive/not-alive changes, newest first, as the API lists them. */
  transitions: StatusCellChange[];
  /** How long the cell had been in its state when the page was drawn; `null`: no clock. */
  inStateForMs?: number | null;
}

/** One alive/not-alive change of a cell, as the Cells table lists it. */
export interface StatusCellChange {
  at: string;
  alive: boolean;
  reasons: string[];
}

/** One row of the Pools table, as both renderers draw it. */
export interface StatusPool {
  namespace: string;
  name: string;
  cells: number;
  aliveCells: number;
  pods: number;
  /** What its LeaderWorkerSet asks for; `null` when unknown (the pool is judged by its cells). */
  desiredCells: number | null;
  /** Desired cells with no pod at all. */
  missingCells: number[];
  /** `Full`, `Degraded`, `Empty` or `Unknown`. */
  capacity: string;
  capacitySince: string;
  capacityReason: string;
  /** How long `capacity` has held when the page was drawn; `null` when the drawer has no clock. */
  capacityForMs?: number | null;
}

/**
 * The Queue section: `queueView`'s answer, also what `GET /api/v1/queue` serves, so the page and
 * the API never disagree.
 */
export interface StatusQueue {
  synced: boolean;
  depth: number;
  queued: string[];
  inFlight: { key: string; runningForMs: number } | null;
  retries: Array<{ key: string; failures: number; dueInMs: number | null }>;
  nextResyncInMs: number | null;
}

/** The Reflector line: the source's phase and health, its cursor, and its last error line. */
export interface StatusReflector {
  phase: string;
  healthy: boolean;
  cursor: string | null;
  lastError: string | null;
}

/** The Leadership line: `GET /api/v1/leader`'s answer. */
export interface StatusLeader {
  identity: string;
  leading: boolean;
  leader: string | null;
  lease: string | null;
  since: string | null;
}

/**
 * The Coordinator section: whether this replica leads and acts, whether the cells have synced
 * (nothing is deployed before), and the coordinator's run state with clock times turned into ages.
 */
export interface StatusCoordinator {
  leading: boolean;
  acting: boolean;
  cellsSynced: boolean;
  running: boolean;
  runningId: number | null;
  pendingReasons: string[];
  consecutiveFailures: number;
  /** `agoMs`: how long before this render the run ended. */
  lastCompleted: { id: number; result: string; agoMs: number } | null;
  lastError: { phase: string; message: string } | null;
}

/** One sink target, as the Sinks table shows it. */
export interface StatusSink {
  kind: string;
  target: string;
  pool: string;
  mode: string;
  desired: number;
  listed: number;
  pending: number;
  /** Endpoints kept only because the pool is in panic. */
  heldByPanic: number;
  panic: boolean;
  wouldAdd: number;
  wouldRemove: number;
  lastError: string | null;
}

/** Everything the page shows, read from the control plane at one moment. */
export interface StatusPageData {
  source: string;
  /** Which build renders the page (`--version`'s facts). */
  build: { version: string; revision: string; nodeVersion: string };
  /** Wall-clock ISO time of the render. */
  renderedAt: string;
  /**
   * The event id the script resumes the stream from: just before the last `EVENT_LOG_LENGTH`
   * logged events the server holds (`ControlPlane.eventReplayCursor`).
   */
  eventsFrom: string;
  pools: StatusPool[];
  cells: StatusCell[];
  /**
   * The Pools and Cells tables' rows, already drawn (the server's `DrawnRows`, which draws each
   * row once per change): when present, the document uses them and `cells` may be empty.
   */
  drawn?: { pools: string; cells: string };
  queue: StatusQueue;
  reflector: StatusReflector;
  leader: StatusLeader;
  coordinator: StatusCoordinator;
  sinks: StatusSink[];
}
