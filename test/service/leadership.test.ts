import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type LeadershipHooks,
  LeaseLeadership,
  leaderIdentity,
  SoleLeadership,
} from '../../src/service/leadership.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeLeaseLock, FakeLeaseStore } from '../support/fake-lease-lock.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

const WALL = Date.parse('2025-06-01T12:00:00Z');

/** Hooks that record their calls in order, and keep every term's signal. */
function recordingHooks() {
  const calls: string[] = [];
  const terms: AbortSignal[] = [];
  const hooks: LeadershipHooks = {
    onStartedLeading: (term) => {
      terms.push(term);
      calls.push('started');
    },
    onStoppedLeading: () => calls.push('stopped'),
    onNewLeader: (identity) => calls.push(`leader ${identity}`),
  };
  return { calls, terms, hooks };
}

const running: Array<{ abort: AbortController; done: Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    r.abort.abort();
    await finishes(r.done, { what: 'LeaseLeadership.run() after its abort' });
  }
});

function leaseSetup(options: { identity?: string; store?: FakeLeaseStore } = {}) {
  const clock = new FakeClock();
  const lock = new FakeLeaseLock(
    options.store ?? new FakeLeaseStore(),
    () => clock.now(),
    'pools/pool-controller',
  );
  const recorded = recordingHooks();
  const logger = new RecordingLogger();
  const leadership = new LeaseLeadership({
    lock,
    identity: options.identity ?? 'a_1',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    hooks: recorded.hooks,
    clock,
    wallClock: () => new Date(WALL + clock.now()),
    logger,
  });
  const run = () => {
    const abort = new AbortController();
    const done = leadership.run(abort.signal);
    const handle = { abort, done };
    running.push(handle);
    return handle;
  };
  return { clock, lock, leadership, logger, run, ...recorded };
}

function heldBy(holderIdentity: string) {
  return {
    holderIdentity,
    leaseDurationSeconds: 15,
    acquireTime: '2025-06-01T11:00:00.000000Z',
    renewTime: '2025-06-01T11:00:00.000000Z',
    leaseTransitions: 3,
  };
}

describe('LeaseLeadership', () => {
  it('takes a free Lease: announces itself as leader, then starts leading, and says so in its view', async () => {
    const { leadership, run, calls, clock, lock } = leaseSetup();
    expect(leadership.view()).toEqual({
      identity: 'a_1',
      leading: false,
      leader: null,
      lease: 'pools/pool-controller',
      since: null,
    });
    await clock.advance(5_000);
    run();
    await until(() => calls.includes('started'), { what: 'the replica to start leading' });
    expect(lock.sequence()).toEqual(['get', 'create(a_1)']);
    expect(calls).toEqual(['leader a_1', 'started']);
    expect(leadership.view()).toEqual({
      identity: 'a_1',
      leading: true,
      leader: 'a_1',
      lease: 'pools/pool-controller',
      since: '2025-06-01T12:00:05.000Z',
    });
    expect(leadership.healthy()).toBe(true);
  });

  it('follows a Lease someone else holds: reports the leader, never starts leading', async () => {
    const store = new FakeLeaseStore();
    store.put(heldBy('b_2'));
    const { leadership, run, calls, clock } = leaseSetup({ store });
    run();
    await until(() => calls.includes('leader b_2'), { what: 'the replica to see the holder' });
    await clock.advance(2_000); // still fresh from where this replica stands
    expect(calls).toEqual(['leader b_2']);
    expect(leadership.view()).toMatchObject({ leading: false, leader: 'b_2', since: null });
    expect(leadership.healthy()).toBe(true);
  });

  it('takes over once the holder stops renewing for a whole lease duration', async () => {
    const store = new FakeLeaseStore();
    store.put(heldBy('b_2'));
    const { leadership, run, calls, clock } = leaseSetup({ store });
    run();
    await until(() => calls.includes('leader b_2'), { what: 'the replica to see the holder' });
    await clock.advance(14_000);
    expect(leadership.view().leading).toBe(false);
    await clock.advance(20_000);
    expect(calls).toEqual(['leader b_2', 'leader a_1', 'started']);
    expect(leadership.view()).toMatchObject({ leading: true, leader: 'a_1' });
    expect(store.lease?.record).toMatchObject({ holderIdentity: 'a_1', leaseTransitions: 4 });
  });

  it('on losing the Lease aborts the term at once, stops leading, and campaigns again without exiting', async () => {
    const store = new FakeLeaseStore();
    const { leadership, run, calls, terms, clock, logger } = leaseSetup({ store });
    const handle = run();
    await until(() => calls.includes('started'), { what: 'the replica to start leading' });
    expect(calls).toEqual(['leader a_1', 'started']);
    const term = terms[0]!;

    store.put(heldBy('b_2')); // someone else took it (an admin, a split brain)
    await clock.advance(9_999);
    expect(term.aborted).toBe(false);
    await clock.advance(1); // the renew deadline
    expect(term.aborted).toBe(true);
    expect(calls).toEqual(['leader a_1', 'started', 'leader b_2', 'stopped']);
    expect(leadership.view()).toMatchObject({ leading: false, leader: 'b_2', since: null });
    expect(
      logger.mentioning('stopped leading; side effects stopped, campaigning again', 'warn'),
    ).toHaveLength(1);

    let resolved = false;
    void handle.done.then(() => {
      resolved = true;
    });
    await clock.advance(20_000); // b_2 never renewed: this replica takes it back
    expect(resolved).toBe(false);
    expect(calls).toEqual([
      'leader a_1',
      'started',
      'leader b_2',
      'stopped',
      'leader a_1',
      'started',
    ]);
    expect(terms).toHaveLength(2);
    expect(terms[1]!.aborted).toBe(false);
  });

  it('leads again at once when it lost only because renewals failed and the Lease still names it', async () => {
    const { run, calls, terms, clock, lock } = leaseSetup();
    run();
    await until(() => calls.includes('started'), { what: 'the replica to start leading' });
    // The renewals at 2, 4, 6 and 8 s fail; the deadline passes at 10 s.
    for (let i = 0; i < 4; i += 1) lock.failNext('get', new Error('apiserver unavailable'));
    await clock.advance(10_000);
    expect(terms[0]!.aborted).toBe(true);
    await until(() => calls.filter((c) => c === 'started').length === 2, {
      what: 'the replica to lead again',
    });
    // The old term ended (stopped), and the very next attempt renews its own record.
    expect(calls).toEqual(['leader a_1', 'started', 'stopped', 'started']);
    expect(terms[1]!.aborted).toBe(false);
  });

  it('on shutdown stops leading and releases the Lease so a follower takes over at once', async () => {
    const store = new FakeLeaseStore();
    const { leadership, run, calls, terms } = leaseSetup({ store });
    const handle = run();
    await until(() => calls.includes('started'), { what: 'the replica to start leading' });
    handle.abort.abort();
    await handle.done;
    expect(terms[0]!.aborted).toBe(true);
    expect(calls).toEqual(['leader a_1', 'started', 'stopped']);
    expect(store.lease?.record).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    expect(leadership.view()).toMatchObject({ leading: false, leader: null, since: null });
  });

  it('returns from run at once when the signal is already aborted, without touching the Lease', async () => {
    const { leadership, lock, calls } = leaseSetup();
    await leadership.run(AbortSignal.abort());
    expect(lock.calls).toHaveLength(0);
    expect(calls).toEqual([]);
  });
});

describe('SoleLeadership', () => {
  function soleSetup() {
    const recorded = recordingHooks();
    const logger = new RecordingLogger();
    const leadership = new SoleLeadership({
      identity: 'solo_1',
      reason: '--leader-elect=false',
      hooks: recorded.hooks,
      wallClock: () => new Date(WALL),
      logger,
    });
    return { leadership, logger, ...recorded };
  }

  it('does not lead before run', () => {
    const { leadership } = soleSetup();
    expect(leadership.view()).toEqual({
      identity: 'solo_1',
      leading: false,
      leader: null,
      lease: null,
      since: null,
    });
    expect(leadership.healthy()).toBe(true);
  });

  it('leads from run until its signal aborts, announcing itself first, and logs why there is no Lease', async () => {
    const { leadership, calls, terms, logger } = soleSetup();
    const abort = new AbortController();
    const done = leadership.run(abort.signal);
    expect(calls).toEqual(['leader solo_1', 'started']);
    expect(leadership.view()).toEqual({
      identity: 'solo_1',
      leading: true,
      leader: 'solo_1',
      lease: null,
      since: '2025-06-01T12:00:00.000Z',
    });
    expect(
      logger.mentioning('no leader election: this process leads alone').map((e) => e.obj),
    ).toEqual([{ identity: 'solo_1', reason: '--leader-elect=false' }]);

    abort.abort(new Error('stopping'));
    await done;
    expect(terms[0]!.aborted).toBe(true);
    expect((terms[0]!.reason as Error).message).toBe('stopping');
    expect(calls).toEqual(['leader solo_1', 'started', 'stopped']);
    expect(leadership.view()).toMatchObject({ leading: false, leader: null, since: null });
  });

  it('returns from run at once, calling no hook, when the signal is already aborted', async () => {
    const { leadership, calls } = soleSetup();
    await leadership.run(AbortSignal.abort());
    expect(calls).toEqual([]);
    expect(leadership.view().leading).toBe(false);
  });
});

describe('leaderIdentity', () => {
  it('is $POD_NAME, an underscore and a random suffix, different every time', () => {
    const a = leaderIdentity({ POD_NAME: 'pool-controller-7d9f-abcde' });
    const b = leaderIdentity({ POD_NAME: 'pool-controller-7d9f-abcde' });
    expect(a).toMatch(/^pool-controller-7d9f-abcde_[0-9a-f]{10}$/);
    expect(b).not.toBe(a);
  });

  it('falls back to the hostname when $POD_NAME is unset or blank', () => {
    const expected = new RegExp(
      `^${(hostname() || 'pool-controller').replace(/[.]/g, '\\.')}_[0-9a-f]{10}$`,
    );
    expect(leaderIdentity({})).toMatch(expected);
    expect(leaderIdentity({ POD_NAME: '   ' })).toMatch(expected);
  });
});
