import { afterEach, describe, expect, it } from 'vitest';
import {
  Coordinator,
  type CoordinatorEvent,
  type CoordinatorOptions,
  EventBus,
  type Phase,
  type Pipeline,
  PipelineError,
} from '../../src/index.js';
import { FakeClock, settle } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';

type Behaviour = (signal: AbortSignal) => unknown;

interface PhaseCall {
  phase: Phase;
  atMs: number;
  desired: unknown;
  signal: AbortSignal;
}

/** A pipeline whose next call of each phase can be scripted; unscripted calls succeed at once. */
class ScriptedPipeline implements Pipeline<string> {
  readonly calls: PhaseCall[] = [];
  readonly #scripts: Record<Phase, Behaviour[]> = { render: [], validate: [], deploy: [] };

  constructor(private readonly clock: FakeClock) {}

  /** The next call of `phase` runs `behaviour` instead of succeeding at once. */
  next(phase: Phase, behaviour: Behaviour): this {
    this.#scripts[phase].push(behaviour);
    return this;
  }

  render(signal: AbortSignal): string | Promise<string> {
    return (this.#call('render', undefined, signal) as string | Promise<string>) ?? 'desired';
  }
  validate(desired: string, signal: AbortSignal): void | Promise<void> {
    return this.#call('validate', desired, signal) as void | Promise<void>;
  }
  deploy(desired: string, signal: AbortSignal): void | Promise<void> {
    return this.#call('deploy', desired, signal) as void | Promise<void>;
  }

  /** `phase@time` for every call. */
  trace(): string[] {
    return this.calls.map((c) => `${c.phase}@${c.atMs}`);
  }

  #call(phase: Phase, desired: unknown, signal: AbortSignal): unknown {
    this.calls.push({ phase, atMs: this.clock.now(), desired, signal });
    return this.#scripts[phase].shift()?.(signal);
  }
}

/** Waits until the signal aborts, then rejects with its reason: a phase honouring its signal. */
const untilAborted: Behaviour = (signal) =>
  new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

interface Harness {
  clock: FakeClock;
  pipeline: ScriptedPipeline;
  coordinator: Coordinator<string>;
  events: CoordinatorEvent[];
  logger: RecordingLogger;
}

const live: Array<Coordinator<string>> = [];
afterEach(async () => {
  await Promise.all(live.splice(0).map((c) => c.stop()));
});

function harness(options: Partial<CoordinatorOptions<string>> = {}): Harness {
  const clock = new FakeClock();
  const pipeline = new ScriptedPipeline(clock);
  const events: CoordinatorEvent[] = [];
  const logger = new RecordingLogger();
  const coordinator = new Coordinator<string>({
    pipeline,
    bus: { publish: (event) => events.push(event) },
    clock,
    logger,
    driftIntervalMs: null,
    ...options,
  });
  live.push(coordinator);
  return { clock, pipeline, coordinator, events, logger };
}

/** Events without durations, compactly: `started#1[a,b]`, `render#1`, `completed#1:success`. */
function compact(events: CoordinatorEvent[]): string[] {
  return events.map((e) => {
    switch (e.type) {
      case 'reconciliation.triggered':
        return `triggered(${e.reason})`;
      case 'reconciliation.started':
        return `started#${e.id}[${e.reasons.join(',')}]`;
      case 'phase.completed':
        return `${e.phase}#${e.id}`;
      case 'reconciliation.failed':
        return `failed#${e.id}:${e.phase}:${e.error}`;
      default:
        return `completed#${e.id}:${e.result}`;
    }
  });
}

const successOf = (id: number, reasons: string): string[] => [
  `started#${id}[${reasons}]`,
  `render#${id}`,
  `validate#${id}`,
  `deploy#${id}`,
  `completed#${id}:success`,
];

describe('Coordinator construction', () => {
  const pipeline = { render: () => 1, deploy: () => {} };
  it.each([
    ['a zero base delay', { failureBaseDelayMs: 0 }],
    ['a negative max delay', { failureMaxDelayMs: -1 }],
    ['a NaN base delay', { failureBaseDelayMs: Number.NaN }],
    ['an infinite max delay', { failureMaxDelayMs: Number.POSITIVE_INFINITY }],
    ['a max below the base', { failureBaseDelayMs: 500, failureMaxDelayMs: 499 }],
    ['a base above the default max', { failureBaseDelayMs: 60_001 }],
    ['a zero drift interval', { driftIntervalMs: 0 }],
    ['a NaN drift interval', { driftIntervalMs: Number.NaN }],
  ])('throws RangeError for %s, checked after defaults are applied', (_name, options) => {
    expect(() => new Coordinator({ pipeline, ...options })).toThrow(RangeError);
  });

  it('accepts a null drift interval and a max equal to the base', () => {
    expect(
      () =>
        new Coordinator({
          pipeline,
          driftIntervalMs: null,
          failureBaseDelayMs: 5,
          failureMaxDelayMs: 5,
        }),
    ).not.toThrow();
  });

  it('is idle and has nothing pending before start()', () => {
    const { coordinator } = harness();
    expect(coordinator.state()).toEqual({
      running: false,
      pendingReasons: [],
      consecutiveFailures: 0,
    });
  });
});

describe('Coordinator reconciliations', () => {
  it('runs a "started" reconciliation on start(), in a microtask, publishing every phase in order', async () => {
    const { coordinator, pipeline, events } = harness();
    coordinator.start();
    expect(pipeline.calls).toEqual([]); // not inside the caller's stack
    expect(events).toEqual([]);
    expect(coordinator.state().pendingReasons).toEqual(['started']);
    await Promise.resolve();
    expect(pipeline.trace()).toEqual(['render@0']);
    await settle();
    expect(compact(events)).toEqual(successOf(1, 'started'));
    expect(pipeline.trace()).toEqual(['render@0', 'validate@0', 'deploy@0']);
    expect(pipeline.calls[2]?.desired).toBe('desired');
    expect(coordinator.state().lastCompleted).toEqual({ id: 1, result: 'success', atMs: 0 });
  });

  it('throws when start() is called while started', async () => {
    const { coordinator } = harness();
    coordinator.start();
    expect(() => coordinator.start()).toThrow(Error);
  });

  it('ignores triggers before start(): nothing published, nothing run', async () => {
    const { coordinator, pipeline, events } = harness();
    coordinator.trigger('early');
    await settle();
    expect(events).toEqual([]);
    expect(pipeline.calls).toEqual([]);
  });

  it('publishes triggered synchronously and begins at once in a microtask, joining distinct reasons', async () => {
    const { coordinator, pipeline, events } = harness();
    coordinator.start();
    await settle();
    events.length = 0;
    coordinator.trigger('a');
    coordinator.trigger('b');
    coordinator.trigger('a');
    expect(compact(events)).toEqual(['triggered(a)', 'triggered(b)', 'triggered(a)']);
    expect(coordinator.state()).toMatchObject({ running: false, pendingReasons: ['a', 'b'] });
    const before = pipeline.calls.length;
    await Promise.resolve();
    expect(pipeline.calls.length).toBe(before + 1);
    await settle();
    expect(compact(events).slice(3)).toEqual(successOf(2, 'a,b'));
  });

  it('collapses triggers arriving while one runs into one follow-up with the distinct reasons in arrival order', async () => {
    const { coordinator, pipeline, events } = harness();
    const gate = deferred();
    pipeline.next('deploy', () => gate.promise);
    coordinator.start();
    await settle();
    for (const reason of ['x', 'y', 'x', 'z']) coordinator.trigger(reason);
    await settle();
    expect(coordinator.state()).toMatchObject({
      running: true,
      runningId: 1,
      pendingReasons: ['x', 'y', 'z'],
    });
    expect(pipeline.trace()).toEqual(['render@0', 'validate@0', 'deploy@0']);
    gate.resolve();
    await settle();
    expect(compact(events)).toEqual([
      'started#1[started]',
      'render#1',
      'validate#1',
      'triggered(x)',
      'triggered(y)',
      'triggered(x)',
      'triggered(z)',
      'deploy#1',
      'completed#1:success',
      ...successOf(2, 'x,y,z'),
    ]);
  });

  it('gives every phase the same signal and skips validate when the pipeline has none', async () => {
    const clock = new FakeClock();
    const signals: AbortSignal[] = [];
    const events: CoordinatorEvent[] = [];
    const coordinator = new Coordinator<number>({
      pipeline: {
        render: (signal) => {
          signals.push(signal);
          return 1;
        },
        deploy: (_desired, signal) => {
          signals.push(signal);
        },
      },
      bus: { publish: (e) => events.push(e) },
      clock,
      driftIntervalMs: null,
    });
    coordinator.start();
    await settle();
    expect(signals[0]).toBe(signals[1]);
    expect(compact(events)).toEqual([
      'started#1[started]',
      'render#1',
      'deploy#1',
      'completed#1:success',
    ]);
  });

  it('measures every duration on the injected clock', async () => {
    const { coordinator, pipeline, events, clock } = harness();
    pipeline.next('render', () => clock.sleep(300).then(() => 'slow'));
    pipeline.next('deploy', () => clock.sleep(200));
    coordinator.start();
    await clock.advance(1_000);
    const durations = events.map((e) => ('durationMs' in e ? e.durationMs : undefined));
    expect(durations).toEqual([undefined, 300, 0, 200, 500]);
    expect(pipeline.calls[1]?.desired).toBe('slow');
    expect(coordinator.state().lastCompleted).toEqual({ id: 1, result: 'success', atMs: 500 });
  });

  it('publishes through an EventBus to its subscribers', async () => {
    const clock = new FakeClock();
    const bus = new EventBus<CoordinatorEvent>();
    const subscription = bus.subscribe({ types: ['reconciliation.completed'] });
    const coordinator = new Coordinator<string>({
      pipeline: new ScriptedPipeline(clock),
      bus,
      clock,
      driftIntervalMs: null,
    });
    live.push(coordinator);
    coordinator.start();
    await settle();
    const first = await subscription[Symbol.asyncIterator]().next();
    expect(first.value).toEqual({
      type: 'reconciliation.completed',
      id: 1,
      result: 'success',
      durationMs: 0,
    });
  });

  it('accepts a bus whose event type includes the coordinator events, and survives one that throws', async () => {
    const clock = new FakeClock();
    const logger = new RecordingLogger();
    const wide = new EventBus<CoordinatorEvent | { type: 'sink.applied'; target: string }>();
    const subscription = wide.subscribe({ types: ['reconciliation.started'] });
    const coordinator = new Coordinator<string>({
      pipeline: new ScriptedPipeline(clock),
      bus: wide,
      clock,
      driftIntervalMs: null,
    });
    live.push(coordinator);
    coordinator.start();
    await settle();
    expect((await subscription[Symbol.asyncIterator]().next()).value).toEqual({
      type: 'reconciliation.started',
      id: 1,
      reasons: ['started'],
    });

    const throwing = new Coordinator<string>({
      pipeline: new ScriptedPipeline(clock),
      bus: {
        publish: () => {
          throw new Error('bus down');
        },
      },
      clock,
      logger,
      driftIntervalMs: null,
    });
    live.push(throwing);
    throwing.start();
    await settle();
    expect(throwing.state().lastCompleted?.result).toBe('success');
    expect(logger.mentioning('bus down', 'error').length).toBeGreaterThan(0);
  });

  it('runs without a bus', async () => {
    const clock = new FakeClock();
    const pipeline = new ScriptedPipeline(clock);
    const coordinator = new Coordinator<string>({ pipeline, clock, driftIntervalMs: null });
    live.push(coordinator);
    coordinator.start();
    coordinator.trigger('x');
    await settle();
    expect(pipeline.trace()).toEqual(['render@0', 'validate@0', 'deploy@0']);
  });
});

describe('Coordinator failures', () => {
  it('ends a failed phase with failed then completed, skipping later phases, and keeps the PipelineError', async () => {
    const { coordinator, pipeline, events, logger } = harness();
    const cause = new Error('refused: empty pool');
    pipeline.next('validate', () => Promise.reject(cause));
    coordinator.start();
    await settle();
    expect(compact(events)).toEqual([
      'started#1[started]',
      'render#1',
      'failed#1:validate:refused: empty pool',
      'completed#1:failure',
    ]);
    expect(pipeline.trace()).toEqual(['render@0', 'validate@0']);
    const { lastError, consecutiveFailures } = coordinator.state();
    expect(lastError).toBeInstanceOf(PipelineError);
    expect(lastError?.phase).toBe('validate');
    expect(lastError?.cause).toBe(cause);
    expect(lastError?.message).toContain('validate');
    expect(lastError?.message).toContain('refused: empty pool');
    expect(consecutiveFailures).toBe(1);
    expect(logger.mentioning('refused: empty pool', 'error')).toHaveLength(1);
  });

  it('describes a thrown non-Error by String(value), in the event and the PipelineError', async () => {
    const { coordinator, pipeline, events } = harness();
    pipeline.next('render', () => {
      throw 42;
    });
    coordinator.start();
    await settle();
    expect(compact(events)).toEqual([
      'started#1[started]',
      'failed#1:render:42',
      'completed#1:failure',
    ]);
    const { lastError } = coordinator.state();
    expect(lastError?.cause).toBe(42);
    expect(lastError?.message).toContain('render');
    expect(lastError?.message).toContain('42');
  });

  it('retries after base × 2^(n−1), counted from each failed completion, capped at the max', async () => {
    const { coordinator, pipeline, events, clock } = harness({
      failureBaseDelayMs: 1_000,
      failureMaxDelayMs: 5_000,
    });
    for (let i = 0; i < 5; i += 1) pipeline.next('deploy', () => Promise.reject(new Error('down')));
    coordinator.start();
    await settle();
    expect(coordinator.state()).toMatchObject({ consecutiveFailures: 1, nextRetryAtMs: 1_000 });
    await clock.advance(20_000);
    const starts = pipeline.calls.filter((c) => c.phase === 'render').map((c) => c.atMs);
    expect(starts).toEqual([0, 1_000, 3_000, 7_000, 12_000, 17_000]);
    expect(
      events.filter((e) => e.type === 'reconciliation.started').map((e) => compact([e])[0]),
    ).toEqual([
      'started#1[started]',
      'started#2[retry]',
      'started#3[retry]',
      'started#4[retry]',
      'started#5[retry]',
      'started#6[retry]',
    ]);
    // the sixth succeeded: the streak and the error are cleared, nothing more is pending
    expect(coordinator.state()).toEqual({
      running: false,
      pendingReasons: [],
      consecutiveFailures: 0,
      lastCompleted: { id: 6, result: 'success', atMs: 17_000 },
    });
  });

  it('lets a trigger replace the pending retry, while the failure streak keeps counting', async () => {
    const { coordinator, pipeline, clock } = harness({ failureBaseDelayMs: 1_000 });
    pipeline.next('deploy', () => Promise.reject(new Error('down')));
    pipeline.next('deploy', () => Promise.reject(new Error('down')));
    coordinator.start();
    await clock.advance(500);
    coordinator.trigger('pods changed');
    await clock.advance(600); // past the replaced retry's 1000
    expect(pipeline.calls.filter((c) => c.phase === 'render').map((c) => c.atMs)).toEqual([0, 500]);
    expect(coordinator.state()).toMatchObject({ consecutiveFailures: 2, nextRetryAtMs: 2_500 });
    await clock.advance(1_400);
    expect(pipeline.calls.filter((c) => c.phase === 'render').map((c) => c.atMs)).toEqual([
      0, 500, 2_500,
    ]);
  });
});

describe('Coordinator drift', () => {
  it('runs "drift" driftIntervalMs after the last completion, pushed out by any run that begins meanwhile', async () => {
    const { coordinator, pipeline, events, clock } = harness({ driftIntervalMs: 10_000 });
    coordinator.start();
    await clock.advance(4_000);
    coordinator.trigger('x'); // completes at 4000: drift moves to 14000
    await clock.advance(9_999);
    expect(pipeline.calls.filter((c) => c.phase === 'render')).toHaveLength(2);
    await clock.advance(1);
    expect(events.filter((e) => e.type === 'reconciliation.started').at(-1)).toEqual({
      type: 'reconciliation.started',
      id: 3,
      reasons: ['drift'],
    });
    await clock.advance(10_000);
    expect(pipeline.calls.filter((c) => c.phase === 'render').map((c) => c.atMs)).toEqual([
      0, 4_000, 14_000, 24_000,
    ]);
  });

  it('does not run drift while a retry is pending: the retry is the next run', async () => {
    const { coordinator, pipeline, clock } = harness({
      driftIntervalMs: 1_000,
      failureBaseDelayMs: 5_000,
    });
    pipeline.next('render', () => Promise.reject(new Error('no store')));
    coordinator.start();
    await clock.advance(4_999);
    expect(pipeline.calls).toHaveLength(1);
    await clock.advance(1);
    expect(pipeline.calls.filter((c) => c.phase === 'render').map((c) => c.atMs)).toEqual([
      0, 5_000,
    ]);
  });

  it('runs no drift when driftIntervalMs is null, and drifts every minute by default', async () => {
    const off = harness();
    off.coordinator.start();
    await off.clock.advance(600_000);
    expect(off.pipeline.calls.filter((c) => c.phase === 'render')).toHaveLength(1);

    const clock = new FakeClock();
    const pipeline = new ScriptedPipeline(clock);
    const coordinator = new Coordinator<string>({ pipeline, clock });
    live.push(coordinator);
    coordinator.start();
    await clock.advance(120_000);
    expect(pipeline.calls.filter((c) => c.phase === 'render').map((c) => c.atMs)).toEqual([
      0, 60_000, 120_000,
    ]);
  });
});

describe('Coordinator stop()', () => {
  it('aborts the running reconciliation and waits for it: aborted, no phase.completed, no failed, no retry', async () => {
    const { coordinator, pipeline, events, clock } = harness({ failureBaseDelayMs: 100 });
    pipeline.next('deploy', untilAborted);
    coordinator.start();
    await settle();
    const signal = pipeline.calls[0]?.signal;
    const stopped = coordinator.stop();
    expect(signal?.aborted).toBe(true);
    await stopped;
    expect(compact(events)).toEqual([
      'started#1[started]',
      'render#1',
      'validate#1',
      'completed#1:aborted',
    ]);
    await clock.advance(10_000);
    expect(pipeline.calls).toHaveLength(3);
    expect(coordinator.state()).toEqual({
      running: false,
      pendingReasons: [],
      consecutiveFailures: 0,
      lastCompleted: { id: 1, result: 'aborted', atMs: 0 },
    });
  });

  it('ends as aborted after a phase that ignored the signal and succeeded, calling no later phase', async () => {
    const { coordinator, pipeline, events } = harness();
    const gate = deferred();
    pipeline.next('render', () => gate.promise.then(() => 'late'));
    coordinator.start();
    await settle();
    const stopped = coordinator.stop();
    let resolved = false;
    void stopped.then(() => {
      resolved = true;
    });
    await settle();
    expect(resolved).toBe(false); // waits for the phase to settle
    gate.resolve();
    await stopped;
    expect(compact(events)).toEqual(['started#1[started]', 'completed#1:aborted']);
    expect(pipeline.trace()).toEqual(['render@0']);
  });

  it('ignores triggers from the moment stop() is called, and cancels the follow-up', async () => {
    const { coordinator, pipeline, events } = harness();
    pipeline.next('deploy', untilAborted);
    coordinator.start();
    await settle();
    coordinator.trigger('queued');
    const stopped = coordinator.stop();
    coordinator.trigger('late');
    await stopped;
    await settle();
    expect(compact(events)).toEqual([
      'started#1[started]',
      'render#1',
      'validate#1',
      'triggered(queued)',
      'completed#1:aborted',
    ]);
    expect(pipeline.calls).toHaveLength(3);
  });

  it('cancels the pending retry and leaves the failure streak as it was', async () => {
    const { coordinator, pipeline, clock } = harness();
    pipeline.next('render', () => Promise.reject(new Error('down')));
    coordinator.start();
    await settle();
    expect(coordinator.state().nextRetryAtMs).toBe(1_000);
    await coordinator.stop();
    expect(coordinator.state().nextRetryAtMs).toBeUndefined();
    expect(coordinator.state().consecutiveFailures).toBe(1);
    await clock.advance(100_000);
    expect(pipeline.calls).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('cancels the drift timer', async () => {
    const { coordinator, pipeline, clock } = harness({ driftIntervalMs: 1_000 });
    coordinator.start();
    await settle();
    await coordinator.stop();
    await clock.advance(10_000);
    expect(pipeline.calls).toHaveLength(3);
    expect(clock.pendingTimers).toBe(0);
  });

  it('runs nothing when stopped before the started reconciliation began', async () => {
    const { coordinator, pipeline, events } = harness();
    coordinator.start();
    await coordinator.stop();
    await settle();
    expect(pipeline.calls).toEqual([]);
    expect(events).toEqual([]);
  });

  it('is idempotent, refuses start() while pending, and allows a new term once resolved, ids continuing', async () => {
    const { coordinator, pipeline, events } = harness();
    const gate = deferred();
    pipeline.next('deploy', () => gate.promise);
    coordinator.start();
    await settle();
    const first = coordinator.stop();
    const second = coordinator.stop();
    expect(() => coordinator.start()).toThrow(Error);
    gate.resolve();
    await Promise.all([first, second]);
    await expect(coordinator.stop()).resolves.toBeUndefined();
    expect(coordinator.state().lastCompleted?.result).toBe('aborted');

    pipeline.next('render', () => Promise.reject(new Error('down')));
    coordinator.start(); // render of id 2 fails
    await settle();
    expect(coordinator.state().consecutiveFailures).toBe(1);
    await coordinator.stop();
    coordinator.start(); // start() resets the streak
    expect(coordinator.state().consecutiveFailures).toBe(0);
    await settle();
    expect(events.filter((e) => e.type === 'reconciliation.started').map((e) => e.id)).toEqual([
      1, 2, 3,
    ]);
    expect(coordinator.state().lastError).toBeUndefined(); // cleared by id 3's success
  });

  it('resolves at once when never started', async () => {
    const { coordinator } = harness();
    await expect(coordinator.stop()).resolves.toBeUndefined();
  });
});
