/**
 * Metrics of the acting half: leadership (client-go's `leader_election_master_status`), the
 * coordinator's reconciliations and phases, the event bus, and the sinks. Registered on the
 * service's registry beside the controller-runtime and reflector metrics.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SinkTargetStatus } from '../sinks/sink.js';
import type { ServiceEvent } from './service-events.js';

/**
 * Seconds; a reconciliation is render + validate + deploy, from milliseconds (nothing to change)
 * to tens of seconds (a router that answers slowly, with its timeouts).
 */
const RECONCILIATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const RESULTS = ['success', 'failure', 'aborted'] as const;

/** One sink call, counted by `pool_controller_sink_operations_total`. */
export interface SinkOperationCount {
  sink: string;
  target: string;
  operation: string;
  result: 'success' | 'error';
}

/**
 * What the scrape-time gauges read; bound by the service once its leadership, bus and sinks exist,
 * since the metrics are registered before them.
 */
interface CoordinationMetricsBindings {
  leaseName: string;
  subscribers: () => number;
  sinkStatus: () => SinkTargetStatus[];
  /** Every pool of the leader's last deploy and whether it is in panic; none on a follower. */
  panicPools?: () => Array<{ namespace: string; pool: string; inPanic: boolean }>;
}

function targetKey(sink: string, target: string): string {
  return `${sink}\u0000${target}`;
}

/**
 * The acting half's Prometheus series. Counters are fed as events happen (`observe` with each bus
 * event, `sinkOperation` per call); gauges read their bindings at scrape time. Every series with a
 * known label set starts at 0, so a rate is defined before the first event.
 */
export class CoordinationMetrics {
  readonly #masterStatus: Gauge<'name'>;
  readonly #transitions: Counter;
  readonly #reconciliations: Counter<'result'>;
  readonly #duration: Histogram;
  readonly #phaseDuration: Histogram<'phase'>;
  readonly #dropped: Counter<'subscriber'>;
  readonly #sinkOperations: Counter<'sink' | 'target' | 'operation' | 'result'>;
  #bindings: CoordinationMetricsBindings | undefined;
  /** Per sink target (`targetKey`), the label sets of its operation series. */
  readonly #operationSeries = new Map<string, Map<string, SinkOperationCount>>();
  /** Targets that were missing from the sinks' status at the last scrape. */
  readonly #absentOnce = new Set<string>();

  constructor(registry: Registry) {
    const registers = [registry];
    const bound = (): CoordinationMetricsBindings | undefined => this.#bindings;
    this.#masterStatus = new Gauge({
      name: 'leader_election_master_status',
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
      labelNames: ['name'] as const,
      registers,
    });
    this.#transitions = new Counter({
      name: 'pool_controller_leader_transitions_total',
      help: 'Times this replica began leading.',
      registers,
    });
    this.#reconciliations = new Counter({
      name: 'pool_controller_reconciliations_total',
      help: 'Coordinator reconciliations (render, validate, deploy) by result.',
      labelNames: ['result'] as const,
      registers,
    });
    for (const result of RESULTS) this.#reconciliations.inc({ result }, 0);
    this.#duration = new Histogram({
      name: 'pool_controller_reconciliation_duration_seconds',
      help: 'Duration of a coordinator reconciliation: render + validate + deploy, up to the phase that failed; aborted runs are not observed.',
      buckets: RECONCILIATION_BUCKETS,
      registers,
    });
    this.#phaseDuration = new Histogram({
      name: 'pool_controller_phase_duration_seconds',
      help: 'Duration of each completed pipeline phase (render, validate, deploy).',
      labelNames: ['phase'] as const,
      buckets: RECONCILIATION_BUCKETS,
      registers,
    });
    this.#dropped = new Counter({
      name: 'pool_controller_events_dropped_total',
      help: 'Events a slow subscriber of the event bus lost (the oldest buffered are dropped first).',
      labelNames: ['subscriber'] as const,
      registers,
    });
    this.#dropped.inc({ subscriber: 'sse' }, 0);
    new Gauge({
      name: 'pool_controller_event_subscribers',
      help: 'Open subscriptions on the event bus (SSE clients included).',
      registers,
      collect() {
        this.set(bound()?.subscribers() ?? 0);
      },
    });
    const forgetVanished = (): void => this.#forgetVanishedTargets();
    this.#sinkOperations = new Counter({
      name: 'pool_controller_sink_operations_total',
      help: 'Calls a sink made to its targets (list, check, add, remove, apply, delete), by result.',
      labelNames: ['sink', 'target', 'operation', 'result'] as const,
      registers,
      collect() {
        forgetVanished();
      },
    });
    new Gauge({
      name: 'pool_controller_sink_workers',
      help: 'Endpoints per sink target: desired (the alive cells), actual (as last read from the target), pending (sent, not yet visible), held_by_panic (kept only because the pool is in panic), unmarked (a router worker this process added, listed without its mark and not desired: never removed under managed ownership), would_add and would_remove (observe mode: what apply would change).',
      labelNames: ['sink', 'target', 'state'] as const,
      registers,
      collect() {
        this.reset();
        for (const status of bound()?.sinkStatus() ?? []) {
          // Summed: a prefill/decode router has one status per role under one target URL.
          const labels = { sink: status.kind, target: status.target };
          this.inc({ ...labels, state: 'desired' }, status.desired.length);
          this.inc({ ...labels, state: 'actual' }, status.actual.length);
          this.inc({ ...labels, state: 'pending' }, status.pending.length);
          this.inc({ ...labels, state: 'held_by_panic' }, status.heldByPanic.length);
          if (status.unmarked) this.inc({ ...labels, state: 'unmarked' }, status.unmarked.length);
          if (status.mode === 'observe') {
            this.inc({ ...labels, state: 'would_add' }, status.wouldAdd.length);
            this.inc({ ...labels, state: 'would_remove' }, status.wouldRemove.length);
          }
        }
      },
    });
    new Gauge({
      name: 'pool_controller_sink_panic',
      help: "1 while the pool is in panic (--sink-panic-threshold: too few of its cells are alive and routable, so its sinks remove nothing), else 0; the leader's view, per pool of its last deploy.",
      labelNames: ['namespace', 'pool'] as const,
      registers,
      collect() {
        this.reset();
        for (const p of bound()?.panicPools?.() ?? []) {
          this.set({ namespace: p.namespace, pool: p.pool }, p.inPanic ? 1 : 0);
        }
      },
    });
  }

  bind(bindings: CoordinationMetricsBindings): void {
    this.#bindings = bindings;
    this.#masterStatus.set({ name: bindings.leaseName }, 0);
  }

  leading(isLeading: boolean): void {
    const name = this.#bindings?.leaseName ?? '';
    this.#masterStatus.set({ name }, isLeading ? 1 : 0);
    if (isLeading) this.#transitions.inc();
  }

  dropped(subscriber: string, count: number): void {
    if (count > 0) this.#dropped.inc({ subscriber }, count);
  }

  sinkOperation(record: SinkOperationCount): void {
    this.#sinkOperations.inc(record);
    // A LIST's target is a namespace scope (`ns/*`), bounded by the namespaces watched; every
    // other target is one object, which may vanish (an EndpointSlice of a pool that went away).
    if (record.operation === 'list') return;
    const key = targetKey(record.sink, record.target);
    let series = this.#operationSeries.get(key);
    if (!series) {
      series = new Map();
      this.#operationSeries.set(key, series);
    }
    series.set(`${record.operation}\u0000${record.result}`, record);
    this.#absentOnce.delete(key);
  }

  /**
   * Removes the operation series of targets the sinks no longer report: a target absent at one
   * scrape (so its last counts, a delete's say, are scraped once) and still absent at the next.
   * Without this, every EndpointSlice that ever existed kept its series for the process's life.
   */
  #forgetVanishedTargets(): void {
    const status = this.#bindings?.sinkStatus();
    if (!status) return;
    const present = new Set(status.map((s) => targetKey(s.kind, s.target)));
    for (const [key, series] of this.#operationSeries) {
      if (present.has(key)) {
        this.#absentOnce.delete(key);
      } else if (!this.#absentOnce.has(key)) {
        this.#absentOnce.add(key);
      } else {
        for (const labels of series.values()) this.#sinkOperations.remove(labels);
        this.#operationSeries.delete(key);
        this.#absentOnce.delete(key);
      }
    }
  }

  /** Reads the coordinator's events as they are published (synchronously, before any subscriber). */
  observe(event: ServiceEvent): void {
    switch (event.type) {
      case 'phase.completed':
        this.#phaseDuration.observe({ phase: event.phase }, event.durationMs / 1000);
        return;
      case 'reconciliation.completed':
        this.#reconciliations.inc({ result: event.result });
        if (event.result !== 'aborted') this.#duration.observe(event.durationMs / 1000);
        return;
      default:
        return;
    }
  }
}
