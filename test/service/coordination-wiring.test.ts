/**
 * PoolService as a controller that acts: the initial-sync gate, cell changes triggering the
 * leader's routing controller at once, leadership starting and stopping it, the events the
 * service publishes and the metrics it keeps. A real service over a hand-driven pod source, a
 * fake Lease and fake sinks, all on one fake clock.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Leadership } from '../../src/service/leadership.js';
import { LeaseLeadership } from '../../src/service/leadership.js';
import type { ServiceEvent } from '../../src/service/service-events.js';
import { eventLine } from '../support/event-line.js';
import { FakeLeaseLock, FakeLeaseStore } from '../support/fake-lease-lock.js';
import { FakeSink } from '../support/fake-sink.js';
import { lwsPod } from '../support/lws-pod.js';
import {
  closeAll,
  type Harness,
  type HarnessOptions,
  harness,
  leaseLeadership,
  remove,
  replaceWith,
  upsert,
} from '../support/service-harness.js';
import { until } from '../support/until.js';

afterEach(closeAll);

/** Records everything the service publishes from now on, raw and as lines. */
function record(h: Harness) {
  const events: ServiceEvent[] = [];
  const subscription = h.service.bus.subscribe({ bufferSize: 100_000 });
  void (async () => {
    for await (const event of subscription) events.push(event);
  })();
  return {
    events,
    lines: (filter?: (l: string) => boolean) =>
      events.map(eventLine).filter(filter ?? (() => true)),
  };
}

const isRun = (l: string) => /^(triggered|started|completed|failed) /.test(l);

/** A harness whose service is not started yet, with a recorder attached. */
async function unstarted(options: HarnessOptions = {}) {
  const h = await harness({ driftIntervalMs: null, ...options, start: false });
  return { h, rec: record(h) };
}

function heldBy(holderIdentity: string) {
  return {
    holderIdentity,
    leaseDurationSeconds: 15,
    acquireTime: '2025-06-01T11:00:00.000000Z',
    renewTime: '2025-06-01T11:00:00.000000Z',
    leaseTransitions: 0,
  };
}

function value(text: string, series: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${series} `));
  return found === undefined ? undefined : Number(found.slice(series.length + 1));
}

describe('the initial-sync gate', () => {
  it('starts the coordinator only once every cell of the initial list was reconciled, with no trigger before', async () => {
    const { h, rec } = await unstarted();
    await h.start([lwsPod({ group: 0 }), lwsPod({ group: 1, podIP: '10.0.0.2' })]);
    expect(rec.lines()).toEqual([
      `leader.changed ${h.service.leader().identity}`,
      `leadership.acquired ${h.service.leader().identity}`,
      'watch.state watching healthy',
      'cell ns/engine-00000 appeared alive',
      'cell ns/engine-00001 appeared alive',
      'store.synced objects=2 cells=2',
      'started #1 started',
      'render #1',
      'validate #1',
      'deploy #1',
      'completed #1 success',
    ]);
  });

  it('holds the coordinator while the store is synced but cells of the initial list are still unreconciled', async () => {
    const { h, rec } = await unstarted();
    const pods = Array.from({ length: 1_000 }, (_, i) =>
      lwsPod({ group: i, podIP: `10.${Math.floor(i / 250)}.${i % 250}.1` }),
    );
    const started = h.service.start();
    await until(() => h.podSource.fake.awaitingPull, { what: 'the service to open its source' });
    h.podSource.fake.push(replaceWith(pods));
    await started;
    expect(h.service.synced).toBe(true);
    expect(h.service.cellsSynced).toBe(false);
    expect(rec.lines(isRun)).toEqual([]);
    expect(h.service.coordinator()).toMatchObject({ leading: true, acting: false, desired: null });

    await until(() => h.service.cellsSynced, { what: 'every cell of the initial list' });
    await h.atRest();
    const lines = rec.lines();
    expect(lines.filter((l) => l.startsWith('cell '))).toHaveLength(1_000);
    expect(lines.indexOf('store.synced objects=1000 cells=1000')).toBe(
      lines.findLastIndex((l) => l.startsWith('cell ')) + 1,
    );
    expect(lines.filter(isRun)).toEqual(['started #1 started', 'completed #1 success']);
  });

  it('counts an empty initial list as synced at once', async () => {
    const { h, rec } = await unstarted();
    await h.start([]);
    expect(h.service.cellsSynced).toBe(true);
    expect(rec.lines().filter((l) => l.startsWith('store.synced') || isRun(l))).toEqual([
      'store.synced objects=0 cells=0',
      'started #1 started',
      'completed #1 success',
    ]);
  });
});

describe('cell changes after sync', () => {
  it('trigger the coordinator at once with a reason naming the cell, for every kind of change', async () => {
    const sink = new FakeSink();
    const { h, rec } = await unstarted({ sinks: () => [sink] });
    await h.start([lwsPod({ group: 0 })]);
    const before = rec.events.length;

    await h.push(upsert(lwsPod({ group: 0, ready: false })));
    await h.push(upsert(lwsPod({ group: 0, ready: true })));
    await h.push(upsert(lwsPod({ group: 0, restarts: [1] })));
    await h.push(upsert(lwsPod({ group: 0, restarts: [1], podIP: '10.0.0.9' })));
    await h.push(upsert(lwsPod({ group: 1, podIP: '10.0.0.2' })));
    await h.push(remove(lwsPod({ group: 1, podIP: '10.0.0.2' })));

    const after = rec.events.slice(before).map(eventLine);
    expect(after.filter((l) => l.startsWith('cell ') || l.startsWith('triggered'))).toEqual([
      'cell ns/engine-00000 not-alive',
      'triggered cell ns/engine-00000 not-alive',
      'cell ns/engine-00000 alive alive',
      'triggered cell ns/engine-00000 alive',
      'cell ns/engine-00000 generation-changed alive',
      'triggered cell ns/engine-00000 generation-changed',
      'cell ns/engine-00000 address-changed alive',
      'triggered cell ns/engine-00000 address-changed',
      'cell ns/engine-00001 appeared alive',
      'triggered cell ns/engine-00001 appeared',
      'cell ns/engine-00001 gone',
      'triggered cell ns/engine-00001 gone',
    ]);
    // Each trigger began its own run at once: no clock advanced, no debounce timer between.
    expect(after.filter((l) => l.startsWith('started'))).toEqual([
      'started #2 cell ns/engine-00000 not-alive',
      'started #3 cell ns/engine-00000 alive',
      'started #4 cell ns/engine-00000 generation-changed',
      'started #5 cell ns/engine-00000 address-changed',
      'started #6 cell ns/engine-00001 appeared',
      'started #7 cell ns/engine-00001 gone',
    ]);
    expect(h.clock.now()).toBe(0);
    expect(sink.applied()).toEqual([
      'engine=10.0.0.1:30000',
      'engine=',
      'engine=10.0.0.1:30000',
      'engine=10.0.0.1:30000',
      'engine=10.0.0.9:30000',
      'engine=10.0.0.2:30000,10.0.0.9:30000',
      'engine=10.0.0.9:30000',
    ]);
  });

  it('publish cell.changed with the cell, its pool, liveness, reasons, generation and address; a gone cell is not alive', async () => {
    const { h, rec } = await unstarted();
    await h.start([lwsPod({ group: 0 })]);
    const appeared = rec.events.find((e) => e.type === 'cell.changed');
    expect(appeared).toEqual({
      type: 'cell.changed',
      cell: 'engine-00000',
      namespace: 'ns',
      pool: 'engine',
      change: 'appeared',
      alive: true,
      whyNotAlive: [],
      generation: expect.stringMatching(/^[0-9a-f]+$/),
      address: '10.0.0.1:30000',
      routable: true,
      whyNotRoutable: [],
    });
    await h.push(upsert(lwsPod({ group: 0, ready: false })));
    const notAlive = rec.events.filter((e) => e.type === 'cell.changed').at(-1);
    expect(notAlive).toMatchObject({ change: 'not-alive', alive: false });
    expect((notAlive as { whyNotAlive: unknown[] }).whyNotAlive.length).toBeGreaterThan(0);

    await h.push(remove(lwsPod({ group: 0, ready: false })));
    const gone = rec.events.filter((e) => e.type === 'cell.changed').at(-1);
    expect(gone).toEqual({
      type: 'cell.changed',
      cell: 'engine-00000',
      namespace: 'ns',
      pool: 'engine',
      change: 'gone',
      alive: false,
      whyNotAlive: [],
      generation: (appeared as { generation: string }).generation,
      address: '10.0.0.1:30000',
      routable: false,
      whyNotRoutable: [],
      gone: true,
    });
  });

  it('collapse into one follow-up while a deploy runs: the only debounce there is', async () => {
    const sink = new FakeSink();
    const { h, rec } = await unstarted({ sinks: () => [sink] });
    await h.start([lwsPod({ group: 0 })]);
    const held = sink.hangNext();
    await h.push(upsert(lwsPod({ group: 1, podIP: '10.0.0.2' })));
    await held.called;
    await h.push(upsert(lwsPod({ group: 2, podIP: '10.0.0.3' })));
    await h.push(upsert(lwsPod({ group: 3, podIP: '10.0.0.4' })));
    held.release();
    await h.atRest();
    expect(rec.lines((l) => l.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 cell ns/engine-00001 appeared',
      'started #3 cell ns/engine-00002 appeared,cell ns/engine-00003 appeared',
    ]);
    expect(sink.applied().at(-1)).toBe(
      'engine=10.0.0.1:30000,10.0.0.2:30000,10.0.0.3:30000,10.0.0.4:30000',
    );
  });
});

describe('drift', () => {
  it('runs every driftIntervalMs after the last run', async () => {
    const sink = new FakeSink();
    const { h, rec } = await unstarted({ sinks: () => [sink], driftIntervalMs: 5_000 });
    await h.start([lwsPod({ group: 0 })]);
    await h.clock.advance(4_999);
    expect(sink.calls).toHaveLength(1);
    await h.clock.advance(1);
    await h.clock.advance(5_000);
    expect(rec.lines((l) => l.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 drift',
      'started #3 drift',
    ]);
    expect(sink.calls).toHaveLength(3);
  });

  it('defaults to 60 s', async () => {
    const sink = new FakeSink();
    const h = await harness({ sinks: () => [sink], pods: [lwsPod()] });
    await h.clock.advance(59_999);
    expect(sink.calls).toHaveLength(1);
    await h.clock.advance(1);
    expect(sink.calls).toHaveLength(2);
  });
});

describe('leadership', () => {
  it('a follower keeps the read API warm, renders the desired state locally and never calls a sink', async () => {
    const store = new FakeLeaseStore();
    store.put(heldBy('b_2'));
    const sink = new FakeSink();
    const { h, rec } = await unstarted({
      leadership: leaseLeadership(store),
      sinks: () => [sink],
    });
    await h.start([lwsPod({ group: 0 })]);
    await h.push(upsert(lwsPod({ group: 1, podIP: '10.0.0.2' })));
    expect(h.service.cellsSynced).toBe(true);
    expect((await h.app.inject({ url: '/readyz' })).statusCode).toBe(200);
    expect((await h.app.inject({ url: '/api/v1/cells' })).json().count).toBe(2);
    expect(h.service.leader()).toMatchObject({ identity: 'a_1', leading: false, leader: 'b_2' });
    const coordinator = h.service.coordinator();
    expect(coordinator).toMatchObject({ leading: false, acting: false, cellsSynced: true });
    expect(coordinator.desired?.pools[0]?.cells.map((c) => c.address)).toEqual([
      '10.0.0.1:30000',
      '10.0.0.2:30000',
    ]);
    expect(rec.lines(isRun)).toEqual([]);
    expect(sink.calls).toHaveLength(0);
    expect(rec.lines((l) => l.startsWith('lead'))).toEqual(['leader.changed b_2']);
  });

  it('becoming leader starts a run at once', async () => {
    const store = new FakeLeaseStore();
    store.put(heldBy('b_2'));
    const sink = new FakeSink();
    const { h, rec } = await unstarted({
      leadership: leaseLeadership(store),
      sinks: () => [sink],
    });
    await h.start([lwsPod({ group: 0 })]);
    await h.clock.advance(20_000); // b_2 stopped renewing: a_1 takes over
    expect(rec.lines((l) => l.startsWith('lead') || l.startsWith('started'))).toEqual([
      'leader.changed b_2',
      'leader.changed a_1',
      'leadership.acquired a_1',
      'started #1 started',
    ]);
    expect(sink.applied()).toEqual(['engine=10.0.0.1:30000']);
    expect(h.service.coordinator()).toMatchObject({ leading: true, acting: true });
  });

  it('after losing leadership aborts the sink apply in flight at once, calls no sink afterwards, and campaigns again', async () => {
    const store = new FakeLeaseStore();
    const sink = new FakeSink();
    const { h, rec } = await unstarted({
      leadership: leaseLeadership(store),
      sinks: () => [sink],
    });
    await h.start([lwsPod({ group: 0 })]);
    expect(sink.calls).toHaveLength(1);
    const held = sink.hangNext();
    await h.push(upsert(lwsPod({ group: 1, podIP: '10.0.0.2' })));
    const call = await held.called;

    store.put(heldBy('b_2')); // someone else holds the Lease now
    await h.clock.advance(10_000); // a_1's renew deadline
    expect(call.signal.aborted).toBe(true);
    expect(call.outcome).toBe('aborted');
    expect(h.service.coordinator()).toMatchObject({ leading: false, acting: false });

    await h.push(upsert(lwsPod({ group: 2, podIP: '10.0.0.3' })));
    await h.clock.advance(4_000);
    expect(sink.calls).toHaveLength(2);
    expect(rec.lines((l) => l.startsWith('lead') || isRun(l))).toEqual([
      'leader.changed a_1',
      'leadership.acquired a_1',
      'started #1 started',
      'completed #1 success',
      'triggered cell ns/engine-00001 appeared',
      'started #2 cell ns/engine-00001 appeared',
      // The run waited SINK_RUN_WAIT_MS for the hanging apply, which went on by itself.
      'completed #2 success',
      'leader.changed b_2',
      'leadership.lost a_1',
    ]);

    // b_2 never renews: a_1, still campaigning, leads again and reconciles the world it kept.
    await h.clock.advance(20_000);
    expect(h.service.leader()).toMatchObject({ leading: true, leader: 'a_1' });
    expect(sink.applied().at(-1)).toBe('engine=10.0.0.1:30000,10.0.0.2:30000,10.0.0.3:30000');
  });

  it('leads again after a lost term even while the old deploy is still unwinding', async () => {
    const store = new FakeLeaseStore();
    const sink = new FakeSink();
    const lock = { current: undefined as FakeLeaseLock | undefined };
    const { h, rec } = await unstarted({
      leadership: (hooks, clock) => {
        lock.current = new FakeLeaseLock(store, () => clock.now());
        return new LeaseLeadership({
          lock: lock.current,
          identity: 'a_1',
          leaseDurationMs: 15_000,
          renewDeadlineMs: 10_000,
          retryPeriodMs: 2_000,
          hooks,
          clock,
        });
      },
      sinks: () => [sink],
    });
    await h.start([lwsPod({ group: 0 })]);
    const held = sink.hangNext({ honourSignal: false }); // a request stuck in a dead connection
    await h.push(upsert(lwsPod({ group: 1, podIP: '10.0.0.2' })));
    await held.called;
    // The renewals at 2, 4, 6 and 8 s fail; the deadline passes at 10 s; the Lease still names
    // a_1, so the next attempt takes it back at once.
    for (let i = 0; i < 4; i += 1)
      lock.current!.failNext('get', new Error('apiserver unavailable'));
    await h.clock.advance(10_000);
    expect(rec.lines((l) => l.startsWith('leadership'))).toEqual([
      'leadership.acquired a_1',
      'leadership.lost a_1',
      'leadership.acquired a_1',
    ]);
    expect(sink.calls).toHaveLength(2);

    held.fail(new Error('connection reset'));
    await h.atRest();
    expect(rec.lines((l) => l.startsWith('started') || l.startsWith('completed'))).toEqual([
      'started #1 started',
      'completed #1 success',
      'started #2 cell ns/engine-00001 appeared',
      'completed #2 success', // after SINK_RUN_WAIT_MS; the apply went on, then was aborted
      'started #3 started',
      'completed #3 success',
    ]);
    expect(h.service.coordinator()).toMatchObject({ leading: true, acting: true });
    await h.push(upsert(lwsPod({ group: 2, podIP: '10.0.0.3' })));
    expect(sink.applied().at(-1)).toBe('engine=10.0.0.1:30000,10.0.0.2:30000,10.0.0.3:30000');
  });

  it('readiness does not depend on leadership', async () => {
    const store = new FakeLeaseStore();
    store.put(heldBy('b_2'));
    const { h } = await unstarted({ leadership: leaseLeadership(store) });
    await h.start([lwsPod()]);
    expect(h.service.leader().leading).toBe(false);
    const res = await h.app.inject({ url: '/readyz?verbose' });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('leader');
  });

  it('fails /healthz when the leadership reports a wedged renew loop', async () => {
    let healthy = true;
    const wedged: (hooks: unknown) => Leadership = () => ({
      identity: 'w_1',
      view: () => ({
        identity: 'w_1',
        leading: true,
        leader: 'w_1',
        lease: 'default/test',
        since: null,
      }),
      healthy: () => healthy,
      run: (signal) =>
        new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve())),
    });
    const h = await harness({ leadership: wedged, pods: [lwsPod()] });
    expect((await h.app.inject({ url: '/healthz' })).statusCode).toBe(200);
    healthy = false;
    const res = await h.app.inject({ url: '/healthz?verbose' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toContain('leader-election');
    expect((await h.app.inject({ url: '/readyz' })).statusCode).toBe(200);
  });

  it('stops the routing controller when the service stops, and releases the Lease', async () => {
    const store = new FakeLeaseStore();
    const sink = new FakeSink();
    const { h, rec } = await unstarted({ leadership: leaseLeadership(store), sinks: () => [sink] });
    await h.start([lwsPod()]);
    const held = sink.hangNext();
    await h.push(upsert(lwsPod({ group: 1, podIP: '10.0.0.2' })));
    const call = await held.called;
    await h.service.stop();
    expect(call.signal.aborted).toBe(true);
    expect(store.lease?.record.holderIdentity).toBe('');
    expect(rec.lines((l) => l.startsWith('leadership') || l.startsWith('completed'))).toEqual([
      'leadership.acquired a_1',
      'completed #1 success',
      'leadership.lost a_1',
      'completed #2 aborted',
    ]);
    expect(h.clock.pendingTimers).toBe(0);
  });
});

describe('watch.state events', () => {
  it('publish the reflector phase and health when they change, and each relist with its reason', async () => {
    const { h, rec } = await unstarted({ watchStatePollMs: 1_000 });
    await h.start([lwsPod()]);
    h.podSource.current = {
      ...h.podSource.current,
      phase: 'backoff',
      healthy: false,
      lastError: 'watch failed: 500',
    };
    await h.clock.advance(1_000);
    await h.clock.advance(1_000); // unchanged: nothing new
    h.podSource.current = {
      ...h.podSource.current,
      phase: 'watching',
      healthy: true,
      relists: { expired: 1 },
    };
    await h.clock.advance(1_000);
    const watch = rec.events.filter((e) => e.type === 'watch.state');
    expect(watch).toEqual([
      { type: 'watch.state', phase: 'watching', healthy: true },
      { type: 'watch.state', phase: 'backoff', healthy: false, lastError: 'watch failed: 500' },
      { type: 'watch.state', phase: 'watching', healthy: true },
      { type: 'watch.state', phase: 'watching', healthy: true, relistReason: 'expired' },
    ]);
  });
});

describe('coordination metrics', () => {
  it('pre-initialise the reconciliation results and the dropped counter', async () => {
    const h = await harness({ start: false });
    const text = await h.service.metrics.render();
    for (const result of ['success', 'failure', 'aborted']) {
      expect(value(text, `pool_controller_reconciliations_total{result="${result}"}`)).toBe(0);
    }
    expect(value(text, 'pool_controller_events_dropped_total{subscriber="sse"}')).toBe(0);
    expect(value(text, 'pool_controller_event_subscribers')).toBe(0);
  });

  it('show leadership as leader_election_master_status{name} and count transitions', async () => {
    const store = new FakeLeaseStore();
    const { h } = await unstarted({ leadership: leaseLeadership(store) });
    expect(
      value(await h.service.metrics.render(), 'leader_election_master_status{name="default/test"}'),
    ).toBe(0);
    await h.start([lwsPod()]);
    let text = await h.service.metrics.render();
    expect(value(text, 'leader_election_master_status{name="default/test"}')).toBe(1);
    expect(value(text, 'pool_controller_leader_transitions_total')).toBe(1);
    store.put(heldBy('b_2'));
    await h.clock.advance(10_000);
    text = await h.service.metrics.render();
    expect(value(text, 'leader_election_master_status{name="default/test"}')).toBe(0);
    expect(value(text, 'pool_controller_leader_transitions_total')).toBe(1);
  });

  it('observe a failed reconciliation with its real duration, and never an aborted one', async () => {
    const sink = new FakeSink();
    const { h } = await unstarted({ sinks: () => [sink] });
    const failing = sink.hangNext();
    await h.start([lwsPod()]);
    await h.clock.advance(400); // within SINK_RUN_WAIT_MS: the run waits for the apply
    failing.fail(new TypeError('sink bug'));
    await h.atRest();
    let text = await h.service.metrics.render();
    expect(value(text, 'pool_controller_reconciliations_total{result="failure"}')).toBe(1);
    expect(value(text, 'pool_controller_reconciliation_duration_seconds_count')).toBe(1);
    expect(value(text, 'pool_controller_reconciliation_duration_seconds_sum')).toBe(0.4);
    expect(value(text, 'pool_controller_phase_duration_seconds_count{phase="render"}')).toBe(1);
    // The failed deploy phase did not complete: no deploy observation at all.
    expect(
      value(text, 'pool_controller_phase_duration_seconds_count{phase="deploy"}'),
    ).toBeUndefined();

    const hanging = sink.hangNext();
    await h.clock.advance(1_000); // the retry
    await hanging.called;
    await h.clock.advance(300);
    await h.service.stop();
    text = await h.service.metrics.render();
    expect(value(text, 'pool_controller_reconciliations_total{result="aborted"}')).toBe(1);
    expect(value(text, 'pool_controller_reconciliation_duration_seconds_count')).toBe(1);
    expect(value(text, 'pool_controller_reconciliation_duration_seconds_sum')).toBe(0.4);
  });

  it('observe a successful reconciliation and each of its phases', async () => {
    const sink = new FakeSink();
    const { h } = await unstarted({ sinks: () => [sink] });
    const slow = sink.hangNext();
    await h.start([lwsPod()]);
    await h.clock.advance(250);
    slow.release();
    await h.atRest();
    const text = await h.service.metrics.render();
    expect(value(text, 'pool_controller_reconciliations_total{result="success"}')).toBe(1);
    expect(value(text, 'pool_controller_reconciliation_duration_seconds_sum')).toBe(0.25);
    expect(value(text, 'pool_controller_phase_duration_seconds_sum{phase="deploy"}')).toBe(0.25);
    expect(value(text, 'pool_controller_phase_duration_seconds_count{phase="validate"}')).toBe(1);
  });

  it('count the open event-bus subscriptions, event streams included', async () => {
    const h = await harness();
    const a = new AbortController();
    const stream = h.service.eventStream({ signal: a.signal })!;
    expect(value(await h.service.metrics.render(), 'pool_controller_event_subscribers')).toBe(1);
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.resume();
    a.abort();
    await closed;
    expect(value(await h.service.metrics.render(), 'pool_controller_event_subscribers')).toBe(0);
  });
});

describe('event streams and shutdown', () => {
  /** Resolves when `stream` has ended (read to its end) or closed. */
  function ended(stream: import('node:stream').Readable): Promise<void> {
    stream.resume();
    return new Promise((resolve) => stream.once('close', () => resolve()));
  }

  it('closeEventStreams ends every open stream at once, and a new one ends at once too', async () => {
    const h = await harness();
    const stream = h.service.eventStream({ signal: new AbortController().signal })!;
    const done = ended(stream);
    h.service.closeEventStreams();
    await done;
    await ended(h.service.eventStream({ signal: new AbortController().signal })!);
    expect(h.service.eventStreams.count).toBe(0);
  });

  it('beginShutdown ends open streams, as it says, so closing the server never waits on a listener', async () => {
    const h = await harness();
    const done = ended(h.service.eventStream({ signal: new AbortController().signal })!);
    h.service.beginShutdown();
    await done;
    expect(h.service.eventStreams.count).toBe(0);
  });

  it('combines no signals per stream (AbortSignal.any retains a little per call on Node 20)', async () => {
    const h = await harness();
    const any = vi.spyOn(AbortSignal, 'any');
    try {
      for (let i = 0; i < 3; i += 1) {
        const a = new AbortController();
        const done = ended(h.service.eventStream({ signal: a.signal })!);
        a.abort();
        await done;
        expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
      }
      expect(any).not.toHaveBeenCalled();
      expect(h.service.eventStreams.count).toBe(0);
    } finally {
      any.mockRestore();
    }
  });

  it('stop ends open streams instead of waiting on them', async () => {
    const h = await harness();
    const done = ended(h.service.eventStream({ signal: new AbortController().signal })!);
    await h.service.stop();
    await done;
  });
});
