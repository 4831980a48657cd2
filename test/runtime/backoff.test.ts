import { describe, expect, it } from 'vitest';
import { exponentialBackoffMs, jitteredMs } from '../../src/runtime/backoff.js';

describe('exponentialBackoffMs', () => {
  it('waits the base after the first failure and doubles per further one', () => {
    expect([1, 2, 3, 4].map((n) => exponentialBackoffMs(100, 10_000, n))).toEqual([
      100, 200, 400, 800,
    ]);
  });

  it('never exceeds the cap', () => {
    expect(exponentialBackoffMs(100, 250, 3)).toBe(250);
  });

  it('stays finite however long the streak runs', () => {
    expect(exponentialBackoffMs(1, 30_000, Number.MAX_SAFE_INTEGER)).toBe(30_000);
  });

  it('reads a streak below one as the first failure', () => {
    expect(exponentialBackoffMs(100, 1_000, 0)).toBe(100);
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
