/**
 * `run(signal)`: one term. Acquisition with jitter, renewal without, the renew deadline, the order
 * of losing, release on cancel, one term at a time, and `healthy()`.
 * Defaults unless stated: leaseDurationMs 15_000, renewDeadlineMs 10_000, retryPeriodMs 2_000.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../src/index.js';
import { electorHarness, FakeClock, JumpClock, scriptedRandom, wallAt } from './harness.js';

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

describe('LeaderElector run: acquiring', () => {
  it('makes its first attempt at once', async () => {
    const h = electorHarness();
    h.lock.seed(held('b', { leaseDurationSeconds: 1_000 }));
    h.start();
    await h.atRest();
    expect(h.lock.timesOf('get')).toEqual([0]);
  });

  it('retries acquisition after retryPeriodMs × (1 + random() × 1.2), each wait counted from the end of the previous attempt', async () => {
    const random = scriptedRandom(0.5, 0.25, 0.75);
    const h = electorHarness({ random });
    h.lock.seed(held('b', { leaseDurationSeconds: 1_000 }));
    h.lock.always('get', { kind: 'delay', ms: 500 });
    h.start();

    // attempt 0–500; wait 3_200 → 3_700–4_200; wait 2_600 → 6_800–7_300; wait 3_800 → 11_100
    await h.fake.advance(11_100);
    expect(h.lock.timesOf('get')).toEqual([0, 3_700, 6_800, 11_100]);
    expect(h.lock.callsOf('update')).toHaveLength(0);
    expect(h.elector.isLeader()).toBe(false);
  });

  it('waits exactly retryPeriodMs between acquisition attempts when random() is 0', async () => {
    const h = electorHarness({ random: () => 0, retryPeriodMs: 1_000, renewDeadlineMs: 5_000 });
    h.lock.seed(held('b', { leaseDurationSeconds: 1_000 }));
    h.start();
    await h.fake.advance(3_500);
    expect(h.lock.timesOf('get')).toEqual([0, 1_000, 2_000, 3_000]);
  });

  it('keeps trying until the signal aborts, then resolves without ever leading, writing nothing', async () => {
    const h = electorHarness();
    h.lock.seed(held('b', { leaseDurationSeconds: 1_000 }));
    const term = h.start();
    await h.fake.advance(9_000);
    expect(term.result.settled).toBe(false);
    const gets = h.lock.callsOf('get').length;

    term.controller.abort();
    await h.atRest();
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
    expect(h.leadingSignals).toHaveLength(0);
    expect(h.stopped).toBe(0);
    expect(h.elector.isLeader()).toBe(false);
    expect(h.lock.callsOf('update')).toHaveLength(0);

    await h.fake.advance(20_000);
    expect(h.lock.callsOf('get')).toHaveLength(gets);
  });

  it('resolves without leading when the signal aborts during an acquisition attempt', async () => {
    const h = electorHarness();
    h.lock.once('get', { kind: 'hang', honourSignal: true });
    const term = h.start();
    await h.atRest();
    expect(h.lock.hung).toHaveLength(1);

    term.controller.abort();
    await h.atRest();
    expect(h.lock.hung[0]!.call.signal.aborted).toBe(true);
    expect(term.result.settled).toBe(true);
    expect(h.leadingSignals).toHaveLength(0);
    expect(h.stopped).toBe(0);
    expect(h.lock.callsOf('create')).toHaveLength(0);
  });
});

describe('LeaderElector run: leading', () => {
  it('is leader before onStartedLeading is called, with a signal that has not aborted', async () => {
    const h = electorHarness();
    h.start();
    await h.atRest();
    expect(h.log).toEqual(['started isLeader=true']);
    expect(h.leadingSignals).toHaveLength(1);
    expect(h.leadingSignals[0]!.aborted).toBe(false);
  });

  it('does not await onStartedLeading: renewals go on while it is still pending', async () => {
    const h = electorHarness({ onStartedLeading: () => new Promise<void>(() => {}) });
    const term = h.start();
    await h.fake.advance(6_000);
    expect(h.lock.timesOf('update')).toEqual([2_000, 4_000, 6_000]);
    expect(h.elector.isLeader()).toBe(true);
    expect(term.result.settled).toBe(false);
  });

  it('logs an onStartedLeading that throws and goes on leading', async () => {
    const boom = new Error('could not start');
    const h = electorHarness({
      onStartedLeading: () => {
        throw boom;
      },
    });
    const term = h.start();
    await h.atRest();
    expect(h.logger.mentioning(boom).length).toBeGreaterThan(0);
    await h.fake.advance(4_000);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.lock.callsOf('update')).toHaveLength(2);
    expect(term.result.settled).toBe(false);
  });

  it('logs an onStartedLeading that rejects and goes on leading', async () => {
    const boom = new Error('start rejected');
    const h = electorHarness({ onStartedLeading: () => Promise.reject(boom) });
    const term = h.start();
    await h.atRest();
    expect(h.logger.mentioning(boom).length).toBeGreaterThan(0);
    await h.fake.advance(4_000);
    expect(h.elector.isLeader()).toBe(true);
    expect(term.result.settled).toBe(false);
  });

  it('renews every retryPeriodMs after the last successful write, without jitter', async () => {
    const random = scriptedRandom(0.99);
    const h = electorHarness({ random });
    h.start();
    await h.atRest(); // created at 0
    h.lock.once('update', { kind: 'delay', ms: 300 });

    await h.fake.advance(6_300);
    // renew at 2_000 succeeds at 2_300 → 4_300 → 6_300
    expect(h.lock.timesOf('get')).toEqual([0, 2_000, 4_300, 6_300]);
    expect(h.lock.timesOf('update')).toEqual([2_000, 4_300, 6_300]);
  });

  it('counts the renew deadline from when the acquiring write returned', async () => {
    const h = electorHarness();
    h.lock.once('create', { kind: 'delay', ms: 300 });
    h.start();
    await h.fake.advance(300); // created at 300
    expect(h.elector.isLeader()).toBe(true);
    h.lock.always('get', { kind: 'fail' });

    await h.fake.advance(9_999); // 10_299
    expect(h.lock.timesOf('get')).toEqual([0, 2_300, 4_300, 6_300, 8_300]);
    expect(h.elector.isLeader()).toBe(true);
    await h.fake.advance(1); // 10_300
    expect(h.elector.isLeader()).toBe(false);
  });

  it('keeps leading for as long as renewals succeed', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.fake.advance(60_000);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.lock.callsOf('update')).toHaveLength(30);
    expect(h.stopped).toBe(0);
    expect(h.leadingSignals[0]!.aborted).toBe(false);
    expect(term.result.settled).toBe(false);
  });

  it('retries a failed renewal every retryPeriodMs and keeps leading until last success + renewDeadlineMs', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest(); // created at 0
    h.lock.always('get', { kind: 'fail', error: new Error('apiserver down') });

    await h.fake.advance(9_999);
    expect(h.lock.timesOf('get')).toEqual([0, 2_000, 4_000, 6_000, 8_000]);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.stopped).toBe(0);

    await h.fake.advance(1);
    expect(h.elector.isLeader()).toBe(false);
    expect(h.leadingSignals[0]!.aborted).toBe(true);
    expect(h.stopped).toBe(1);
    await h.atRest();
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
    expect(h.lock.releases()).toHaveLength(0);
  });

  it('loses leadership at last success + renewDeadlineMs even while an update hangs, aborting that attempt', async () => {
    const h = electorHarness();
    h.start();
    await h.fake.advance(2_000); // renewed at 2_000
    h.lock.once('update', { kind: 'hang' });

    await h.fake.advance(2_000); // renew attempt at 4_000 hangs
    expect(h.lock.hung).toHaveLength(1);
    const hung = h.lock.hung[0]!;
    expect(hung.call.atMs).toBe(4_000);

    await h.fake.advance(7_999); // 11_999
    expect(h.elector.isLeader()).toBe(true);
    expect(hung.call.signal.aborted).toBe(false);

    await h.fake.advance(1); // 12_000 = 2_000 + 10_000
    expect(h.elector.isLeader()).toBe(false);
    expect(hung.call.signal.aborted).toBe(true);
    expect(h.leadingSignals[0]!.aborted).toBe(true);
    expect(h.stopped).toBe(1);
  });

  it('ignores the result of an attempt that was in flight when the renew deadline passed', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.lock.once('update', { kind: 'hang' });
    await h.fake.advance(10_000);
    expect(h.elector.isLeader()).toBe(false);

    h.lock.hung[0]!.proceed(); // the write goes through after all
    await h.atRest();
    await h.fake.advance(5_000);
    expect(h.elector.isLeader()).toBe(false);
    expect(h.leadingSignals).toHaveLength(1);
    expect(h.stopped).toBe(1);
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
  });

  it('resolves run at the renew deadline even though the hung attempt never settles', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.lock.always('update', { kind: 'hang' });
    await h.fake.advance(10_000);
    await h.atRest();
    expect(h.elector.isLeader()).toBe(false);
    expect(term.result.settled).toBe(true);
  });

  it('resolves run at the renew deadline when the hung attempt honours its aborted signal', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.lock.always('update', { kind: 'hang', honourSignal: true });
    await h.fake.advance(9_999);
    expect(term.result.settled).toBe(false);
    await h.fake.advance(1);
    await h.atRest();
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
  });

  it('keeps leading until its own deadline when another identity took the Lease over meanwhile', async () => {
    const h = electorHarness();
    h.start();
    await h.fake.advance(3_000); // renewed at 2_000
    h.lock.seed(held('b', { leaseDurationSeconds: 15 }));

    await h.fake.advance(8_999); // 11_999
    expect(h.lock.timesOf('get')).toEqual([0, 2_000, 4_000, 6_000, 8_000, 10_000]);
    expect(h.lock.callsOf('update')).toHaveLength(1);
    expect(h.newLeaders).toEqual(['a', 'b']);
    expect(h.elector.leader()).toBe('b');
    expect(h.elector.isLeader()).toBe(true);

    await h.fake.advance(1); // 12_000
    expect(h.elector.isLeader()).toBe(false);
    expect(h.stopped).toBe(1);
  });
});

describe('LeaderElector run: losing', () => {
  it('on an aborted signal: isLeader() false, then the leading signal aborts, then onStoppedLeading exactly once', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.leadingSignals[0]!.addEventListener('abort', () => {
      h.log.push(`leading aborted isLeader=${h.elector.isLeader()} stopped=${h.stopped}`);
    });
    await h.fake.advance(3_000);

    term.controller.abort();
    await h.atRest();
    expect(h.log).toEqual([
      'started isLeader=true',
      'leading aborted isLeader=false stopped=0',
      'stopped isLeader=false',
    ]);
    await h.fake.advance(30_000);
    expect(h.stopped).toBe(1);
    expect(term.result.settled).toBe(true);
  });

  it('at the renew deadline: isLeader() false, then the leading signal aborts, then onStoppedLeading exactly once', async () => {
    const h = electorHarness();
    h.start();
    await h.atRest();
    h.leadingSignals[0]!.addEventListener('abort', () => {
      h.log.push(`leading aborted isLeader=${h.elector.isLeader()} stopped=${h.stopped}`);
    });
    h.lock.always('get', { kind: 'fail' });
    await h.fake.advance(10_000);
    await h.fake.advance(30_000);
    expect(h.log).toEqual([
      'started isLeader=true',
      'leading aborted isLeader=false stopped=0',
      'stopped isLeader=false',
    ]);
  });

  it('aborts a renewal in flight when the signal aborts, then releases and resolves', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.lock.once('update', { kind: 'hang', honourSignal: true });
    await h.fake.advance(2_000); // renewal at 2_000 hangs
    const hung = h.lock.hung[0]!.call;

    await h.fake.advance(500);
    term.controller.abort();
    await h.atRest();
    expect(hung.signal.aborted).toBe(true);
    expect(h.elector.isLeader()).toBe(false);
    expect(h.stopped).toBe(1);
    expect(h.lock.releases()).toHaveLength(1);
    expect(h.lock.releases()[0]!.outcome).toBe('ok');
    expect(term.result.settled).toBe(true);
    expect(h.elector.leader()).toBeNull();
  });

  it('logs an onStoppedLeading that throws and still releases and resolves', async () => {
    const boom = new Error('stop handler broke');
    const h = electorHarness({
      onStoppedLeading: () => {
        throw boom;
      },
    });
    const term = h.start();
    await h.atRest();
    term.controller.abort();
    await h.atRest();
    expect(h.logger.mentioning(boom).length).toBeGreaterThan(0);
    expect(h.lock.releases()).toHaveLength(1);
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
  });
});

describe('LeaderElector run: releasing on cancel', () => {
  it('releases with an empty holder, 1 second, acquireTime = renewTime = wallClock(), transitions kept, on the last written resourceVersion', async () => {
    const h = electorHarness();
    h.lock.seed(held('', { leaseDurationSeconds: 1, leaseTransitions: 2 }));
    const term = h.start();
    await h.fake.advance(5_000); // took over at 0 (transitions 3), renewed at 2_000 and 4_000
    const before = h.lock.current!;

    term.controller.abort();
    await h.atRest();
    const releases = h.lock.releases();
    expect(releases).toHaveLength(1);
    expect(releases[0]!.atMs).toBe(5_000);
    expect(releases[0]!.resourceVersion).toBe(before.resourceVersion);
    expect(releases[0]!.record).toEqual({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: wallAt(5_000),
      renewTime: wallAt(5_000),
      leaseTransitions: 3,
    });
    expect(releases[0]!.outcome).toBe('ok');
    expect(term.result.settled).toBe(true);
    expect(h.elector.leader()).toBeNull();
    expect(h.elector.isLeader()).toBe(false);
  });

  it('releases only after onStoppedLeading, with a signal of its own that has not aborted', async () => {
    let releasesAtStop = -1;
    const h = electorHarness({
      onStoppedLeading: () => {
        releasesAtStop = h.lock.releases().length;
      },
    });
    const term = h.start();
    await h.atRest();
    h.lock.once('update', { kind: 'hang' });
    h.lock.hung.length = 0;
    term.controller.abort();
    await h.atRest();

    expect(h.stopped).toBe(1);
    expect(releasesAtStop).toBe(0);
    const release = h.lock.releases()[0]!;
    expect(release).toBeDefined();
    expect(release.abortedAtCall).toBe(false);
    expect(release.signal).not.toBe(term.controller.signal);
    expect(release.signal.aborted).toBe(false);
    expect(h.log).toEqual(['started isLeader=true', 'stopped isLeader=false']);
  });

  it('waits for the release to settle before resolving run', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.lock.once('update', { kind: 'delay', ms: 500 });
    term.controller.abort();

    await h.fake.advance(499);
    expect(term.result.settled).toBe(false);
    await h.fake.advance(1);
    await h.atRest();
    expect(term.result.settled).toBe(true);
    expect(h.elector.leader()).toBeNull();
  });

  it('abandons a release that has not settled after retryPeriodMs, aborting its signal, and then resolves', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.fake.advance(1_000);
    h.lock.once('update', { kind: 'hang' });
    term.controller.abort();
    await h.atRest();
    const release = h.lock.hung[0]!.call;
    expect(release.record!.holderIdentity).toBe('');

    await h.fake.advance(1_999);
    expect(term.result.settled).toBe(false);
    expect(release.signal.aborted).toBe(false);

    await h.fake.advance(1); // 3_000 = abort at 1_000 + retryPeriodMs
    await h.atRest();
    expect(release.signal.aborted).toBe(true);
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
  });

  it('logs a release that fails and still resolves', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    const boom = new Error('release refused');
    h.lock.once('update', { kind: 'fail', error: boom });
    term.controller.abort();
    await h.atRest();
    expect(h.lock.releases()).toHaveLength(1);
    expect(h.logger.mentioning(boom).length).toBeGreaterThan(0);
    expect(term.result.settled).toBe(true);
    expect(term.result.rejected).toBe(false);
  });

  it('does not release when releaseOnCancel is false', async () => {
    const h = electorHarness({ releaseOnCancel: false });
    const term = h.start();
    await h.fake.advance(3_000);
    const updates = h.lock.callsOf('update').length;
    term.controller.abort();
    await h.atRest();
    expect(h.lock.callsOf('update')).toHaveLength(updates);
    expect(h.stopped).toBe(1);
    expect(term.result.settled).toBe(true);
    expect(h.lock.current!.record.holderIdentity).toBe('a');
  });

  it('does not release when leadership was lost at the renew deadline', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    h.lock.always('get', { kind: 'fail' });
    await h.fake.advance(10_000);
    await h.atRest();
    expect(term.result.settled).toBe(true);
    expect(h.lock.releases()).toHaveLength(0);
  });

  it('lets a follower take the released Lease over at once', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.fake.advance(1_000);
    term.controller.abort();
    await h.atRest();

    const follower = electorHarness({ identity: 'b', lock: h.lock, clock: h.fake });
    follower.start();
    await follower.atRest();
    expect(follower.elector.isLeader()).toBe(true);
    expect(h.lock.current!.record.holderIdentity).toBe('b');
  });
});

describe('LeaderElector run: one term at a time', () => {
  it('rejects a second run while a term is running, without disturbing it', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.atRest();
    await expect(h.elector.run(new AbortController().signal)).rejects.toThrow(
      /LeaderElector\.run\(\) called while a term/,
    );
    await h.fake.advance(4_000);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.stopped).toBe(0);
    expect(term.result.settled).toBe(false);
  });

  it('starts a new term after run resolved: takes the released Lease over with leaseTransitions + 1 and reports itself as new leader again', async () => {
    const h = electorHarness();
    const first = h.start();
    await h.fake.advance(3_000);
    first.controller.abort();
    await h.atRest();
    expect(first.result.settled).toBe(true);
    expect(h.elector.leader()).toBeNull();

    await h.fake.advance(1_000);
    const second = h.start();
    await h.atRest();
    expect(h.elector.isLeader()).toBe(true);
    const takeover = h.lock.callsOf('update').at(-1)!;
    expect(takeover.atMs).toBe(4_000);
    expect(takeover.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: wallAt(4_000),
      renewTime: wallAt(4_000),
      leaseTransitions: 1,
    });
    expect(h.newLeaders).toEqual(['a', 'a']);
    expect(h.leadingSignals).toHaveLength(2);
    expect(h.leadingSignals[1]!.aborted).toBe(false);
    expect(h.leadingSignals[0]!.aborted).toBe(true);

    second.controller.abort();
    await h.atRest();
    expect(h.stopped).toBe(2);
    expect(second.result.settled).toBe(true);
  });

  it('accepts a new run after a term that was lost at the renew deadline', async () => {
    const h = electorHarness();
    const first = h.start();
    await h.atRest();
    h.lock.always('get', { kind: 'fail' });
    await h.fake.advance(10_000);
    await h.atRest();
    expect(first.result.settled).toBe(true);

    h.lock.always('get', undefined);
    const second = h.start();
    await h.atRest();
    expect(second.result.rejected).toBe(false);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.leadingSignals).toHaveLength(2);
  });
});

describe('LeaderElector healthy()', () => {
  it('is healthy while not leading, whatever the time', async () => {
    const fake = new FakeClock(0);
    const clock = new JumpClock(fake);
    const h = electorHarness({ clock });
    h.lock.seed(held('b', { leaseDurationSeconds: 1_000 }));
    expect(h.elector.healthy()).toBe(true);
    h.start();
    await h.atRest();
    clock.offset = 1_000_000;
    expect(h.elector.isLeader()).toBe(false);
    expect(h.elector.healthy()).toBe(true);
    expect(h.elector.healthy(0)).toBe(true);
  });

  it('turns unhealthy while leading once the last renewal is older than leaseDurationMs + 20_000 by default', async () => {
    const fake = new FakeClock(0);
    const clock = new JumpClock(fake);
    const h = electorHarness({ clock });
    h.start();
    await h.atRest(); // created at 0; timers frozen from here on
    expect(h.elector.healthy()).toBe(true);

    clock.offset = 34_999;
    expect(h.elector.isLeader()).toBe(true);
    expect(h.elector.healthy()).toBe(true);

    clock.offset = 35_001;
    expect(h.elector.isLeader()).toBe(true);
    expect(h.elector.healthy()).toBe(false);
  });

  it('uses the given tolerance', async () => {
    const fake = new FakeClock(0);
    const clock = new JumpClock(fake);
    const h = electorHarness({ clock });
    h.start();
    await h.atRest();

    clock.offset = 15_999;
    expect(h.elector.healthy(1_000)).toBe(true);
    clock.offset = 16_001;
    expect(h.elector.healthy(1_000)).toBe(false);
    expect(h.elector.healthy(100_000)).toBe(true);
  });

  it('measures from the last successful renewal, not from acquisition', async () => {
    const fake = new FakeClock(0);
    const clock = new JumpClock(fake);
    const h = electorHarness({ clock });
    h.start();
    await fake.advance(6_000); // renewed at 2_000, 4_000, 6_000
    clock.offset = 34_999; // last renewal 6_000, now 40_999
    expect(h.elector.healthy()).toBe(true);
    clock.offset = 35_001;
    expect(h.elector.healthy()).toBe(false);
  });

  it('stays healthy while renewals keep succeeding', async () => {
    const h = electorHarness();
    const term = h.start();
    await h.fake.advance(100_000);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.elector.healthy()).toBe(true);
    expect(h.elector.healthy(0)).toBe(true);
    term.controller.abort();
    await h.atRest();
    expect(h.elector.healthy()).toBe(true);
  });
});
