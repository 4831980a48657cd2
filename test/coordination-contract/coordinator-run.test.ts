/**
 * Coordinator: construction, start, trigger, collapsing, the event sequence of one
 * reconciliation, failures and `state()`.
 */
import { describe, expect, it } from 'vitest';
import {
  Coordinator,
  type CoordinatorEvent,
  EventBus,
  PipelineError,
  type Subscription,
} from '../../src/index.js';
import { coordinatorHarness, deferred, FakeClock, macrotask, until } from './harness.js';

/** Every started reconciliation has exactly one completed. */
function expectBalanced(events: CoordinatorEvent[]): void {
  const started = events.filter((e) => e.type === 'reconciliation.started').map((e) => e.id);
  const completed = events.filter((e) => e.type === 'reconciliation.completed').map((e) => e.id);
  expect(completed).toEqual(started);
}

const pipeline = { render: () => 1, deploy: () => {} };

describe('Coordinator construction', () => {
  it('accepts a pipeline alone', () => {
    expect(() => new Coordinator({ pipeline })).not.toThrow();
  });

  it.each([
    ['failureBaseDelayMs', 0],
    ['failureBaseDelayMs', -1],
    ['failureBaseDelayMs', Number.NaN],
    ['failureBaseDelayMs', Number.POSITIVE_INFINITY],
    ['failureMaxDelayMs', 0],
    ['failureMaxDelayMs', -1],
    ['failureMaxDelayMs', Number.NaN],
    ['failureMaxDelayMs', Number.POSITIVE_INFINITY],
    ['driftIntervalMs', 0],
    ['driftIntervalMs', -60_000],
    ['driftIntervalMs', Number.NaN],
    ['driftIntervalMs', Number.POSITIVE_INFINITY],
  ])('throws a RangeError when %s is %s (not a positive finite number)', (name, value) => {
    expect(() => new Coordinator({ pipeline, [name]: value })).toThrow(RangeError);
  });

  it('accepts driftIntervalMs: null', () => {
    expect(() => new Coordinator({ pipeline, driftIntervalMs: null })).not.toThrow();
  });

  it('throws a RangeError when failureMaxDelayMs alone is below the default base (defaults applied first)', () => {
    expect(() => new Coordinator({ pipeline, failureMaxDelayMs: 500 })).toThrow(RangeError);
  });

  it('throws a RangeError when failureBaseDelayMs alone is above the default max', () => {
    expect(() => new Coordinator({ pipeline, failureBaseDelayMs: 120_000 })).toThrow(RangeError);
  });

  it('accepts failureMaxDelayMs equal to failureBaseDelayMs', () => {
    expect(
      () => new Coordinator({ pipeline, failureBaseDelayMs: 5_000, failureMaxDelayMs: 5_000 }),
    ).not.toThrow();
  });
});

describe('Coordinator start()', () => {
  it("begins a reconciliation with reason 'started' at once, without a triggered event", async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    await macrotask();
    expect(h.clock.now()).toBe(1_000);
    expect(h.log).toEqual([
      'started:1:started',
      'call:render',
      'phase.completed:1:render',
      'call:validate',
      'phase.completed:1:validate',
      'call:deploy',
      'phase.completed:1:deploy',
      'completed:1:success',
    ]);
    expect(h.of('reconciliation.started')[0]).toEqual({
      type: 'reconciliation.started',
      id: 1,
      reasons: ['started'],
    });
  });

  it('throws when start() is called while started', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    expect(() => h.coordinator.start()).toThrow(/Coordinator\.start\(\) called while started/);
    await h.atRest();
    expect(() => h.coordinator.start()).toThrow(/Coordinator\.start\(\) called while started/);
    expect(h.of('reconciliation.started')).toHaveLength(1);
  });
});

describe('Coordinator trigger()', () => {
  it('is ignored before start(): nothing published, nothing run', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.trigger('early');
    await h.atRest();
    await h.clock.advance(60_000);
    expect(h.events).toEqual([]);
    expect(h.scripted.calls).toEqual([]);
  });

  it('publishes reconciliation.triggered and, when idle, begins a run in a microtask, never inside the caller’s stack', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    await h.atRest();
    h.log.length = 0;

    h.coordinator.trigger('pool changed');
    expect(h.log).toEqual(['triggered:pool changed']);
    expect(h.events.at(-1)).toEqual({ type: 'reconciliation.triggered', reason: 'pool changed' });

    await macrotask(); // only microtasks ran in between: no timer, no debounce
    expect(h.clock.now()).toBe(1_000);
    expect(h.log).toEqual([
      'triggered:pool changed',
      'started:2:pool changed',
      'call:render',
      'phase.completed:2:render',
      'call:validate',
      'phase.completed:2:validate',
      'call:deploy',
      'phase.completed:2:deploy',
      'completed:2:success',
    ]);
  });

  it('joins triggers that arrive before the run has begun into its reasons', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('a');
    h.coordinator.trigger('b');
    await h.atRest();
    expect(h.of('reconciliation.triggered').map((e) => e.reason)).toEqual(['a', 'b']);
    expect(h.startedReasons()).toEqual([['started'], ['a', 'b']]);
    expect(h.scripted.callsOf('render')).toHaveLength(2);
  });

  it('collapses triggers that arrive during a run into exactly one follow-up with the distinct reasons in arrival order, begun as soon as the run completes', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    for (const reason of ['a', 'b', 'a', 'c', 'b']) h.coordinator.trigger(reason);
    await h.atRest();
    expect(h.of('reconciliation.triggered').map((e) => e.reason)).toEqual([
      'a',
      'b',
      'a',
      'c',
      'b',
    ]);
    expect(h.scripted.callsOf('render')).toHaveLength(1);

    gate.resolve('desired');
    await h.atRest();
    expect(h.clock.now()).toBe(1_000);
    const completedAt = h.log.indexOf('completed:1:success');
    expect(h.log[completedAt + 1]).toBe('started:2:a,b,c');
    expect(h.startedReasons()).toEqual([['started'], ['a', 'b', 'c']]);

    await h.clock.advance(600_000);
    expect(h.scripted.callsOf('render')).toHaveLength(2);
    expectBalanced(h.events);
  });

  it('begins the follow-up right after a failed run too', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('x');
    gate.reject(new Error('render broke'));
    await h.atRest();
    const failedAt = h.log.indexOf('completed:1:failure');
    expect(failedAt).toBeGreaterThan(-1);
    expect(h.log[failedAt + 1]).toBe('started:2:x');
    expect(h.startedReasons()).toEqual([['started'], ['x']]);
    expect(h.clock.now()).toBe(1_000);
  });

  it('runs at most one reconciliation at a time', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    let active = 0;
    let maxActive = 0;
    h.scripted.always('render', async (signal) => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      await h.clock.sleep(100, signal);
      active -= 1;
      return 'd';
    });
    h.coordinator.start();
    for (let i = 0; i < 5; i += 1) {
      h.coordinator.trigger(`t${i}`);
      await h.clock.advance(30);
    }
    await h.clock.advance(1_000);
    expect(maxActive).toBe(1);
    expectBalanced(h.events);
  });
});

describe('Coordinator reconciliation', () => {
  it('publishes started, each phase followed by phase.completed with its duration on the clock, then completed success with the total duration', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('render', (signal) => h.clock.sleep(100, signal).then(() => 'desired'));
    h.scripted.once('validate', (signal) => h.clock.sleep(50, signal));
    h.scripted.once('deploy', (signal) => h.clock.sleep(200, signal));
    h.coordinator.start();
    await h.clock.advance(350);

    expect(h.events).toEqual([
      { type: 'reconciliation.started', id: 1, reasons: ['started'] },
      { type: 'phase.completed', id: 1, phase: 'render', durationMs: 100 },
      { type: 'phase.completed', id: 1, phase: 'validate', durationMs: 50 },
      { type: 'phase.completed', id: 1, phase: 'deploy', durationMs: 200 },
      { type: 'reconciliation.completed', id: 1, result: 'success', durationMs: 350 },
    ]);
    expect(h.scripted.calls.map((c) => [c.phase, c.atMs])).toEqual([
      ['render', 1_000],
      ['validate', 1_100],
      ['deploy', 1_150],
    ]);
  });

  it('hands render’s desired state to validate and deploy, and the same signal to every phase', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const desired = { pools: ['p1'] };
    h.scripted.once('render', () => Promise.resolve(desired));
    h.coordinator.start();
    await h.atRest();
    const [render, validate, deploy] = h.scripted.calls;
    expect(validate!.desired).toBe(desired);
    expect(deploy!.desired).toBe(desired);
    expect(validate!.signal).toBe(render!.signal);
    expect(deploy!.signal).toBe(render!.signal);
    expect(render!.signal.aborted).toBe(false);
  });

  it('skips validate when the pipeline has none', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, withValidate: false });
    h.coordinator.start();
    await h.atRest();
    expect(h.log).toEqual([
      'started:1:started',
      'call:render',
      'phase.completed:1:render',
      'call:deploy',
      'phase.completed:1:deploy',
      'completed:1:success',
    ]);
  });

  it('ends a run whose validate throws with failed (that phase, the error’s message) then completed failure, and never calls deploy', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const refused = new Error('desired state has no routes');
    h.scripted.once('render', (signal) => h.clock.sleep(40, signal).then(() => 'd'));
    h.scripted.once('validate', (signal) =>
      h.clock.sleep(10, signal).then(() => {
        throw refused;
      }),
    );
    h.coordinator.start();
    await h.clock.advance(50);

    expect(h.events).toEqual([
      { type: 'reconciliation.started', id: 1, reasons: ['started'] },
      { type: 'phase.completed', id: 1, phase: 'render', durationMs: 40 },
      {
        type: 'reconciliation.failed',
        id: 1,
        phase: 'validate',
        error: 'desired state has no routes',
      },
      { type: 'reconciliation.completed', id: 1, result: 'failure', durationMs: 50 },
    ]);
    expect(h.scripted.callsOf('deploy')).toHaveLength(0);
  });

  it('wraps the error in a PipelineError naming the phase, with the error as cause, logs it and keeps it in state().lastError', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const refused = new Error('quota exceeded');
    h.scripted.once('deploy', () => {
      throw refused;
    });
    h.coordinator.start();
    await h.atRest();

    const lastError = h.coordinator.state().lastError;
    expect(lastError).toBeInstanceOf(PipelineError);
    expect(lastError).toBeInstanceOf(Error);
    expect(lastError!.phase).toBe('deploy');
    expect(lastError!.cause).toBe(refused);
    expect(lastError!.message).toContain('deploy');
    expect(lastError!.message).toContain('quota exceeded');
    expect(h.logger.mentioning('quota exceeded').length).toBeGreaterThan(0);
    expect(h.of('reconciliation.failed')).toEqual([
      { type: 'reconciliation.failed', id: 1, phase: 'deploy', error: 'quota exceeded' },
    ]);
  });

  it('treats a rejected render like a throw: failed in render, no later phase', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('render', () => Promise.reject(new Error('store not synced')));
    h.coordinator.start();
    await h.atRest();
    expect(h.log).toEqual([
      'started:1:started',
      'call:render',
      'failed:1:render',
      'completed:1:failure',
    ]);
    expect(h.of('reconciliation.failed')[0]!.error).toBe('store not synced');
    expect(h.coordinator.state().lastError!.phase).toBe('render');
  });

  it.each([
    [42, '42'],
    ['plain text', 'plain text'],
    [null, 'null'],
    [{ toString: () => 'custom failure' }, 'custom failure'],
  ])('describes a thrown non-Error %s by String(value)', async (thrown, text) => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('deploy', () => {
      throw thrown;
    });
    h.coordinator.start();
    await h.atRest();
    expect(h.of('reconciliation.failed')).toEqual([
      { type: 'reconciliation.failed', id: 1, phase: 'deploy', error: text },
    ]);
    const lastError = h.coordinator.state().lastError!;
    expect(lastError).toBeInstanceOf(PipelineError);
    expect(lastError.cause).toBe(thrown);
    expect(lastError.message).toContain('deploy');
    expect(lastError.message).toContain(text);
  });

  it('keeps lastError until the next success', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    const first = new Error('first');
    const second = new Error('second');
    h.scripted.once('render', () => {
      throw first;
    });
    h.scripted.once('render', () => {
      throw second;
    });
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().lastError!.cause).toBe(first);
    await h.clock.advance(1_000); // retry fails
    expect(h.coordinator.state().lastError!.cause).toBe(second);
    await h.clock.advance(2_000); // retry succeeds
    expect(h.of('reconciliation.completed').map((e) => e.result)).toEqual([
      'failure',
      'failure',
      'success',
    ]);
    expect(h.coordinator.state().lastError).toBeUndefined();
  });

  it('publishes only through bus.publish: a subscriber receives the same events in the same order', async () => {
    const clock = new FakeClock(0);
    const bus = new EventBus<CoordinatorEvent>();
    const sub: Subscription<CoordinatorEvent> = bus.subscribe();
    const received: CoordinatorEvent[] = [];
    void (async () => {
      for await (const event of sub) received.push(event);
    })();
    const coordinator = new Coordinator({
      pipeline: { render: () => 'd', deploy: () => {} },
      bus,
      clock,
      driftIntervalMs: null,
    });
    coordinator.start();
    await until(() => received.at(-1)?.type === 'reconciliation.completed', {
      what: 'the first run to complete',
    });
    coordinator.trigger('again');
    await until(() => received.length >= 9, { what: 'the second run to complete' });
    expect(received.map((e) => e.type)).toEqual([
      'reconciliation.started',
      'phase.completed',
      'phase.completed',
      'reconciliation.completed',
      'reconciliation.triggered',
      'reconciliation.started',
      'phase.completed',
      'phase.completed',
      'reconciliation.completed',
    ]);
    sub.close();
  });

  it('accepts a bus whose event type is wider than CoordinatorEvent', async () => {
    type Wider = CoordinatorEvent | { type: 'other'; x: number };
    const bus = new EventBus<Wider>();
    const sub = bus.subscribe({ types: ['reconciliation.completed'] });
    const coordinator = new Coordinator({
      pipeline: { render: () => 'd', deploy: () => {} },
      bus,
      clock: new FakeClock(0),
      driftIntervalMs: null,
    });
    coordinator.start();
    for await (const event of sub) {
      expect(event).toMatchObject({ type: 'reconciliation.completed', result: 'success' });
      break;
    }
  });

  it('runs the pipeline without a bus, publishing nothing', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, withBus: false });
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('x');
    await h.atRest();
    expect(h.scripted.callsOf('deploy')).toHaveLength(2);
    expect(h.events).toEqual([]);
    expect(h.coordinator.state().lastCompleted).toEqual({ id: 2, result: 'success', atMs: 1_000 });
  });
});

describe('Coordinator state()', () => {
  it('reports an idle coordinator before start()', () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const state = h.coordinator.state();
    expect(state.running).toBe(false);
    expect(state.runningId).toBeUndefined();
    expect(state.pendingReasons).toEqual([]);
    expect(state.consecutiveFailures).toBe(0);
    expect(state.nextRetryAtMs).toBeUndefined();
    expect(state.lastCompleted).toBeUndefined();
    expect(state.lastError).toBeUndefined();
  });

  it('reports the running id and the reasons waiting for the follow-up', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<void>();
    h.scripted.once('deploy', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('b');
    h.coordinator.trigger('a');
    h.coordinator.trigger('b');
    let state = h.coordinator.state();
    expect(state.running).toBe(true);
    expect(state.runningId).toBe(1);
    expect(state.pendingReasons).toEqual(['b', 'a']);

    await h.clock.advance(250);
    gate.resolve();
    await h.atRest();
    state = h.coordinator.state();
    expect(state.running).toBe(false);
    expect(state.runningId).toBeUndefined();
    expect(state.pendingReasons).toEqual([]);
    expect(state.lastCompleted).toEqual({ id: 2, result: 'success', atMs: 1_250 });
  });

  it('reports the last completed run with its result and clock time', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 5_000 });
    h.scripted.once('render', (signal) =>
      h.clock.sleep(300, signal).then(() => {
        throw new Error('nope');
      }),
    );
    h.coordinator.start();
    await h.clock.advance(300);
    const state = h.coordinator.state();
    expect(state.lastCompleted).toEqual({ id: 1, result: 'failure', atMs: 1_300 });
    expect(state.consecutiveFailures).toBe(1);
    expect(state.nextRetryAtMs).toBe(6_300);
    expect(state.running).toBe(false);
  });
});
