/**
 * Coordinator stop(): aborting the running reconciliation, what 'aborted' means, cancelling
 * timers, terms and ids.
 */
import { describe, expect, it } from 'vitest';
import type { CoordinatorEvent } from '../../src/index.js';
import { coordinatorHarness, deferred, track, untilAborted } from './harness.js';

function expectBalanced(events: CoordinatorEvent[]): void {
  const started = events.filter((e) => e.type === 'reconciliation.started').map((e) => e.id);
  const completed = events.filter((e) => e.type === 'reconciliation.completed').map((e) => e.id);
  expect(completed).toEqual(started);
}

describe('Coordinator stop()', () => {
  it('aborts the running reconciliation’s signal and waits for it to settle', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise); // ignores its signal
    h.coordinator.start();
    await h.atRest();
    const signal = h.scripted.calls[0]!.signal;

    const stopping = track(h.coordinator.stop());
    await h.atRest();
    expect(signal.aborted).toBe(true);
    expect(stopping.settled).toBe(false);
    expect(h.coordinator.state().running).toBe(true);

    gate.resolve('late');
    await h.atRest();
    expect(stopping.settled).toBe(true);
    expect(stopping.rejected).toBe(false);
  });

  it("ends the run with completed 'aborted' and no phase.completed for the phase that settled after the abort, nor any later phase", async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    const stopping = h.coordinator.stop();
    gate.resolve('late');
    await stopping;

    expect(h.log).toEqual(['started:1:started', 'call:render', 'completed:1:aborted']);
    expect(h.coordinator.state().lastCompleted).toEqual({ id: 1, result: 'aborted', atMs: 1_000 });
  });

  it("reports 'aborted', not a failure, when the phase rejects with the abort reason", async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('validate', (signal) => untilAborted(signal));
    h.coordinator.start();
    await h.clock.advance(700);
    await h.coordinator.stop();

    expect(h.events).toEqual([
      { type: 'reconciliation.started', id: 1, reasons: ['started'] },
      { type: 'phase.completed', id: 1, phase: 'render', durationMs: 0 },
      { type: 'reconciliation.completed', id: 1, result: 'aborted', durationMs: 700 },
    ]);
    expect(h.scripted.callsOf('deploy')).toHaveLength(0);
    const state = h.coordinator.state();
    expect(state.lastError).toBeUndefined();
    expect(state.consecutiveFailures).toBe(0);
    expect(state.nextRetryAtMs).toBeUndefined();
  });

  it("reports 'aborted' with no failed event and no retry even if the phase threw its own error after the abort", async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('deploy', (signal) =>
      untilAborted(signal).catch(() => {
        throw new Error('deploy interrupted half-way');
      }),
    );
    h.coordinator.start();
    await h.atRest();
    await h.coordinator.stop();

    expect(h.described()).toEqual([
      'started:1:started',
      'phase.completed:1:render',
      'phase.completed:1:validate',
      'completed:1:aborted',
    ]);
    expect(h.of('reconciliation.failed')).toEqual([]);
    expect(h.coordinator.state().lastError).toBeUndefined();
    await h.clock.advance(600_000);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
  });

  it('calls no phase after stop() resolved: the pending follow-up is cancelled', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.scripted.once('render', (signal) => untilAborted(signal));
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('queued');
    await h.coordinator.stop();
    const calls = h.scripted.calls.length;

    await h.atRest();
    await h.clock.advance(3_600_000);
    expect(h.scripted.calls).toHaveLength(calls);
    expect(h.startedReasons()).toEqual([['started']]);
    expectBalanced(h.events);
  });

  it('cancels the pending retry', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('render', () => {
      throw new Error('failed');
    });
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().nextRetryAtMs).toBe(2_000);

    await h.coordinator.stop();
    expect(h.coordinator.state().nextRetryAtMs).toBeUndefined();
    await h.clock.advance(3_600_000);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
  });

  it('cancels the drift timer', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.coordinator.start();
    await h.atRest();
    await h.coordinator.stop();
    await h.clock.advance(3_600_000);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
  });

  it('resolves at once when idle', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.coordinator.start();
    await h.atRest();
    const stopping = track(h.coordinator.stop());
    await h.atRest();
    expect(stopping.settled).toBe(true);
    expect(h.clock.now()).toBe(1_000);
  });

  it('ignores triggers from the moment stop() is called', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    const stopping = h.coordinator.stop();
    h.coordinator.trigger('during stop');
    expect(h.of('reconciliation.triggered')).toEqual([]);
    gate.resolve('d');
    await stopping;
    h.coordinator.trigger('after stop');
    await h.atRest();
    expect(h.of('reconciliation.triggered')).toEqual([]);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
  });

  it('calls no phase after stop() resolved when a trigger was still about to begin its run', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('x');
    await h.coordinator.stop();
    const calls = h.scripted.calls.length;
    await h.atRest();
    await h.clock.advance(600_000);
    expect(h.scripted.calls).toHaveLength(calls);
    expectBalanced(h.events);
  });

  it('leaves a clean state: not running, no pending reasons, no nextRetryAtMs', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('render', (signal) => untilAborted(signal));
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('a');
    h.coordinator.trigger('b');
    expect(h.coordinator.state().pendingReasons).toEqual(['a', 'b']);
    await h.clock.advance(250);
    await h.coordinator.stop();
    const state = h.coordinator.state();
    expect(state.running).toBe(false);
    expect(state.runningId).toBeUndefined();
    expect(state.pendingReasons).toEqual([]);
    expect(state.nextRetryAtMs).toBeUndefined();
    expect(state.lastCompleted).toEqual({ id: 1, result: 'aborted', atMs: 1_250 });
  });

  it('is idempotent: a second call while pending and a call after it resolved both resolve', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    const first = track(h.coordinator.stop());
    const second = track(h.coordinator.stop());
    await h.atRest();
    expect(first.settled).toBe(false);
    expect(second.settled).toBe(false);
    gate.resolve('d');
    await h.atRest();
    expect(first.settled).toBe(true);
    expect(second.settled).toBe(true);
    expect(second.rejected).toBe(false);
    await expect(h.coordinator.stop()).resolves.toBeUndefined();
    expect(h.of('reconciliation.completed')).toHaveLength(1);
  });

  it('throws on start() while stop() is still pending', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    const stopping = h.coordinator.stop();
    expect(() => h.coordinator.start()).toThrow(/Coordinator\.start\(\) called while a stop/);
    gate.resolve('d');
    await stopping;
    expect(h.startedReasons()).toEqual([['started']]);
  });

  it("begins a new term after stop() resolved: 'started' again, ids continuing 1, 2, 3 across terms", async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('x');
    await h.atRest();
    await h.coordinator.stop();
    await h.clock.advance(5_000);

    h.coordinator.start();
    await h.atRest();
    expect(h.of('reconciliation.started')).toEqual([
      { type: 'reconciliation.started', id: 1, reasons: ['started'] },
      { type: 'reconciliation.started', id: 2, reasons: ['x'] },
      { type: 'reconciliation.started', id: 3, reasons: ['started'] },
    ]);
    expect(h.coordinator.state().lastCompleted).toEqual({ id: 3, result: 'success', atMs: 6_000 });
    h.coordinator.trigger('y');
    await h.atRest();
    expect(h.of('reconciliation.started').at(-1)).toEqual({
      type: 'reconciliation.started',
      id: 4,
      reasons: ['y'],
    });
    expectBalanced(h.events);
  });

  it('gives the new term’s runs a fresh signal that has not aborted', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('render', (signal) => untilAborted(signal));
    h.coordinator.start();
    await h.atRest();
    await h.coordinator.stop();
    h.coordinator.start();
    await h.atRest();
    const renders = h.scripted.callsOf('render');
    expect(renders).toHaveLength(2);
    expect(renders[0]!.signal.aborted).toBe(true);
    expect(renders[1]!.signal.aborted).toBe(false);
    expect(h.of('reconciliation.completed').map((e) => e.result)).toEqual(['aborted', 'success']);
  });
});
