/**
 * The acting half of the service, leader-only: a `Coordinator` whose pipeline renders the desired
 * routing state from the published cells, validates it and deploys it through the sinks.
 *
 * Followers never start it (their coordinator stays stopped), but they can still render the
 * desired state locally for `GET /api/v1/coordinator`. A term begins when this replica leads and
 * the cells are synced, and ends the moment leadership is lost: the running pipeline's signal
 * aborts and no sink sends anything more.
 */
import {
  Coordinator,
  type CoordinatorEvent,
  type CoordinatorState,
  DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS,
  DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS,
} from '../coordination/coordinator.js';
import type { Pipeline } from '../coordination/pipeline.js';
import {
  type RoutableCell,
  type RoutingState,
  RoutingStateError,
  renderRoutingState,
  summarizeRoutingState,
  validateRoutingState,
} from '../pools/routing-state.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import {
  type Sink,
  SinkApplyError,
  type SinkFailure,
  type SinkTargetStatus,
} from '../sinks/sink.js';
import { type PanicEntry, PanicTracker } from './panic-tracker.js';
import type { ServiceEvent } from './service-events.js';

/**
 * How soon after a deploy that left changes pending (a router still adding or draining a worker)
 * the coordinator looks again: routers settle in well under a second to a few seconds, and
 * waiting for the next drift run would leave a re-added cell unrouted for up to a minute.
 */
export const PENDING_RECHECK_MS = 1_000;

/**
 * Distinct per-cell reasons passed to one run at most; beyond, one shared reason
 * (`MANY_CELLS_CHANGED_REASON`). Every reason is copied into the run's `reconciliation.started`
 * event and its log line, so a burst of thousands of cell changes (a node partition, a rollout)
 * must not make one event thousands of strings long; 32 still names every cell of a usual burst.
 */
export const MAX_CELL_REASONS_PER_RUN = 32;
/** The reason that stands for every cell change past `MAX_CELL_REASONS_PER_RUN` in one run. */
export const MANY_CELLS_CHANGED_REASON = `more than ${MAX_CELL_REASONS_PER_RUN} cells changed`;
/** The reason of the run begun when a sink target's backoff ends. */
export const BACKOFF_ENDED_REASON = 'sink backoff ended';

/**
 * The longest wait before a failed run is retried: the coordinator's cap, but never longer than
 * the drift interval. While a failure streak lasts the retry replaces the drift run, and every
 * trigger-begun run that fails lengthens the backoff; with the plain one-minute cap, one
 * unreachable router would leave the other routers unrepaired (a restarted one stays empty) and
 * itself unpopulated once back for up to a minute, whatever --drift-interval says.
 */
export function retryCapMs(driftIntervalMs: number | null): number {
  if (driftIntervalMs === null) return DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS;
  return Math.max(
    DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS,
    Math.min(DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS, driftIntervalMs),
  );
}

/**
 * What the routing controller is built from: the published cells and the sync gate it renders from,
 * the sinks it deploys to, and the bus its coordinator's events go to.
 */
export interface RoutingControllerOptions {
  /** The published cells, read at render time. */
  cells: () => Iterable<RoutableCell>;
  /** False until the initial list is in the store and every cell in it was reconciled once. */
  synced: () => boolean;
  sinks: readonly Sink[];
  /** Where the coordinator's events go (the service's bus). */
  publish: (event: ServiceEvent) => void;
  driftIntervalMs: number | null;
  /** `--sink-panic-threshold` (0–100; 0: off): see `PoolCapacity`. */
  panicThresholdPercent?: number;
  clock?: Clock;
  /** Only for the RFC 3339 times of panic entries. */
  wallClock?: () => Date;
  logger?: Logger;
}

/**
 * The coordinator the leader acts through, with the service's rules around it: nothing is rendered
 * before the cells have synced, a deploy that left changes pending is looked at again in
 * `PENDING_RECHECK_MS`, a sink target's ended backoff begins a run, and the retry cap is
 * `retryCapMs` rather than the library's.
 */
export class RoutingController {
  readonly #options: RoutingControllerOptions;
  readonly #coordinator: Coordinator<RoutingState>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #lastDesired: RoutingState | undefined;
  #term: AbortController | undefined;
  /** The coordinator's stop while the previous term's pipeline unwinds. */
  #stopping: Promise<void> | undefined;
  #recheckScheduled = false;
  #lastLoggedDesired: string | undefined;
  /** Per-cell reasons passed since the last run began (at most MAX_CELL_REASONS_PER_RUN). */
  readonly #cellReasons = new Set<string>();
  /** The run scheduled for when the earliest held sink target may be called again. */
  #backoffRetry: { atMs: number; cancel: AbortController } | undefined;
  readonly #panic: PanicTracker;
  readonly #render: () => RoutingState;

  constructor(options: RoutingControllerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#logger = options.logger ?? silentLogger;
    const renderOptions = { panicThresholdPercent: options.panicThresholdPercent ?? 0 };
    this.#render = () => renderRoutingState(options.cells(), renderOptions);
    this.#panic = new PanicTracker({
      publish: options.publish,
      logger: this.#logger,
      ...(options.wallClock ? { wallClock: options.wallClock } : {}),
    });
    const pipeline: Pipeline<RoutingState> = {
      render: () => {
        if (!options.synced()) {
          // Rendering a half-loaded registry would tell every sink to drop cells it has not seen yet.
          throw new RoutingStateError(
            'the cells have not synced yet; nothing is rendered before sync',
          );
        }
        const desired = this.#render();
        this.#lastDesired = desired;
        return desired;
      },
      validate: (desired) => validateRoutingState(desired),
      deploy: (desired, signal) => this.#deploy(desired, signal),
    };
    this.#coordinator = new Coordinator<RoutingState>({
      pipeline,
      bus: {
        publish: (event: CoordinatorEvent) => {
          // The reasons collected so far went into this run; the budget starts again for the next.
          if (event.type === 'reconciliation.started') this.#cellReasons.clear();
          options.publish(event);
        },
      },
      driftIntervalMs: options.driftIntervalMs,
      failureMaxDelayMs: retryCapMs(options.driftIntervalMs),
      clock: this.#clock,
      logger: this.#logger,
    });
  }

  /** Whether a term is running (this replica leads and has started acting). */
  get acting(): boolean {
    return this.#term !== undefined;
  }

  /**
   * Begins a term: a reconciliation starts at once, or, while the previous term's pipeline is
   * still unwinding (leadership lost and won back before a sink finished its aborted request),
   * as soon as that has settled, unless this term ended meanwhile.
   */
  start(): void {
    if (this.#term) return;
    const term = new AbortController();
    this.#term = term;
    const stopping = this.#stopping;
    if (!stopping) {
      this.#coordinator.start();
      return;
    }
    void stopping.then(() => {
      if (this.#term !== term) return;
      try {
        this.#coordinator.start();
      } catch (err) {
        this.#logger.error({ err }, 'routing controller: starting the coordinator failed');
      }
    });
  }

  /** Ends the term: aborts the running pipeline, cancels pending work; resolves when settled. */
  async stop(): Promise<void> {
    const term = this.#term;
    this.#term = undefined;
    term?.abort(new Error('leadership ended'));
    const stopping = this.#coordinator.stop();
    this.#stopping = stopping;
    try {
      await stopping;
    } finally {
      if (this.#stopping === stopping) this.#stopping = undefined;
    }
  }

  /** A cell change or a manual request; ignored unless a term runs. */
  trigger(reason: string): void {
    if (this.#term) this.#coordinator.trigger(reason);
  }

  /**
   * A cell's change: triggers with its own reason while fewer than MAX_CELL_REASONS_PER_RUN
   * distinct ones went to the next run, else with the one shared reason.
   */
  triggerForCell(reason: string): void {
    if (!this.#term) return;
    if (this.#cellReasons.has(reason) || this.#cellReasons.size < MAX_CELL_REASONS_PER_RUN) {
      this.#cellReasons.add(reason);
      this.#coordinator.trigger(reason);
      return;
    }
    this.#coordinator.trigger(MANY_CELLS_CHANGED_REASON);
  }

  state(): CoordinatorState {
    return this.#coordinator.state();
  }

  /**
   * The desired state: the last one the pipeline rendered while leading, else rendered now (what
   * a follower would deploy if it led); `null` before the cells have synced.
   */
  desired(): RoutingState | null {
    if (this.#term && this.#lastDesired) return this.#lastDesired;
    return this.#options.synced() ? this.#render() : null;
  }

  sinkStatus(): SinkTargetStatus[] {
    return this.#options.sinks.flatMap((sink) => sink.status());
  }

  /** The pools in panic at the last deploy, sorted. */
  panicEntries(): PanicEntry[] {
    return this.#panic.entries();
  }

  /** Every pool of the last deploy and whether it is in panic, for `pool_controller_sink_panic`. */
  panicPools(): Array<{ namespace: string; pool: string; inPanic: boolean }> {
    return this.#panic.pools();
  }

  async #deploy(desired: RoutingState, signal: AbortSignal): Promise<void> {
    const { sinks } = this.#options;
    this.#panic.observe(desired);
    if (sinks.length === 0) {
      // Info when the desired state changed, debug when a drift run renders the same again.
      const summary = summarizeRoutingState(desired);
      const text = JSON.stringify(desired);
      const level = text === this.#lastLoggedDesired ? 'debug' : 'info';
      this.#lastLoggedDesired = text;
      this.#logger[level](
        summary,
        'desired routing state rendered; no sink configured, nothing to deploy',
      );
      return;
    }
    const failures: SinkFailure[] = [];
    const errors: unknown[] = [];
    // Every sink is applied even when one fails: one unreachable target never holds the others.
    await Promise.all(
      sinks.map(async (sink) => {
        try {
          await sink.apply(desired, signal);
        } catch (err) {
          if (err instanceof SinkApplyError) failures.push(...err.failures);
          else errors.push(err);
        }
      }),
    );
    signal.throwIfAborted();
    this.#schedulePendingRecheck();
    this.#scheduleBackoffRetry();
    if (errors.length > 0) throw errors[0];
    if (failures.length > 0) throw new SinkApplyError(failures);
  }

  /**
   * A run at the moment the earliest held sink target may be called again, so its pending change
   * is retried then (not at the next drift, and not before: the sinks would skip it). One at a
   * time; an earlier due time replaces a later one.
   */
  #scheduleBackoffRetry(): void {
    const term = this.#term;
    if (!term) return;
    let atMs: number | undefined;
    for (const sink of this.#options.sinks) {
      const next = sink.nextAttemptAtMs();
      if (next !== undefined && (atMs === undefined || next < atMs)) atMs = next;
    }
    if (atMs === undefined) return;
    const scheduled = this.#backoffRetry;
    if (scheduled && scheduled.atMs <= atMs) return;
    scheduled?.cancel.abort();
    const cancel = new AbortController();
    const retry = { atMs, cancel };
    this.#backoffRetry = retry;
    // The term's end cancels it too (a listener, removed when it settles, not AbortSignal.any).
    const onTermEnd = (): void => cancel.abort();
    term.signal.addEventListener('abort', onTermEnd, { once: true });
    const settled = (): void => {
      term.signal.removeEventListener('abort', onTermEnd);
      if (this.#backoffRetry === retry) this.#backoffRetry = undefined;
    };
    const delayMs = Math.max(0, atMs - this.#clock.now());
    this.#clock.sleep(delayMs, cancel.signal).then(() => {
      settled();
      if (this.#term === term) this.trigger(BACKOFF_ENDED_REASON);
    }, settled);
  }

  /** A follow-up run shortly after a deploy that left changes in flight, once per term at a time. */
  #schedulePendingRecheck(): void {
    const term = this.#term;
    if (!term || this.#recheckScheduled) return;
    // A refused router add (`retryAt`) waits for its own backoff (`nextAttemptAtMs`), not this.
    if (!this.sinkStatus().some((s) => s.pending.some((p) => p.retryAt === undefined))) return;
    this.#recheckScheduled = true;
    this.#clock.sleep(PENDING_RECHECK_MS, term.signal).then(
      () => {
        this.#recheckScheduled = false;
        this.trigger('pending');
      },
      () => {
        this.#recheckScheduled = false; // the term ended first
      },
    );
  }
}
