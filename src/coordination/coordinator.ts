/**
 * The leader-only driver of the pipeline: at most one reconciliation at a time, begun at once on
 * a trigger, collapsed while one runs, retried with backoff on failure, repeated on a drift timer,
 * and announced phase by phase on the event bus.
 *
 * From haptic's `reconciler.Coordinator` (triggers fire immediately, no debounce; the pipeline is
 * a direct call; every started reconciliation publishes exactly one completion) with the
 * retry, requeue and drift timers folded into one, so one object owns everything that can begin a
 * run:
 *
 *   stopped ──start()──► started ──stop()──► stopping ──running run settled──► stopped
 *                          │  trigger / retry / requeue / drift ──► one reconciliation at a time
 *
 * A pipeline that wants to run again later says so in its deploy's result (`{ requeueAfterMs }`,
 * COORDINATION.md amendment 1) instead of keeping a timer of its own.
 *
 * Size: one state machine (lifecycle, the one timer, the phases and their events); the timer's
 * choice between retry, requeue and drift is the single-owner rule, so it stays beside the runs.
 */

import { ExponentialBackoff } from '../runtime/backoff.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { failureDelaysMs, positiveDurationMs } from '../runtime/positive-duration.js';
import {
  describeThrown,
  type Phase,
  type Pipeline,
  PipelineError,
  requeueDelayMs,
} from './pipeline.js';

/** First retry after a failed reconciliation: soon enough for a transient error to clear quickly. */
export const DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS = 1_000;
/** Retry cap: a persistently failing pipeline is still retried every minute, never given up on. */
export const DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS = 60_000;
/**
 * 60 s, haptic's drift-prevention default: how long the world may have drifted (a router restarted
 * and forgot its workers, someone edited an EndpointSlice) before a run repairs it unprompted;
 * deploy is level-triggered, so it is cheap. `--drift-interval` defaults to it.
 */
export const DEFAULT_DRIFT_INTERVAL_MS = 60_000;

/** How a reconciliation ended. */
export type ReconciliationResult = 'success' | 'failure' | 'aborted';

/** What the coordinator publishes, in this order per reconciliation (see COORDINATION.md). */
export type CoordinatorEvent =
  | { type: 'reconciliation.triggered'; reason: string }
  | { type: 'reconciliation.started'; id: number; reasons: string[] }
  | { type: 'phase.completed'; id: number; phase: Phase; durationMs: number }
  | { type: 'reconciliation.failed'; id: number; phase: Phase; error: string }
  | {
      type: 'reconciliation.completed';
      id: number;
      result: ReconciliationResult;
      durationMs: number;
    };

/** All the coordinator needs of a bus: an `EventBus` whose event type includes CoordinatorEvent. */
export interface CoordinatorEventSink {
  publish(event: CoordinatorEvent): void;
}

/**
 * What a coordinator is built from. Only `pipeline` is required; every duration defaults to the
 * contract's value and is checked at construction (a non-positive or non-finite one throws), so a
 * bad value fails at start rather than as a hot retry loop.
 *
 * `failureBaseDelayMs` and `failureMaxDelayMs` shape the retry after a failed run (`base ×
 * 2^(n−1)`, at most `max`; `max` must be at least `base`); `bus` receives the events, and one that
 * throws is logged, never fatal.
 */
export interface CoordinatorOptions<D> {
  pipeline: Pipeline<D>;
  bus?: CoordinatorEventSink;
  failureBaseDelayMs?: number;
  failureMaxDelayMs?: number;
  /** `null`: no drift runs. */
  driftIntervalMs?: number | null;
  clock?: Clock;
  logger?: Logger;
}

/** What the control plane shows about the coordinator. */
export interface CoordinatorState {
  running: boolean;
  runningId?: number;
  /** Reasons of the run that will begin next (a trigger's microtask or the follow-up). */
  pendingReasons: string[];
  consecutiveFailures: number;
  /** Clock time the pending retry is due. */
  nextRetryAtMs?: number;
  lastCompleted?: { id: number; result: ReconciliationResult; atMs: number };
  /** The last failure, until the next success. */
  lastError?: PipelineError;
}

type Lifecycle = 'stopped' | 'started' | 'stopping';

interface Running {
  id: number;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * The one timer that can begin a run by itself: a retry after a failure; after a success, the
 * earlier of the requeue the deploy asked for and drift. Its kind is the run's reason.
 */
interface PendingTimer {
  kind: 'retry' | 'requeue' | 'drift';
  dueAtMs: number;
  controller: AbortController;
}

type Outcome =
  | { result: 'success'; requeueAfterMs: number | undefined }
  | { result: 'aborted' }
  | { result: 'failure'; error: PipelineError };

/** The abort reason a running reconciliation's signal carries after `stop()`. */
export class CoordinatorStoppedError extends Error {
  override readonly name = 'CoordinatorStoppedError';
}

function positiveFinite(name: string, value: unknown, fallback: number): number {
  return positiveDurationMs('Coordinator', name, value, fallback);
}

/**
 * The one owner of everything that can begin a reconciliation (trigger, retry, requeue, drift), so two runs
 * never overlap and no timer outlives a term. One instance serves many terms: `start()` on gaining
 * leadership, `stop()` on losing it; run ids keep counting across terms so events of two terms
 * never share an id.
 */
export class Coordinator<D> {
  readonly #pipeline: Pipeline<D>;
  readonly #bus: CoordinatorEventSink | undefined;
  /** Failed runs in a row: the retry's wait; a success (or a new term) starts it over. */
  readonly #failureBackoff: ExponentialBackoff;
  readonly #driftIntervalMs: number | null;
  readonly #clock: Clock;
  readonly #logger: Logger;

  #lifecycle: Lifecycle = 'stopped';
  #stopPromise: Promise<void> | undefined;
  /**
   * Distinct, in arrival order: the reasons of the run that begins next. A Set, so a trigger per
   * cell change costs O(1) however many reasons are pending (a Set keeps insertion order).
   */
  #pendingReasons = new Set<string>();
  #beginScheduled = false;
  #running: Running | undefined;
  #timer: PendingTimer | undefined;
  /** Ids count for the coordinator's lifetime, across terms. */
  #nextId = 1;
  #lastCompleted: CoordinatorState['lastCompleted'];
  #lastError: PipelineError | undefined;

  constructor(options: CoordinatorOptions<D>) {
    const pipeline = options?.pipeline;
    if (
      !pipeline ||
      typeof pipeline.render !== 'function' ||
      typeof pipeline.deploy !== 'function' ||
      (pipeline.validate !== undefined && typeof pipeline.validate !== 'function')
    ) {
      throw new TypeError('Coordinator: pipeline must have render and deploy functions');
    }
    const failureDelays = failureDelaysMs('Coordinator', options, {
      baseMs: DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS,
      maxMs: DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS,
    });
    this.#failureBackoff = new ExponentialBackoff({
      initialMs: failureDelays.baseMs,
      maxMs: failureDelays.maxMs,
    });
    this.#driftIntervalMs =
      options.driftIntervalMs === null
        ? null
        : positiveFinite('driftIntervalMs', options.driftIntervalMs, DEFAULT_DRIFT_INTERVAL_MS);
    this.#pipeline = pipeline;
    this.#bus = options.bus;
    this.#clock = options.clock ?? realClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Begins a term (call it from `onStartedLeading`): a reconciliation with reason `'started'`
   * begins at once, in a microtask like a trigger's. Throws while started or while a stop is pending.
   */
  start(): void {
    if (this.#lifecycle !== 'stopped') {
      throw new Error(
        this.#lifecycle === 'started'
          ? 'Coordinator.start() called while started'
          : 'Coordinator.start() called while a stop() is pending',
      );
    }
    this.#lifecycle = 'started';
    this.#failureBackoff.reset();
    this.#request('started');
  }

  /**
   * Asks for a reconciliation. When idle it begins in a microtask (never inside the caller's
   * stack, no debounce); while one runs, triggers collapse into one follow-up. Ignored before
   * `start()` and from the moment `stop()` is called.
   */
  trigger(reason: string): void {
    if (this.#lifecycle !== 'started') return;
    this.#publish({ type: 'reconciliation.triggered', reason });
    this.#request(reason);
  }

  /**
   * Ends the term: cancels the pending retry, requeue, follow-up and drift timer, aborts the running
   * reconciliation and waits for it to settle. Idempotent.
   */
  stop(): Promise<void> {
    if (this.#stopPromise) return this.#stopPromise;
    if (this.#lifecycle === 'stopped') return Promise.resolve();
    this.#lifecycle = 'stopping';
    this.#pendingReasons = new Set();
    this.#cancelTimer();
    const running = this.#running;
    running?.controller.abort(new CoordinatorStoppedError('Coordinator stopped'));
    this.#stopPromise = (async () => {
      try {
        await running?.done;
      } finally {
        this.#lifecycle = 'stopped';
        this.#stopPromise = undefined;
      }
    })();
    return this.#stopPromise;
  }

  state(): CoordinatorState {
    const state: CoordinatorState = {
      running: this.#running !== undefined,
      pendingReasons: [...this.#pendingReasons],
      consecutiveFailures: this.#failureBackoff.failures,
    };
    if (this.#running) state.runningId = this.#running.id;
    if (this.#timer?.kind === 'retry') state.nextRetryAtMs = this.#timer.dueAtMs;
    if (this.#lastCompleted) state.lastCompleted = { ...this.#lastCompleted };
    if (this.#lastError) state.lastError = this.#lastError;
    return state;
  }

  /** Adds a reason to the next run and, when idle, begins it in a microtask. */
  #request(reason: string): void {
    this.#pendingReasons.add(reason);
    if (this.#running || this.#beginScheduled) return; // the follow-up or the queued begin takes it
    this.#beginScheduled = true;
    queueMicrotask(() => {
      this.#beginScheduled = false;
      if (this.#lifecycle === 'started' && !this.#running && this.#pendingReasons.size > 0) {
        this.#begin();
      }
    });
  }

  /** Begins a reconciliation with the pending reasons; it replaces any pending retry or drift. */
  #begin(): void {
    const reasons = [...this.#pendingReasons];
    this.#pendingReasons = new Set();
    this.#cancelTimer();
    const id = this.#nextId++;
    const controller = new AbortController();
    const running: Running = { id, controller, done: Promise.resolve() };
    this.#running = running;
    running.done = this.#reconcile(id, reasons, controller.signal).catch((err: unknown) => {
      this.#logger.error({ err, id }, 'coordinator: reconciliation bookkeeping failed');
    });
  }

  async #reconcile(id: number, reasons: string[], signal: AbortSignal): Promise<void> {
    const startedAtMs = this.#clock.now();
    this.#publish({ type: 'reconciliation.started', id, reasons: [...reasons] });
    this.#logger.debug({ id, reasons }, 'reconciliation started');
    const outcome = await this.#runPhases(id, signal);

    this.#running = undefined;
    const atMs = this.#clock.now();
    // Counted at the failure, even when a pending trigger begins the next run at once.
    let retryAfterMs = 0;
    if (outcome.result === 'failure') {
      const { error } = outcome;
      retryAfterMs = this.#failureBackoff.next();
      this.#lastError = error;
      this.#logger.error(
        {
          err: error,
          id,
          phase: error.phase,
          consecutiveFailures: this.#failureBackoff.failures,
        },
        'reconciliation failed',
      );
      this.#publish({
        type: 'reconciliation.failed',
        id,
        phase: error.phase,
        error: describeThrown(error.cause),
      });
    } else if (outcome.result === 'success') {
      this.#failureBackoff.reset();
      this.#lastError = undefined;
    }
    this.#lastCompleted = { id, result: outcome.result, atMs };
    this.#publish({
      type: 'reconciliation.completed',
      id,
      result: outcome.result,
      durationMs: atMs - startedAtMs,
    });
    this.#logger.debug({ id, result: outcome.result }, 'reconciliation completed');
    this.#next(outcome, retryAfterMs);
  }

  /** Render, validate, deploy; after each settles, an aborted signal ends the run as aborted. */
  async #runPhases(id: number, signal: AbortSignal): Promise<Outcome> {
    let desired: D | undefined;
    const phases: Array<[Phase, () => unknown]> = [
      [
        'render',
        () =>
          Promise.resolve(this.#pipeline.render(signal)).then((value) => {
            desired = value;
          }),
      ],
    ];
    if (this.#pipeline.validate) {
      phases.push(['validate', () => this.#pipeline.validate?.(desired as D, signal)]);
    }
    let requeueAfterMs: number | undefined;
    phases.push([
      'deploy',
      () =>
        Promise.resolve(this.#pipeline.deploy(desired as D, signal)).then((result) => {
          requeueAfterMs = requeueDelayMs(result);
        }),
    ]);

    for (const [phase, call] of phases) {
      const phaseStartMs = this.#clock.now();
      try {
        await call();
      } catch (err) {
        if (signal.aborted) return { result: 'aborted' };
        return { result: 'failure', error: new PipelineError(phase, err) };
      }
      if (signal.aborted) return { result: 'aborted' };
      this.#publish({
        type: 'phase.completed',
        id,
        phase,
        durationMs: this.#clock.now() - phaseStartMs,
      });
    }
    return { result: 'success', requeueAfterMs };
  }

  /**
   * After a run: the follow-up if triggers arrived, else a retry after a failure, else (after a
   * success) the earlier of the requeue the deploy asked for and drift; an aborted run arms
   * nothing. A requeue due no later than drift wins the tie: drift replaces it only when sooner.
   * `retryAfterMs` is the failure backoff's wait for this run's failure.
   */
  #next(outcome: Outcome, retryAfterMs: number): void {
    if (this.#lifecycle !== 'started') return;
    if (this.#pendingReasons.size > 0) {
      this.#begin();
      return;
    }
    if (outcome.result === 'failure') {
      this.#arm('retry', retryAfterMs);
      return;
    }
    if (outcome.result !== 'success') return;
    const requeueMs = outcome.requeueAfterMs;
    const driftMs = this.#driftIntervalMs;
    if (requeueMs !== undefined && (driftMs === null || requeueMs <= driftMs)) {
      this.#arm('requeue', requeueMs);
    } else if (driftMs !== null) {
      this.#arm('drift', driftMs);
    }
  }

  #arm(kind: PendingTimer['kind'], delayMs: number): void {
    this.#cancelTimer();
    const controller = new AbortController();
    const timer: PendingTimer = { kind, dueAtMs: this.#clock.now() + delayMs, controller };
    this.#timer = timer;
    this.#clock.sleep(delayMs, controller.signal).then(
      () => {
        if (this.#timer !== timer) return;
        this.#timer = undefined;
        if (this.#lifecycle !== 'started' || this.#running) return;
        this.#pendingReasons.add(kind);
        this.#begin();
      },
      () => {}, // cancelled: a run began earlier, or stop()
    );
  }

  #cancelTimer(): void {
    const timer = this.#timer;
    this.#timer = undefined;
    timer?.controller.abort();
  }

  /** Only through `bus.publish`, and a bus that throws never breaks a reconciliation. */
  #publish(event: CoordinatorEvent): void {
    if (!this.#bus) return;
    try {
      this.#bus.publish(event);
    } catch (err) {
      this.#logger.error({ err, event: event.type }, 'coordinator: publishing an event failed');
    }
  }
}
