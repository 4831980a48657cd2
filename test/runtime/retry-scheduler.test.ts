import { afterEach, describe, expect, it } from 'vitest';
import { RetryScheduler } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

interface Harness {
  clock: FakeClock;
  scheduler: RetryScheduler<string>;
  /** `key@time` for every onRetry call, in order. */
  fired: string[];
}

const live: RetryScheduler<string>[] = [];

afterEach(async () => {
  await Promise.all(live.splice(0).map((s) => s.shutdown()));
});

function harness(
  options: { baseDelayMs: number; maxDelayMs: number; pollIntervalMs?: number },
  startMs = 0,
): Harness {
  const clock = new FakeClock(startMs);
  const fired: string[] = [];
  const scheduler = new RetryScheduler<string>({
    ...options,
    clock,
    onRetry: (key) => fired.push(`${key}@${clock.now()}`),
  });
  live.push(scheduler);
  return { clock, scheduler, fired };
}

function dueOf(scheduler: RetryScheduler<string>, key: string): number | undefined {
  return scheduler.pending().find((p) => p.key === key)?.dueAtMs;
}

describe('RetryScheduler construction', () => {
  it.each([
    ['a zero base', { baseDelayMs: 0, maxDelayMs: 10 }],
    ['a negative base', { baseDelayMs: -1, maxDelayMs: 10 }],
    ['a NaN base', { baseDelayMs: Number.NaN, maxDelayMs: 10 }],
    ['a max below the base', { baseDelayMs: 100, maxDelayMs: 99 }],
    ['a NaN max', { baseDelayMs: 100, maxDelayMs: Number.NaN }],
    ['a zero poll interval', { baseDelayMs: 1, maxDelayMs: 10, pollIntervalMs: 0 }],
    ['a negative poll interval', { baseDelayMs: 1, maxDelayMs: 10, pollIntervalMs: -5 }],
    ['a NaN poll interval', { baseDelayMs: 1, maxDelayMs: 10, pollIntervalMs: Number.NaN }],
  ])('throws RangeError for %s', (_name, options) => {
    const clock = new FakeClock();
    expect(() => new RetryScheduler<string>({ ...options, clock, onRetry: () => {} })).toThrow(
      RangeError,
    );
    expect(clock.pendingTimers).toBe(0);
  });

  it('accepts a base equal to the max', async () => {
    const { scheduler } = harness({ baseDelayMs: 500, maxDelayMs: 500 });
    scheduler.noteFailure('a');
    scheduler.noteFailure('a');
    expect(dueOf(scheduler, 'a')).toBe(500);
  });

  it('starts its poller in the constructor, sleeping pollIntervalMs on the clock', async () => {
    const { clock } = harness({ baseDelayMs: 10, maxDelayMs: 100, pollIntervalMs: 250 });
    await until(() => clock.pendingTimers > 0, { what: 'the poller to sleep' });
    expect(clock.pendingDueTimes()).toEqual([250]);
  });

  it('polls every 1000 ms by default', async () => {
    const { clock, scheduler, fired } = harness({ baseDelayMs: 1, maxDelayMs: 10 });
    await until(() => clock.pendingTimers > 0, { what: 'the poller to sleep' });
    expect(clock.pendingDueTimes()).toEqual([1000]);
    scheduler.noteFailure('a');
    await clock.advance(999);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['a@1000']);
  });

  it('works without an injected clock and shuts down cleanly', async () => {
    const scheduler = new RetryScheduler<string>({
      baseDelayMs: 1,
      maxDelayMs: 2,
      onRetry: () => {},
    });
    scheduler.noteFailure('a');
    expect(scheduler.pending()).toHaveLength(1);
    await scheduler.shutdown();
    expect(scheduler.pending()).toEqual([]);
  });
});

describe('RetryScheduler backoff', () => {
  it('doubles the delay with every failure', () => {
    const { scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 100_000, pollIntervalMs: 10 });
    const delays: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      scheduler.noteFailure('a');
      delays.push(dueOf(scheduler, 'a') as number);
    }
    expect(delays).toEqual([100, 200, 400, 800, 1600, 3200]);
    expect(scheduler.pending()).toEqual([{ key: 'a', failures: 6, dueAtMs: 3200 }]);
  });

  it('computes the deadline from the clock time of the failure', async () => {
    const { clock, scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 1000 }, 5_000);
    scheduler.noteFailure('a');
    expect(dueOf(scheduler, 'a')).toBe(5_100);
    await clock.advance(37);
    scheduler.noteFailure('a');
    expect(dueOf(scheduler, 'a')).toBe(5_237);
  });

  it('caps the delay at maxDelayMs', () => {
    const { scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 800, pollIntervalMs: 10 });
    const delays: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      scheduler.noteFailure('a');
      delays.push(dueOf(scheduler, 'a') as number);
    }
    expect(delays).toEqual([100, 200, 400, 800, 800, 800, 800]);
  });

  it('caps at a max that is not a power-of-two multiple of the base', () => {
    const { scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 350, pollIntervalMs: 10 });
    const delays: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      scheduler.noteFailure('a');
      delays.push(dueOf(scheduler, 'a') as number);
    }
    expect(delays).toEqual([100, 200, 350, 350, 350]);
  });

  it('survives 5,000 failures of one key with the delay at the cap', () => {
    const { scheduler } = harness({ baseDelayMs: 1, maxDelayMs: 60_000 });
    for (let i = 0; i < 5_000; i += 1) scheduler.noteFailure('a');
    expect(scheduler.pending()).toEqual([{ key: 'a', failures: 5_000, dueAtMs: 60_000 }]);
  });

  it('keeps each key’s count independent', () => {
    const { scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 100_000 });
    scheduler.noteFailure('a');
    scheduler.noteFailure('a');
    scheduler.noteFailure('a');
    scheduler.noteFailure('b');
    expect(dueOf(scheduler, 'a')).toBe(400);
    expect(dueOf(scheduler, 'b')).toBe(100);
    scheduler.noteSuccess('a');
    expect(dueOf(scheduler, 'b')).toBe(100);
    expect(scheduler.pending().map((p) => p.key)).toEqual(['b']);
  });

  it('forgets the count and the pending deadline on success', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 100,
      maxDelayMs: 100_000,
      pollIntervalMs: 10,
    });
    scheduler.noteFailure('a');
    scheduler.noteFailure('a');
    scheduler.noteSuccess('a');
    expect(scheduler.pending()).toEqual([]);
    await clock.advance(10_000);
    expect(fired).toEqual([]);
    scheduler.noteFailure('a');
    expect(scheduler.pending()).toEqual([{ key: 'a', failures: 1, dueAtMs: 10_100 }]);
  });

  it('ignores noteSuccess for a key it does not know', () => {
    const { scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 1000 });
    expect(() => scheduler.noteSuccess('never-failed')).not.toThrow();
    expect(scheduler.pending()).toEqual([]);
  });
});

describe('RetryScheduler firing', () => {
  it('fires at the first poll tick at or after the deadline, not before', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 250,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a'); // due at 250: ticks at 100, 200, 300
    await clock.advance(299);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['a@300']);
  });

  it('fires on a tick that falls exactly on the deadline', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 200,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a');
    await clock.advance(199);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['a@200']);
  });

  it('never fires twice for one failure', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      pollIntervalMs: 50,
    });
    scheduler.noteFailure('a');
    await clock.advance(100_000);
    expect(fired).toEqual(['a@100']);
  });

  it('clears the deadline but keeps the count once a retry fires', async () => {
    const { clock, scheduler } = harness({
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a');
    scheduler.noteFailure('a'); // due at 200
    await clock.advance(200);
    const [entry, ...rest] = scheduler.pending();
    expect(rest).toEqual([]);
    expect(entry?.key).toBe('a');
    expect(entry?.failures).toBe(2);
    expect(entry?.dueAtMs).toBeUndefined();
    scheduler.noteFailure('a');
    expect(dueOf(scheduler, 'a')).toBe(200 + 400);
  });

  it('lets the latest failure win even when its deadline is later', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 1000,
      maxDelayMs: 100_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a'); // due at 1000
    await clock.advance(500);
    scheduler.noteFailure('a'); // overwrites: due at 500 + 2000 = 2500
    expect(dueOf(scheduler, 'a')).toBe(2500);
    await clock.advance(1999); // t = 2499: the first deadline passed long ago
    expect(fired).toEqual([]);
    await clock.advance(1); // t = 2500, a tick
    expect(fired).toEqual(['a@2500']);
    await clock.advance(10_000);
    expect(fired).toEqual(['a@2500']);
  });

  it('lets the latest failure win at the cap, where only the failure time moves the deadline', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 1000,
      maxDelayMs: 1000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a'); // due at 1000
    await clock.advance(900);
    scheduler.noteFailure('a'); // due at 1900
    await clock.advance(100); // t = 1000
    expect(fired).toEqual([]);
    await clock.advance(900); // t = 1900
    expect(fired).toEqual(['a@1900']);
  });

  it('fires independent keys at their own deadlines', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a');
    scheduler.noteFailure('a'); // due 200
    scheduler.noteFailure('b'); // due 100
    scheduler.noteFailure('c'); // due 100
    await clock.advance(100);
    expect([...fired].sort()).toEqual(['b@100', 'c@100']);
    await clock.advance(100);
    expect(fired.slice(2)).toEqual(['a@200']);
  });

  it('fires a failure noted after an earlier retry fired', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a');
    await clock.advance(100);
    scheduler.noteFailure('a'); // due 100 + 200
    await clock.advance(200);
    expect(fired).toEqual(['a@100', 'a@300']);
  });
});

describe('RetryScheduler shutdown', () => {
  it('clears all state, stops the poller and fires nothing afterwards', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    scheduler.noteFailure('a');
    scheduler.noteFailure('b');
    await scheduler.shutdown();
    expect(scheduler.pending()).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(fired).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('ignores failures noted after shutdown', async () => {
    const { clock, scheduler, fired } = harness({
      baseDelayMs: 100,
      maxDelayMs: 10_000,
      pollIntervalMs: 100,
    });
    await scheduler.shutdown();
    scheduler.noteFailure('a');
    expect(scheduler.pending()).toEqual([]);
    await clock.advance(1_000);
    expect(fired).toEqual([]);
  });

  it('tolerates shutdown twice, also concurrently', async () => {
    const { clock, scheduler } = harness({ baseDelayMs: 100, maxDelayMs: 10_000 });
    await Promise.all([scheduler.shutdown(), scheduler.shutdown()]);
    await expect(scheduler.shutdown()).resolves.toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });
});
