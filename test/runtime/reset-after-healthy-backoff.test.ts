import { describe, expect, it } from 'vitest';
import { ExponentialBackoff } from '../../src/runtime/backoff.js';
import { ResetAfterHealthyBackoff } from '../../src/runtime/reset-after-healthy-backoff.js';
import { FakeClock } from '../support/fake-clock.js';

function backoffOnFakeClock(): { clock: FakeClock; backoff: ResetAfterHealthyBackoff } {
  const clock = new FakeClock();
  const inner = new ExponentialBackoff({ initialMs: 100, maxMs: 1_000 });
  return { clock, backoff: new ResetAfterHealthyBackoff(inner, clock, 1_000) };
}

describe('ResetAfterHealthyBackoff', () => {
  it('grows like the backoff it wraps while the caller is never healthy', async () => {
    const { clock, backoff } = backoffOnFakeClock();
    const seen: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const wait = backoff.next();
      seen.push(wait);
      await clock.advance(wait);
    }
    expect(seen).toEqual([100, 200, 400, 800]);
    expect(backoff.failures).toBe(4);
  });

  it('starts over when the caller stayed healthy for the whole duration', async () => {
    const { clock, backoff } = backoffOnFakeClock();
    backoff.next();
    backoff.next();
    backoff.healthy();
    await clock.advance(1_000);
    expect(backoff.next()).toBe(100);
    expect(backoff.failures).toBe(1);
  });

  it('keeps the streak when health ended sooner than the duration', async () => {
    const { clock, backoff } = backoffOnFakeClock();
    backoff.next();
    backoff.healthy();
    await clock.advance(999);
    expect(backoff.next()).toBe(200);
  });

  it('counts health from its first mark, not from a later one', async () => {
    const { clock, backoff } = backoffOnFakeClock();
    backoff.next();
    backoff.healthy();
    await clock.advance(600);
    backoff.healthy();
    await clock.advance(400);
    expect(backoff.next()).toBe(100);
  });

  it('does not count the wait after a failure as health', async () => {
    const { clock, backoff } = backoffOnFakeClock();
    backoff.healthy();
    await clock.advance(5_000);
    expect(backoff.next()).toBe(100);
    await clock.advance(5_000);
    expect(backoff.next()).toBe(200);
  });

  it('starts over at once on an explicit reset', () => {
    const { backoff } = backoffOnFakeClock();
    backoff.next();
    backoff.next();
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBe(100);
  });
});
