/**
 * The pool controller as one object: a pod source, the reconcile loop over it, the cell registry
 * the reconcile publishes to, the event bus, leadership and the leader-only routing controller
 * (coordinator + sinks), metrics and health checks. `main.ts` adds configuration, logging, the
 * HTTP server and signals; tests build it with a fake or simulated source and a fake clock.
 *
 * Every replica runs the loop and serves reads; only the leader's routing controller acts, and
 * only once the cells have synced (haptic's initial-sync gate: the initial list is applied and
 * every cell in it reconciled once). After that every cell change triggers it at once.
 *
 * Start and stop order: the HTTP server may answer before `start()` (liveness passes, readiness
 * says "not synced"); `start()` begins campaigning and the loop; `stop()` ends leadership first
 * (the routing controller stops, the Lease is released so a follower takes over in about one
 * retry period), then the loop (no reconcile runs against a closing source), then the source.
 *
 * Size: the wiring of every part and the ControlPlane's delegation to them; the logic it once held
 * (sync gate, health, watch states, store views) is in files of its own.
 */

import type { Readable } from 'node:stream';
import { DEFAULT_DRIFT_INTERVAL_MS } from '../coordination/coordinator.js';
import { EventBus } from '../coordination/event-bus.js';
import type { EventObjectReference } from '../kubernetes/resources/event-api.js';
import type { EventOccurrence } from '../kubernetes/resources/event-recorder.js';
import type { Pod } from '../model/pod.js';
import type { PodSource, SourceKind } from '../model/pod-source.js';
import type { PodSourceStats } from '../model/pod-source-stats.js';
import type { Workload, WorkloadApiStatus, WorkloadSource } from '../model/workload.js';
import { cellKeyMap } from '../pools/cell-key.js';
import { createCellReconciler } from '../pools/cell-reconciler.js';
import { type Cell, CellRegistry, type CellTransition } from '../pools/cell-registry.js';
import type { PoolLabels } from '../pools/labels.js';
import { type CapacityTransition, PoolCapacityTracker } from '../pools/pool-capacity.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { ReconcileLoop, type ReconcileLoopState } from '../runtime/reconcile-loop.js';
import type { ParentKey } from '../runtime/source-event.js';
import {
  DEFAULT_SINK_MODE,
  type Sink,
  type SinkEvent,
  type SinkMode,
  type SinkTargetStatus,
} from '../sinks/sink.js';
import { sinkBackoffMaxMs } from '../sinks/target-backoff.js';
import { type AdminDecision, type AdminRequestHeaders, authorizeAdmin } from './admin-auth.js';
import { type BuildInfo, buildInfo } from './build-info.js';
import { CellBodies } from './cell-bodies.js';
import { CellHealthMetrics, type EventDropCause } from './cell-health-metrics.js';
import type {
  CellResolution,
  CellScope,
  ControlPlane,
  CoordinatorView,
  EffectiveFlag,
  SinkSettingsView,
  StoreSnapshot,
} from './control-plane.js';
import { CoordinationMetrics, type SinkOperationCount } from './coordination-metrics.js';
import { EventStreams } from './event-stream.js';
import type { HealthEndpoint } from './health.js';
import { InitialSyncGate } from './initial-sync-gate.js';
import { KubernetesEvents } from './kubernetes-events.js';
import {
  type Leadership,
  type LeadershipHooks,
  type LeadershipView,
  leaderIdentity,
  SoleLeadership,
} from './leadership.js';
import { ServiceMetrics } from './metrics.js';
import { RoutingController } from './routing-controller.js';
import {
  cellChangedEvent,
  MAX_NAMED_CAPACITY_CELLS,
  type PoolCapacityEvent,
  type ServiceEvent,
} from './service-events.js';
import { createServiceHealth } from './service-health.js';
import { resolveCell, type StoreViewSources, storeSnapshot } from './store-views.js';
import { publishWatchStates, WATCH_STATE_POLL_MS } from './watch-state-publisher.js';

/**
 * What the service is built from: the parsed flags in the shape the domain needs, plus the parts
 * main chooses (the pod source, the leadership, the sinks) as factories, so tests build the same
 * service with a simulated source and fake sinks. Every optional field defaults to what the flag's
 * default means.
 */
export interface PoolServiceOptions {
  podSource: PodSource;
  sourceKind: SourceKind;
  labels: PoolLabels;
  portName: string;
  /**
   * Loopback cell addresses are routable (`--sink-allow-loopback`): engines and routers on one
   * host. Default false: a pod status naming loopback is never routed to.
   */
  sinkAllowLoopback?: boolean | undefined;
  /**
   * Pools a router takes as prefill workers (`--sglang-router POOL=URL,role=prefill`): their cells
   * need a bootstrap port in `bootstrapPortAnnotation` to be routable.
   */
  prefillPools?: ReadonlySet<string> | undefined;
  /** `--sglang-bootstrap-port-annotation`; needed with `prefillPools`. */
  bootstrapPortAnnotation?: string | undefined;
  /**
   * The cell readiness gate's condition type when `--cell-readiness-gate` is on: pods naming it
   * in `spec.readinessGates` are judged without their own `Ready` (cell-state.ts,
   * `countsAsReady`). `undefined`: the gate is off.
   */
  readinessGate?: string | undefined;
  /** `null` turns resync off; `undefined` keeps the loop's default (10 h). */
  resyncPeriodMs?: number | null | undefined;
  adminToken?: string | undefined;
  /**
   * Host names, besides loopback ones, a POST may name in its `Host` header in loopback-only mode
   * (no `adminToken`): for a port-forward reached under another name.
   */
  adminAllowedHosts?: readonly string[] | undefined;
  clock?: Clock | undefined;
  /** Epoch ms for the cells' `lastTransitionTime`, events' `time` and the API's RFC 3339 times. */
  wallClock?: (() => number) | undefined;
  logger?: Logger | undefined;
  /** prom-client's process metrics; main turns them on, tests leave them off. */
  processMetrics?: boolean | undefined;
  /**
   * Who acts. Default: this process alone, with no Lease (what the simulated source and
   * `--leader-elect=false` use).
   */
  leadership?: ((hooks: LeadershipHooks) => Leadership) | undefined;
  /** The routing controller's deploy targets; default none (deploy logs the desired state). */
  sinks?: ((wiring: SinkWiring) => Sink[]) | undefined;
  /** Time between drift runs; `null` none; default the coordinator's (60 s). */
  driftIntervalMs?: number | null | undefined;
  /** `--sink-mode`; handed to every sink through `SinkWiring`. Default `apply`. */
  sinkMode?: SinkMode | undefined;
  /** `--sink-panic-threshold` (0–100); default 0, no panic. */
  sinkPanicThresholdPercent?: number | undefined;
  /** How often the source's stats are compared for `watch.state` events; default 1 s. */
  watchStatePollMs?: number | undefined;
  /** Open event streams at most; default `DEFAULT_MAX_EVENT_STREAMS` (256). */
  maxEventStreams?: number | undefined;
  /** The effective flags `GET /flagz` shows (main passes the parsed configuration's); default none. */
  flags?: readonly EffectiveFlag[] | undefined;
  /**
   * Kubernetes Events (`--events`): the recorder, built with the service's counters. Default none.
   */
  kubernetesEvents?: ((hooks: KubernetesEventHooks) => KubernetesEventRecorder) | undefined;
  /** The controller's own pod, which sink Events are about; `undefined`: no sink Events. */
  selfPod?: EventObjectReference | undefined;
  /**
   * The pools' workloads (`--watch-leaderworkersets`): built with the hook that hears its API's
   * status, and run by a reconcile loop of its own. Default none: every pool's capacity is
   * `Unknown`, for `workloadsOffReason`.
   */
  workloads?: ((hooks: WorkloadHooks) => WorkloadSource) | undefined;
  /** Why there is no workload source, for every pool's `capacityReason`; has a default. */
  workloadsOffReason?: string | undefined;
}

/** What a workload source tells the service: each change of its API's status. */
export interface WorkloadHooks {
  onStatus: (status: WorkloadApiStatus) => void;
}

/** The workload API's status without a workload source, unless `workloadsOffReason` says why. */
export const DEFAULT_WORKLOADS_OFF_REASON =
  'no workload source: the pool is judged by its cells alone';

/** Where a Kubernetes Event recorder counts what it wrote and what it dropped. */
export interface KubernetesEventHooks {
  onEmitted: (reason: string) => void;
  onDropped: (cause: EventDropCause) => void;
}

/** What the service needs of a Kubernetes Event recorder (`EventRecorder`). */
export interface KubernetesEventRecorder {
  record(occurrence: EventOccurrence): void;
  stop(): void;
}

/** What the service hands a sink it builds: where its events and operation counts go. */
export interface SinkWiring {
  publish: (event: SinkEvent) => void;
  onOperation: (record: SinkOperationCount) => void;
  /**
   * The longest per-target backoff: one minute, never longer than the drift interval
   * (`sinkBackoffMaxMs`), so a target that came back waits no longer than a drift run would.
   */
  backoffMaxMs: number;
  /** The service's clock, which the sinks' backoff must share with the routing controller. */
  clock: Clock;
  /** `--sink-mode`: every sink must be built in it (observe: never write). */
  mode: SinkMode;
  /** The published cells now (the readiness gate reads their why-not). */
  cells: () => Iterable<Cell>;
  /** A cell's member pods as the store holds them now (the readiness gate reads their status). */
  pods: (key: ParentKey) => readonly Pod[];
  /** Where the readiness gate counts its condition writes. */
  onConditionWrite?: (record: { status: string; result: 'success' | 'error' }) => void;
}

/** The poll of the source's stats for `watch.state` events (watch-state-publisher.ts). */
export { WATCH_STATE_POLL_MS };

/**
 * The running service: the wiring of source, loop, registry, leadership and routing, and the
 * `ControlPlane` the HTTP routes read. Lifecycle, as main sequences it: `start()`; on SIGTERM
 * `beginShutdown()` (readiness fails), `closeEventStreams()`, `stopActing()` (the Lease is
 * released while reads are still served), then `stop()` once the listeners have closed.
 */
export class PoolService implements ControlPlane {
  readonly sourceKind: SourceKind;
  readonly buildInfo: BuildInfo = buildInfo();
  readonly labels: PoolLabels;
  /** The reconciled cells, written by the per-cell reconcile; read by the coordinator's render. */
  readonly registry: CellRegistry;
  /** Each pool against its workload (pool-capacity.ts), fed by both loops. */
  readonly capacity: PoolCapacityTracker;
  readonly cells: CellBodies;
  readonly metrics: ServiceMetrics;
  readonly coordinationMetrics: CoordinationMetrics;
  /** Readiness gate writes and Kubernetes Events. */
  readonly cellHealthMetrics: CellHealthMetrics;
  readonly health: { healthz: HealthEndpoint; readyz: HealthEndpoint };
  /** Everything the service publishes; `GET /api/v1/events` streams it. */
  readonly bus: EventBus<ServiceEvent>;
  /** The open `GET /api/v1/events` streams, bounded in number and bytes. */
  readonly eventStreams: EventStreams;
  readonly #leadership: Leadership;
  readonly #routing: RoutingController;
  readonly #lifetime = new AbortController();
  /** Opens once every cell of the initial list was reconciled once (initial-sync-gate.ts). */
  readonly #syncGate = new InitialSyncGate(() => this.#markCellsSynced());
  /** What the store views read (store-views.ts). */
  readonly #storeViews: StoreViewSources;
  #leadingTerm: AbortSignal | undefined;
  #background: Promise<unknown>[] = [];
  /** `undefined`: POSTs are for loopback clients only. Never leaves this object. */
  readonly #adminToken: string | undefined;
  readonly #adminAllowedHosts: ReadonlySet<string>;
  readonly #podSource: PodSource;
  readonly #loop: ReconcileLoop<Pod>;
  readonly #workloadSource: WorkloadSource | undefined;
  /** The workloads' own loop, keyed `namespace/name` (the pool's key); none without a source. */
  readonly #workloadLoop: ReconcileLoop<Workload> | undefined;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #sinkMode: SinkMode;
  readonly #panicThresholdPercent: number;
  readonly #eventRecorder: KubernetesEventRecorder | undefined;
  readonly #kubernetesEvents: KubernetesEvents | undefined;
  readonly #wallClock: () => number;
  #shuttingDown = false;
  #stopped: Promise<void> | undefined;
  #stoppedActing: Promise<void> | undefined;

  readonly #flags: readonly EffectiveFlag[];

  constructor(options: PoolServiceOptions) {
    this.sourceKind = options.sourceKind;
    this.#flags = options.flags ?? [];
    this.labels = options.labels;
    this.#adminToken = options.adminToken;
    this.#adminAllowedHosts = new Set(options.adminAllowedHosts?.map((h) => h.toLowerCase()));
    this.#podSource = options.podSource;
    this.#clock = options.clock ?? realClock;
    this.#wallClock = options.wallClock ?? Date.now;
    const logger = options.logger ?? silentLogger;
    this.#logger = logger;
    this.registry = new CellRegistry({ wallClock: options.wallClock });
    this.#workloadSource = options.workloads?.({
      onStatus: () => this.#capacityTransitions(this.capacity.workloadStatusChanged()),
    });
    const workloadsOff: WorkloadApiStatus = {
      state: 'disabled',
      message: options.workloadsOffReason ?? DEFAULT_WORKLOADS_OFF_REASON,
    };
    this.capacity = new PoolCapacityTracker({
      wallClock: options.wallClock,
      workloadStatus: () => this.#workloadSource?.status() ?? workloadsOff,
    });
    this.cells = new CellBodies(this.registry, { source: options.sourceKind }, this.capacity);
    this.metrics = new ServiceMetrics({
      clock: this.#clock,
      processMetrics: options.processMetrics ?? false,
    });
    this.coordinationMetrics = new CoordinationMetrics(this.metrics.registry);
    this.cellHealthMetrics = new CellHealthMetrics(this.metrics.registry);
    this.bus = new EventBus<ServiceEvent>({ logger });
    this.eventStreams = new EventStreams({
      bus: this.bus,
      clock: this.#clock,
      wallClock: this.#wallClock,
      ...(options.maxEventStreams !== undefined ? { maxStreams: options.maxEventStreams } : {}),
      onDropped: (count) => this.coordinationMetrics.dropped('sse', count),
    });
    this.#watchStatePollMs = options.watchStatePollMs ?? WATCH_STATE_POLL_MS;
    const publish = (event: ServiceEvent): void => this.#publish(event);
    this.#sinkMode = options.sinkMode ?? DEFAULT_SINK_MODE;
    this.#panicThresholdPercent = options.sinkPanicThresholdPercent ?? 0;
    const driftIntervalMs =
      options.driftIntervalMs === undefined ? DEFAULT_DRIFT_INTERVAL_MS : options.driftIntervalMs;
    const sinks =
      options.sinks?.({
        publish,
        onOperation: (record) => this.coordinationMetrics.sinkOperation(record),
        backoffMaxMs: sinkBackoffMaxMs(driftIntervalMs),
        clock: this.#clock,
        mode: this.#sinkMode,
        cells: () => this.registry.list(),
        pods: (key) => this.#loop.getByParent(key),
        onConditionWrite: (record) => this.cellHealthMetrics.gateWrite(record),
      }) ?? [];
    this.#routing = new RoutingController({
      cells: () => this.registry.list(),
      synced: () => this.#syncGate.synced,
      sinks,
      publish,
      driftIntervalMs,
      panicThresholdPercent: this.#panicThresholdPercent,
      clock: this.#clock,
      logger,
    });
    this.#eventRecorder = options.kubernetesEvents?.({
      onEmitted: (reason) => this.cellHealthMetrics.eventEmitted(reason),
      onDropped: (cause) => this.cellHealthMetrics.eventDropped(cause),
    });
    const recorder = this.#eventRecorder;
    this.#kubernetesEvents = recorder
      ? new KubernetesEvents({
          record: (occurrence) => recorder.record(occurrence),
          self: options.selfPod,
          acting: () => this.#routing.acting,
        })
      : undefined;
    const hooks: LeadershipHooks = {
      onStartedLeading: (term) => this.#startedLeading(term),
      onStoppedLeading: () => this.#stoppedLeading(),
      onNewLeader: (identity) => this.#publish({ type: 'leader.changed', identity }),
    };
    this.#leadership =
      options.leadership?.(hooks) ??
      new SoleLeadership({
        identity: leaderIdentity(),
        reason: 'no Lease configured',
        hooks,
        logger,
      });
    this.coordinationMetrics.bind({
      leaseName: this.#leadership.view().lease ?? 'pool-controller',
      subscribers: () => this.bus.subscriberCount + this.eventStreams.count,
      sinkStatus: () => this.#routing.sinkStatus(),
      panicPools: () => this.#routing.panicPools(),
    });
    const reconcileCell = createCellReconciler({
      labels: options.labels,
      portName: options.portName,
      allowLoopback: options.sinkAllowLoopback ?? false,
      prefillPools: options.prefillPools,
      bootstrapPortAnnotation: options.bootstrapPortAnnotation,
      readinessGate: options.readinessGate,
      members: (key) => this.#loop.getByParent(key),
      registry: this.registry,
      logger,
      onTransition: (t) => this.#cellTransition(t),
    });
    this.#loop = new ReconcileLoop<Pod>({
      source: this.metrics.informer.instrument(
        options.podSource.source,
        (pod) => pod.metadata.resourceVersion,
      ),
      keyMap: cellKeyMap(options.labels),
      reconcile: async (key, signal) => {
        try {
          await reconcileCell(key, signal);
        } finally {
          this.#syncGate.reconciled(key);
        }
      },
      ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
      clock: this.#clock,
      logger,
      instrumentation: this.metrics.instrumentation,
    });
    const workloadSource = this.#workloadSource;
    this.#workloadLoop = workloadSource
      ? new ReconcileLoop<Workload>({
          source: workloadSource.source,
          keyMap: (workload) => `${workload.namespace}/${workload.name}`,
          reconcile: async (key) => {
            const [workload] = this.#workloadLoop?.getByParent(key) ?? [];
            this.#capacityTransitions(this.capacity.setWorkload(key, workload));
          },
          ...(options.resyncPeriodMs !== undefined
            ? { resyncPeriodMs: options.resyncPeriodMs }
            : {}),
          clock: this.#clock,
          logger,
        })
      : undefined;
    this.#storeViews = {
      sourceKind: options.sourceKind,
      labels: options.labels,
      readinessGate: options.readinessGate,
      registry: this.registry,
      synced: () => this.synced,
      objectCount: () => this.#loop.objectCount,
      parents: () => this.storeParents(),
      pods: (key) => this.#loop.getByParent(key),
    };
    this.metrics.bind({
      loopState: () => this.#loop.state(),
      storeObjects: () => this.#loop.objectCount,
      reflector: () => this.#podSource.stats(),
      queuedItems: options.podSource.queuedItems?.bind(options.podSource),
      cells: this.registry,
      sourceKind: options.sourceKind,
      pools: () => this.cells.pools(),
    });
    this.health = createServiceHealth({
      leadershipHealthy: () => this.#leadership.healthy(),
      storeSynced: () => this.#loop.synced,
      podSourceStats: () => this.#podSource.stats(),
      shuttingDown: () => this.#shuttingDown,
      logger,
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
          stats: () => this.#podSource.stats(),
          publish: (event) => this.#publish(event),
          clock: this.#clock,
          pollMs: this.#watchStatePollMs,
        },
        this.#lifetime.signal,
      ),
    );
    const workloadLoop = this.#workloadLoop;
    if (workloadLoop) {
      // Not awaited: pools are served (as `Unknown`) while the workload API is slow or absent.
      this.#background.push(
        workloadLoop.start(this.#lifetime.signal).catch((err: unknown) => {
          if (!this.#lifetime.signal.aborted) {
            this.#logger.error({ err }, 'the workload loop failed to start');
          }
        }),
      );
    }
    await this.#loop.start(signal);
    this.#syncGate.listed(this.#loop.parentKeys());
  }

  /** Whether the initial list is applied and every cell in it was reconciled once. */
  get cellsSynced(): boolean {
    return this.#syncGate.synced;
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
      await this.#routing.stop();
      this.#eventRecorder?.stop();
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
      await this.#workloadLoop?.stop().catch(() => {});
      await this.#workloadSource?.close();
      await this.#podSource.close();
    })();
    return this.#stopped;
  }

  // ----- ControlPlane reads -----

  now(): number {
    return this.#clock.now();
  }

  wallTime(clockMs: number): string {
    return new Date(this.#wallClock() + (clockMs - this.#clock.now())).toISOString();
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
    return authorizeAdmin(this.#adminToken, authorization, remoteAddress, {
      headers,
      allowedHosts: this.#adminAllowedHosts,
    });
  }

  reflector(): PodSourceStats {
    return this.#podSource.stats();
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
      cellsSynced: this.#syncGate.synced,
      state,
      desired: this.#routing.desired(),
    };
  }

  sinks(): SinkTargetStatus[] {
    return this.#routing.sinkStatus();
  }

  sinkSettings(): SinkSettingsView {
    return {
      mode: this.#sinkMode,
      panicThresholdPercent: this.#panicThresholdPercent,
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
    return this.#flags;
  }

  get maxEventStreams(): number {
    return this.eventStreams.maxStreams;
  }

  /** Asks the routing controller for a run now (when this replica acts); for the control plane. */
  triggerRouting(reason: string): void {
    this.#routing.trigger(reason);
  }

  // ----- internals -----

  readonly #watchStatePollMs: number;

  #publish(event: ServiceEvent): void {
    this.coordinationMetrics.observe(event);
    this.bus.publish(event);
    if (event.type === 'reconciliation.completed' || event.type === 'reconciliation.failed') {
      this.#kubernetesEvents?.sinksApplied(this.#routing.sinkStatus());
    }
    if (event.type === 'pool.panic') this.#kubernetesEvents?.poolPanic(event);
  }

  /**
   * Capacity changes after a pool's first judgement: a log line, a `pool.capacity` event naming
   * the missing and not-alive cells, and (leader only) a Kubernetes Event on the LWS.
   */
  #capacityTransitions(transitions: readonly CapacityTransition[]): void {
    for (const t of transitions) {
      if (t.from === null) continue;
      const view = this.cells.pools().find((p) => p.namespace === t.namespace && p.name === t.pool);
      const notAlive = this.registry
        .list({ namespace: t.namespace, pool: t.pool, alive: false })
        .map((cell) => cell.id);
      const missing = view?.missingCells ?? [];
      const event: PoolCapacityEvent = {
        type: 'pool.capacity',
        namespace: t.namespace,
        pool: t.pool,
        from: t.from,
        to: t.to,
        aliveCells: t.aliveCells,
        desiredCells: t.desiredCells,
        missingCells: missing.slice(0, MAX_NAMED_CAPACITY_CELLS),
        missingCount: missing.length,
        notAliveCells: notAlive.slice(0, MAX_NAMED_CAPACITY_CELLS),
        notAliveCount: notAlive.length,
        reason: t.reason,
      };
      this.#publish(event);
      this.#kubernetesEvents?.poolCapacity(
        event,
        this.capacity.workload(t.namespace, t.pool)?.uid ?? null,
      );
      this.#logger.info(
        {
          pool: `${t.namespace}/${t.pool}`,
          from: t.from,
          to: t.to,
          aliveCells: t.aliveCells,
          desiredCells: t.desiredCells,
        },
        `pool ${t.namespace}/${t.pool} capacity ${t.from} → ${t.to}: ${t.reason}`,
      );
    }
  }

  #cellTransition(transition: CellTransition): void {
    this.#capacityTransitions(this.capacity.cellTransition(transition));
    this.metrics.cellTransition(transition.type);
    const event = cellChangedEvent(transition);
    this.#publish(event);
    this.#kubernetesEvents?.cellTransition(transition);
    // The initial-sync gate: before it, the first run after sync covers every change.
    if (this.#syncGate.synced) {
      this.#routing.triggerForCell(`cell ${event.namespace}/${event.cell} ${transition.type}`);
    }
  }

  #markCellsSynced(): void {
    this.#publish({
      type: 'store.synced',
      objects: this.#loop.objectCount,
      cells: this.registry.size,
    });
    if (this.#leadingTerm && !this.#leadingTerm.aborted) this.#routing.start();
  }

  #startedLeading(term: AbortSignal): void {
    this.#leadingTerm = term;
    this.coordinationMetrics.leading(true);
    this.#publish({ type: 'leadership.acquired', identity: this.#leadership.identity });
    if (this.#syncGate.synced) this.#routing.start();
  }

  #stoppedLeading(): void {
    this.#leadingTerm = undefined;
    this.coordinationMetrics.leading(false);
    this.#publish({ type: 'leadership.lost', identity: this.#leadership.identity });
    // Not awaited: the pipeline's signal aborts now; stop() settles it in the background.
    // Kept only while it runs, so a flapping Lease never grows the list.
    const stopping = this.#routing.stop();
    this.#background.push(stopping);
    const forget = (): void => {
      this.#background = this.#background.filter((p) => p !== stopping);
    };
    stopping.then(forget, forget);
  }
}
