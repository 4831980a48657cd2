/**
 * Coordinator retries with backoff and drift runs, all on the fake clock (harness starts at 1_000).
 */
import { describe, expect, it } from 'vitest';
import { coordinatorHarness, deferred, untilAborted } from './harness.js';

const fail = () => {
  throw new Error('render failed');
};

describe('Coordinator retry backoff', () => {
  it("retries the n-th consecutive failure with reason 'retry' failureBaseDelayMs × 2^(n−1) after it completed, capped at failureMaxDelayMs", async () => {
    const h = coordinatorHarness({
      driftIntervalMs: null,
      failureBaseDelayMs: 1_000,
      failureMaxDelayMs: 5_000,
    });
    h.scripted.always('render', fail);
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().consecutiveFailures).toBe(1);
    expect(h.coordinator.state().nextRetryAtMs).toBe(2_000);

    await h.clock.advance(999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render')).toHaveLength(2);

    await h.clock.advance(16_000); // up to 18_000
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 13_000, 18_000,
    ]);
    expect(h.startedReasons()).toEqual([
      ['started'],
      ['retry'],
      ['retry'],
      ['retry'],
      ['retry'],
      ['retry'],
    ]);
    expect(h.of('reconciliation.triggered')).toEqual([]);
    expect(h.coordinator.state().consecutiveFailures).toBe(6);
    expect(h.coordinator.state().nextRetryAtMs).toBe(23_000);
  });

  it('counts the retry delay from when the failed run completed', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('render', (signal) => h.clock.sleep(300, signal).then(fail));
    h.coordinator.start();
    await h.clock.advance(300);
    expect(h.coordinator.state().nextRetryAtMs).toBe(2_300);
    await h.clock.advance(999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 2_300]);
  });

  it('clears nextRetryAtMs once the retry begins', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('render', fail);
    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().nextRetryAtMs).toBe(2_000);
    await h.clock.advance(1_000);
    const state = h.coordinator.state();
    expect(state.running).toBe(true);
    expect(state.runningId).toBe(2);
    expect(state.nextRetryAtMs).toBeUndefined();
    gate.resolve('d');
    await h.atRest();
  });

  it('replaces the pending retry with a run begun earlier by a trigger', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 4_000 });
    h.scripted.once('render', fail);
    h.coordinator.start();
    await h.atRest();
    expect(h.coordinator.state().nextRetryAtMs).toBe(5_000);

    await h.clock.advance(1_000);
    h.coordinator.trigger('config changed');
    await h.atRest();
    expect(h.startedReasons()).toEqual([['started'], ['config changed']]);
    expect(h.coordinator.state().nextRetryAtMs).toBeUndefined();
    expect(h.coordinator.state().consecutiveFailures).toBe(0);

    await h.clock.advance(60_000);
    expect(h.scripted.callsOf('render')).toHaveLength(2);
  });

  it('continues the backoff count when the run that replaced the retry fails too', async () => {
    const h = coordinatorHarness({
      driftIntervalMs: null,
      failureBaseDelayMs: 1_000,
      failureMaxDelayMs: 60_000,
    });
    h.scripted.always('render', fail);
    h.coordinator.start();
    await h.atRest(); // failure 1 at 1_000, retry due 2_000
    await h.clock.advance(500);
    h.coordinator.trigger('x');
    await h.atRest(); // failure 2 at 1_500, retry due 3_500
    expect(h.coordinator.state().consecutiveFailures).toBe(2);
    expect(h.coordinator.state().nextRetryAtMs).toBe(3_500);

    await h.clock.advance(2_000); // 3_500
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 1_500, 3_500]);
    expect(h.startedReasons()).toEqual([['started'], ['x'], ['retry']]);
  });

  it('resets the count after a success', async () => {
    const h = coordinatorHarness({
      driftIntervalMs: null,
      failureBaseDelayMs: 1_000,
      failureMaxDelayMs: 60_000,
    });
    h.scripted.once('render', fail).once('render', fail);
    h.coordinator.start();
    await h.atRest(); // failure 1 at 1_000
    await h.clock.advance(1_000); // failure 2 at 2_000
    await h.clock.advance(2_000); // success at 4_000
    expect(h.coordinator.state().consecutiveFailures).toBe(0);
    expect(h.coordinator.state().nextRetryAtMs).toBeUndefined();

    h.scripted.once('render', fail);
    await h.clock.advance(1_000);
    h.coordinator.trigger('x');
    await h.atRest(); // failure 1 again at 5_000
    expect(h.coordinator.state().consecutiveFailures).toBe(1);
    expect(h.coordinator.state().nextRetryAtMs).toBe(6_000);
  });

  it('leaves the count as it was when a run is aborted', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null, failureBaseDelayMs: 1_000 });
    h.scripted.once('render', fail).once('render', fail);
    h.scripted.once('render', (signal) => untilAborted(signal));
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(1_000);
    await h.clock.advance(2_000); // third run (retry) begins at 4_000 and hangs
    expect(h.coordinator.state().running).toBe(true);
    expect(h.coordinator.state().consecutiveFailures).toBe(2);

    await h.coordinator.stop();
    expect(h.of('reconciliation.completed').at(-1)).toMatchObject({ result: 'aborted' });
    expect(h.coordinator.state().consecutiveFailures).toBe(2);
  });

  it('sets the count to 0 on start(): the first failure of a new term retries after the base delay', async () => {
    const h = coordinatorHarness({
      driftIntervalMs: null,
      failureBaseDelayMs: 1_000,
      failureMaxDelayMs: 60_000,
    });
    h.scripted.always('render', fail);
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(1_000);
    await h.clock.advance(2_000); // three failures
    expect(h.coordinator.state().consecutiveFailures).toBe(3);
    await h.coordinator.stop();
    expect(h.coordinator.state().consecutiveFailures).toBe(3);

    const gate = deferred<string>();
    h.scripted.once('render', () => gate.promise);
    h.coordinator.start();
    expect(h.coordinator.state().consecutiveFailures).toBe(0);
    await h.atRest();
    gate.reject(new Error('still failing'));
    await h.atRest();
    expect(h.coordinator.state().consecutiveFailures).toBe(1);
    expect(h.coordinator.state().nextRetryAtMs).toBe(h.clock.now() + 1_000);
  });
});

describe('Coordinator drift', () => {
  it("begins a reconciliation with reason 'drift' driftIntervalMs after the last one completed, without a triggered event", async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(59_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 61_000]);
    await h.clock.advance(60_000);
    expect(h.startedReasons()).toEqual([['started'], ['drift'], ['drift']]);
    expect(h.scripted.callsOf('deploy')).toHaveLength(3);
    expect(h.of('reconciliation.triggered')).toEqual([]);
  });

  it('uses 60_000 ms by default', async () => {
    const h = coordinatorHarness({});
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(59_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.startedReasons()).toEqual([['started'], ['drift']]);
  });

  it('counts from when the last run completed, not from when it began', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 10_000 });
    h.scripted.once('deploy', (signal) => h.clock.sleep(500, signal));
    h.coordinator.start();
    await h.clock.advance(10_499);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 11_500]);
  });

  it('waits a full interval again after a triggered run completed', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(30_000);
    h.coordinator.trigger('x');
    await h.atRest(); // completed at 31_000
    await h.clock.advance(59_999);
    expect(h.scripted.callsOf('render')).toHaveLength(2);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 31_000, 91_000]);
  });

  it('does not begin while another run is still running, and re-arms from that run’s completion', async () => {
    const h = coordinatorHarness({ driftIntervalMs: 60_000 });
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(49_000);
    h.scripted.once('render', (signal) => h.clock.sleep(20_000, signal).then(() => 'slow'));
    h.coordinator.trigger('slow');
    await h.clock.advance(20_000); // completes at 70_000
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 50_000]);
    await h.clock.advance(59_999);
    expect(h.scripted.callsOf('render')).toHaveLength(2);
    await h.clock.advance(1);
    expect(h.scripted.callsOf('render').map((c) => c.atMs)).toEqual([1_000, 50_000, 130_000]);
  });

  it('does not begin while a retry is pending: the retry is the next run', async () => {
    const h = coordinatorHarness({
      driftIntervalMs: 60_000,
      failureBaseDelayMs: 100_000,
      failureMaxDelayMs: 200_000,
    });
    h.scripted.once('render', fail);
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(99_999);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.startedReasons()).toEqual([['started'], ['retry']]);
    // after the successful retry, drift resumes
    await h.clock.advance(60_000);
    expect(h.startedReasons()).toEqual([['started'], ['retry'], ['drift']]);
  });

  it('never runs drift when driftIntervalMs is null', async () => {
    const h = coordinatorHarness({ driftIntervalMs: null });
    h.coordinator.start();
    await h.atRest();
    await h.clock.advance(36_000_000);
    expect(h.scripted.callsOf('render')).toHaveLength(1);
  });
});
