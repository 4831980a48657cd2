import { describe, expect, it } from 'vitest';
import { LeaderElector, LeaseConflictError } from '../../src/index.js';
import { FakeLeaseLock, FakeLeaseStore } from '../support/fake-lease-lock.js';
import { FakeClock, LEASE_NAME } from './harness.js';

const lock = () => new FakeLeaseLock(new FakeLeaseStore(), new FakeClock(), LEASE_NAME);

describe('LeaderElector construction', () => {
  it('accepts the defaults with only a lock and an identity', () => {
    expect(() => new LeaderElector({ lock: lock(), identity: 'a' })).not.toThrow();
  });

  it('throws a RangeError when the identity is empty', () => {
    expect(() => new LeaderElector({ lock: lock(), identity: '' })).toThrow(RangeError);
  });

  it.each([
    ['leaseDurationMs', 0],
    ['leaseDurationMs', -15_000],
    ['leaseDurationMs', Number.NaN],
    ['leaseDurationMs', Number.POSITIVE_INFINITY],
    ['renewDeadlineMs', 0],
    ['renewDeadlineMs', -1],
    ['renewDeadlineMs', Number.NaN],
    ['renewDeadlineMs', Number.POSITIVE_INFINITY],
    ['retryPeriodMs', 0],
    ['retryPeriodMs', -2_000],
    ['retryPeriodMs', Number.NaN],
    ['retryPeriodMs', Number.POSITIVE_INFINITY],
  ])('throws a RangeError when %s is %s (not a positive finite number)', (name, value) => {
    expect(() => new LeaderElector({ lock: lock(), identity: 'a', [name]: value })).toThrow(
      RangeError,
    );
  });

  it('throws a RangeError when leaseDurationMs is not greater than the default renewDeadlineMs (defaults applied first)', () => {
    expect(
      () => new LeaderElector({ lock: lock(), identity: 'a', leaseDurationMs: 10_000 }),
    ).toThrow(RangeError);
    expect(
      () => new LeaderElector({ lock: lock(), identity: 'a', leaseDurationMs: 9_000 }),
    ).toThrow(RangeError);
  });

  it('throws a RangeError when renewDeadlineMs alone is raised to the default leaseDurationMs', () => {
    expect(
      () => new LeaderElector({ lock: lock(), identity: 'a', renewDeadlineMs: 15_000 }),
    ).toThrow(RangeError);
  });

  it('accepts leaseDurationMs just above renewDeadlineMs', () => {
    expect(
      () => new LeaderElector({ lock: lock(), identity: 'a', leaseDurationMs: 10_001 }),
    ).not.toThrow();
  });

  it('throws a RangeError when renewDeadlineMs is not greater than 1.2 × retryPeriodMs', () => {
    // default renewDeadlineMs 10_000: 1.2 × 9_000 = 10_800
    expect(() => new LeaderElector({ lock: lock(), identity: 'a', retryPeriodMs: 9_000 })).toThrow(
      RangeError,
    );
    // equality is not enough: 1.2 × 5_000 = 6_000
    expect(
      () =>
        new LeaderElector({
          lock: lock(),
          identity: 'a',
          renewDeadlineMs: 6_000,
          retryPeriodMs: 5_000,
        }),
    ).toThrow(RangeError);
  });

  it('accepts renewDeadlineMs just above 1.2 × retryPeriodMs', () => {
    expect(
      () =>
        new LeaderElector({
          lock: lock(),
          identity: 'a',
          renewDeadlineMs: 6_001,
          retryPeriodMs: 5_000,
        }),
    ).not.toThrow();
    expect(
      () => new LeaderElector({ lock: lock(), identity: 'a', retryPeriodMs: 8_000 }),
    ).not.toThrow();
  });

  it('exports LeaseConflictError as an Error subclass', () => {
    const error = new LeaseConflictError('stale');
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect(error.message).toBe('stale');
  });
});
