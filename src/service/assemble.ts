/**
 * The composition root: every part of the service built once, in the order each needs the ones
 * before it, and handed finished to `PoolService`. Metrics first (everything counts into them),
 * then the bus and its event streams, the cell registry, the pod loop (the store the sinks and the
 * views read), the workload source and the pools' capacity, the sinks and the routing controller
 * over them, Kubernetes Events, the fan-out of every change, the acting term, leadership, and last
 * the service. `main.ts` passes what the flags chose (the pod source, the factories of the
 * Kubernetes-side parts); tests call this same function with fakes in those options.
 *
 * What reacts to a producer built earlier is added as a handler of `ServiceHandlers` before
 * `start()` (client-go's `AddEventHandler`), so nothing closes over a part built later. The one
 * reference back is a loop's reconcile reading its own loop's store, which the runtime's contract
 * defines (RUNTIME.md: a reconcile re-derives everything from `getByParent(key)`); it runs only
 * after `start()`.
 */
import { DEFAULT_DRIFT_INTERVAL_MS } from '../coordination/coordinator.js';
import { EventBus } from '../coordination/event-bus.js';
import type { EventObjectReference } from '../kubernetes/resources/event-api.js';
import type { EventOccurrence } from '../kubernetes/resources/event-recorder.js';
import type { Pod } from '../model/pod.js';
import type { PodSource, SourceKind } from '../model/pod-source.js';
import type { Workload, WorkloadApiStatus, WorkloadSource } from '../model/workload.js';
import { cellKeyMap } from '../pools/cell-key.js';
import { createCellReconciler } from '../pools/cell-reconciler.js';
import { type Cell, CellRegistry } from '../pools/cell-registry.js';
import type { PoolLabels } from '../pools/labels.js';
import { PoolCapacityTracker } from '../pools/pool-capacity.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { ReconcileLoop } from '../runtime/reconcile-loop.js';
import type { ParentKey } from '../runtime/source-event.js';
import { DEFAULT_SINK_MODE, type Sink, type SinkEvent, type SinkMode } from '../sinks/sink.js';
import { sinkBackoffMaxMs } from '../sinks/target-backoff.js';
import { ActingTerm } from './acting-term.js';
import { CellBodies } from './cell-bodies.js';
import { CellHealthMetrics, type EventDropCause } from './cell-health-metrics.js';
import { ChangeFanOut } from './change-fan-out.js';
import type { EffectiveFlag } from './control-plane.js';
import { CoordinationMetrics, type SinkOperationCount } from './coordination-metrics.js';
import { EventStreams } from './event-stream.js';
import { InitialSyncGate } from './initial-sync-gate.js';
import { KubernetesEvents } from './kubernetes-events.js';
import {
  type Leadership,
  type LeadershipHooks,
  leaderIdentity,
  SoleLeadership,
} from './leadership.js';
import { ServiceMetrics } from './metrics.js';
import { PoolService } from './pool-service.js';
import { RoutingController } from './routing-controller.js';
import type { ServiceEvent } from './service-events.js';
import { ServiceHandlers } from './service-handlers.js';
import { WATCH_STATE_POLL_MS } from './watch-state-publisher.js';

/**
 * What the service is built from: the parsed flags in the shape the domain needs, plus the parts
 * main chooses (the pod source; the leadership, sinks, Event recorder and workload source as
 * factories handed the finished parts they need), so tests build the same service with a driven
 * source and fakes. Every optional field defaults to what the flag's default means.
 */
export interface AssembleOptions {
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
interface WorkloadHooks {
  onStatus: (status: WorkloadApiStatus) => void;
}

/** The workload API's status without a workload source, unless `workloadsOffReason` says why. */
export const DEFAULT_WORKLOADS_OFF_REASON =
  'no workload source: the pool is judged by its cells alone';

/** Where a Kubernetes Event recorder counts what it wrote and what it dropped. */
interface KubernetesEventHooks {
  onEmitted: (reason: string) => void;
  onDropped: (cause: EventDropCause) => void;
}

/** What the service needs of a Kubernetes Event recorder (`EventRecorder`). */
export interface KubernetesEventRecorder {
  record(occurrence: EventOccurrence): void;
  stop(): void;
}

/** What the assembly hands a sink it builds: finished parts, and where its events and counts go. */
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

/** Builds the service's parts in order and returns the service, not started. */
export function assembleService(options: AssembleOptions): PoolService {
  const clock = options.clock ?? realClock;
  const wallClock = options.wallClock ?? Date.now;
  const logger = options.logger ?? silentLogger;
  const resync =
    options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {};
  const sinkMode = options.sinkMode ?? DEFAULT_SINK_MODE;
  const panicThresholdPercent = options.sinkPanicThresholdPercent ?? 0;
  const driftIntervalMs =
    options.driftIntervalMs === undefined ? DEFAULT_DRIFT_INTERVAL_MS : options.driftIntervalMs;

  // Metrics, then the bus: every later part counts into the one and publishes on the other.
  const metrics = new ServiceMetrics({ clock, processMetrics: options.processMetrics ?? false });
  const coordinationMetrics = new CoordinationMetrics(metrics.registry);
  const cellHealthMetrics = new CellHealthMetrics(metrics.registry);
  const bus = new EventBus<ServiceEvent>({ logger });
  const eventStreams = new EventStreams({
    bus,
    clock,
    wallClock,
    ...(options.maxEventStreams !== undefined ? { maxStreams: options.maxEventStreams } : {}),
    onDropped: (count) => coordinationMetrics.dropped('sse', count),
  });
  const handlers = new ServiceHandlers();
  const publish = (event: ServiceEvent): void => {
    coordinationMetrics.observe(event);
    bus.publish(event);
    handlers.published(event);
  };

  // The cells and the pod loop that reconciles them: the store everything after reads.
  const registry = new CellRegistry({ wallClock: options.wallClock });
  const reconcileCell = createCellReconciler({
    labels: options.labels,
    portName: options.portName,
    allowLoopback: options.sinkAllowLoopback ?? false,
    prefillPools: options.prefillPools,
    bootstrapPortAnnotation: options.bootstrapPortAnnotation,
    readinessGate: options.readinessGate,
    members: (key) => loop.getByParent(key),
    registry,
    logger,
    onTransition: (transition) => handlers.cellTransition(transition),
  });
  const loop: ReconcileLoop<Pod> = new ReconcileLoop<Pod>({
    source: metrics.informer.instrument(
      options.podSource.source,
      (pod) => pod.metadata.resourceVersion,
    ),
    keyMap: cellKeyMap(options.labels),
    reconcile: async (key, signal) => {
      try {
        await reconcileCell(key, signal);
      } finally {
        handlers.cellReconciled(key);
      }
    },
    ...resync,
    clock,
    logger,
    instrumentation: metrics.instrumentation,
  });

  // The pools' workloads and capacity.
  const workloadSource = options.workloads?.({
    onStatus: () => handlers.workloadStatusChanged(),
  });
  const workloadsOff: WorkloadApiStatus = {
    state: 'disabled',
    message: options.workloadsOffReason ?? DEFAULT_WORKLOADS_OFF_REASON,
  };
  const capacity = new PoolCapacityTracker({
    wallClock: options.wallClock,
    workloadStatus: workloadSource ? () => workloadSource.status() : () => workloadsOff,
  });
  const cells = new CellBodies(registry, { source: options.sourceKind }, capacity);

  // The sinks, and the routing controller that deploys to them once this replica acts.
  const sinks =
    options.sinks?.({
      publish,
      onOperation: (record) => coordinationMetrics.sinkOperation(record),
      backoffMaxMs: sinkBackoffMaxMs(driftIntervalMs),
      clock,
      mode: sinkMode,
      cells: () => registry.list(),
      pods: (key) => loop.getByParent(key),
      onConditionWrite: (record) => cellHealthMetrics.gateWrite(record),
    }) ?? [];
  const gate = new InitialSyncGate();
  const routing = new RoutingController({
    cells: () => registry.list(),
    synced: () => gate.synced,
    sinks,
    publish,
    driftIntervalMs,
    panicThresholdPercent,
    clock,
    logger,
  });

  // Kubernetes Events, leader only, and what each change fans out to.
  const eventRecorder = options.kubernetesEvents?.({
    onEmitted: (reason) => cellHealthMetrics.eventEmitted(reason),
    onDropped: (cause) => cellHealthMetrics.eventDropped(cause),
  });
  const kubernetesEvents = eventRecorder
    ? new KubernetesEvents({
        record: (occurrence) => eventRecorder.record(occurrence),
        self: options.selfPod,
        acting: () => routing.acting,
      })
    : undefined;
  const fanOut = new ChangeFanOut({
    capacity,
    cells,
    registry,
    metrics,
    publish,
    kubernetesEvents,
    gate,
    routing,
    logger,
  });
  handlers.add(fanOut);
  const workloadLoop: ReconcileLoop<Workload> | undefined = workloadSource
    ? new ReconcileLoop<Workload>({
        source: workloadSource.source,
        keyMap: (workload) => `${workload.namespace}/${workload.name}`,
        reconcile: async (key) => {
          const [workload] = workloadLoop?.getByParent(key) ?? [];
          fanOut.workloadChanged(key, workload);
        },
        ...resync,
        clock,
        logger,
      })
    : undefined;

  // Who acts, and when: leadership's hooks and the sync gate both go to the acting term.
  const acting = new ActingTerm({
    gate,
    routing,
    publish,
    metrics: coordinationMetrics,
    store: loop,
    registry,
  });
  handlers.add(acting);
  const leadership =
    options.leadership?.(acting) ??
    new SoleLeadership({
      identity: leaderIdentity(),
      reason: 'no Lease configured',
      hooks: acting,
      logger,
    });

  metrics.bind({
    loopState: () => loop.state(),
    storeObjects: () => loop.objectCount,
    reflector: () => options.podSource.stats(),
    queuedItems: options.podSource.queuedItems?.bind(options.podSource),
    cells: registry,
    sourceKind: options.sourceKind,
    pools: () => cells.pools(),
  });
  coordinationMetrics.bind({
    leaseName: leadership.view().lease ?? 'pool-controller',
    subscribers: () => bus.subscriberCount + eventStreams.count,
    sinkStatus: () => routing.sinkStatus(),
    panicPools: () => routing.panicPools(),
  });

  return new PoolService({
    sourceKind: options.sourceKind,
    labels: options.labels,
    readinessGate: options.readinessGate,
    podSource: options.podSource,
    loop,
    workloadSource,
    workloadLoop,
    registry,
    cells,
    metrics,
    bus,
    eventStreams,
    publish,
    routing,
    acting,
    leadership,
    eventRecorder,
    admin: {
      token: options.adminToken,
      allowedHosts: new Set(options.adminAllowedHosts?.map((h) => h.toLowerCase())),
    },
    sinkSettings: { mode: sinkMode, panicThresholdPercent },
    flags: options.flags ?? [],
    watchStatePollMs: options.watchStatePollMs ?? WATCH_STATE_POLL_MS,
    clock,
    wallClock,
    logger,
  });
}
