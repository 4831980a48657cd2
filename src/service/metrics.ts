/**
 * The service's Prometheus metrics, under controller-runtime's and client-go's workqueue and
 * informer (./informer-metrics.ts) names, labels and buckets, so dashboards and alerts written for any controller-runtime controller work
 * unchanged; plus the reflector's and the pools' own, and prom-client's process defaults.
 *
 * Counters and histograms are fed as things happen (through the runtime's `LoopInstrumentation`);
 * gauges that are a function of current state (queue depth, unfinished work, cells per pool) are
 * read at scrape time, so they can never drift from what the control plane shows.
 *
 * Size: every controller-runtime, workqueue, reflector and pool metric on one registry, each a few
 * lines; coordination metrics are their own file.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { DROP_REASONS, type PodSourceStats, RELIST_REASONS } from '../model/pod-source-stats.js';
import {
  CELL_TRANSITION_TYPES,
  type CellRegistry,
  type CellTransitionType,
} from '../pools/cell-registry.js';
import type { PoolView } from '../pools/pool-capacity.js';
import type { Clock } from '../runtime/clock.js';
import type { LoopInstrumentation, ReconcileResult } from '../runtime/instrumentation.js';
import type { ReconcileLoopState } from '../runtime/reconcile-loop.js';
import { buildInfo } from './build-info.js';
import { InformerMetrics } from './informer-metrics.js';
import { renderPoolFamilies } from './pool-metric-families.js';

/**
 * The `controller` (and workqueue `name`) label value. controller-runtime names a controller
 * after the kind it reconciles; ours reconciles cells.
 */
const CONTROLLER_NAME = 'cell';

/** controller-runtime's `result` label values, all pre-initialised to 0 as its `initMetrics` does. */
const RECONCILE_RESULTS = ['error', 'requeue_after', 'requeue', 'success'] as const;

/** controller-runtime's `controller_runtime_reconcile_time_seconds` buckets. */
export const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
  1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

/** client-go's workqueue buckets, `ExponentialBuckets(10e-9, 10, 12)`: 10 ns to 1000 s. */
const WORKQUEUE_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000];

/**
 * prom-client default gauges whose names end in `_total`, which the exposition format reserves for
 * counters (`promtool check metrics` reports each). Each is the sum of a per-type gauge that stays
 * (`nodejs_active_handles{type}`, `…_requests{type}`, `…_resources{type}`): `sum()` of it gives
 * the same number.
 */
export const DROPPED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;

/** What the scrape-time gauges read; bound once the service's pieces exist. */
interface MetricsBindings {
  loopState: () => ReconcileLoopState;
  storeObjects: () => number;
  reflector: () => PodSourceStats;
  /**
   * Pods waiting between the reflector and the store (`PodSource.queuedItems`); absent for a
   * source without such a buffer.
   */
  queuedItems?: (() => number) | undefined;
  cells: CellRegistry;
  sourceKind: string;
  /** Every pool with its capacity (pool-capacity.ts); without it no capacity series. */
  pools?: () => readonly PoolView[];
}

/**
 * What the service's metrics are built from; `controller` is the `controller` label of the
 * controller-runtime series (default the product name).
 */
interface ServiceMetricsOptions {
  /** The loop's clock: in-flight ages are computed on it. */
  clock: Clock;
  controller?: string;
  /**
   * prom-client's process and Node.js runtime metrics (the counterpart of controller-runtime's
   * process and Go collectors). Off in tests that build many services: they add event-loop monitors.
   */
  processMetrics?: boolean;
}

/**
 * The service's Prometheus registry with controller-runtime's and client-go's workqueue series
 * under their upstream names, so dashboards built for those work here. `instrumentation` is what
 * the loop is given; the scrape-time gauges read their bindings (`bind`), set once the loop and the
 * source exist.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly instrumentation: LoopInstrumentation;
  /** client-go's informer series; the pod source the loop reads goes through `informer.instrument`. */
  readonly informer: InformerMetrics;
  readonly #transitions: Counter<'transition'>;
  #bindings: MetricsBindings | undefined;

  constructor(options: ServiceMetricsOptions) {
    const { clock } = options;
    const controller = options.controller ?? CONTROLLER_NAME;
    const registers = [this.registry];
    const bound = (): MetricsBindings | undefined => this.#bindings;
    const queueLabels = { name: controller, controller };

    // controller-runtime: pkg/internal/controller/metrics
    const reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'] as const,
      registers,
    });
    for (const result of RECONCILE_RESULTS) reconcileTotal.inc({ controller, result }, 0);
    const reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'] as const,
      registers,
    });
    reconcileErrors.inc({ controller }, 0);
    const reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'] as const,
      buckets: RECONCILE_TIME_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'] as const,
      registers,
    }).set({ controller }, 1); // the loop runs exactly one worker
    new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'] as const,
      registers,
      collect() {
        this.set({ controller }, bound()?.loopState().inFlight ? 1 : 0);
      },
    });

    // client-go workqueue, as controller-runtime registers it (pkg/metrics/workqueue.go)
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name', 'controller'] as const,
      registers,
      collect() {
        this.set(queueLabels, bound()?.loopState().queued.length ?? 0);
      },
    });
    const adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name', 'controller'] as const,
      registers,
    });
    adds.inc(queueLabels, 0);
    const queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name', 'controller'] as const,
      buckets: WORKQUEUE_BUCKETS,
      registers,
    });
    const workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: ['name', 'controller'] as const,
      buckets: WORKQUEUE_BUCKETS,
      registers,
    });
    const inFlightSeconds = (): number => {
      const inFlight = bound()?.loopState().inFlight;
      return inFlight ? Math.max(0, clock.now() - inFlight.sinceMs) / 1000 : 0;
    };
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      labelNames: ['name', 'controller'] as const,
      registers,
      collect() {
        this.set(queueLabels, inFlightSeconds());
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: ['name', 'controller'] as const,
      registers,
      collect() {
        // One worker: the longest running processor is the only one.
        this.set(queueLabels, inFlightSeconds());
      },
    });
    const retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name', 'controller'] as const,
      registers,
    });
    retries.inc(queueLabels, 0);

    this.instrumentation = {
      queueAdded: () => adds.inc(queueLabels),
      queueTaken: (_key, waitedMs) => queueDuration.observe(queueLabels, waitedMs / 1000),
      retried: () => retries.inc(queueLabels),
      reconciled: (_key, result: ReconcileResult, durationMs) => {
        const seconds = durationMs / 1000;
        reconcileTotal.inc({ controller, result });
        if (result === 'error') reconcileErrors.inc({ controller });
        reconcileTime.observe({ controller }, seconds);
        workDuration.observe(queueLabels, seconds);
      },
    };

    // Prometheus' *_build_info convention: value 1, the build's facts as labels.
    const build = buildInfo();
    new Gauge({
      name: 'pool_controller_build_info',
      help: 'The running build: package version, source revision and Node.js version; always 1',
      labelNames: ['version', 'revision', 'node_version'] as const,
      registers,
    }).set(
      { version: build.version, revision: build.revision, node_version: build.nodeVersion },
      1,
    );

    this.informer = new InformerMetrics({ registry: this.registry, clock });
    this.#registerReflectorMetrics(bound);
    this.#transitions = this.#registerPoolMetrics(bound);
    if (options.processMetrics) {
      collectDefaultMetrics({ register: this.registry });
      for (const name of DROPPED_DEFAULT_METRICS) this.registry.removeSingleMetric(name);
    }
  }

  /** Connects the scrape-time gauges to the running service. */
  bind(bindings: MetricsBindings): void {
    this.#bindings = bindings;
    this.informer.bind({
      queuedItems: () => bindings.queuedItems?.(),
      cursor: () => bindings.reflector().cursor,
    });
  }

  /** Counts one logged cell transition. */
  cellTransition(type: CellTransitionType): void {
    this.#transitions.inc({ transition: type });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The exposition text, as prom-client's `registry.metrics()` writes it, one metric family at a
   * time with a turn of the event loop between them: at thousands of pools the per-pool families
   * are megabytes, and rendered in one go they held probes and every other request for a good
   * part of a second (issue 36).
   */
  async render(): Promise<string> {
    const families: string[] = [];
    for (const metric of this.registry.getMetricsAsArray()) {
      families.push(await this.registry.getSingleMetricAsString(metric.name));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    // The per-pool families, written without prom-client (./pool-metric-families.ts).
    families.push(...(await renderPoolFamilies(this.#bindings)));
    return `${families.join('\n\n')}\n`;
  }

  /**
   * The source's cumulative stats mirrored into counters at scrape time. The source owns the
   * counts (they live in the reflector's worker thread); a counter set to its current total is
   * what Prometheus' `rate()` needs.
   */
  #registerReflectorMetrics(bound: () => MetricsBindings | undefined): void {
    const registers = [this.registry];
    const stats = (): PodSourceStats | undefined => bound()?.reflector();
    /** A counter set to the source's current total at every scrape (0 before a source is bound). */
    const mirrored = (name: string, help: string, total: (s: PodSourceStats) => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          const current = stats();
          this.reset();
          this.inc(current ? total(current) : 0);
        },
      });
    };
    /** A gauge set to one reading of the source's stats at every scrape (0 before one is bound). */
    const sampled = (name: string, help: string, value: (s: PodSourceStats) => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const current = stats();
          this.set(current ? value(current) : 0);
        },
      });
    };
    mirrored(
      'pool_controller_reflector_lists_total',
      'Whole-world reads completed by the pod source (a LIST, or a watch-list whose initial events ended); each one published a replace.',
      (s) => s.lists,
    );
    new Counter({
      name: 'pool_controller_reflector_relists_total',
      help: 'Relists (LISTs decided after the first LIST completed), by reason: expired cursor, too-large cursor, malformed frame, ERROR frame, a failed relist LIST retried, regression (frames older than the cursor, again and again), other (reserved, 0).',
      labelNames: ['reason'] as const,
      registers,
      collect() {
        this.reset();
        const relists = stats()?.relists ?? {};
        // Every reason is a series from the start (0 until it happens), so a rate() or an
        // alert on it works before the first relist, as with controller_runtime_reconcile_total.
        for (const reason of RELIST_REASONS) this.inc({ reason }, relists[reason] ?? 0);
      },
    });
    mirrored(
      'pool_controller_reflector_watch_opens_total',
      'WATCH requests sent by the pod source, whether or not the server accepted them.',
      (s) => s.watchOpens,
    );
    new Counter({
      name: 'pool_controller_reflector_events_total',
      help: 'Watch frames received, by type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR; OTHER for an unknown type or a frame that is not JSON).',
      labelNames: ['type'] as const,
      registers,
      collect() {
        this.reset();
        for (const [type, count] of Object.entries(stats()?.events ?? {}))
          this.inc({ type }, count);
      },
    });
    new Counter({
      name: 'pool_controller_reflector_dropped_events_total',
      help: 'Watch frames and LIST items read but not applied, by reason: stale (a resourceVersion older than the cursor or than the pod copy already read, which would move the view back in time), out-of-scope (a LIST item or a change for a pod outside the watched namespace, or a pod listed or upserted that the label selector does not select).',
      labelNames: ['reason'] as const,
      registers,
      collect() {
        this.reset();
        const dropped = stats()?.droppedEvents ?? {};
        for (const reason of DROP_REASONS) this.inc({ reason }, dropped[reason] ?? 0);
      },
    });
    mirrored(
      'pool_controller_reflector_initial_events_timeouts_total',
      'Watch-lists whose k8s.io/initial-events-end bookmark did not come within the deadline (10 s after the last initial event); each fell back to LIST + WATCH.',
      (s) => s.initialEventsTimeouts,
    );
    mirrored(
      'pool_controller_reflector_stalled_watches_total',
      'WATCHes replaced because no whole frame came for two bookmark intervals (125 s) from an API server that sends bookmarks.',
      (s) => s.stalledWatches,
    );
    mirrored(
      'pool_controller_reflector_decoded_bytes_total',
      'Bytes of LIST and WATCH response bodies read, after gzip decompression.',
      (s) => s.bytesDecoded,
    );
    sampled(
      'pool_controller_reflector_last_sync_timestamp_seconds',
      'Unix time of the last completed LIST; 0 before the first.',
      (s) => (s.lastSyncAtMs ?? 0) / 1000,
    );
    sampled(
      'pool_controller_reflector_last_event_timestamp_seconds',
      'Unix time of the last watch event or LIST; 0 before the first.',
      (s) => (s.lastEventAtMs ?? 0) / 1000,
    );
    sampled(
      'pool_controller_reflector_healthy',
      '1 while the pod watch is healthy as PodSourceStats.healthy defines it (what /readyz checks): a WATCH that proved itself (a change or bookmark, open 1 s, or a watch-list whose initial events ended), or a synced source recovering for under 30 s; else 0.',
      (s) => (s.healthy ? 1 : 0),
    );
  }

  #registerPoolMetrics(bound: () => MetricsBindings | undefined): Counter<'transition'> {
    const registers = [this.registry];
    new Gauge({
      name: 'pool_controller_source_info',
      help: 'Always 1; the source label says where pods come from (kubernetes or simulated).',
      labelNames: ['source'] as const,
      registers,
      collect() {
        this.reset();
        const b = bound();
        if (b) this.set({ source: b.sourceKind }, 1);
      },
    });
    new Gauge({
      name: 'pool_controller_store_objects',
      help: 'Pods held in the store (observed, whether reconciled yet or not).',
      registers,
      collect() {
        this.set(bound()?.storeObjects() ?? 0);
      },
    });
    const transitions = new Counter({
      name: 'pool_controller_cell_transitions_total',
      help: 'Cell transitions logged by the reconcile (appeared, alive, not-alive, generation-changed, address-changed, routability-changed, gone).',
      labelNames: ['transition'] as const,
      registers,
    });
    for (const transition of CELL_TRANSITION_TYPES) transitions.inc({ transition }, 0);
    return transitions;
  }
}
