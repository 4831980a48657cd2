/**
 * What the coordination contract suite (test/coordination-contract/) does not already pin down
 * about the LeaderElector: a release that meets a renewal still in doubt on the wire, and two
 * electors sharing one Lease. Everything else it promises lives in that suite.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LeaderElector, type LeaderElectorOptions, type LeaseRecord } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeLeaseLock, FakeLeaseStore, type HeldCall } from '../support/fake-lease-lock.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

const WALL_START = Date.UTC(2026, 10, 30, 20, 41, 7, 123);

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
    if (h.done) await finishes(h.done, { what: `elector ${identity}'s run() after its abort` });
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

describe('LeaderElector with an aborted signal', () => {
  it('makes no call at all when its signal has already aborted', async () => {
    const h = harness();
    h.stop.abort();
    await start(h);
    expect(h.lock.calls).toEqual([]);
  });
});

async function leadingWithRenewalOnTheWire(
  options: { honourSignal?: boolean } = {},
): Promise<{ h: Harness; done: Promise<void>; held: HeldCall }> {
  const h = harness();
  const done = start(h);
  await until(() => h.elector.isLeader(), { what: 'the elector to lead' });
  const held = h.lock.hold('update', options);
  await h.clock.advance(2_000);
  await held.called;
  return { h, done, held };
}

describe('LeaderElector releasing while a renewal is in doubt', () => {
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
});

describe('LeaderElector: two electors, one Lease', () => {
  it('lets a follower take over within one retry period of a release', async () => {
    const a = harness({ identity: 'a' });
    const b = harness({ identity: 'b' }, { clock: a.clock, store: a.store });
    const aDone = start(a);
    await until(() => a.elector.isLeader(), { what: 'a to lead' });
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
