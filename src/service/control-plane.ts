/**
 * What the HTTP routes may see of the running service: reads of the reconciled cells, the store,
 * the queue and the source, the admin check, plus the one write (requeue). Routes depend on this
 * interface, not on the loop, the source or the domain modules, so a route cannot reach into
 * internals by accident: everything they need arrives ready to serve, and `routes/` imports
 * nothing of `src/` but this file's types (test/routes/imports.test.ts holds it to that).
 */

import type { Readable } from 'node:stream';
import type { CoordinatorState } from '../coordination/coordinator.js';
import type { SourceKind } from '../model/pod-source.js';
import type { PodSourceStats } from '../model/pod-source-stats.js';
import type { CellMember } from '../pools/cell-state.js';
import type { RoutingState } from '../pools/routing-state.js';
import type { ReconcileLoopState } from '../runtime/reconcile-loop.js';
import type { ParentKey } from '../runtime/source-event.js';
import type { SinkMode, SinkTargetStatus } from '../sinks/sink.js';
import type { AdminDecision, AdminRequestHeaders } from './admin-auth.js';
import type { BuildInfo } from './build-info.js';
import type { CellsView } from './cell-bodies.js';
import type { HealthEndpoint } from './health.js';
import type { LeadershipView } from './leadership.js';
import type { PanicEntry } from './panic-tracker.js';

export type {
  AdminDecision,
  AdminRequestHeaders,
  CoordinatorState,
  LeadershipView,
  ParentKey,
  RoutingState,
  SinkTargetStatus,
};

/** The sinks' guard rails, for `GET /api/v1/sinks`. */
export interface SinkSettingsView {
  mode: SinkMode;
  /** 0: panic is off. */
  panicThresholdPercent: number;
  /** The pools in panic at the leader's last deploy (none on a follower). */
  panic: PanicEntry[];
}

/** Where an effective flag's value came from, as `GET /flagz` says. */
export type FlagOrigin = 'flag' | 'environment' | 'default';

/**
 * One flag as the process runs with it (`GET /flagz`, after Kubernetes' `/flagz`, KEP-4828): the
 * text it was given (or the default's), never a file's contents; values that may lead to secrets
 * are withheld.
 */
export interface EffectiveFlag {
  /** The flag without dashes, e.g. `listen`. */
  flag: string;
  /** Its environment variable, e.g. `POOL_CONTROLLER_LISTEN`. */
  env: string;
  /**
   * The value as given (a repeated flag: every value), or the default as `--help` shows it;
   * `null` when there is none. `"(withheld)"` for a flag marked secret that was set.
   */
  value: string | string[] | null;
  from: FlagOrigin;
}

/** `GET /api/v1/coordinator`: the coordinator's state and the desired routing state. */
export interface CoordinatorView {
  /** This replica holds the Lease (or leads alone). */
  leading: boolean;
  /** Its coordinator runs: it leads and the cells have synced. */
  acting: boolean;
  /** The initial list is applied and every cell in it was reconciled once. */
  cellsSynced: boolean;
  state: CoordinatorState;
  /**
   * The leader's last rendered desired state; on a follower (or before the first run) rendered
   * locally, never deployed. `null` before the cells have synced.
   */
  desired: RoutingState | null;
}

/** One pod as `GET /api/v1/store?objects=true` shows it: its store key and its member view. */
interface StorePodView extends CellMember {
  key: string;
  namespace: string;
  /** The version the store holds: what a comparison with the API server's LIST needs. */
  resourceVersion: string | null;
}

/** One parent key the store holds members for. */
export interface StoreParent {
  key: ParentKey;
  /** A cell for this key is published; `false` means its first reconcile is pending. */
  reconciled: boolean;
  /** Store keys (`namespace/name`) of the members. */
  members: string[];
  /** Only when asked for objects. */
  pods?: StorePodView[];
}

/** The store as observed, as `GET /api/v1/store` serves it. */
export interface StoreSnapshot {
  source: SourceKind;
  synced: boolean;
  objects: number;
  parentCount: number;
  parents: StoreParent[];
}

/**
 * Which keys a cell lookup searches. `published`: cells the reconcile has published (reads).
 * `observed`: also keys the store holds that no reconcile has published yet (a forced reconcile
 * must reach pending work too).
 */
export type CellScope = 'published' | 'observed';

/**
 * A cell id (`engine-00003`) resolved to its parent key (`ns/engine-00003`). Ids are unique only
 * within a namespace, so an id found in several is `ambiguous` rather than a guess.
 */
export type CellResolution =
  | { kind: 'found'; key: ParentKey }
  | { kind: 'not-found' }
  | { kind: 'ambiguous'; namespaces: string[] };

/**
 * Everything a route may call, implemented by `PoolService`. Every read is synchronous or returns
 * what is ready to serve, so a route handler never waits on the loop or the API server; the only
 * writes are `enqueue` and `triggerRouting`.
 */
export interface ControlPlane {
  /** Shutdown has begun: responses close their connections so the server can close promptly. */
  readonly shuttingDown: boolean;
  /** Where pods come from; every status response says it (as its `source` field). */
  readonly sourceKind: SourceKind;
  /** Which build answers: version, revision, Node.js (the status page shows it). */
  readonly buildInfo: BuildInfo;
  /** The reconciled cells, and their response bodies ready to send. */
  readonly cells: CellsView;
  /** The checks behind `/healthz` and `/readyz`, and their report format. */
  readonly health: { readonly healthz: HealthEndpoint; readonly readyz: HealthEndpoint };
  readonly metrics: { readonly contentType: string; render(): Promise<string> };
  /**
   * Whether a request may use the POST endpoints, from its `Authorization` header and socket
   * peer, and (in loopback-only mode) the headers a browser controls. The token stays inside the
   * service; routes only learn the decision.
   */
  authorizeAdmin(
    authorization: string | undefined,
    remoteAddress: string | undefined,
    headers: AdminRequestHeaders,
  ): AdminDecision;
  /** The loop's clock, to turn its clock times into ages and delays. */
  now(): number;
  /**
   * The wall-clock time, RFC 3339, of the loop clock's reading `clockMs`: every time the API
   * shows is one, since a monotonic reading means nothing outside the process.
   */
  wallTime(clockMs: number): string;
  readonly synced: boolean;
  loopState(): ReconcileLoopState;
  /** Parents with members in the store, sorted: what is observed, reconciled or not. */
  storeParents(): ParentKey[];
  readonly storeObjectCount: number;
  /** The store per parent, with a view of every pod when `objects` is set. */
  storeSnapshot(options: { objects: boolean }): StoreSnapshot;
  /** Finds the one cell `id` names, in `namespace` when given. */
  resolveCell(
    id: string,
    options: { namespace?: string | undefined; scope: CellScope },
  ): CellResolution;
  reflector(): PodSourceStats;
  /** Queues a reconcile of `parent` (deduplicated with one already queued). */
  enqueue(parent: ParentKey): void;
  leader(): LeadershipView;
  coordinator(): CoordinatorView;
  /** Per sink target: desired, actual, pending, last apply. */
  sinks(): SinkTargetStatus[];
  /** How the sinks act (`--sink-mode`, `--sink-panic-threshold`) and the pools in panic now. */
  sinkSettings(): SinkSettingsView;
  /**
   * The event bus as a Server-Sent Events byte stream, filtered by `types`, starting with the
   * held events after `lastEventId` (or a notice that they are not all held); ends when `signal`
   * aborts or the service shuts down. `undefined` when `maxEventStreams` are open already.
   */
  eventStream(options: {
    types?: readonly string[];
    signal: AbortSignal;
    lastEventId?: string | undefined;
  }): Readable | undefined;
  /**
   * The event id to resume from to receive the last `count` held events of `types` and every
   * later one: what the status page connects with, so it shows recent events on load.
   */
  eventReplayCursor(types: readonly string[], count: number): string;
  /**
   * The sequence number of the newest event published (0 before the first). It moves whenever
   * something the status page shows may have changed, so a render at one value is current until
   * it moves (the page's cache compares it).
   */
  eventSequence(): number;
  /** Every flag as this process runs with it, in the flag table's order (none when main did not pass them). */
  flags(): readonly EffectiveFlag[];
  /** How many event streams may be open at once (`--max-event-streams`). */
  readonly maxEventStreams: number;
  /** Asks the leader's coordinator for a run now; ignored on a follower. */
  triggerRouting(reason: string): void;
}
