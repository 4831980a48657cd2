/**
 * The running pool controller: the lifecycle order of the parts `assembleService` built (start:
 * leadership, the watch-state poll, the workload loop, the pod loop; stop: acting, then the loops,
 * then the sources) and the `ControlPlane` view the HTTP routes read. It builds nothing but its
 * health checks and store views, which read its own shutdown state.
 *
 * Every replica runs the loop and serves reads; only the leader's routing controller acts, and
 * only once the cells have synced (acting-term.ts). The HTTP server may answer before `start()`
 * (liveness passes, readiness says "not synced"); `stop()` ends leadership first (the routing
 * controller stops, the Lease is released so a follower takes over in about one retry period),
 * then the loop (no reconcile runs against a closing source), then the source.
 */

import type { Readable } from 'node:stream';
import type { EventBus } from '../coordination/event-bus.js';
import type { Pod } from '../model/pod.js';
import type { PodSource, SourceKind } from '../model/pod-source.js';
import type { PodSourceStats } from '../model/pod-source-stats.js';
import type { Workload, WorkloadSource } from '../model/workload.js';
import type { CellRegistry } from '../pools/cell-registry.js';
import type { PoolLabels } from '../pools/labels.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { ReconcileLoop, ReconcileLoopState } from '../runtime/reconcile-loop.js';
import type { ParentKey } from '../runtime/source-event.js';
import type { SinkMode, SinkTargetStatus } from '../sinks/sink.js';
import type { ActingTerm } from './acting-term.js';
import { type AdminDecision, type AdminRequestHeaders, authorizeAdmin } from './admin-auth.js';
import type { KubernetesEventRecorder } from './assemble.js';
import { type BuildInfo, buildInfo } from './build-info.js';
import type { CellBodies } from './cell-bodies.js';
import type {
  CellResolution,
  CellScope,
  ControlPlane,
  CoordinatorView,
  EffectiveFlag,
  SinkSettingsView,
  StoreSnapshot,
} from './control-plane.js';
import type { EventStreams } from './event-stream.js';
import type { HealthEndpoint } from './health.js';
import type { Leadership, LeadershipView } from './leadership.js';
import type { ServiceMetrics } from './metrics.js';
import type { RoutingController } from './routing-controller.js';
import type { ServiceEvent } from './service-events.js';
import { createServiceHealth } from './service-health.js';
import { resolveCell, type StoreViewSources, storeSnapshot } from './store-views.js';
import { publishWatchStates } from './watch-state-publisher.js';

/** The finished parts the service sequences and shows; `assembleService` builds them in order. */
interface PoolServiceParts {
  sourceKind: SourceKind;
  labels: PoolLabels;
  /** The cell readiness gate's condition type, when the gate is on (the store view shows it). */
  readinessGate: string | undefined;
  podSource: PodSource;
  loop: ReconcileLoop<Pod>;
  workloadSource: WorkloadSource | undefined;
  /** The workloads' own loop, keyed `namespace/name` (the pool's key); none without a source. */
  workloadLoop: ReconcileLoop<Workload> | undefined;
  registry: CellRegistry;
  cells: CellBodies;
  metrics: ServiceMetrics;
  bus: EventBus<ServiceEvent>;
  eventStreams: EventStreams;
  /** The bus with the metrics and handlers beside it: what `watch.state` events go through. */
  publish: (event: ServiceEvent) => void;
  routing: RoutingController;
  acting: ActingTerm;
  leadership: Leadership;
  eventRecorder: KubernetesEventRecorder | undefined;
  /** `token` `undefined`: POSTs are for loopback clients only. The token never leaves the service. */
  admin: { token: string | undefined; allowedHosts: ReadonlySet<string> };
  sinkSettings: { mode: SinkMode; panicThresholdPercent: number };
  flags: readonly EffectiveFlag[];
  watchStatePollMs: number;
  clock: Clock;
  wallClock: () => number;
  logger: Logger;
}

/**
 * The running service: the lifecycle of the assembled parts and the `ControlPlane` the HTTP
 * routes read. Lifecycle, as main sequences it: `start()`; on SIGTERM `beginShutdown()`
 * (readiness fails), `closeEventStreams()`, `stopActing()` (the Lease is released while reads are
 * still served), then `stop()` once the listeners have closed.
 */
export class PoolService implements ControlPlane {
  readonly sourceKind: SourceKind;
  readonly buildInfo: BuildInfo = buildInfo();
  /** The reconciled cells, written by the per-cell reconcile; read by the coordinator's render. */
  readonly registry: CellRegistry;
  readonly cells: CellBodies;
  readonly metrics: ServiceMetrics;
  readonly health: { healthz: HealthEndpoint; readyz: HealthEndpoint };
  /** Everything the service publishes; `GET /api/v1/events` streams it. */
  readonly bus: EventBus<ServiceEvent>;
  /** The open `GET /api/v1/events` streams, bounded in number and bytes. */
  readonly eventStreams: EventStreams;
  readonly #parts: PoolServiceParts;
  readonly #loop: ReconcileLoop<Pod>;
  readonly #routing: RoutingController;
  readonly #leadership: Leadership;
  readonly #clock: Clock;
  readonly #lifetime = new AbortController();
  /** What the store views read (store-views.ts). */
  readonly #storeViews: StoreViewSources;
  readonly #background: Promise<unknown>[] = [];
  #shuttingDown = false;
  #stopped: Promise<void> | undefined;
  #stoppedActing: Promise<void> | undefined;

  constructor(parts: PoolServiceParts) {
    this.#parts = parts;
    this.sourceKind = parts.sourceKind;
    this.registry = parts.registry;
    this.cells = parts.cells;
    this.metrics = parts.metrics;
    this.bus = parts.bus;
    this.eventStreams = parts.eventStreams;
    this.#loop = parts.loop;
    this.#routing = parts.routing;
    this.#leadership = parts.leadership;
    this.#clock = parts.clock;
    const { loop, podSource } = parts;
    this.#storeViews = {
      sourceKind: parts.sourceKind,
      labels: parts.labels,
      readinessGate: parts.readinessGate,
      registry: parts.registry,
      synced: () => loop.synced,
      objectCount: () => loop.objectCount,
      parents: () => this.storeParents(),
      pods: (key) => loop.getByParent(key),
    };
    this.health = createServiceHealth({
      leadershipHealthy: () => parts.leadership.healthy(),
      storeSynced: () => loop.synced,
      podSourceStats: () => podSource.stats(),
      shuttingDown: () => this.#shuttingDown,
      logger: parts.logger,
    });
  }

  /**
   * Begins campaigning (or leading alone) and starts the loop; resolves once the initial world is
   * in the store and queued (see `ReconcileLoop.start`). The routing controller starts when this
   * replica leads and the cells have synced, whichever comes last.
   */
  async start(signal?: AbortSignal): Promise<void> {
    this.#background.push(
      this.#leadership.run(this.#lifetime.signal),
      publishWatchStates(
        {
          stats: () => this.#parts.podSource.stats(),
          publish: this.#parts.publish,
          clock: this.#clock,
          pollMs: this.#parts.watchStatePollMs,
        },
        this.#lifetime.signal,
      ),
    );
    const { workloadLoop, logger } = this.#parts;
    if (workloadLoop) {
      // Not awaited: pools are served (as `Unknown`) while the workload API is slow or absent.
      this.#background.push(
        workloadLoop.start(this.#lifetime.signal).catch((err: unknown) => {
          if (!this.#lifetime.signal.aborted) {
            logger.error({ err }, 'the workload loop failed to start');
          }
        }),
      );
    }
    await this.#loop.start(signal);
    this.#parts.acting.listed(this.#loop.parentKeys());
  }

  /** Whether the initial list is applied and every cell in it was reconciled once. */
  get cellsSynced(): boolean {
    return this.#parts.acting.cellsSynced;
  }

  /**
   * Makes `/readyz` fail from now on, so load balancers drain us before the server closes, and
   * ends open event streams (shutdown never waits on a client that only listens).
   */
  beginShutdown(): void {
    this.#shuttingDown = true;
    this.closeEventStreams();
  }

  /** Ends every open event stream now; new ones end at once. */
  closeEventStreams(): void {
    this.eventStreams.close();
  }

  /**
   * Stops acting: the routing controller stops and the Lease is released, so a follower takes
   * over within about one retry period while this replica still serves reads. Idempotent.
   */
  stopActing(): Promise<void> {
    this.#shuttingDown = true;
    this.#stoppedActing ??= (async () => {
      this.#lifetime.abort(new Error('the service is stopping'));
      this.eventStreams.close();
      await Promise.allSettled(this.#background);
      await this.#parts.acting.stop();
      this.#parts.eventRecorder?.stop();
    })();
    return this.#stoppedActing;
  }

  /** Whether shutdown has begun (`/readyz` fails; responses close their connections). */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /**
   * Stops acting (see `stopActing`), then stops the loop (waiting for an in-flight reconcile),
   * then the source. Idempotent.
   */
  stop(): Promise<void> {
    this.#shuttingDown = true;
    this.#stopped ??= (async () => {
      await this.stopActing();
      try {
        await this.#loop.stop();
      } catch {
        // stop() before start() rejects: nothing was running, which is what stopping wants.
      }
      await this.#parts.workloadLoop?.stop().catch(() => {});
      await this.#parts.workloadSource?.close();
      await this.#parts.podSource.close();
    })();
    return this.#stopped;
  }

  // ----- ControlPlane reads -----

  now(): number {
    return this.#clock.now();
  }

  wallTime(clockMs: number): string {
    return new Date(this.#parts.wallClock() + (clockMs - this.#clock.now())).toISOString();
  }

  get synced(): boolean {
    return this.#loop.synced;
  }

  loopState(): ReconcileLoopState {
    return this.#loop.state();
  }

  storeParents(): ParentKey[] {
    return [...this.#loop.parentKeys()].sort();
  }

  get storeObjectCount(): number {
    return this.#loop.objectCount;
  }

  storeSnapshot({ objects }: { objects: boolean }): StoreSnapshot {
    return storeSnapshot(this.#storeViews, objects);
  }

  resolveCell(
    id: string,
    options: { namespace?: string | undefined; scope: CellScope },
  ): CellResolution {
    return resolveCell(this.#storeViews, id, options);
  }

  authorizeAdmin(
    authorization: string | undefined,
    remoteAddress: string | undefined,
    headers: AdminRequestHeaders,
  ): AdminDecision {
    return authorizeAdmin(this.#parts.admin.token, authorization, remoteAddress, {
      headers,
      allowedHosts: this.#parts.admin.allowedHosts,
    });
  }

  reflector(): PodSourceStats {
    return this.#parts.podSource.stats();
  }

  enqueue(parent: ParentKey): void {
    this.#loop.enqueue(parent);
  }

  leader(): LeadershipView {
    return this.#leadership.view();
  }

  coordinator(): CoordinatorView {
    const state = this.#routing.state();
    return {
      leading: this.#leadership.view().leading,
      acting: this.#routing.acting,
      cellsSynced: this.#parts.acting.cellsSynced,
      state,
      desired: this.#routing.desired(),
    };
  }

  sinks(): SinkTargetStatus[] {
    return this.#routing.sinkStatus();
  }

  sinkSettings(): SinkSettingsView {
    return {
      ...this.#parts.sinkSettings,
      panic: this.#routing.panicEntries(),
    };
  }

  eventStream(options: {
    types?: readonly string[];
    signal: AbortSignal;
    lastEventId?: string | undefined;
  }): Readable | undefined {
    return this.eventStreams.open(options);
  }

  eventReplayCursor(types: readonly string[], count: number): string {
    return this.eventStreams.history.replayCursor(new Set(types), count);
  }

  eventSequence(): number {
    return this.eventStreams.history.latest;
  }

  flags(): readonly EffectiveFlag[] {
    return this.#parts.flags;
  }

  get maxEventStreams(): number {
    return this.eventStreams.maxStreams;
  }

  /** Asks the routing controller for a run now (when this replica acts); for the control plane. */
  triggerRouting(reason: string): void {
    this.#routing.trigger(reason);
  }
}
