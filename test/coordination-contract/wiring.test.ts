/**
 * The intended wiring: a leader-only coordinator, started from `onStartedLeading` and stopped
 * from `onStoppedLeading`, publishing on a bus a subscriber reads.
 */
import { describe, expect, it } from 'vitest';
import { Coordinator, type CoordinatorEvent, EventBus, LeaderElector } from '../../src/index.js';
import { FakeLeaseLock, FakeLeaseStore } from '../support/fake-lease-lock.js';
import { FakeClock, LEASE_NAME, until, untilAborted } from './harness.js';

describe('LeaderElector driving a Coordinator', () => {
  it('reconciles only while leading, and aborts the running reconciliation when leadership ends', async () => {
    const clock = new FakeClock(0);
    const lock = new FakeLeaseLock(new FakeLeaseStore(), clock, LEASE_NAME);
    const bus = new EventBus<CoordinatorEvent>();
    const sub = bus.subscribe({ types: ['reconciliation.started', 'reconciliation.completed'] });
    const seen: string[] = [];
    void (async () => {
      for await (const event of sub) {
        seen.push(
          event.type === 'reconciliation.started'
            ? `started ${event.reasons.join(',')}`
            : `completed ${event.type === 'reconciliation.completed' ? event.result : ''}`,
        );
      }
    })();
    const renders: AbortSignal[] = [];
    let hangNext = false;
    const coordinator = new Coordinator({
      pipeline: {
        render: (signal) => {
          renders.push(signal);
          return hangNext ? untilAborted(signal) : 'desired';
        },
        deploy: () => {},
      },
      bus,
      clock,
      driftIntervalMs: null,
    });
    let stopping: Promise<void> | undefined;
    const elector = new LeaderElector({
      lock,
      identity: 'a',
      clock,
      random: () => 0,
      onStartedLeading: () => coordinator.start(),
      onStoppedLeading: () => {
        stopping = coordinator.stop();
      },
    });

    coordinator.trigger('before leading');
    const controller = new AbortController();
    const running = elector.run(controller.signal);
    await until(() => seen.length >= 2, { what: 'the first reconciliation while leading' });
    expect(elector.isLeader()).toBe(true);
    expect(seen).toEqual(['started started', 'completed success']);

    hangNext = true;
    coordinator.trigger('pool changed');
    await clock.advance(1_000);
    expect(coordinator.state().running).toBe(true);

    controller.abort();
    await running;
    await stopping;
    await until(() => seen.length >= 4, { what: 'the aborted reconciliation to be seen' });
    expect(renders.at(-1)!.aborted).toBe(true);
    expect(seen).toEqual([
      'started started',
      'completed success',
      'started pool changed',
      'completed aborted',
    ]);
    expect(lock.current!.record.holderIdentity).toBe('');
    coordinator.trigger('after losing');
    await clock.advance(60_000);
    expect(renders).toHaveLength(2);
    sub.close();
  });
});
