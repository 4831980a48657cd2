import { afterEach, describe, expect, it } from 'vitest';
import {
  type Clock,
  LeaderElector,
  type LeaderElectorOptions,
  LeaseConflictError,
  type LeaseRecord,
} from '../../src/index.js';
import { FakeClock, settle } from '../support/fake-clock.js';
import { FakeLeaseLock, FakeLeaseStore, type HeldCall } from '../support/fake-lease-lock.js';
import { RecordingLogger } from '../support/recording-logger.js';

const WALL_START = Date.UTC(2026, 10, 30, 20, 41, 7, 123);
const T0 = '2026-11-30T20:41:07.123000Z';

/** A clock whose reading can jump ahead without firing timers: timers that stopped firing. */
class JumpClock implements Clock {
  offsetMs = 0;
  constructor(readonly inner: FakeClock) {}
  now(): number {
    return this.inner.now() + this.offsetMs;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.inner.sleep(ms, signal);
  }
}

interface Harness {
  clock: FakeClock;
  store: FakeLeaseStore;
  lock: FakeLeaseLock;
  elector: LeaderElector;
  logger: RecordingLogger;
  /** Callbacks and leading-signal aborts, in the order they happened. */
  log: string[];
  leadingSignals: AbortSignal[];
  /** Advances the wall clock the record's timestamps come from. */
  wall: { ms: number };
  stop: AbortController;
  done?: Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function harness(
  options: Partial<LeaderElectorOptions> = {},
  shared?: { clock: FakeClock; store: FakeLeaseStore },
): Harness {
  const clock = shared?.clock ?? new FakeClock();
  const store = shared?.store ?? new FakeLeaseStore();
  const lock = new FakeLeaseLock(store, () => clock.now());
  const logger = new RecordingLogger();
  const log: string[] = [];
  const leadingSignals: AbortSignal[] = [];
  const wall = { ms: WALL_START };
  const identity = options.identity ?? 'a';
  const h: Harness = {
    clock,
    store,
    lock,
    logger,
    log,
    leadingSignals,
    wall,
    stop: new AbortController(),
    elector: undefined as unknown as LeaderElector,
  };
  h.elector = new LeaderElector({
    lock,
    identity,
    clock,
    wallClock: () => new Date(wall.ms),
    random: () => 0,
    logger,
    onStartedLeading: (signal) => {
      log.push(`${identity} started (isLeader=${h.elector.isLeader()})`);
      leadingSignals.push(signal);
      signal.addEventListener('abort', () =>
        log.push(`${identity} leading aborted (isLeader=${h.elector.isLeader()})`),
      );
    },
    onStoppedLeading: () => log.push(`${identity} stopped`),
    onNewLeader: (holder) => log.push(`${identity} sees ${holder}`),
    ...options,
  });
  cleanups.push(async () => {
    h.stop.abort();
    await h.done;
  });
  return h;
}

function start(h: Harness): Promise<void> {
  h.done = h.elector.run(h.stop.signal);
  return h.done;
}

function heldBy(holderIdentity: string, extra: Partial<LeaseRecord> = {}): LeaseRecord {
  return {
    holderIdentity,
    leaseDurationSeconds: 15,
    acquireTime: '2020-01-01T00:00:00.000000Z',
    renewTime: '2020-01-01T00:00:00.000000Z',
    leaseTransitions: 4,
    ...extra,
  };
}

function callTimes(h: Harness, operation?: string): Array<number | undefined> {
  return h.lock.calls.filter((c) => !operation || c.operation === operation).map((c) => c.atMs);
}

describe('LeaderElector construction', () => {
  const lock = new FakeLeaseLock();
  it.each([
    ['a zero lease duration', { leaseDurationMs: 0 }],
    ['a negative renew deadline', { renewDeadlineMs: -1 }],
    ['a NaN retry period', { retryPeriodMs: Number.NaN }],
    ['an infinite lease duration', { leaseDurationMs: Number.POSITIVE_INFINITY }],
    ['a lease duration equal to the renew deadline', { leaseDurationMs: 10_000 }],
    ['a renew deadline above the default lease duration', { renewDeadlineMs: 16_000 }],
    ['a renew deadline equal to 1.2 × the retry period', { renewDeadlineMs: 2_400 }],
    ['a retry period whose jitter reaches the default renew deadline', { retryPeriodMs: 9_000 }],
    ['an empty identity', { identity: '' }],
  ])('throws RangeError for %s, checked after defaults are applied', (_name, options) => {
    expect(() => new LeaderElector({ lock, identity: 'a', ...options })).toThrow(RangeError);
  });

  it('accepts the defaults and a renew deadline just above 1.2 × the retry period', () => {
    expect(() => new LeaderElector({ lock, identity: 'a' })).not.toThrow();
    expect(
      () =>
        new LeaderElector({ lock, identity: 'a', renewDeadlineMs: 2_401, retryPeriodMs: 2_000 }),
    ).not.toThrow();
  });

  it('starts with no leader, not leading, and healthy', () => {
    const elector = new LeaderElector({ lock, identity: 'a' });
    expect(elector.leader()).toBeNull();
    expect(elector.isLeader()).toBe(false);
    expect(elector.healthy()).toBe(true);
  });
});

describe('LeaderElector acquiring', () => {
  it('creates a missing Lease naming itself, with rounded-up seconds and wall-clock MicroTimes', async () => {
    const h = harness({ leaseDurationMs: 15_500 });
    void start(h);
    await settle();
    expect(h.lock.sequence()).toEqual(['get', 'create(a)']);
    expect(h.store.lease?.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 16,
      acquireTime: T0,
      renewTime: T0,
      leaseTransitions: 0,
    });
    expect(h.elector.isLeader()).toBe(true);
    expect(h.elector.leader()).toBe('a');
    expect(h.log).toEqual(['a sees a', 'a started (isLeader=true)']);
  });

  it('retries every retryPeriod × (1 + random × 1.2), counted from the end of each attempt', async () => {
    const h = harness({ random: () => 0.5 }); // 2000 × 1.6 = 3200
    h.store.put(heldBy('b'));
    const held = h.lock.hold('get');
    void start(h);
    await h.clock.advance(500);
    held.release(); // the first attempt ends at 500
    await h.clock.advance(10_000);
    expect(callTimes(h, 'get')).toEqual([0, 3_700, 6_900, 10_100]);
    expect(h.elector.isLeader()).toBe(false);
  });

  it('takes over only after the lease expires on its own clock, from when it observed the last change', async () => {
    const h = harness();
    h.store.put(heldBy('b')); // timestamps from 2020: expired by them, but they are never trusted
    void start(h);
    await h.clock.advance(14_000);
    expect(h.elector.isLeader()).toBe(false);
    expect(h.lock.sequence()).toEqual(Array(8).fill('get')); // 0, 2000, …, 14000
    await h.clock.advance(2_000);
    expect(h.elector.isLeader()).toBe(true);
    expect(callTimes(h)).toEqual([
      0, 2_000, 4_000, 6_000, 8_000, 10_000, 12_000, 14_000, 16_000, 16_000,
    ]);
    expect(h.lock.calls.at(-1)?.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: T0,
      renewTime: T0,
      leaseTransitions: 5,
    });
    expect(h.log).toEqual(['a sees b', 'a sees a', 'a started (isLeader=true)']);
  });

  it('restarts the expiry wait whenever the record changes, e.g. when the holder renews', async () => {
    const h = harness();
    h.store.put(heldBy('b'));
    void start(h);
    await h.clock.advance(9_000);
    h.store.put(heldBy('b', { renewTime: '2020-01-01T00:00:09.000000Z' })); // observed at 10000
    await h.clock.advance(15_000); // up to 24000: 10000 + 15000 is not yet reached
    expect(h.elector.isLeader()).toBe(false);
    await h.clock.advance(2_000); // the attempt at 26000
    expect(h.elector.isLeader()).toBe(true);
  });

  it('takes a released lease at once, counting the transition', async () => {
    const h = harness();
    h.store.put(heldBy('', { leaseDurationSeconds: 1 }));
    void start(h);
    await settle();
    expect(h.lock.sequence()).toEqual(['get', 'update(a@1)']);
    expect(h.store.lease?.record.leaseTransitions).toBe(5);
    expect(h.elector.isLeader()).toBe(true);
  });

  it('logs a failed attempt (a conflict included) and retries, never throwing', async () => {
    const h = harness();
    h.store.put(heldBy(''));
    h.lock.failNext('update', new LeaseConflictError('the object has been modified'));
    h.lock.failNext('get', new Error('connection refused'));
    void start(h);
    await settle();
    expect(h.elector.isLeader()).toBe(false);
    await h.clock.advance(4_000);
    expect(h.lock.sequence()).toEqual(['get', 'get', 'update(a@1)', 'get', 'update(a@1)']);
    expect(h.elector.isLeader()).toBe(true);
    expect(h.logger.mentioning('the object has been modified', 'warn')).toHaveLength(1);
    expect(h.logger.mentioning('connection refused', 'warn')).toHaveLength(1);
  });

  it('resolves without leading, and without writing, when its signal aborts while acquiring', async () => {
    const h = harness();
    h.store.put(heldBy('b'));
    const done = start(h);
    await h.clock.advance(3_000);
    h.stop.abort();
    await done;
    expect(h.log).toEqual(['a sees b']);
    expect(h.lock.sequence()).toEqual(['get', 'get']);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('makes no call at all when its signal has already aborted', async () => {
    const h = harness();
    h.stop.abort();
    await start(h);
    expect(h.lock.calls).toEqual([]);
  });

  it('aborts the signal of an acquire attempt still in flight when its own signal aborts', async () => {
    const h = harness();
    const held = h.lock.hold('get', { honourSignal: false });
    const done = start(h);
    const call = await held.called;
    h.stop.abort();
    await done;
    expect(call.signal.aborted).toBe(true);
    held.release(); // the answer arrives late and is ignored
    await settle();
    expect(h.elector.leader()).toBeNull();
    expect(h.log).toEqual([]);
  });
});

describe('LeaderElector renewing', () => {
  it('renews every retryPeriodMs after the last success, keeping acquireTime and transitions', async () => {
    const h = harness();
    void start(h);
    await settle();
    h.wall.ms += 2_000;
    await h.clock.advance(2_000);
    h.wall.ms += 2_000;
    await h.clock.advance(2_000);
    expect(h.lock.sequence()).toEqual([
      'get',
      'create(a)',
      'get',
      'update(a@1)',
      'get',
      'update(a@2)',
    ]);
    expect(callTimes(h)).toEqual([0, 0, 2_000, 2_000, 4_000, 4_000]);
    expect(h.store.lease?.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: T0,
      renewTime: '2026-11-30T20:41:11.123000Z',
      leaseTransitions: 0,
    });
    expect(h.log).toEqual(['a sees a', 'a started (isLeader=true)']); // no repeated report
  });

  it('retries a failed renewal every retryPeriodMs and keeps leading when one succeeds in time', async () => {
    const h = harness();
    void start(h);
    await settle();
    for (let i = 0; i < 3; i += 1) h.lock.failNext('get');
    await h.clock.advance(9_999);
    expect(callTimes(h, 'get')).toEqual([0, 2_000, 4_000, 6_000, 8_000]);
    expect(h.elector.isLeader()).toBe(true);
    // the deadline now counts from the success at 8000
    await h.clock.advance(8_000);
    expect(h.elector.isLeader()).toBe(true);
  });

  it('steps down at exactly last success + renewDeadlineMs when every renewal fails', async () => {
    const h = harness();
    const done = start(h);
    await settle();
    for (let i = 0; i < 10; i += 1) h.lock.failNext('get');
    await h.clock.advance(9_999);
    expect(h.elector.isLeader()).toBe(true);
    await h.clock.advance(1);
    expect(h.elector.isLeader()).toBe(false);
    await done;
    expect(callTimes(h, 'get')).toEqual([0, 2_000, 4_000, 6_000, 8_000]);
    expect(h.lock.sequence().filter((s) => s.startsWith('update'))).toEqual([]); // no release: not cancelled
  });

  it('steps down at the renew deadline while an update is still in flight, aborting it and ignoring its result', async () => {
    const h = harness();
    const done = start(h);
    await settle();
    const held = h.lock.hold('update', { honourSignal: false });
    await h.clock.advance(2_000);
    const call = await held.called;
    await h.clock.advance(7_999);
    expect(h.elector.isLeader()).toBe(true);
    expect(call.signal.aborted).toBe(false);
    await h.clock.advance(1); // 10000
    expect(h.elector.isLeader()).toBe(false);
    expect(call.signal.aborted).toBe(true);
    await done;
    held.release(); // the write lands after all: ignored
    await settle();
    expect(h.elector.isLeader()).toBe(false);
    expect(h.log).toEqual([
      'a sees a',
      'a started (isLeader=true)',
      'a leading aborted (isLeader=false)',
      'a stopped',
    ]);
    expect(h.lock.sequence()).toEqual(['get', 'create(a)', 'get', 'update(a@1)']);
  });

  it('on losing: isLeader() false, then the leading signal aborts, then onStoppedLeading once', async () => {
    const h = harness();
    const done = start(h);
    await settle();
    h.stop.abort();
    await done;
    expect(h.log.slice(2)).toEqual(['a leading aborted (isLeader=false)', 'a stopped']);
    expect(h.leadingSignals[0]?.aborted).toBe(true);
  });

  it('logs a throwing onStartedLeading or onStoppedLeading and carries on', async () => {
    const h = harness({
      onStartedLeading: () => Promise.reject(new Error('start blew up')),
      onStoppedLeading: () => {
        throw new Error('stop blew up');
      },
    });
    const done = start(h);
    await settle();
    expect(h.elector.isLeader()).toBe(true);
    h.stop.abort();
    await expect(done).resolves.toBeUndefined();
    expect(h.logger.mentioning('start blew up', 'error')).toHaveLength(1);
    expect(h.logger.mentioning('stop blew up', 'error')).toHaveLength(1);
  });

  it('does not await onStartedLeading', async () => {
    const h = harness({ onStartedLeading: () => new Promise<void>(() => {}) });
    void start(h);
    await settle();
    await h.clock.advance(2_000);
    expect(h.lock.sequence()).toEqual(['get', 'create(a)', 'get', 'update(a@1)']);
  });
});

/** Leading since 0, with the renewal sent at 2,000 still unanswered. */
async function leadingWithRenewalOnTheWire(
  options: { honourSignal?: boolean } = {},
): Promise<{ h: Harness; done: Promise<void>; held: HeldCall }> {
  const h = harness();
  const done = start(h);
  await settle();
  const held = h.lock.hold('update', options);
  await h.clock.advance(2_000);
  await held.called;
  return { h, done, held };
}

describe('LeaderElector releasing', () => {
  it('releases on cancel: holder "", one second, fresh timestamps, transitions kept; then resolves', async () => {
    const h = harness();
    h.store.put(heldBy('', { leaseTransitions: 7 }));
    const done = start(h);
    await settle();
    h.wall.ms += 5_000;
    h.stop.abort();
    await done;
    expect(h.lock.sequence()).toEqual(['get', 'update(a@1)', 'update(@2)']);
    expect(h.store.lease?.record).toEqual({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: '2026-11-30T20:41:12.123000Z',
      renewTime: '2026-11-30T20:41:12.123000Z',
      leaseTransitions: 8,
    });
    expect(h.elector.leader()).toBeNull();
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('does not release when releaseOnCancel is false', async () => {
    const h = harness({ releaseOnCancel: false });
    const done = start(h);
    await settle();
    h.stop.abort();
    await done;
    expect(h.lock.sequence()).toEqual(['get', 'create(a)']);
    expect(h.elector.leader()).toBe('a');
  });

  it('abandons a release that has not settled after retryPeriodMs, aborting its signal', async () => {
    const h = harness();
    const done = start(h);
    await settle();
    const held = h.lock.hold('update', { honourSignal: false });
    let resolved = false;
    void done.then(() => {
      resolved = true;
    });
    h.stop.abort();
    const call = await held.called;
    await h.clock.advance(1_999);
    expect(resolved).toBe(false);
    expect(call.signal.aborted).toBe(false);
    await h.clock.advance(1);
    expect(resolved).toBe(true);
    expect(call.signal.aborted).toBe(true);
    expect(h.logger.mentioning('abandoned', 'warn')).toHaveLength(1);
  });

  it('logs a failed release and still resolves', async () => {
    const h = harness();
    const done = start(h);
    await settle();
    h.lock.failNext('update', new Error('apiserver down'));
    h.stop.abort();
    await done;
    expect(h.logger.mentioning('apiserver down', 'warn')).toHaveLength(1);
    expect(h.elector.leader()).toBe('a');
  });

  it('releases once, on the observed resourceVersion, when the renewal abandoned on the wire never landed', async () => {
    const { h, done } = await leadingWithRenewalOnTheWire();
    h.stop.abort();
    await done;
    expect(h.lock.sequence()).toEqual(['get', 'create(a)', 'get', 'update(a@1)', 'update(@1)']);
    expect(h.elector.leader()).toBeNull();
  });

  it('reads the Lease and releases once more when the first release meets the renewal the server applied after all', async () => {
    const { h, done, held } = await leadingWithRenewalOnTheWire({ honourSignal: false });
    held.release(); // the server applies the renewal; its answer never reaches the elector
    h.stop.abort();
    await done;
    expect(h.lock.sequence()).toEqual([
      'get',
      'create(a)',
      'get',
      'update(a@1)',
      'update(@1)',
      'get',
      'update(@2)',
    ]);
    expect(h.store.lease?.record.holderIdentity).toBe('');
    expect(h.elector.leader()).toBeNull();
    expect(h.logger.mentioning('released leader lease', 'info')).toHaveLength(1);
  });

  it('does not release a Lease another elector took while its abandoned renewal was in doubt', async () => {
    const { h, done } = await leadingWithRenewalOnTheWire();
    h.store.put(heldBy('b'));
    h.stop.abort();
    await done;
    expect(h.lock.sequence()).toEqual([
      'get',
      'create(a)',
      'get',
      'update(a@1)',
      'update(@1)',
      'get',
    ]);
    expect(h.store.lease?.record.holderIdentity).toBe('b');
    expect(h.elector.leader()).toBe('b');
    expect(h.logger.mentioning('nothing to release', 'info')).toHaveLength(1);
  });

  it('reports no leader when the read after a refused release finds the Lease deleted', async () => {
    const { h, done } = await leadingWithRenewalOnTheWire();
    h.store.put(heldBy('a'));
    const read = h.lock.hold('get');
    h.stop.abort();
    await read.called;
    h.store.delete();
    read.release();
    await done;
    expect(h.lock.sequence()).toEqual([
      'get',
      'create(a)',
      'get',
      'update(a@1)',
      'update(@1)',
      'get',
    ]);
    expect(h.elector.leader()).toBeNull();
  });

  it('gives both updates and the read of a release one retry period in all, then abandons it', async () => {
    const { h, done, held } = await leadingWithRenewalOnTheWire({ honourSignal: false });
    held.release();
    const read = h.lock.hold('get', { honourSignal: false });
    let resolved = false;
    void done.then(() => {
      resolved = true;
    });
    h.stop.abort();
    const call = await read.called;
    await h.clock.advance(1_999);
    expect(resolved).toBe(false);
    await h.clock.advance(1);
    expect(resolved).toBe(true);
    expect(call.signal.aborted).toBe(true);
    expect(h.lock.sequence()).toEqual([
      'get',
      'create(a)',
      'get',
      'update(a@1)',
      'update(@1)',
      'get',
    ]);
    expect(h.logger.mentioning('abandoned', 'warn')).toHaveLength(1);
  });

  it('lets a follower take over within one retry period of a release', async () => {
    const a = harness({ identity: 'a' });
    const b = harness({ identity: 'b' }, { clock: a.clock, store: a.store });
    const aDone = start(a);
    await settle();
    void start(b);
    await a.clock.advance(5_000);
    expect([a.elector.isLeader(), b.elector.isLeader()]).toEqual([true, false]);
    a.stop.abort();
    await aDone;
    await a.clock.advance(2_000);
    expect(b.elector.isLeader()).toBe(true);
    expect(b.log).toEqual(['b sees a', 'b sees b', 'b started (isLeader=true)']);
  });

  it('keeps exactly one leader while two electors race for one Lease', async () => {
    const a = harness({ identity: 'a' });
    const b = harness({ identity: 'b' }, { clock: a.clock, store: a.store });
    void start(a);
    void start(b);
    for (let t = 0; t < 30; t += 1) {
      await a.clock.advance(1_000);
      expect(Number(a.elector.isLeader()) + Number(b.elector.isLeader())).toBe(1);
    }
  });
});

describe('LeaderElector reads', () => {
  it('reports each change of holder to a non-empty identity once: A → "" → A reports A twice', async () => {
    const h = harness({ identity: 'x' });
    h.store.put(heldBy('a'));
    void start(h);
    await settle();
    expect(h.elector.leader()).toBe('a');
    await h.clock.advance(1_000);
    h.store.put(heldBy('')); // released; x's takeover will fail
    h.lock.failNext('update');
    await h.clock.advance(1_000); // x observes '' at 2000
    expect(h.elector.leader()).toBeNull();
    h.store.put(heldBy('a'));
    await h.clock.advance(2_000); // x observes a again at 4000
    await h.clock.advance(2_000); // an unchanged re-read reports nothing
    expect(h.elector.leader()).toBe('a');
    expect(h.log).toEqual(['x sees a', 'x sees a']);
  });

  it('is healthy unless it believes it leads with a renewal older than leaseDurationMs + tolerance', async () => {
    const inner = new FakeClock();
    const clock = new JumpClock(inner);
    const h = harness({ clock }, { clock: inner, store: new FakeLeaseStore() });
    void start(h);
    await settle();
    expect(h.elector.isLeader()).toBe(true);
    clock.offsetMs = 35_000; // timers stopped firing, the clock still moves
    expect(h.elector.healthy()).toBe(true);
    expect(h.elector.healthy(19_999)).toBe(false);
    clock.offsetMs = 35_001;
    expect(h.elector.healthy()).toBe(false);
    clock.offsetMs = 0;
    h.stop.abort();
    await h.done;
    clock.offsetMs = 1_000_000;
    expect(h.elector.healthy()).toBe(true); // not leading
  });

  it('rejects run() while a term is running and accepts it again for a new term', async () => {
    const h = harness({ releaseOnCancel: false });
    const first = start(h);
    await settle();
    await expect(h.elector.run(new AbortController().signal)).rejects.toThrow(Error);
    h.stop.abort();
    await first;
    h.stop = new AbortController();
    void start(h);
    await settle();
    expect(h.elector.isLeader()).toBe(true);
    expect(h.log.filter((l) => l.includes('started'))).toHaveLength(2);
    expect(h.leadingSignals[1]?.aborted).toBe(false);
  });
});
