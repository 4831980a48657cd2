import { describe, expect, it } from 'vitest';
import type { PoolCapacity, RoutingState } from '../../src/pools/routing-state.js';
import { PanicTracker } from '../../src/service/panic-tracker.js';
import type { PoolPanicEvent } from '../../src/service/service-events.js';
import { RecordingLogger } from '../support/recording-logger.js';

function state(pools: Record<string, PoolCapacity | undefined>): RoutingState {
  return {
    pools: Object.entries(pools).map(([pool, capacity]) => ({
      namespace: 'ns',
      pool,
      cells: [],
      ...(capacity ? { capacity } : {}),
    })),
  };
}
const capacity = (routable: number, known: number, panic: boolean): PoolCapacity => ({
  routable,
  known,
  thresholdPercent: 50,
  panic,
});

describe('PanicTracker', () => {
  it('reports each entry and each exit once, however many deploys happen in between', () => {
    const events: PoolPanicEvent[] = [];
    const logger = new RecordingLogger();
    let now = new Date('2026-01-02T03:04:05.000Z');
    const tracker = new PanicTracker({
      publish: (e) => events.push(e),
      logger,
      wallClock: () => now,
    });
    tracker.observe(state({ a: capacity(4, 4, false), b: capacity(3, 4, false) }));
    expect(events).toEqual([]);

    tracker.observe(state({ a: capacity(1, 4, true), b: capacity(3, 4, false) }));
    now = new Date('2026-01-02T03:05:00.000Z');
    tracker.observe(state({ a: capacity(0, 4, true), b: capacity(3, 4, false) }));
    expect(events).toEqual([
      {
        type: 'pool.panic',
        namespace: 'ns',
        pool: 'a',
        inPanic: true,
        routable: 1,
        known: 4,
        thresholdPercent: 50,
      },
    ]);
    expect(tracker.entries()).toEqual([
      {
        namespace: 'ns',
        pool: 'a',
        routable: 0,
        known: 4,
        thresholdPercent: 50,
        since: '2026-01-02T03:04:05.000Z',
      },
    ]);
    expect(tracker.pools()).toEqual([
      { namespace: 'ns', pool: 'a', inPanic: true },
      { namespace: 'ns', pool: 'b', inPanic: false },
    ]);

    tracker.observe(state({ a: capacity(2, 4, false), b: capacity(3, 4, false) }));
    expect(events.at(-1)).toMatchObject({ pool: 'a', inPanic: false, routable: 2, known: 4 });
    expect(events).toHaveLength(2);
    expect(tracker.entries()).toEqual([]);
    expect(logger.entries.map((e) => e.level)).toEqual(['warn', 'info']);
  });

  it('forgets a pool that vanished while in panic, silently', () => {
    const events: PoolPanicEvent[] = [];
    const tracker = new PanicTracker({
      publish: (e) => events.push(e),
      logger: new RecordingLogger(),
    });
    tracker.observe(state({ a: capacity(0, 2, true) }));
    tracker.observe(state({}));
    expect(tracker.entries()).toEqual([]);
    expect(events).toHaveLength(1);
  });
});
