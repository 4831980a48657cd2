import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SINK_BACKOFF_BASE_MS,
  DEFAULT_SINK_BACKOFF_MAX_MS,
  sinkBackoffMaxMs,
  TargetBackoff,
} from '../../src/sinks/target-backoff.js';
import { FakeClock } from '../support/fake-clock.js';

describe('TargetBackoff', () => {
  it('holds a failed target for 1 s doubling to its cap, and frees it on success', async () => {
    const clock = new FakeClock();
    const backoff = new TargetBackoff<string>({ clock, baseMs: 1_000, maxMs: 3_000 });
    expect(backoff.heldUntil('a')).toBeUndefined();
    backoff.failed('a');
    expect(backoff.heldUntil('a')).toBe(1_000);
    await clock.advance(1_000);
    expect(backoff.heldUntil('a')).toBeUndefined();
    backoff.failed('a');
    expect(backoff.heldUntil('a')).toBe(3_000);
    await clock.advance(2_000);
    backoff.failed('a');
    expect(backoff.heldUntil('a')).toBe(6_000); // capped at 3 s
    expect(backoff.failures('a')).toBe(3);
    backoff.succeeded('a');
    expect(backoff.heldUntil('a')).toBeUndefined();
    backoff.failed('a');
    expect(backoff.heldUntil('a')).toBe(4_000);
  });

  it('names the earliest time a held target may be called, per target', async () => {
    const clock = new FakeClock();
    const backoff = new TargetBackoff<string>({ clock });
    expect(backoff.nextAttemptAtMs()).toBeUndefined();
    backoff.failed('a');
    backoff.failed('a');
    backoff.failed('b');
    expect(backoff.heldUntil('a')).toBe(2_000);
    expect(backoff.nextAttemptAtMs()).toBe(1_000);
    await clock.advance(1_000);
    expect(backoff.nextAttemptAtMs()).toBe(2_000);
    await clock.advance(1_000);
    expect(backoff.nextAttemptAtMs()).toBeUndefined();
  });

  it('refuses a base that is not positive and a cap below the base', () => {
    expect(() => new TargetBackoff({ baseMs: 0 })).toThrow(RangeError);
    expect(() => new TargetBackoff({ baseMs: 2_000, maxMs: 1_000 })).toThrow(RangeError);
  });
});

describe('sinkBackoffMaxMs', () => {
  it('caps a target backoff at the drift interval, within the sink defaults', () => {
    expect(sinkBackoffMaxMs(null)).toBe(DEFAULT_SINK_BACKOFF_MAX_MS);
    expect(sinkBackoffMaxMs(60_000)).toBe(60_000);
    expect(sinkBackoffMaxMs(600_000)).toBe(DEFAULT_SINK_BACKOFF_MAX_MS);
    expect(sinkBackoffMaxMs(2_000)).toBe(2_000);
    expect(sinkBackoffMaxMs(100)).toBe(DEFAULT_SINK_BACKOFF_BASE_MS);
  });
});
