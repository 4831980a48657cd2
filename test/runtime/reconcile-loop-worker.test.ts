import { afterEach, describe, expect, it, vi } from 'vitest';
import { deleteOf, replaceOf, upsertOf } from '../support/fake-source.js';
import {
  loopAtRest,
  makeLoop,
  RecordingInstrumentation,
  startSynced,
  stopAllLoops,
} from '../support/loop-harness.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await stopAllLoops();
});

/** Loops in this file run without resync unless a test says otherwise, so counts stay exact. */
const noResync = { resyncPeriodMs: null } as const;

describe('ReconcileLoop worker: order and concurrency', () => {
  it('reconciles every initial parent once, in sorted order', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p3: { cell: 'c3' }, p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c3']);
    await h.clock.advance(100_000);
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c3']);
  });

  it('writes the store before enqueueing: a reconcile sees the event that queued it', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1', v: 1 } });
    h.fake.push(upsertOf('p2', { cell: 'c1', v: 2 }));
    await loopAtRest(h);
    h.fake.push(deleteOf('p1'));
    await loopAtRest(h);
    h.fake.push(upsertOf('p9', { cell: 'c9', v: 9 }));
    await loopAtRest(h);
    expect(h.rec.calls.map((c) => [c.key, c.observed])).toEqual([
      ['c1', [1]],
      ['c1', [1, 2]],
      ['c1', [2]],
      ['c9', [9]],
    ]);
  });

  it('never runs two reconciles at once, even for different keys', async () => {
    const h = makeLoop(noResync);
    h.rec.hook = async () => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await h.clock.sleep(0);
    };
    const world = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`p${i}`, { cell: `c${String(i).padStart(2, '0')}` }]),
    );
    await startSynced(h, world);
    for (let i = 0; i < 20; i += 1) h.fake.push(upsertOf(`q${i}`, { cell: `d${i}` }));
    await loopAtRest(h);
    expect(h.rec.calls).toHaveLength(40);
    expect(h.rec.maxActive).toBe(1);
    const log = h.rec.log;
    for (let i = 0; i < log.length; i += 2) {
      expect(log[i]?.startsWith('start:')).toBe(true);
      expect(log[i + 1]?.slice(log[i + 1]?.indexOf(':'))).toBe(log[i]?.slice(log[i]?.indexOf(':')));
    }
  });

  it('does not start the next key while one reconcile is blocked', async () => {
    const h = makeLoop(noResync);
    h.rec.block();
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    await h.clock.advance(60_000);
    expect(h.rec.keys).toEqual(['c1']);
    expect(h.loop.state().queued).toEqual(['c2']);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c2']);
  });

  it('collapses repeated events for a busy key into one follow-up that sees the latest state', async () => {
    const h = makeLoop(noResync);
    h.rec.block('c1');
    await startSynced(h, { p1: { cell: 'c1', v: 0 } });
    expect(h.rec.keys).toEqual(['c1']);
    for (let v = 1; v <= 5; v += 1) h.fake.push(upsertOf('p1', { cell: 'c1', v }));
    await loopAtRest(h);
    expect(h.loop.state().queued).toEqual(['c1']);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    expect(h.rec.calls.map((c) => [c.key, c.observed])).toEqual([
      ['c1', [0]],
      ['c1', [5]],
    ]);
  });

  it('reconciles keys in arrival order, a re-added queued key keeping its place', async () => {
    const h = makeLoop(noResync);
    h.rec.block('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    h.fake.push(
      upsertOf('p3', { cell: 'c3' }),
      upsertOf('p2', { cell: 'c2' }),
      upsertOf('p4', { cell: 'c4' }),
      upsertOf('p2b', { cell: 'c2' }),
      upsertOf('p3', { cell: 'c3', v: 1 }),
    );
    await loopAtRest(h);
    expect(h.loop.state().queued).toEqual(['c3', 'c2', 'c4']);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c3', 'c2', 'c4']);
  });

  it('reconciles nothing for an event that affects no parent', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1' } });
    h.fake.push(upsertOf('orphan', { v: 1 }), deleteOf('ghost'));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1']);
    expect(h.logger.at('warn').length).toBeGreaterThanOrEqual(1);
  });

  it('passes a live, unaborted signal to every reconcile', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(h.rec.calls.map((c) => c.abortedAtEnd)).toEqual([false, false]);
    expect(h.rec.calls.every((c) => c.signal instanceof AbortSignal)).toBe(true);
  });
});

describe('ReconcileLoop worker: deletions and relists', () => {
  it('drives the parent of a deleted object, which then sees it gone', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1', v: 1 }, p2: { cell: 'c1', v: 2 } });
    h.fake.push(deleteOf('p1'));
    await loopAtRest(h);
    expect(h.rec.calls.at(-1)?.key).toBe('c1');
    expect(h.rec.calls.at(-1)?.observed).toEqual([2]);
  });

  it('drives the key itself for an unknown-key delete when there is no keyMap', async () => {
    const h = makeLoop({ ...noResync, noKeyMap: true });
    await startSynced(h, { a: { v: 1 } });
    h.fake.push(deleteOf('ghost'), deleteOf('ghost2', { v: 3 }));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['a', 'ghost', 'ghost2']);
  });

  it('drives keyMap(tombstone) for an unknown-key delete with a mappable tombstone', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1' } });
    h.fake.push(deleteOf('ghost', { cell: 'c7' }));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c7']);
  });

  it('drives nothing, with a warning, for an unknown-key delete without a tombstone under a keyMap', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1' } });
    const warnings = h.logger.at('warn').length;
    h.fake.push(deleteOf('ghost'));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1']);
    expect(h.logger.at('warn').length).toBeGreaterThan(warnings);
  });

  it('relists after a reopen: vanished objects are deleted, survivors re-driven and re-parented, unmappables skipped', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, {
      p1: { cell: 'c1', v: 1 },
      p2: { cell: 'c2', v: 2 },
      p3: { cell: 'c3', v: 3 },
    });
    h.fake.fail(new Error('stream lost'));
    await h.clock.advance(1_000);
    expect(h.fake.opens).toBe(2);
    h.fake.push(
      replaceOf<{ cell?: string; v?: number }>({
        p1: { cell: 'c1', v: 1 }, // survivor, unchanged
        p3: { cell: 'c4', v: 3 }, // survivor, re-parented
        p5: { v: 5 }, // unmappable: skipped
      }),
    );
    await loopAtRest(h);
    expect(h.rec.calls.slice(3).map((c) => [c.key, c.observed])).toEqual([
      ['c1', [1]],
      ['c2', []],
      ['c3', []],
      ['c4', [3]],
    ]);
    expect([...h.loop.parentKeys()].sort()).toEqual(['c1', 'c4']);
    expect(h.loop.getByParent('c2')).toEqual([]);
  });

  it('reopens the source sourceRetryDelayMs after it ends, then keeps reconciling', async () => {
    const h = makeLoop({ ...noResync, sourceRetryDelayMs: 2_500 });
    await startSynced(h, { p1: { cell: 'c1' } });
    h.fake.end();
    await h.clock.advance(2_499);
    expect(h.fake.opens).toBe(1);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(2);
    h.fake.push(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c1', 'c2']);
  });

  it('reopens one second after the source factory throws, by default, then two', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1' } });
    h.fake.throwOnOpen(new Error('factory down'));
    h.fake.fail();
    await h.clock.advance(1_000);
    expect(h.fake.factoryCalls).toBe(2);
    expect(h.fake.opens).toBe(1);
    await h.clock.advance(1_999);
    expect(h.fake.opens).toBe(1);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(2);
  });
});

describe('ReconcileLoop worker: failures and backoff', () => {
  it('logs a failed reconcile with its key, schedules a retry and carries on with other keys', async () => {
    const h = makeLoop(noResync);
    const failure = new Error('engine unreachable');
    h.rec.fail('c1', 1, failure);
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(h.rec.keys).toEqual(['c1', 'c2']);
    expect(h.rec.calls.map((c) => c.outcome)).toEqual(['error', 'ok']);
    const entries = h.logger
      .mentioning('c1')
      .filter((e) => h.logger.mentioning(failure).includes(e));
    expect(entries.length).toBeGreaterThanOrEqual(1);
    expect(h.loop.state().retries).toEqual([{ key: 'c1', failures: 1, dueAtMs: 1_000 }]);
  });

  it('treats a synchronous throw like a rejection', async () => {
    const h = makeLoop(noResync);
    h.rec.throwSync('c1');
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(h.rec.keys).toEqual(['c1', 'c2']);
    expect(h.loop.state().retries).toEqual([{ key: 'c1', failures: 1, dueAtMs: 1_000 }]);
    await h.clock.advance(1_000);
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c1']);
  });

  it('retries with doubling delays up to the default 60 s cap, at poll ticks', async () => {
    const h = makeLoop(noResync);
    h.rec.failAlways('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    await h.clock.advance(200_000);
    expect(h.rec.calls.map((c) => c.startedAtMs)).toEqual([
      0, 1_000, 3_000, 7_000, 15_000, 31_000, 63_000, 123_000, 183_000,
    ]);
  });

  it('caps at a max that is not a power-of-two multiple of the base', async () => {
    const h = makeLoop({ ...noResync, failureBaseDelayMs: 100, failureMaxDelayMs: 350 });
    h.rec.failAlways('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    const dues: Array<number | undefined> = [h.loop.state().retries[0]?.dueAtMs];
    for (let i = 0; i < 4; i += 1) {
      await h.clock.advance(1_000); // the poller's tick fires the retry, which fails again
      dues.push(h.loop.state().retries[0]?.dueAtMs);
    }
    // failures at 0, 1000, 2000, 3000, 4000 -> delays 100, 200, 350, 350, 350
    expect(dues).toEqual([100, 1_200, 2_350, 3_350, 4_350]);
    expect(h.loop.state().retries[0]?.failures).toBe(5);
  });

  it('fires a retry once per failure and resets the backoff on success', async () => {
    const h = makeLoop(noResync);
    h.rec.fail('c1', 2);
    await startSynced(h, { p1: { cell: 'c1' } });
    await h.clock.advance(3_000); // retries at 1000 (fails) and 3000 (succeeds)
    expect(h.rec.calls.map((c) => [c.startedAtMs, c.outcome])).toEqual([
      [0, 'error'],
      [1_000, 'error'],
      [3_000, 'ok'],
    ]);
    expect(h.loop.state().retries).toEqual([]);
    await h.clock.advance(1_000_000);
    expect(h.rec.calls).toHaveLength(3);
    h.rec.fail('c1');
    h.loop.enqueue('c1');
    await loopAtRest(h);
    expect(h.loop.state().retries).toEqual([
      { key: 'c1', failures: 1, dueAtMs: h.clock.now() + 1_000 },
    ]);
  });

  it('keeps each key’s backoff independent', async () => {
    const h = makeLoop(noResync);
    h.rec.failAlways('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    await h.clock.advance(3_000); // c1 failed at 0, 1000, 3000: next due 7000
    h.rec.fail('c2');
    h.fake.push(upsertOf('p2', { cell: 'c2' }));
    await loopAtRest(h);
    const retries = h.loop.state().retries;
    const byKey = Object.fromEntries(retries.map((r) => [r.key, r]));
    expect(byKey.c1).toEqual({ key: 'c1', failures: 3, dueAtMs: 7_000 });
    expect(byKey.c2).toEqual({ key: 'c2', failures: 1, dueAtMs: 4_000 });
  });

  it('resets the backoff when an event-driven reconcile of a waiting key succeeds', async () => {
    const h = makeLoop(noResync);
    h.rec.fail('c1', 3);
    await startSynced(h, { p1: { cell: 'c1' } });
    await h.clock.advance(3_000);
    expect(h.loop.state().retries).toEqual([{ key: 'c1', failures: 3, dueAtMs: 7_000 }]);
    h.fake.push(upsertOf('p1', { cell: 'c1', v: 2 }));
    await loopAtRest(h);
    expect(h.loop.state().retries).toEqual([]);
    const calls = h.rec.calls.length;
    await h.clock.advance(10_000);
    expect(h.rec.calls).toHaveLength(calls);
  });

  it('survives a key failing thousands of times', async () => {
    const h = makeLoop({ ...noResync, failureBaseDelayMs: 1, failureMaxDelayMs: 1 });
    h.rec.failAlways('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    for (let i = 0; i < 2_000; i += 1) {
      h.loop.enqueue('c1');
      await loopAtRest(h);
    }
    await loopAtRest(h);
    const [entry] = h.loop.state().retries;
    expect(entry?.failures).toBeGreaterThan(1_000);
    expect(Number.isFinite(entry?.dueAtMs)).toBe(true);
  });
});

describe('ReconcileLoop enqueue and state', () => {
  it('reconciles a manually enqueued parent', async () => {
    const h = makeLoop(noResync);
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    h.loop.enqueue('c2');
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c2']);
  });

  it('dedups a manual enqueue of a key that is already queued', async () => {
    const h = makeLoop(noResync);
    h.rec.block('c1');
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' }, p3: { cell: 'c3' } });
    h.loop.enqueue('c3');
    h.loop.enqueue('c2');
    h.loop.enqueue('c1');
    expect(h.loop.state().queued).toEqual(['c2', 'c3', 'c1']);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c3', 'c1']);
  });

  it('reports queue order, the in-flight key with its start time, retries and the next resync', async () => {
    const h = makeLoop({ startMs: 10_000, resyncPeriodMs: 50_000 });
    h.rec.fail('c0');
    await startSynced(h, { p0: { cell: 'c0' } });
    expect(h.loop.state().retries).toEqual([{ key: 'c0', failures: 1, dueAtMs: 11_000 }]);
    h.rec.block('c1');
    h.fake.push(
      upsertOf('p1', { cell: 'c1' }),
      upsertOf('p3', { cell: 'c3' }),
      upsertOf('p2', { cell: 'c2' }),
    );
    await loopAtRest(h);
    await h.clock.advance(700); // before the retry tick at 11_000
    const state = h.loop.state();
    expect(state.synced).toBe(true);
    expect(state.inFlight).toEqual({ key: 'c1', sinceMs: 10_000 });
    expect(state.queued).toEqual(['c3', 'c2']);
    expect(state.retries).toEqual([{ key: 'c0', failures: 1, dueAtMs: 11_000 }]);
    expect(state.nextResyncAtMs).toBe(60_000);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    expect(h.loop.state().inFlight).toBeUndefined();
    expect(h.loop.state().queued).toEqual([]);
  });

  it('shows a fired retry without a due time while the key waits in the queue', async () => {
    const h = makeLoop(noResync);
    h.rec.block('c2');
    h.rec.fail('c1');
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    await h.clock.advance(1_000); // c1's retry fires, but c2 still holds the worker
    const state = h.loop.state();
    expect(state.queued).toEqual(['c1']);
    expect(state.retries).toHaveLength(1);
    expect(state.retries[0]?.key).toBe('c1');
    expect(state.retries[0]?.failures).toBe(1);
    expect(state.retries[0]?.dueAtMs).toBeUndefined();
  });
});

describe('ReconcileLoop instrumentation', () => {
  it('reports adds, takes, retries and reconcile results with clock durations', async () => {
    const instrumentation = new RecordingInstrumentation();
    const h = makeLoop({ ...noResync, instrumentation });
    h.rec.fail('c1');
    h.rec.block('c2');
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    await h.clock.advance(250);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    await h.clock.advance(750); // c1's retry fires at the 1 s tick
    expect(instrumentation.added.map((a) => a.key)).toEqual(['c1', 'c2', 'c1']);
    expect(instrumentation.taken.map((t) => t.key)).toEqual(['c1', 'c2', 'c1']);
    expect(instrumentation.events).toContain('retried:c1');
    expect(instrumentation.reconciledCalls).toEqual([
      { key: 'c1', result: 'error', durationMs: 0 },
      { key: 'c2', result: 'success', durationMs: 250 },
      { key: 'c1', result: 'success', durationMs: 0 },
    ]);
  });

  it('does not count an add that a queued key absorbs', async () => {
    const instrumentation = new RecordingInstrumentation();
    const h = makeLoop({ ...noResync, instrumentation });
    h.rec.block('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    h.loop.enqueue('c2');
    h.loop.enqueue('c2');
    h.loop.enqueue('c2');
    expect(instrumentation.added.map((a) => a.key)).toEqual(['c1', 'c2']);
    expect(instrumentation.added.at(-1)?.depth).toBe(1);
  });
});

describe('ReconcileLoop timing', () => {
  it('never touches setTimeout or setInterval: all waits go through the injected clock', async () => {
    const isRuntime = (): boolean => /src[\\/]runtime[\\/]/.test(new Error().stack ?? '');
    const timeouts: string[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const realSetInterval = globalThis.setInterval;
    type AnyTimer = (...args: unknown[]) => unknown;
    const watch = (name: string, real: AnyTimer): AnyTimer => {
      return (...args: unknown[]) => {
        if (isRuntime()) timeouts.push(name);
        return real(...args);
      };
    };
    globalThis.setTimeout = watch(
      'setTimeout',
      realSetTimeout as unknown as AnyTimer,
    ) as unknown as typeof setTimeout;
    globalThis.setInterval = watch(
      'setInterval',
      realSetInterval as unknown as AnyTimer,
    ) as unknown as typeof setInterval;
    try {
      const h = makeLoop({ resyncPeriodMs: 5_000 });
      h.rec.fail('c1', 3);
      await startSynced(h, { p1: { cell: 'c1' } });
      h.fake.end();
      await h.clock.advance(10_000);
      h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
      await loopAtRest(h);
      await h.loop.stop();
      expect(h.rec.calls.length).toBeGreaterThanOrEqual(4);
    } finally {
      globalThis.setTimeout = realSetTimeout;
      globalThis.setInterval = realSetInterval;
    }
    expect(timeouts).toEqual([]);
  });
});
