import { describe, expect, it } from 'vitest';
import { ExponentialBackoff, jitteredMs } from '../../src/runtime/backoff.js';

function waits(backoff: ExponentialBackoff, count: number): number[] {
  return Array.from({ length: count }, () => backoff.next());
}

describe('ExponentialBackoff', () => {
  it('waits the initial delay after the first failure and doubles per further one', () => {
    expect(waits(new ExponentialBackoff({ initialMs: 100, maxMs: 10_000 }), 4)).toEqual([
      100, 200, 400, 800,
    ]);
  });

  it('never exceeds the cap', () => {
    expect(waits(new ExponentialBackoff({ initialMs: 100, maxMs: 250 }), 4)).toEqual([
      100, 200, 250, 250,
    ]);
  });

  it('stays finite however long the streak runs', () => {
    const backoff = new ExponentialBackoff({ initialMs: 1, maxMs: 30_000 });
    const last = waits(backoff, 5_000).at(-1);
    expect(last).toBe(30_000);
    expect(backoff.failures).toBe(5_000);
  });

  it('counts the failures in a row and starts over after a reset', () => {
    const backoff = new ExponentialBackoff({ initialMs: 100, maxMs: 10_000 });
    waits(backoff, 3);
    expect(backoff.failures).toBe(3);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBe(100);
  });

  it('stretches each wait by the jitter but never past the cap', () => {
    const backoff = new ExponentialBackoff({
      initialMs: 100,
      maxMs: 300,
      jitter: 1,
      random: () => 0.5,
    });
    expect(waits(backoff, 3)).toEqual([150, 300, 300]);
  });
});

describe('jitteredMs', () => {
  it('adds nothing when the random draw is zero', () => {
    expect(jitteredMs(1_000, 1.2, () => 0)).toBe(1_000);
  });

  it('stretches the base by up to the factor', () => {
    expect(jitteredMs(1_000, 1.2, () => 0.5)).toBe(1_600);
  });
});
