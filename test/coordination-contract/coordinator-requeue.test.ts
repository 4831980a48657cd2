/**
 * COORDINATION.md amendment 1: a deploy that returns `{ requeueAfterMs }` is run again that many
 * ms after its successful run completed, through the coordinator's one timer (harness starts at
 * 1_000, all on the fake clock).
 */
import { describe, expect, it } from 'vitest';
import { coordinatorHarness, deferred, untilAborted } from './harness.js';

const requeue = (requeueAfterMs: unknown) => () => ({ requeueAfterMs });

describe('Coordinator requeue', () => {
  it("begins a run with reason 'requeue' requeueAfterMs after the successful run completed, without a triggered event", async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('deploy', requeue(5_000));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(4_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 6_000]);
    expect(h.startedReasons()).toEqual([['started'], ['requeue']]);
    expect(h.of('reconciliation.triggered')).toEqual([]);
    // The requeued run asked for nothing: nothing more runs.
    await h.clock.advance(3_600_000);
    expect(h.scripted.callsOf('render')).toHaveLength(2);
  });

  it('counts the requeue delay from when the run completed, not from when it began', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('deploy', (signal) =>
      h.clock.sleep(700, signal).then(() => ({ requeueAfterMs: 2_000 })),
    );
    h.coordinator.start();
    await h.clock.advance(700); // completed at 1_700
    await h.clock.advance(1_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 3_700]);
  });

  it('keeps requeueing while every deploy asks for it', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.scripted.always('deploy', requeue(1_000));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(3_000);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 2_000, 3_000, 4_000]);
    expect(h.startedReasons()).toEqual([['started'], ['requeue'], ['requeue'], ['requeue']]);
  });

  it('lets a trigger begin a run at once, replacing the pending requeue', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('deploy', requeue(10_000));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(2_000);
    h.coordinator.trigger('cell changed');
    await h.atRest();
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 3_000]);
    // The triggered run asked for nothing, so the replaced requeue never comes.
    await h.clock.advance(3_600_000);
    expect(h.startedReasons()).toEqual([['started'], ['cell changed']]);
  });

  it('arms the one timer for drift when drift is due sooner, and drift then counts as before', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 10_000 });
    h.scripted.once('deploy', requeue(25_000));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(9_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    await h.clock.advance(10_000);
    // drift at 11_000 replaced the requeue due at 26_000; the next drift counts from it
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 11_000, 21_000]);
    expect(h.startedReasons()).toEqual([['started'], ['drift'], ['drift']]);
  });

  it('never runs drift while an earlier requeue is pending, and drift counts from the requeued run', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 10_000 });
    h.scripted.once('deploy', requeue(4_000));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(4_000); // requeue at 5_000
    await h.clock.advance(9_999);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 5_000]);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 5_000, 15_000]);
    expect(h.startedReasons()).toEqual([['started'], ['requeue'], ['drift']]);
  });

  it('runs the requeue, not drift, when both are due at the same time', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 10_000 });
    h.scripted.once('deploy', requeue(10_000));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(10_000);
    expect(h.startedReasons()).toEqual([['started'], ['requeue']]);
  });

  it.each([
    ['undefined', () => undefined],
    ['an object without requeueAfterMs', () => ({})],
    ['zero', requeue(0)],
    ['a negative number', requeue(-5)],
    ['NaN', requeue(Number.NaN)],
    ['Infinity', requeue(Number.POSITIVE_INFINITY)],
    ['a string', requeue('100')],
    ['null', () => null],
  ])('asks for nothing when deploy returns %s: only drift follows', async (_name, impl) => {
    const h = coordinatorHarness({ driftIntervalMs: 30_000 });
    h.scripted.once('deploy', impl);
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(29_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.startedReasons()).toEqual([['started'], ['drift']]);
  });

  it('never requeues a failed run: the failure retry applies', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 5_000 });
    h.scripted.once('deploy', () => Promise.reject(new Error('router down')));
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().nextRetryAtMs).toBe(6_000);
    await h.clock.advance(5_000);
    expect(h.startedReasons()).toEqual([['started'], ['retry']]);
  });

  it('never requeues an aborted run, and stop() cancels a pending requeue', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.scripted.once('deploy', requeue(1_000));
    h.coordinator.start();
    await h.atRest();
    await h.coordinator.stop();
    await h.clock.advance(60_000);
    expect(h.scripted.callsOf('render')).toHaveLength(1);

    // A deploy aborted by stop() that would have asked for a requeue: nothing follows either.
    h.coordinator.start();
    const entered = deferred();
    h.scripted.once('deploy', (signal) => {
      entered.resolve();
      return untilAborted(signal).catch(() => ({ requeueAfterMs: 1_000 }));
    });
    await entered.promise;
    await h.coordinator.stop();
    expect(h.coordinator.state().lastCompleted?.result).toBe('aborted');
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(60_000);
    expect(h.startedReasons()).toEqual([['started'], ['started'], ['started']]);
  });

  it('collapses triggers that arrive during a run into the follow-up, which replaces the requeue', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    const gate = deferred<{ requeueAfterMs: number }>();
    h.scripted.once('deploy', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    h.coordinator.trigger('a');
    gate.resolve({ requeueAfterMs: 1_000 });
    await h.atRest();
    await h.clock.advance(60_000);
    expect(h.startedReasons()).toEqual([['started'], ['a']]);
  });

  it('does not reset a failure streak by a requeue request, and a success after it requeues', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('render', () => {
      throw new Error('not synced');
    });
    h.scripted.once('deploy', requeue(2_500));
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().consecutiveFailures).toBe(1);
    await h.clock.advance(1_000); // the retry succeeds at 2_000 and asks for 2_500
    expect(h.coordinator.state().consecutiveFailures).toBe(0);
    expect(h.coordinator.state().nextRetryAtMs).toBeUndefined();
    await h.clock.advance(2_500);
    expect(h.startedReasons()).toEqual([['started'], ['retry'], ['requeue']]);
  });
});
