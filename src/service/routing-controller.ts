/**
 * The acting half of the service, leader-only: a `Coordinator` whose pipeline renders the desired
 * routing state from the published cells, validates it and deploys it through the sinks.
 *
 * Followers never start it (their coordinator stays stopped), but they can still render the
 * desired state locally for `GET /api/v1/coordinator`. A term begins when this replica leads and
 * the cells are synced, and ends the moment leadership is lost: the running pipeline's signal
 * and every sink's apply abort, and no sink sends anything more.
 *
 * The coordinator owns every run: when the sinks want one later (a target held by its backoff, a
 * change a target has not shown yet), the deploy says so as `{ requeueAfterMs }`. Each sink
 * applies through its own `SinkWorker`, and a deploy waits for them at most `SINK_RUN_WAIT_MS`: a
 * slow sink keeps applying on its own, and its end (when no deploy waits for it) is a trigger.
 */
import {
  Coordinator,
  type CoordinatorEvent,
  type CoordinatorState,
} from '../coordination/coordinator.js';
import type { DeployResult, Pipeline } from '../coordination/pipeline.js';
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
import { type Sink, SinkApplyError, type SinkTargetStatus } from '../sinks/sink.js';
import { type SinkApplyOutcome, SinkWorker } from '../sinks/sink-worker.js';
import { type PanicEntry, PanicTracker } from './panic-tracker.js';
import type { ServiceEvent } from './service-events.js';

/**
 * How soon after a deploy that left changes pending (a router still adding or draining a worker)
 * the deploy asks to be run again (`requeueAfterMs`): routers settle in well under a second to a
 * few seconds, and waiting for the next drift run would leave a re-added cell unrouted for up to
 * a minute.
 */
export const PENDING_RECHECK_MS = 1_000;

/**
 * How long one deploy waits for the applies it began before its run completes; applies still in
 * flight go on by themselves (`SinkWorker`), and a sink already busy when the run began is not
 * waited for at all. It bounds a run, and so how long a change for a healthy target can wait
 * behind a slow one: a change that arrives during a run begins the follow-up as soon as that run
 * completes, and the follow-up hands it to every idle sink at once. Healthy targets answer in tens
 * of milliseconds, so a normal deploy still ends with every apply done.
 */
export const SINK_RUN_WAIT_MS = 500;

/** The reason of the run begun when a sink's apply that no deploy waited for has ended. */
export const SINK_SETTLED_REASON = 'sink apply settled';

/**
 * Distinct per-cell reasons passed to one run at most; beyond, one shared reason
 * (`MANY_CELLS_CHANGED_REASON`). Every reason is copied into the run's `reconciliation.started`
 * event and its log line, so a burst of thousands of cell changes (a node partition, a rollout)
 * must not make one event thousands of strings long; 32 still names every cell of a usual burst.
 */
export const MAX_CELL_REASONS_PER_RUN = 32;
/** The reason that stands for every cell change past `MAX_CELL_REASONS_PER_RUN` in one run. */
export const MANY_CELLS_CHANGED_REASON = `more than ${MAX_CELL_REASONS_PER_RUN} cells changed`;
/**
 * What the routing controller is built from: the published cells and the sync gate it renders from,
 * the sinks it deploys to, and the bus its coordinator's events go to.
 */
interface RoutingControllerOptions {
  /** The published cells, read at render time. */
  cells: () => Iterable<RoutableCell>;
  /** False until the initial list is in the store and every cell in it was reconciled once. */
  synced: () => boolean;
  sinks: readonly Sink[];
  /** Where the coordinator's events go (the service's bus). */
  publish: (event: ServiceEvent) => void;
  driftIntervalMs: number | null;
  /** How long one sink's apply may take (`SinkWorker`); default `DEFAULT_SINK_APPLY_DEADLINE_MS`. */
  sinkApplyDeadlineMs?: number;
  /** `--sink-panic-threshold` (0–100; 0: off): see `PoolCapacity`. */
  panicThresholdPercent?: number;
  clock?: Clock;
  /** Only for the RFC 3339 times of panic entries. */
  wallClock?: () => Date;
  logger?: Logger;
}

/**
 * The coordinator the leader acts through, with the service's rules around it: nothing is rendered
 * before the cells have synced; a deploy asks to run again when a sink target's backoff ends or
 * `PENDING_RECHECK_MS` after it left changes pending; a target's failure is the sink's to report
 * and back off (the run still succeeds); each sink applies on its own worker, so none waits for
 * another.
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
  #noSinkAnnounced = false;
  /** Per-cell reasons passed since the last run began (at most MAX_CELL_REASONS_PER_RUN). */
  readonly #cellReasons = new Set<string>();
  /** One per sink, in the order of `options.sinks`. */
  readonly #workers: SinkWorker[];
  /** Set while a deploy waits for the workers: what their applies threw that was not a target's. */
  #waiting: { errors: unknown[] } | undefined;
  readonly #panic: PanicTracker;
  readonly #render: () => RoutingState;

  constructor(options: RoutingControllerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#logger = options.logger ?? silentLogger;
    const renderOptions = { panicThresholdPercent: options.panicThresholdPercent ?? 0 };
    this.#render = () => renderRoutingState(options.cells(), renderOptions);
    this.#workers = options.sinks.map(
      (sink) =>
        new SinkWorker({
          sink,
          clock: this.#clock,
          ...(options.sinkApplyDeadlineMs !== undefined
            ? { deadlineMs: options.sinkApplyDeadlineMs }
            : {}),
          onSettled: (outcome, worker) => this.#settled(outcome, worker),
        }),
    );
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

  /**
   * Ends the term: aborts the running pipeline and every sink's apply, cancels pending work;
   * resolves when all of it has settled.
   */
  async stop(): Promise<void> {
    const term = this.#term;
    this.#term = undefined;
    const reason = new Error('leadership ended');
    term?.abort(reason);
    const stopping = Promise.all([
      this.#coordinator.stop(),
      ...this.#workers.map((worker) => worker.stop(reason)),
    ]).then(() => {});
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

  async #deploy(desired: RoutingState, signal: AbortSignal): Promise<DeployResult> {
    this.#panic.observe(desired);
    if (this.#workers.length === 0) {
      // Info once, so the log says there is nothing to deploy to; then debug: in a changing fleet
      // the desired state changes with nearly every reconcile (issue 41).
      const level = this.#noSinkAnnounced ? 'debug' : 'info';
      this.#noSinkAnnounced = true;
      this.#logger[level](
        summarizeRoutingState(desired),
        'desired routing state rendered; no sink configured, nothing to deploy',
      );
      return;
    }
    // Every sink gets the state at once; a busy one applies it right after its apply in flight,
    // and the run does not wait for that: the busy one is already slow.
    const started: Array<Promise<void>> = [];
    for (const worker of this.#workers) {
      const idle = !worker.busy;
      const covered = worker.submit(desired);
      if (idle) started.push(covered);
    }
    const waiting = { errors: [] as unknown[] };
    this.#waiting = waiting;
    const waitEnd = new AbortController();
    const onAbort = (): void => waitEnd.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([
        Promise.all(started),
        this.#clock.sleep(SINK_RUN_WAIT_MS, waitEnd.signal).catch(() => {}),
      ]);
    } finally {
      waitEnd.abort();
      signal.removeEventListener('abort', onAbort);
      this.#waiting = undefined;
    }
    signal.throwIfAborted();
    if (waiting.errors.length > 0) throw waiting.errors[0];
    return this.#requeue();
  }

  /**
   * When the sinks want a run again: as soon as the earliest target held by its backoff may be
   * called, or `PENDING_RECHECK_MS` from now while a change is pending on a target; `undefined`
   * when neither (drift, or a trigger, is the next run).
   */
  #requeue(): DeployResult {
    const now = this.#clock.now();
    let afterMs: number | undefined;
    const consider = (ms: number): void => {
      if (afterMs === undefined || ms < afterMs) afterMs = ms;
    };
    for (const sink of this.#options.sinks) {
      const next = sink.nextAttemptAtMs();
      // A backoff that ends now or in the past still needs a run: one millisecond from now.
      if (next !== undefined) consider(Math.max(1, next - now));
    }
    // A refused router add (`retryAt`) waits for its own backoff (`nextAttemptAtMs`), not this.
    const inFlight = this.sinkStatus().some((s) => s.pending.some((p) => p.retryAt === undefined));
    if (inFlight) consider(PENDING_RECHECK_MS);
    return afterMs === undefined ? undefined : { requeueAfterMs: afterMs };
  }

  /**
   * A sink's apply ended. A target's failure (`SinkApplyError`) the sink has reported itself and
   * holds by its backoff; anything else it threw fails the run that waits for it. When no deploy
   * waits for it (it outlived `SINK_RUN_WAIT_MS`), no newer state follows it, and it left
   * something (a failure, a backoff, a pending change), a run begins, so that is looked at through
   * the coordinator (which then requeues as usual).
   */
  #settled(outcome: SinkApplyOutcome, worker: SinkWorker): void {
    if (outcome.result === 'failed' && !(outcome.error instanceof SinkApplyError)) {
      if (this.#waiting) {
        this.#waiting.errors.push(outcome.error);
      } else {
        this.#logger.warn(
          { err: outcome.error, sink: worker.sink.kind },
          'routing controller: a sink apply that no run waited for failed',
        );
      }
    }
    if (outcome.result === 'aborted' || this.#waiting || worker.busy || !this.#term) return;
    // A clean end asks for nothing: a slow sink that succeeds is not re-run back to back.
    const { sink } = worker;
    const left =
      outcome.result === 'failed' ||
      sink.nextAttemptAtMs() !== undefined ||
      sink.status().some((s) => s.pending.length > 0);
    if (left) this.trigger(SINK_SETTLED_REASON);
  }
}
