/**
 * One attempt (`tryAcquireOrRenew`), observed through `run()`: what is read and written, how
 * expiry is judged from the local observed time, how failures are handled, and `onNewLeader`.
 * Defaults unless stated: leaseDurationMs 15_000, renewDeadlineMs 10_000, retryPeriodMs 2_000,
 * and random() = 0, so acquisition attempts follow each other every 2_000 ms.
 */
import { describe, expect, it } from 'vitest';
import { LeaseConflictError, type LeaseRecord } from '../../src/index.js';
import { electorHarness, WALL_EPOCH, wallAt } from './harness.js';

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function held(holderIdentity: string, extra: Partial<LeaseRecord> = {}): LeaseRecord {
  return {
    holderIdentity,
    leaseDurationSeconds: 15,
    acquireTime: '2029-12-31T23:00:00.000000Z',
    renewTime: '2029-12-31T23:59:00.000000Z',
    leaseTransitions: 3,
    ...extra,
  };
}

describe('LeaderElector attempt: creating the Lease', () => {
  it('creates the Lease when there is none with this identity, ceil(leaseDurationMs / 1000) seconds, acquireTime = renewTime = wallClock() and no transitions', async () => {
    const h = electorHarness({ leaseDurationMs: 15_500 });
    await h.fake.advance(1_234);
    h.start();
    await h.atRest();

    expect(h.lock.timesOf('get')).toEqual([1_234]);
    const creates = h.lock.callsOf('create');
    expect(creates).toHaveLength(1);
    expect(creates[0]!.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 16,
      acquireTime: wallAt(1_234),
      renewTime: wallAt(1_234),
      leaseTransitions: 0,
    });
    expect(h.elector.isLeader()).toBe(true);
    expect(h.elector.leader()).toBe('a');
  });

  it('writes timestamps as MicroTime: UTC, six fractional digits and Z', async () => {
    const h = electorHarness({ wallClock: () => new Date('2030-06-07T08:09:10.123Z') });
    h.start();
    await h.atRest();

    const record = h.lock.callsOf('create')[0]!.record!;
    expect(record.acquireTime).toMatch(MICRO_TIME);
    expect(record.acquireTime).toBe('2030-06-07T08:09:10.123000Z');
    expect(record.renewTime).toBe('2030-06-07T08:09:10.123000Z');
  });

  it('writes acquireTime and renewTime from one wallClock() reading when creating and when taking over', async () => {
    let ticks = 0;
    const wallClock = () => new Date(WALL_EPOCH + 7 * ++ticks);
    const h = electorHarness({ wallClock });
    h.start();
    await h.atRest();
    const created = h.lock.callsOf('create')[0]!.record!;
    expect(created.acquireTime).toBe(created.renewTime);

    const other = electorHarness({ wallClock, identity: 'b' });
    other.lock.seed(held(''));
    other.start();
    await other.atRest();
    const takeover = other.lock.callsOf('update')[0]!.record!;
    expect(takeover.acquireTime).toBe(takeover.renewTime);
  });

  it('uses the leaseDurationSeconds rounded up from a whole number of seconds exactly', async () => {
    const h = electorHarness({ leaseDurationMs: 12_000 });
    h.start();
    await h.atRest();
    expect(h.lock.callsOf('create')[0]!.record!.leaseDurationSeconds).toBe(12);
  });
});

describe('LeaderElector attempt: renewing and taking over', () => {
  it('renews with the same acquireTime and leaseTransitions, a fresh renewTime, on the resourceVersion it wrote', async () => {
    const h = electorHarness();
    h.start();
    await h.atRest();
    const afterCreate = h.lock.current!;

    await h.fake.advance(2_000);
    const updates = h.lock.callsOf('update');
    expect(updates).toHaveLength(1);
    expect(updates[0]!.atMs).toBe(2_000);
    expect(updates[0]!.resourceVersion).toBe(afterCreate.resourceVersion);
    expect(updates[0]!.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: wallAt(0),
      renewTime: wallAt(2_000),
      leaseTransitions: 0,
    });
  });

  it('renews at once a Lease that already names this identity, keeping its acquireTime and transitions but writing its own leaseDurationSeconds', async () => {
    const h = electorHarness();
    const seeded = h.lock.seed(held('a', { leaseDurationSeconds: 40, leaseTransitions: 5 }));
    h.start();
    await h.atRest();

    expect(h.lock.callsOf('create')).toHaveLength(0);
    const updates = h.lock.callsOf('update');
    expect(updates).toHaveLength(1);
    expect(updates[0]!.resourceVersion).toBe(seeded.resourceVersion);
    expect(updates[0]!.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: seeded.record.acquireTime,
      renewTime: wallAt(0),
      leaseTransitions: 5,
    });
    expect(h.elector.isLeader()).toBe(true);
  });

  it('takes over a released Lease at once with a fresh acquireTime and leaseTransitions + 1', async () => {
    const h = electorHarness();
    await h.fake.advance(500);
    h.lock.seed(held('', { leaseDurationSeconds: 1, leaseTransitions: 2 }));
    h.start();
    await h.atRest();

    const updates = h.lock.callsOf('update');
    expect(updates).toHaveLength(1);
    expect(updates[0]!.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: wallAt(500),
      renewTime: wallAt(500),
      leaseTransitions: 3,
    });
    expect(h.elector.isLeader()).toBe(true);
  });

  it('does not touch a Lease another identity holds until observedTime + leaseDurationSeconds × 1000, then takes it over with leaseTransitions + 1', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14, leaseTransitions: 3 }));
    h.start();

    await h.fake.advance(13_999);
    expect(h.lock.timesOf('get')).toEqual([0, 2_000, 4_000, 6_000, 8_000, 10_000, 12_000]);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    expect(h.elector.isLeader()).toBe(false);

    await h.fake.advance(1);
    const updates = h.lock.callsOf('update');
    expect(updates).toHaveLength(1);
    expect(updates[0]!.atMs).toBe(14_000);
    expect(updates[0]!.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 14,
      acquireTime: wallAt(14_000),
      renewTime: wallAt(14_000),
      leaseTransitions: 4,
    });
    expect(h.elector.isLeader()).toBe(true);
  });

  it("judges expiry by the record's leaseDurationSeconds, not by its own lease duration", async () => {
    const h = electorHarness();
    h.lock.seed(held('b', { leaseDurationSeconds: 30 }));
    h.start();

    await h.fake.advance(29_999);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    await h.fake.advance(1);
    expect(h.lock.callsOf('update')).toHaveLength(1);
    expect(h.lock.callsOf('update')[0]!.record!.leaseDurationSeconds).toBe(15);
  });

  it('never judges expiry from the timestamps in the record: an ancient renewTime still holds for a full lease from when it was observed', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(
      held('b', {
        leaseDurationSeconds: 14,
        acquireTime: '2000-01-01T00:00:00.000000Z',
        renewTime: '2000-01-01T00:00:00.000000Z',
      }),
    );
    h.start();
    await h.fake.advance(13_999);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    await h.fake.advance(1);
    expect(h.lock.timesOf('update')).toEqual([14_000]);
  });

  it('never judges expiry from the timestamps in the record: a renewTime in the future does not extend the lease', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14, renewTime: '2099-01-01T00:00:00.000000Z' }));
    h.start();
    await h.fake.advance(14_000);
    expect(h.lock.timesOf('update')).toEqual([14_000]);
  });

  it('restarts the expiry wait from the moment it sees the holder renew', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14 }));
    h.start();
    await h.fake.advance(5_000);
    h.lock.seed(held('b', { leaseDurationSeconds: 14, renewTime: '2030-01-01T00:00:05.000000Z' }));

    // observed anew by the attempt at 6_000, so held until 20_000
    await h.fake.advance(14_999);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    await h.fake.advance(1);
    expect(h.lock.timesOf('update')).toEqual([20_000]);
  });

  it('treats a new resourceVersion of an otherwise identical record as a new observation', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14 }));
    h.start();
    await h.fake.advance(5_000);
    h.lock.touch();

    await h.fake.advance(14_999);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    await h.fake.advance(1);
    expect(h.lock.timesOf('update')).toEqual([20_000]);
  });

  it('treats a changed field under the same resourceVersion as a new observation', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14 }));
    h.start();
    await h.fake.advance(5_000);
    h.lock.seed(held('b', { leaseDurationSeconds: 14, leaseTransitions: 9 }), {
      keepResourceVersion: true,
    });

    await h.fake.advance(14_999);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    await h.fake.advance(1);
    expect(h.lock.timesOf('update')).toEqual([20_000]);
  });

  it('takes the observed time from when get returned, not from when it was called', async () => {
    const h = electorHarness();
    h.lock.seed(held('b', { leaseDurationSeconds: 15 }));
    h.lock.once('get', { kind: 'delay', ms: 1_000 });
    h.start();

    // observed at 1_000: held until 16_000; attempts at 3_000, 5_000, …, 15_000, 17_000
    await h.fake.advance(16_999);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    expect(h.lock.timesOf('get')).toContain(15_000);
    await h.fake.advance(1);
    expect(h.lock.timesOf('update')).toEqual([17_000]);
  });
});

describe('LeaderElector attempt: failures', () => {
  it('logs a rejected get, never throws it, and tries again later', async () => {
    const h = electorHarness();
    const boom = new Error('apiserver unavailable');
    h.lock.once('get', { kind: 'fail', error: boom });
    const term = h.start();
    await h.atRest();

    expect(h.logger.mentioning(boom).length).toBeGreaterThan(0);
    expect(term.result.rejected).toBe(false);
    expect(h.elector.isLeader()).toBe(false);

    await h.fake.advance(2_000);
    expect(h.lock.timesOf('get')).toEqual([0, 2_000]);
    expect(h.elector.isLeader()).toBe(true);
  });

  it('fails the attempt on a create conflict, logs it, and tries again', async () => {
    const h = electorHarness();
    const conflict = new LeaseConflictError('lease exists');
    h.lock.once('create', { kind: 'fail', error: conflict });
    const term = h.start();
    await h.atRest();

    expect(h.elector.isLeader()).toBe(false);
    expect(h.logger.mentioning(conflict).length).toBeGreaterThan(0);
    expect(term.result.settled).toBe(false);

    await h.fake.advance(2_000);
    expect(h.lock.callsOf('create')).toHaveLength(2);
    expect(h.elector.isLeader()).toBe(true);
  });

  it('fails the attempt on an update conflict (stale resourceVersion), logs it, and tries again', async () => {
    const h = electorHarness();
    h.lock.seed(held(''));
    const conflict = new LeaseConflictError('stale resourceVersion');
    h.lock.once('update', { kind: 'fail', error: conflict });
    const term = h.start();
    await h.atRest();

    expect(h.elector.isLeader()).toBe(false);
    expect(h.logger.mentioning(conflict).length).toBeGreaterThan(0);
    expect(term.result.settled).toBe(false);

    await h.fake.advance(2_000);
    expect(h.lock.callsOf('update')).toHaveLength(2);
    expect(h.elector.isLeader()).toBe(true);
  });

  it('fails the attempt on a real stale resourceVersion when someone wrote between get and update', async () => {
    const h = electorHarness();
    h.lock.seed(held(''));
    // The update waits 100 ms; meanwhile another party rewrites the Lease.
    h.lock.once('update', { kind: 'delay', ms: 100 });
    h.start();
    await h.fake.advance(50);
    h.lock.seed(held('b', { leaseDurationSeconds: 15 }));
    await h.fake.advance(50);

    expect(h.lock.callsOf('update')[0]!.outcome).toBe('error');
    expect(h.elector.isLeader()).toBe(false);
    expect(h.lock.current!.record.holderIdentity).toBe('b');
  });
});

describe('LeaderElector attempt: onNewLeader and leader()', () => {
  it('reads leader() as null before anything was observed', () => {
    const h = electorHarness();
    expect(h.elector.leader()).toBeNull();
    expect(h.elector.isLeader()).toBe(false);
  });

  it('reports the observed holder once, however often it renews, and its own identity once when it takes over', async () => {
    const h = electorHarness({ identity: 'f', leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14 }));
    h.start();
    await h.atRest();
    expect(h.newLeaders).toEqual(['b']);
    expect(h.elector.leader()).toBe('b');

    await h.fake.advance(3_000);
    h.lock.seed(held('b', { leaseDurationSeconds: 14, renewTime: '2030-01-01T00:00:03.000000Z' }));
    await h.fake.advance(2_000);
    expect(h.newLeaders).toEqual(['b']);

    h.lock.seed(held('', { leaseDurationSeconds: 1 }));
    await h.fake.advance(1_000); // attempt at 6_000 takes the released lease over
    expect(h.elector.isLeader()).toBe(true);
    expect(h.newLeaders).toEqual(['b', 'f']);
    expect(h.elector.leader()).toBe('f');

    await h.fake.advance(10_000);
    expect(h.newLeaders).toEqual(['b', 'f']);
  });

  it('reports A twice for A → "" → A, and never reports ""', async () => {
    const h = electorHarness({ identity: 'f' });
    h.lock.seed(held('a'));
    h.start();
    await h.atRest();
    expect(h.newLeaders).toEqual(['a']);

    await h.fake.advance(1_000);
    h.lock.seed(held('', { leaseDurationSeconds: 1 }));
    // its own takeover at 2_000 loses a race
    h.lock.once('update', { kind: 'fail', error: new LeaseConflictError('raced') });
    await h.fake.advance(1_000);
    expect(h.lock.callsOf('update')).toHaveLength(1);
    expect(h.newLeaders).toEqual(['a']);
    expect(h.elector.leader()).toBeNull();

    h.lock.seed(held('a'));
    await h.fake.advance(2_000);
    expect(h.newLeaders).toEqual(['a', 'a']);
    expect(h.newLeaders).not.toContain('');
    expect(h.elector.leader()).toBe('a');
  });

  it('reports its own identity as soon as its takeover write returns, without waiting for the next read', async () => {
    const h = electorHarness({ leaseDurationMs: 14_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 14 }));
    h.start();
    await h.fake.advance(14_000);
    expect(h.lock.timesOf('update')).toEqual([14_000]);
    expect(h.newLeaders).toEqual(['b', 'a']);
    expect(h.elector.leader()).toBe('a');
  });

  it('reports its own identity once when it creates the Lease, not again on renewals', async () => {
    const h = electorHarness();
    h.start();
    await h.atRest();
    expect(h.newLeaders).toEqual(['a']);
    await h.fake.advance(8_000);
    expect(h.lock.callsOf('update')).toHaveLength(4);
    expect(h.newLeaders).toEqual(['a']);
  });

  it('logs a throwing onNewLeader and goes on leading', async () => {
    const boom = new Error('listener broke');
    const h = electorHarness({
      onNewLeader: () => {
        throw boom;
      },
    });
    const term = h.start();
    await h.atRest();
    expect(h.logger.mentioning(boom).length).toBeGreaterThan(0);
    expect(h.elector.isLeader()).toBe(true);
    await h.fake.advance(2_000);
    expect(h.lock.callsOf('update')).toHaveLength(1);
    expect(term.result.settled).toBe(false);
  });

  it('reads leader() as null when the observed holder is empty', async () => {
    const h = electorHarness();
    h.lock.seed(held('', { leaseDurationSeconds: 1 }));
    h.lock.always('update', { kind: 'fail', error: new LeaseConflictError('raced') });
    h.start();
    await h.atRest();
    expect(h.elector.leader()).toBeNull();
    expect(h.newLeaders).toEqual([]);
  });
});
