/**
 * Shared helpers for the coordination contract suite: deferred promises, scripted randomness and
 * wall clocks, a clock whose reading can jump without firing timers, and elector / coordinator
 * set-ups that record everything observable in one ordered log.
 */
import type { Clock, CoordinatorEvent, DeployResult, Phase, Pipeline } from '../../src/index.js';
import { Coordinator, EventBus, LeaderElector } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeLeaseLock, FakeLeaseStore } from '../support/fake-lease-lock.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

export { FakeClock, finishes, RecordingLogger, until };

/** The Lease every contract test's lock names. */
export const LEASE_NAME = 'pools/controller-leader';

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A promise that rejects with the signal's reason when it aborts and otherwise never settles. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** Resolves a flag when `promise` settles, so a test can ask whether it already has. */
export function track<T>(promise: Promise<T>): {
  readonly settled: boolean;
  readonly value: T | undefined;
  readonly error: unknown;
  readonly rejected: boolean;
} {
  const state = {
    settled: false,
    value: undefined as T | undefined,
    error: undefined as unknown,
    rejected: false,
  };
  promise.then(
    (value) => {
      state.settled = true;
      state.value = value;
    },
    (error: unknown) => {
      state.settled = true;
      state.rejected = true;
      state.error = error;
    },
  );
  return state;
}

/** One macrotask turn: every microtask queued before it has run by then. */
export function macrotask(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/** A `random()` that returns the given values in turn (repeating the last one), counting calls. */
export function scriptedRandom(...values: number[]): (() => number) & { calls: number } {
  const fn = (() => {
    const value = values[Math.min(fn.calls, values.length - 1)] ?? 0;
    fn.calls += 1;
    return value;
  }) as (() => number) & { calls: number };
  fn.calls = 0;
  return fn;
}

export const WALL_EPOCH = Date.UTC(2030, 0, 2, 3, 4, 5, 678);

/** A wall clock that reads `WALL_EPOCH + clock.now()`, counting its calls. */
export function wallClockOf(clock: Clock): (() => Date) & { calls: number } {
  const fn = (() => {
    fn.calls += 1;
    return new Date(WALL_EPOCH + clock.now());
  }) as (() => Date) & { calls: number };
  fn.calls = 0;
  return fn;
}

/** The MicroTime the API writes for a Date: UTC, six fractional digits, `Z`. */
export function microTime(date: Date | number): string {
  const iso = new Date(date).toISOString(); // 2030-01-02T03:04:05.678Z
  return `${iso.slice(0, -1)}000Z`;
}

/** The MicroTime the harness wall clock gives at fake clock time `ms`. */
export function wallAt(ms: number): string {
  return microTime(WALL_EPOCH + ms);
}

/**
 * A clock whose `now()` can jump ahead without firing any sleeper: how "timers stopped firing"
 * looks to the code under test.
 */
export class JumpClock implements Clock {
  offset = 0;
  readonly inner: FakeClock;
  constructor(inner: FakeClock) {
    this.inner = inner;
  }
  now(): number {
    return this.inner.now() + this.offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.inner.sleep(ms, signal);
  }
}

// ---------------------------------------------------------------------------------------------
// Leader elector set-up

export interface ElectorHarnessOptions {
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  releaseOnCancel?: boolean;
  random?: () => number;
  clock?: Clock;
  lock?: FakeLeaseLock;
  onStartedLeading?: (signal: AbortSignal) => void | Promise<void>;
  onStoppedLeading?: () => void;
  onNewLeader?: (identity: string) => void;
  wallClock?: () => Date;
}

/** Sleepers pending on `clock` when it is a fake (or a jump clock over one), else 0. */
function pendingTimersOf(clock: Clock): number {
  if (clock instanceof FakeClock) return clock.pendingTimers;
  if (clock instanceof JumpClock) return clock.inner.pendingTimers;
  return 0;
}

export function electorHarness(options: ElectorHarnessOptions = {}) {
  const fake = new FakeClock(0);
  const clock = options.clock ?? fake;
  const terms: Array<{ readonly settled: boolean }> = [];
  const lock = options.lock ?? new FakeLeaseLock(new FakeLeaseStore(), clock, LEASE_NAME);
  const logger = new RecordingLogger();
  const log: string[] = [];
  const newLeaders: string[] = [];
  const leadingSignals: AbortSignal[] = [];
  let stopped = 0;
  const wallClock = options.wallClock ?? wallClockOf(clock);
  const elector = new LeaderElector({
    lock,
    identity: options.identity ?? 'a',
    ...(options.leaseDurationMs !== undefined && { leaseDurationMs: options.leaseDurationMs }),
    ...(options.renewDeadlineMs !== undefined && { renewDeadlineMs: options.renewDeadlineMs }),
    ...(options.retryPeriodMs !== undefined && { retryPeriodMs: options.retryPeriodMs }),
    ...(options.releaseOnCancel !== undefined && { releaseOnCancel: options.releaseOnCancel }),
    clock,
    wallClock,
    random: options.random ?? (() => 0),
    logger,
    onStartedLeading: (signal) => {
      leadingSignals.push(signal);
      log.push(`started isLeader=${elector.isLeader()}`);
      return options.onStartedLeading?.(signal);
    },
    onStoppedLeading: () => {
      stopped += 1;
      log.push(`stopped isLeader=${elector.isLeader()}`);
      options.onStoppedLeading?.();
    },
    onNewLeader: (identity) => {
      newLeaders.push(identity);
      options.onNewLeader?.(identity);
    },
  });
  return {
    fake,
    clock,
    lock,
    logger,
    log,
    newLeaders,
    leadingSignals,
    wallClock,
    elector,
    get stopped() {
      return stopped;
    },
    /** Starts a term; returns its controller and a tracker of `run`'s promise. */
    start() {
      const controller = new AbortController();
      const running = elector.run(controller.signal);
      const result = track(running);
      terms.push(result);
      return { controller, running, result };
    },
    /**
     * Waits until the elector did all it can without the clock or the test: no lock call of its
     * is in progress (each settled, or waits for the test or the clock), and every term it runs
     * ended, sleeps on the clock or waits on a call the test holds. Then a test may assert what
     * did not happen.
     */
    atRest(): Promise<void> {
      return until(
        () =>
          lock.idle &&
          (terms.every((t) => t.settled) || pendingTimersOf(clock) > 0 || lock.waitingOnTest),
        { what: 'the elector to come to rest' },
      );
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Coordinator set-up

export type PhaseImpl = (signal: AbortSignal, desired: unknown) => unknown;

export interface PhaseCall {
  phase: Phase;
  signal: AbortSignal;
  desired: unknown;
  atMs: number;
}

/**
 * A pipeline whose phases, by default, return at once (`render` returns `desired-<n>`); a test
 * queues one-shot behaviours per phase, or sets a persistent one.
 */
export class ScriptedPipeline {
  readonly calls: PhaseCall[] = [];
  /** Phase calls whose promise has not settled yet. */
  pending = 0;
  readonly #clock: Clock;
  readonly #log: string[];
  readonly #once: Record<Phase, PhaseImpl[]> = { render: [], validate: [], deploy: [] };
  readonly #always: Partial<Record<Phase, PhaseImpl>> = {};
  #renders = 0;

  constructor(clock: Clock, log: string[]) {
    this.#clock = clock;
    this.#log = log;
  }

  once(phase: Phase, impl: PhaseImpl): this {
    this.#once[phase].push(impl);
    return this;
  }

  always(phase: Phase, impl: PhaseImpl | undefined): this {
    if (impl) this.#always[phase] = impl;
    else delete this.#always[phase];
    return this;
  }

  callsOf(phase: Phase): PhaseCall[] {
    return this.calls.filter((c) => c.phase === phase);
  }

  #invoke(phase: Phase, signal: AbortSignal, desired: unknown): unknown {
    this.calls.push({ phase, signal, desired, atMs: this.#clock.now() });
    this.#log.push(`call:${phase}`);
    const impl = this.#once[phase].shift() ?? this.#always[phase];
    if (impl) {
      const result = impl(signal, desired);
      if (result instanceof Promise) {
        this.pending += 1;
        const done = (): void => {
          this.pending -= 1;
        };
        result.then(done, done);
      }
      return result;
    }
    if (phase === 'render') {
      this.#renders += 1;
      return `desired-${this.#renders}`;
    }
    return undefined;
  }

  /** The pipeline object handed to the coordinator (with or without `validate`). */
  pipeline(withValidate = true): Pipeline<unknown> {
    const render = (signal: AbortSignal) => this.#invoke('render', signal, undefined);
    const deploy = (desired: unknown, signal: AbortSignal) =>
      this.#invoke('deploy', signal, desired) as DeployResult | Promise<DeployResult>;
    if (!withValidate) return { render, deploy };
    const validate = (desired: unknown, signal: AbortSignal) =>
      this.#invoke('validate', signal, desired) as void | Promise<void>;
    return { render, validate, deploy };
  }
}

/** Describes an event compactly for order assertions. */
export function describeEvent(event: CoordinatorEvent): string {
  switch (event.type) {
    case 'reconciliation.triggered':
      return `triggered:${event.reason}`;
    case 'reconciliation.started':
      return `started:${event.id}:${event.reasons.join(',')}`;
    case 'phase.completed':
      return `phase.completed:${event.id}:${event.phase}`;
    case 'reconciliation.failed':
      return `failed:${event.id}:${event.phase}`;
    case 'reconciliation.completed':
      return `completed:${event.id}:${event.result}`;
  }
}

export interface CoordinatorHarnessOptions {
  failureBaseDelayMs?: number;
  failureMaxDelayMs?: number;
  driftIntervalMs?: number | null;
  withValidate?: boolean;
  withBus?: boolean;
  startMs?: number;
}

export function coordinatorHarness(options: CoordinatorHarnessOptions = {}) {
  const clock = new FakeClock(options.startMs ?? 1_000);
  const log: string[] = [];
  const events: CoordinatorEvent[] = [];
  const logger = new RecordingLogger();
  const scripted = new ScriptedPipeline(clock, log);
  const bus = new EventBus<CoordinatorEvent>();
  const publish = bus.publish.bind(bus);
  bus.publish = (event: CoordinatorEvent) => {
    events.push(event);
    log.push(describeEvent(event));
    publish(event);
  };
  const coordinator = new Coordinator<unknown>({
    pipeline: scripted.pipeline(options.withValidate ?? true),
    ...(options.withBus !== false && { bus }),
    ...(options.failureBaseDelayMs !== undefined && {
      failureBaseDelayMs: options.failureBaseDelayMs,
    }),
    ...(options.failureMaxDelayMs !== undefined && {
      failureMaxDelayMs: options.failureMaxDelayMs,
    }),
    ...(options.driftIntervalMs !== undefined && { driftIntervalMs: options.driftIntervalMs }),
    clock,
    logger,
  });
  return {
    clock,
    log,
    events,
    logger,
    scripted,
    bus,
    coordinator,
    /**
     * Waits until the coordinator did all it can without the clock or the test: idle with
     * nothing about to begin, or running a phase whose promise is still pending. Then a test may
     * assert what did not happen.
     */
    atRest(): Promise<void> {
      return until(
        () => {
          const state = coordinator.state();
          if (!state.running) return state.pendingReasons.length === 0;
          return scripted.pending > 0;
        },
        { what: 'the coordinator to come to rest' },
      );
    },
    /** Events of one type, narrowed. */
    of<T extends CoordinatorEvent['type']>(type: T): Extract<CoordinatorEvent, { type: T }>[] {
      return events.filter((e): e is Extract<CoordinatorEvent, { type: T }> => e.type === type);
    },
    /** Compact descriptions of all events so far. */
    described(): string[] {
      return events.map(describeEvent);
    },
    /** `reasons` of every `started` event, in order. */
    startedReasons(): string[][] {
      return events
        .filter(
          (e): e is Extract<CoordinatorEvent, { type: 'reconciliation.started' }> =>
            e.type === 'reconciliation.started',
        )
        .map((e) => e.reasons);
    },
  };
}
