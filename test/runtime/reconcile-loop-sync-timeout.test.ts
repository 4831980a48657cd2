/**
 * `syncTimeoutMs` (RUNTIME.md, amendment 2; controller-runtime's `CacheSyncTimeout`): when the
 * initial `replace` has not been applied that long after `start()` was called, `start()` rejects
 * with an error that says so and carries the source's last failure, leaving nothing running.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InitialSyncTimeoutError, ReconcileLoop } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSource, replaceOf } from '../support/fake-source.js';
import {
  type LoopOptions,
  makeLoop,
  type Obj,
  pulling,
  stopAllLoops,
  track,
} from '../support/loop-harness.js';
import { until } from '../support/until.js';

afterEach(async () => {
  await stopAllLoops();
});

describe('ReconcileLoop syncTimeoutMs option', () => {
  const base = (): LoopOptions => ({
    source: new FakeSource<Obj>().source,
    reconcile: async () => {},
    clock: new FakeClock(),
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, '500'])(
    'throws RangeError for %s',
    (value) => {
      expect(
        () => new ReconcileLoop<Obj>({ ...base(), syncTimeoutMs: value as unknown as number }),
      ).toThrow(/syncTimeoutMs must be a positive finite number/);
    },
  );

  it('accepts null, a positive number, and leaving it out', () => {
    for (const syncTimeoutMs of [null, 1, 0.5, 30_000]) {
      expect(() => new ReconcileLoop<Obj>({ ...base(), syncTimeoutMs })).not.toThrow();
    }
    expect(() => new ReconcileLoop<Obj>(base())).not.toThrow();
  });
});

describe('ReconcileLoop start() with syncTimeoutMs', () => {
  it('waits for the initial sync for ever by default', async () => {
    const h = makeLoop({ sourceRetryDelayMs: 10, sourceRetryMaxDelayMs: 10 });
    const started = track(h.loop.start());
    await pulling(h);
    h.fake.fail(new Error('connection refused'));
    await h.clock.advance(24 * 3_600_000);
    expect(started.state).toBe('pending');
    h.fake.push(replaceOf({ a: { cell: 'c' } }));
    await until(() => started.state !== 'pending', {
      what: 'start() to resolve after the late sync',
    });
    expect(started.error).toBeUndefined();
  });

  it('rejects at the deadline with the last source failure in the message and as its cause', async () => {
    const h = makeLoop({ syncTimeoutMs: 500, sourceRetryDelayMs: 100, sourceRetryMaxDelayMs: 100 });
    const started = track(h.loop.start());
    await pulling(h);
    h.fake.fail(new Error('connect ECONNREFUSED 10.0.0.1:6443'));
    await h.clock.advanceUntil(() => h.fake.opens === 2);
    await pulling(h);
    const last = new Error('connect ETIMEDOUT 10.0.0.1:6443');
    h.fake.fail(last);
    await h.clock.advance(499 - h.clock.now());
    expect(started.state).toBe('pending');
    await h.clock.advance(1);
    await until(() => started.state !== 'pending', { what: 'start() to reject at the deadline' });
    const error = started.error as InitialSyncTimeoutError;
    expect(error).toBeInstanceOf(InitialSyncTimeoutError);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/initial sync did not finish within 500 ms/);
    expect(error.message).toContain('connect ETIMEDOUT 10.0.0.1:6443');
    expect(error.cause).toBe(last);
    // Nothing left running: no stream, no reopen wait, no deadline, no poller, no timer.
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.fake.openStreams).toBe(0);
    const opens = h.fake.opens;
    await h.clock.advance(10_000);
    expect(h.fake.opens).toBe(opens);
    await h.loop.stop(); // a no-op after a start that was rejected
    await expect(h.loop.start()).rejects.toThrow(/only once/);
  });

  it('rejects without a cause when no stream failed: the source is only slow', async () => {
    const h = makeLoop({ syncTimeoutMs: 250 });
    const started = track(h.loop.start());
    await pulling(h);
    await h.clock.advance(250);
    await until(() => started.state !== 'pending', { what: 'start() to reject at the deadline' });
    const error = started.error as Error;
    expect(error.message).toMatch(/initial sync did not finish within 250 ms/);
    expect(error.cause).toBeUndefined();
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.fake.openStreams).toBe(0);
  });

  it('resolves when the sync beats the deadline, and leaves no deadline timer behind', async () => {
    const h = makeLoop({ syncTimeoutMs: 500, resyncPeriodMs: null });
    const started = track(h.loop.start());
    await pulling(h);
    await h.clock.advance(499);
    h.fake.push(replaceOf({ a: { cell: 'c' } }));
    await until(() => started.state !== 'pending', { what: 'start() to resolve' });
    expect(started.error).toBeUndefined();
    expect(h.clock.pendingDueTimes()).not.toContain(500);
    await h.clock.advance(10_000);
    expect(h.loop.synced).toBe(true);
    expect(h.fake.openStreams).toBe(1);
    expect(h.rec.keys).toEqual(['c']);
  });

  it('lets stop() during the wait win over the deadline', async () => {
    const h = makeLoop({ syncTimeoutMs: 500 });
    const started = track(h.loop.start());
    await pulling(h);
    await h.loop.stop();
    await until(() => started.state !== 'pending', { what: 'start() to reject after stop()' });
    expect((started.error as Error).name).toBe('LoopStoppedError');
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('lets an abort of start’s signal win over the deadline, rejecting with its reason', async () => {
    const h = makeLoop({ syncTimeoutMs: 500 });
    const controller = new AbortController();
    const started = track(h.loop.start(controller.signal));
    await pulling(h);
    const reason = new Error('gave up');
    controller.abort(reason);
    await until(() => started.state !== 'pending', { what: 'start() to reject after the abort' });
    expect(started.error).toBe(reason);
    expect(h.clock.pendingTimers).toBe(0);
  });
});
