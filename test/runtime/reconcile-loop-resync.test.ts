import { afterEach, describe, expect, it } from 'vitest';
import { deleteOf, replaceOf, upsertOf } from '../support/fake-source.js';
import { loopAtRest, makeLoop, startSynced, stopAllLoops } from '../support/loop-harness.js';

afterEach(stopAllLoops);

const TEN_HOURS = 36_000_000;

describe('ReconcileLoop resync', () => {
  it('resyncs every 10 hours by default, first one full period after start() resolved', async () => {
    const h = makeLoop();
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    expect(h.loop.state().nextResyncAtMs).toBe(TEN_HOURS);
    await h.clock.advance(TEN_HOURS - 1);
    expect(h.rec.keys).toEqual(['c1', 'c2']);
    await h.clock.advance(1);
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c1', 'c2']);
    expect(h.rec.calls.slice(2).map((c) => c.startedAtMs)).toEqual([TEN_HOURS, TEN_HOURS]);
    expect(h.loop.state().nextResyncAtMs).toBe(2 * TEN_HOURS);
    expect(h.clock.pendingDueTimes()).toContain(2 * TEN_HOURS);
  });

  it('counts the first period from when start() resolved, not from when it was called', async () => {
    const h = makeLoop({ resyncPeriodMs: 10_000 });
    const started = h.loop.start();
    await loopAtRest(h);
    await h.clock.advance(3_700);
    h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
    await started;
    expect(h.loop.state().nextResyncAtMs).toBe(13_700);
    await h.clock.advance(9_999);
    expect(h.rec.keys).toEqual(['c1']);
    await h.clock.advance(1);
    expect(h.rec.keys).toEqual(['c1', 'c1']);
    expect(h.rec.calls[1]?.startedAtMs).toBe(13_700);
  });

  it('honours a custom period', async () => {
    const h = makeLoop({ resyncPeriodMs: 5_000 });
    await startSynced(h, { p1: { cell: 'c1' } });
    await h.clock.advance(20_000);
    expect(h.rec.calls.map((c) => c.startedAtMs)).toEqual([0, 5_000, 10_000, 15_000, 20_000]);
  });

  it('never resyncs when the period is null', async () => {
    const h = makeLoop({ resyncPeriodMs: null });
    await startSynced(h, { p1: { cell: 'c1' } });
    expect(h.loop.state().nextResyncAtMs).toBeUndefined();
    // only the retry poller sleeps
    expect(h.clock.pendingDueTimes()).toEqual([1_000]);
    await h.clock.advance(TEN_HOURS + 1_000);
    expect(h.rec.keys).toEqual(['c1']);
  });

  it('enqueues every parent with members in sorted order', async () => {
    const h = makeLoop({ resyncPeriodMs: 10_000 });
    await startSynced(h, {});
    h.fake.push(
      upsertOf('p3', { cell: 'c3' }),
      upsertOf('p1', { cell: 'c1' }),
      upsertOf('p2', { cell: 'c2' }),
    );
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c3', 'c1', 'c2']);
    h.rec.block();
    await h.clock.advance(10_000);
    expect(h.rec.keys.slice(3)).toEqual(['c1']);
    expect(h.loop.state().queued).toEqual(['c2', 'c3']);
  });

  it('skips parents that lost their last member', async () => {
    const h = makeLoop({ resyncPeriodMs: 10_000 });
    await startSynced(h, {
      p1: { cell: 'c1' },
      p2: { cell: 'c2' },
      p2b: { cell: 'c2' },
      p3: { cell: 'c3' },
    });
    h.fake.push(deleteOf('p2'), deleteOf('p2b'));
    await loopAtRest(h);
    const before = h.rec.calls.length;
    await h.clock.advance(10_000);
    expect(h.rec.keys.slice(before)).toEqual(['c1', 'c3']);
  });

  it('does not add a resync duplicate for a key that is already queued', async () => {
    const h = makeLoop({ resyncPeriodMs: 10_000 });
    h.rec.block('c1');
    await startSynced(h, { p1: { cell: 'c1' }, p2: { cell: 'c2' } });
    // c1 holds the worker; c2 is queued; the resync finds c2 queued and re-adds c1 behind it
    await h.clock.advance(10_000);
    expect(h.loop.state().queued).toEqual(['c2', 'c1']);
    h.rec.unblock();
    h.rec.release();
    await loopAtRest(h);
    expect(h.rec.keys).toEqual(['c1', 'c2', 'c1']);
  });

  it('drives a key that waits on a retry, and a success resets its backoff', async () => {
    const h = makeLoop({
      resyncPeriodMs: 5_000,
      failureBaseDelayMs: 1_001_000,
      failureMaxDelayMs: 10_000_000,
    });
    h.rec.fail('c1');
    await startSynced(h, { p1: { cell: 'c1' } });
    expect(h.loop.state().retries).toEqual([{ key: 'c1', failures: 1, dueAtMs: 1_001_000 }]);
    await h.clock.advance(5_000);
    expect(h.rec.calls.map((c) => [c.startedAtMs, c.outcome])).toEqual([
      [0, 'error'],
      [5_000, 'ok'],
    ]);
    expect(h.loop.state().retries).toEqual([]);
    // the retry that was due at 1_001_000 (off the resync grid) never fires: only resyncs drive c1
    await h.clock.advance(1_000_000);
    expect(h.rec.calls.every((c) => (c.startedAtMs as number) % 5_000 === 0)).toBe(true);
    expect(h.rec.calls).toHaveLength(1 + 1_005_000 / 5_000);
  });

  it('drives a key that waits on a retry, and a failure re-arms its backoff', async () => {
    const h = makeLoop({
      resyncPeriodMs: 5_000,
      failureBaseDelayMs: 1_001_000,
      failureMaxDelayMs: 10_000_000,
    });
    h.rec.fail('c1', 2);
    await startSynced(h, { p1: { cell: 'c1' } });
    await h.clock.advance(5_000);
    expect(h.rec.keys).toEqual(['c1', 'c1']);
    expect(h.loop.state().retries).toEqual([
      { key: 'c1', failures: 2, dueAtMs: 5_000 + 2_002_000 },
    ]);
  });
});
