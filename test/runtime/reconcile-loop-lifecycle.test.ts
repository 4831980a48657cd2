import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReconcileLoop } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSource, replaceOf, upsertOf } from '../support/fake-source.js';
import {
  type LoopOptions,
  loopAtRest,
  makeLoop,
  type Obj,
  pulling,
  settledOf,
  startSynced,
  stopAllLoops,
  type Tracked,
  track,
} from '../support/loop-harness.js';
import { until } from '../support/until.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await stopAllLoops();
});

/** Asserts that nothing of the loop is left running: no sleeper, no open stream. */
function expectNothingRunning(h: ReturnType<typeof makeLoop>): void {
  expect(h.clock.pendingTimers).toBe(0);
  expect(h.fake.openStreams).toBe(0);
}

describe('ReconcileLoop construction', () => {
  const base = (): LoopOptions => ({
    source: new FakeSource<Obj>().source,
    reconcile: async () => {},
    clock: new FakeClock(),
  });

  it('throws RangeError for { failureMaxDelayMs: 500 } alone, below the default base', () => {
    expect(() => new ReconcileLoop<Obj>({ ...base(), failureMaxDelayMs: 500 })).toThrow(RangeError);
  });

  it('throws RangeError for a base above the default max', () => {
    expect(() => new ReconcileLoop<Obj>({ ...base(), failureBaseDelayMs: 60_001 })).toThrow(
      RangeError,
    );
  });

  it('throws RangeError when the max is below the base', () => {
    expect(
      () =>
        new ReconcileLoop<Obj>({ ...base(), failureBaseDelayMs: 2_000, failureMaxDelayMs: 1_999 }),
    ).toThrow(RangeError);
  });

  it('throws RangeError when the source retry max is below its base, defaults applied', () => {
    expect(() => new ReconcileLoop<Obj>({ ...base(), sourceRetryMaxDelayMs: 999 })).toThrow(
      /sourceRetryMaxDelayMs \(999\) must be >= sourceRetryDelayMs \(1000\)/,
    );
    expect(() => new ReconcileLoop<Obj>({ ...base(), sourceRetryDelayMs: 30_001 })).toThrow(
      RangeError,
    );
    expect(
      () =>
        new ReconcileLoop<Obj>({ ...base(), sourceRetryDelayMs: 500, sourceRetryMaxDelayMs: 500 }),
    ).not.toThrow();
  });

  const options = [
    'failureBaseDelayMs',
    'failureMaxDelayMs',
    'sourceRetryDelayMs',
    'sourceRetryMaxDelayMs',
    'resyncPeriodMs',
  ] as const;
  const badValues = [0, -1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
  for (const option of options) {
    it.each(badValues)(`throws RangeError for ${option} = %s`, (value) => {
      expect(() => new ReconcileLoop<Obj>({ ...base(), [option]: value })).toThrow(RangeError);
    });
  }

  it('accepts resync off (null), a base equal to the max, and small custom values', () => {
    expect(() => new ReconcileLoop<Obj>({ ...base(), resyncPeriodMs: null })).not.toThrow();
    expect(
      () => new ReconcileLoop<Obj>({ ...base(), failureBaseDelayMs: 5, failureMaxDelayMs: 5 }),
    ).not.toThrow();
    expect(
      () =>
        new ReconcileLoop<Obj>({
          ...base(),
          failureBaseDelayMs: 1,
          failureMaxDelayMs: 2,
          sourceRetryDelayMs: 1,
          resyncPeriodMs: 1,
        }),
    ).not.toThrow();
  });

  it('starts nothing in the constructor', async () => {
    const h = makeLoop();
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.fake.factoryCalls).toBe(0);
  });

  it('reports an idle, unsynced state and empty reads before start', () => {
    const h = makeLoop();
    expect(h.loop.synced).toBe(false);
    expect(h.loop.getByParent('c1')).toEqual([]);
    expect(h.loop.parentKeys().size).toBe(0);
    const state = h.loop.state();
    expect(state.synced).toBe(false);
    expect(state.queued).toEqual([]);
    expect(state.retries).toEqual([]);
    expect(state.inFlight).toBeUndefined();
    expect(state.nextResyncAtMs).toBeUndefined();
  });
});

describe('ReconcileLoop start', () => {
  it('resolves only after the initial replace is applied, with its parents already queued', async () => {
    const h = makeLoop();
    h.rec.block();
    const started = h.loop.start();
    const tracked = track(started);
    let atResolve: { queued: string[]; inFlight?: string | undefined; calls: string[] } | undefined;
    started.then(() => {
      const state = h.loop.state();
      atResolve = { queued: state.queued, inFlight: state.inFlight?.key, calls: h.rec.keys };
    });
    await pulling(h);
    await h.clock.advance(5_000);
    expect(tracked.state).toBe('pending');
    expect(h.loop.synced).toBe(false);
    h.fake.push(replaceOf({ p3: { cell: 'c3' }, p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    await settledOf(tracked);
    expect(tracked.state).toBe('resolved');
    expect(h.loop.synced).toBe(true);
    expect(atResolve).toBeDefined();
    const seen = [...(atResolve?.calls ?? []), ...(atResolve?.queued ?? [])];
    expect(seen).toEqual(['c1', 'c2', 'c3']);
    if (atResolve?.inFlight !== undefined) expect(atResolve.calls).toEqual([atResolve.inFlight]);
  });

  it('lets the first reconcile see the whole initial world', async () => {
    const h = makeLoop();
    const worlds: string[][] = [];
    h.rec.hook = () => {
      worlds.push([...h.loop.parentKeys()].sort());
    };
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' }, p3: { cell: 'c3' } });
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c3']);
    expect(worlds[0]).toEqual(['c1', 'c2', 'c3']);
  });

  it('reconciles nothing before the initial sync, even when a stream opens with a non-replace', async () => {
    const h = makeLoop();
    const started = track(h.loop.start());
    await pulling(h);
    h.fake.push(upsertOf('p1', { cell: 'c1' }));
    await until(() => h.clock.pendingDueTimes().includes(h.clock.now() + 1_000), {
      what: 'the source to wait to reopen',
    });
    expect(h.rec.calls).toEqual([]);
    expect(h.loop.getByParent('c1')).toEqual([]);
    expect(started.state).toBe('pending');
    await h.clock.advance(1_000); // default sourceRetryDelayMs
    expect(h.fake.opens).toBe(2);
    h.fake.push(replaceOf({ p2: { cell: 'c2' } }));
    await settledOf(started);
    expect(started.state).toBe('resolved');
    expect(h.rec.keys).toEqual(['c2']);
  });

  it('creates no retry poller and no resync timer before the initial sync', async () => {
    const h = makeLoop();
    const started = track(h.loop.start());
    await pulling(h);
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.loop.state().retries).toEqual([]);
    h.fake.push(replaceOf({}));
    await settledOf(started);
    expect(started.state).toBe('resolved');
    // now the retry poller (default 1 s) and the resync timer (default 10 h) are armed
    expect(h.clock.pendingDueTimes()).toContain(1_000);
    expect(h.clock.pendingDueTimes()).toContain(36_000_000);
  });

  it('rejects a second start() while the first is pending, without disturbing the first', async () => {
    const h = makeLoop();
    const first = track(h.loop.start());
    await pulling(h);
    await expect(h.loop.start()).rejects.toThrow(/start/i);
    expect(first.state).toBe('pending');
    expect(h.fake.factoryCalls).toBe(1);
    h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
    await settledOf(first);
    await loopAtRest(h);
    expect(first.state).toBe('resolved');
    expect(h.rec.keys).toEqual(['c1']);
  });

  it('rejects a second start() after the first resolved, and keeps running', async () => {
    const h = makeLoop();
    await startSynced(h, { p1: { cell: 'c1' } });
    await expect(h.loop.start()).rejects.toThrow(/start/i);
    h.fake.push(upsertOf('p2', { cell: 'c2' }));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c2']);
    expect(h.fake.factoryCalls).toBe(1);
  });

  it('rejects start() after stop()', async () => {
    const h = makeLoop();
    await startSynced(h);
    await h.loop.stop();
    await expect(h.loop.start()).rejects.toThrow(/start/i);
    expectNothingRunning(h);
  });

  it('rejects start() with an already-aborted signal and leaves nothing running', async () => {
    const h = makeLoop();
    const reason = new Error('no');
    await expect(h.loop.start(AbortSignal.abort(reason))).rejects.toBe(reason);
    expectNothingRunning(h);
    await h.clock.advance(100_000);
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.rec.calls).toEqual([]);
    expect(h.loop.state().retries).toEqual([]);
  });

  it('rejects start() aborted during the initial sync and leaves nothing running', async () => {
    const h = makeLoop();
    const controller = new AbortController();
    const started = track(h.loop.start(controller.signal));
    await pulling(h);
    expect(h.fake.opens).toBe(1);
    controller.abort(new Error('cancelled'));
    await settledOf(started);
    expect(started.state).toBe('rejected');
    expectNothingRunning(h);
    expect(h.fake.closes).toBeGreaterThanOrEqual(1);
    await h.clock.advance(100_000);
    expect(h.clock.pendingTimers).toBe(0);
    expect(h.fake.opens).toBe(1);
    expect(h.rec.calls).toEqual([]);
  });

  it('leaves nothing running when aborted while waiting to reopen a failed first stream', async () => {
    const h = makeLoop();
    const controller = new AbortController();
    const started = track(h.loop.start(controller.signal));
    await pulling(h);
    h.fake.fail(new Error('first stream died'));
    await until(() => h.clock.pendingDueTimes().includes(h.clock.now() + 1_000), {
      what: 'the source to wait to reopen',
    });
    expect(h.clock.pendingTimers).toBe(1);
    controller.abort();
    await settledOf(started);
    expect(started.state).toBe('rejected');
    expectNothingRunning(h);
    await h.clock.advance(100_000);
    expect(h.fake.opens).toBe(1);
  });

  it('leaves nothing running when aborted during the initial sync while return() hangs', async () => {
    const h = makeLoop();
    h.fake.returnBehaviour = 'hang';
    const controller = new AbortController();
    const started = track(h.loop.start(controller.signal));
    await pulling(h);
    controller.abort();
    await settledOf(started);
    expect(started.state).toBe('rejected');
    expectNothingRunning(h);
  });

  it('ignores an abort of the start signal after start() resolved', async () => {
    const h = makeLoop();
    const controller = new AbortController();
    const started = h.loop.start(controller.signal);
    await pulling(h);
    h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
    await started;
    controller.abort();
    expect(h.fake.openStreams).toBe(1);
    h.fake.push(upsertOf('p2', { cell: 'c2' }));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c2']);
    expect(h.clock.pendingTimers).toBeGreaterThan(0);
  });
});

describe('ReconcileLoop stop', () => {
  it('rejects when called before start()', async () => {
    const h = makeLoop();
    await expect(h.loop.stop()).rejects.toThrow(/start/i);
  });

  it('shuts everything down: no stream, no poller, no resync timer, no more reconciles', async () => {
    const h = makeLoop();
    await startSynced(h, { p1: { cell: 'c1' } });
    h.rec.failAlways('c1');
    h.loop.enqueue('c1');
    await loopAtRest(h);
    expect(h.loop.state().retries).toHaveLength(1);
    const calls = h.rec.calls.length;
    await h.loop.stop();
    expectNothingRunning(h);
    expect(h.fake.closes).toBe(1);
    await h.clock.advance(100_000_000);
    expect(h.rec.calls).toHaveLength(calls);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('aborts the in-flight reconcile’s signal and waits for it to settle', async () => {
    const h = makeLoop();
    h.rec.block();
    h.rec.ignoreAbort = true;
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(h.rec.keys).toEqual(['c1']);
    const signal = h.rec.calls[0]?.signal as AbortSignal;
    expect(signal.aborted).toBe(false);
    const stopped = track(h.loop.stop());
    await h.clock.advance(10_000);
    expect(signal.aborted).toBe(true);
    expect(stopped.state).toBe('pending');
    h.rec.release();
    await settledOf(stopped);
    expect(stopped.state).toBe('resolved');
    expect(h.rec.keys).toEqual(['c1']); // c2 was queued, but the queue was shut
    expectNothingRunning(h);
  });

  it('is idempotent: sequential and concurrent calls all resolve', async () => {
    const h = makeLoop();
    await startSynced(h);
    const a = h.loop.stop();
    const b = h.loop.stop();
    await expect(Promise.all([a, b])).resolves.toEqual([undefined, undefined]);
    await expect(h.loop.stop()).resolves.toBeUndefined();
    expectNothingRunning(h);
  });

  it('makes concurrent callers wait until the in-flight reconcile settled', async () => {
    const h = makeLoop();
    h.rec.block();
    h.rec.ignoreAbort = true;
    await startSynced(h, { p1: { cell: 'c1' } });
    const first = track(h.loop.stop());
    const second = track(h.loop.stop());
    await until(() => h.rec.calls[0]?.signal.aborted === true, {
      what: 'the in-flight reconcile to be aborted',
    });
    expect([first.state, second.state]).toEqual(['pending', 'pending']);
    h.rec.release();
    await settledOf(first);
    await settledOf(second);
    expect([first.state, second.state]).toEqual(['resolved', 'resolved']);
  });

  it('is a no-op after a start() that was aborted', async () => {
    const h = makeLoop();
    const controller = new AbortController();
    const started = track(h.loop.start(controller.signal));
    await pulling(h);
    controller.abort();
    await settledOf(started);
    expect(started.state).toBe('rejected');
    await expect(h.loop.stop()).resolves.toBeUndefined();
    expectNothingRunning(h);
  });

  it('is a no-op after a start() rejected for an already-aborted signal', async () => {
    const h = makeLoop();
    await expect(h.loop.start(AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    await expect(h.loop.stop()).resolves.toBeUndefined();
    expectNothingRunning(h);
  });

  it('aborts a pending start(), which rejects, and resolves once everything is down', async () => {
    const h = makeLoop();
    const started = track(h.loop.start());
    await pulling(h);
    expect(h.fake.opens).toBe(1);
    const stopped = track(h.loop.stop());
    await settledOf(stopped);
    expect(started.state).toBe('rejected');
    expect(stopped.state).toBe('resolved');
    expectNothingRunning(h);
    await h.clock.advance(100_000);
    expect(h.fake.opens).toBe(1);
    expect(h.rec.calls).toEqual([]);
  });

  it('aborts a pending start() that is waiting to reopen the source', async () => {
    const h = makeLoop();
    h.fake.throwOnOpen(new Error('factory down'));
    const started = track(h.loop.start());
    await until(() => h.clock.pendingTimers === 1, { what: 'the source to wait to reopen' });
    expect(h.clock.pendingTimers).toBe(1);
    await h.loop.stop();
    await settledOf(started);
    expect(started.state).toBe('rejected');
    expectNothingRunning(h);
  });

  it('does not wait on a source stream whose return() never settles', async () => {
    const h = makeLoop();
    h.fake.returnBehaviour = 'hang';
    await startSynced(h, { p1: { cell: 'c1' } });
    const stopped = track(h.loop.stop());
    await settledOf(stopped);
    expect(stopped.state).toBe('resolved');
    expect(h.fake.current.returnCalls).toBe(1);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('logs a close error rather than rejecting', async () => {
    const h = makeLoop();
    const closeError = new Error('close failed loudly');
    h.fake.returnBehaviour = 'throw';
    h.fake.returnError = closeError;
    await startSynced(h);
    await expect(h.loop.stop()).resolves.toBeUndefined();
    expect(h.logger.mentioning(closeError).length).toBeGreaterThanOrEqual(1);
  });

  it('shuts down cleanly while the source waits to reopen', async () => {
    const h = makeLoop();
    await startSynced(h);
    h.fake.end();
    await until(() => h.clock.pendingDueTimes().includes(h.clock.now() + 1_000), {
      what: 'the source to wait to reopen',
    });
    await h.loop.stop();
    expectNothingRunning(h);
    await h.clock.advance(10_000);
    expect(h.fake.opens).toBe(1);
  });

  it('stops the worker even while it waits on an empty queue', async () => {
    const h = makeLoop({ resyncPeriodMs: null });
    await startSynced(h, {});
    await h.loop.stop();
    h.loop.enqueue('late');
    expect(h.rec.calls).toEqual([]);
    expectNothingRunning(h);
  });
});

describe('ReconcileLoop stop() from inside reconcile', () => {
  it('rejects at once with an error saying not to await it, and begins the shutdown', async () => {
    const h = makeLoop();
    let inner: Tracked<void> | undefined;
    h.rec.hook = () => {
      inner = track(h.loop.stop());
    };
    h.rec.block();
    h.rec.ignoreAbort = true;
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(inner?.state).toBe('rejected');
    expect(String((inner?.error as Error)?.message ?? inner?.error)).toMatch(/await/i);
    expect(h.rec.calls[0]?.outcome).toBe('pending');
    expect(h.rec.calls[0]?.signal.aborted).toBe(true);
  });

  it('completes the shutdown once the reconcile returns', async () => {
    const h = makeLoop();
    h.rec.hook = (_key, _signal, call) => {
      if (call.index === 0) void h.loop.stop();
    };
    h.rec.block();
    h.rec.ignoreAbort = true;
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    await until(() => h.rec.calls[0]?.signal.aborted === true, {
      what: 'the in-flight reconcile to be aborted',
    });
    expect(h.rec.calls[0]?.signal.aborted).toBe(true);
    expect(h.rec.calls[0]?.outcome).toBe('pending');
    h.rec.release();
    await until(() => h.clock.pendingTimers === 0 && h.fake.openStreams === 0, {
      what: 'the shutdown to complete',
    });
    expectNothingRunning(h);
    expect(h.rec.keys).toEqual(['c1']);
    await expect(h.loop.stop()).resolves.toBeUndefined();
  });

  it('lets a reconcile shut its own loop down with `void loop.stop()` without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const h = makeLoop();
      h.rec.hook = () => {
        void h.loop.stop();
      };
      await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
      await until(() => h.clock.pendingTimers === 0 && h.fake.openStreams === 0, {
        what: 'the shutdown to complete',
      });
      expectNothingRunning(h);
      expect(h.rec.keys).toEqual(['c1']);
      await h.clock.advance(100_000);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('recognises the reconcile after an await inside it', async () => {
    const h = makeLoop();
    let inner: Tracked<void> | undefined;
    h.rec.hook = async () => {
      await Promise.resolve();
      await h.clock.sleep(0);
      await new Promise<void>((resolve) => setImmediate(resolve));
      inner = track(h.loop.stop());
    };
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    await until(() => inner !== undefined && inner.state !== 'pending', {
      what: 'the inner stop() to settle',
    });
    expect(inner?.state).toBe('rejected');
    expect(String((inner?.error as Error)?.message ?? inner?.error)).toMatch(/await/i);
    expectNothingRunning(h);
    expect(h.rec.keys).toEqual(['c1']);
  });

  it('shuts down after a reconcile that honours its aborted signal', async () => {
    const h = makeLoop();
    h.rec.hook = () => {
      void h.loop.stop();
    };
    h.rec.block(); // honours abort: rejects as soon as the shutdown aborts its signal
    await startSynced(h, { p1: { cell: 'c1' } });
    await until(() => h.rec.calls[0]?.outcome === 'error', {
      what: 'the aborted reconcile to reject',
    });
    expect(h.rec.calls[0]?.outcome).toBe('error');
    expectNothingRunning(h);
  });

  it('does not treat a stop() of another loop as a stop from inside its own reconcile', async () => {
    const other = makeLoop();
    await startSynced(other, { q: { cell: 'x' } });
    const h = makeLoop();
    let otherStop: Tracked<void> | undefined;
    h.rec.hook = async () => {
      otherStop = track(other.loop.stop());
      await otherStop.promise;
    };
    await startSynced(h, { p1: { cell: 'c1' } });
    await until(() => otherStop?.state === 'resolved', { what: 'the other loop to stop' });
    expect(otherStop?.state).toBe('resolved');
    expectNothingRunning(other);
    expect(h.fake.openStreams).toBe(1);
  });
});

describe('ReconcileLoop disposal', () => {
  it('stops the loop at the end of an `await using` block', async () => {
    const h = makeLoop();
    {
      await using loop = h.loop;
      await startSynced(h, { p1: { cell: 'c1' } });
      expect(loop.synced).toBe(true);
      expect(h.fake.openStreams).toBe(1);
    }
    expectNothingRunning(h);
    await expect(h.loop.start()).rejects.toThrow(/start/i);
  });

  it('waits for the in-flight reconcile at the end of an `await using` block', async () => {
    const h = makeLoop();
    h.rec.block();
    h.rec.ignoreAbort = true;
    let bodyDone = false;
    let exited = false;
    const block = (async () => {
      await using _loop = h.loop;
      await startSynced(h, { p1: { cell: 'c1' } });
      bodyDone = true;
    })().then(() => {
      exited = true;
    });
    await until(() => h.rec.calls[0]?.signal.aborted === true, {
      what: 'the end of the block to stop the loop',
    });
    expect(bodyDone).toBe(true);
    expect(h.rec.keys).toEqual(['c1']);
    expect(exited).toBe(false);
    expect(h.rec.calls[0]?.signal.aborted).toBe(true);
    h.rec.release();
    await block;
    expectNothingRunning(h);
  });

  it('has [Symbol.asyncDispose] behave as stop(): rejects before start, stops after, idempotent', async () => {
    const h = makeLoop();
    await expect(h.loop[Symbol.asyncDispose]()).rejects.toThrow(/start/i);
    await startSynced(h);
    await expect(h.loop[Symbol.asyncDispose]()).resolves.toBeUndefined();
    expectNothingRunning(h);
    await expect(h.loop[Symbol.asyncDispose]()).resolves.toBeUndefined();
    await expect(h.loop.stop()).resolves.toBeUndefined();
  });
});

describe('ReconcileLoop reads and logging', () => {
  it('keeps serving reads after stop()', async () => {
    const h = makeLoop();
    await startSynced(h, { p2: { cell: 'c1', v: 2 }, p1: { cell: 'c1', v: 1 } });
    await h.loop.stop();
    expect(h.loop.synced).toBe(true);
    expect(h.loop.getByParent('c1')).toEqual([
      { cell: 'c1', v: 1 },
      { cell: 'c1', v: 2 },
    ]);
    expect(h.loop.parentKeys()).toEqual(new Set(['c1']));
  });

  it('logs nothing to the console when no logger is given; warns once per kind', async () => {
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation(() => {}),
    );
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const clock = new FakeClock();
    const fake = new FakeSource<Obj>();
    const loop = new ReconcileLoop<Obj>({
      source: fake.source,
      reconcile: async () => {
        throw new Error('always fails');
      },
      keyMap: (o) => o.cell,
      clock,
    });
    const started = loop.start();
    await until(() => fake.awaitingPull, { what: 'the loop to pull from its source' });
    fake.push(upsertOf('p0', { cell: 'c0' })); // not a replace: rejected and logged, if logging
    await clock.advance(1_000);
    fake.push(replaceOf<Obj>({ p1: { cell: 'c1' }, bad: {} }));
    await started;
    fake.push({ type: 'delete', key: 'ghost' });
    fake.fail(new Error('stream died'));
    await clock.advance(5_000);
    await loop.stop();
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    // The one exception (RUNTIME.md, amendment 2): the first failure of each kind, once.
    const code = { code: 'POOL_CONTROLLER_NO_LOGGER' };
    expect(warning.mock.calls.map(([message, options]) => [String(message), options])).toEqual([
      [expect.stringContaining('instead of a replace'), code],
      [expect.stringContaining('always fails'), code],
    ]);
  });
});
