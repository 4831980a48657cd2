import { describe, expect, it } from 'vitest';
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  DEFAULT_SINK_APPLY_DEADLINE_MS,
  SinkApplyDeadlineError,
  type SinkApplyOutcome,
  SinkWorker,
} from '../../src/sinks/sink-worker.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSink } from '../support/fake-sink.js';
import { until } from '../support/until.js';

function state(...addresses: string[]): RoutingState {
  return {
    pools: [
      {
        namespace: 'ns',
        pool: 'engine',
        cells: addresses.map((address, i) => ({ cell: `c${i}`, generation: 'g', address })),
      },
    ],
  };
}

function setup(deadlineMs?: number) {
  const clock = new FakeClock();
  const sink = new FakeSink(() => clock.now());
  const outcomes: SinkApplyOutcome[] = [];
  const worker = new SinkWorker({
    sink,
    clock,
    ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    onSettled: (outcome) => outcomes.push(outcome),
  });
  return { clock, sink, outcomes, worker };
}

describe('SinkWorker', () => {
  it('applies at once when idle and resolves submit once the apply settled', async () => {
    const { sink, worker, outcomes } = setup();
    await worker.submit(state('10.0.0.1:1'));
    expect(sink.applied()).toEqual(['engine=10.0.0.1:1']);
    expect(outcomes).toEqual([{ result: 'applied' }]);
    expect(worker.busy).toBe(false);
  });

  it('never runs two applies at once, and applies only the newest state waiting behind a slow one', async () => {
    const { sink, worker } = setup();
    const held = sink.hangNext();
    const first = worker.submit(state('10.0.0.1:1'));
    await held.called;
    const second = worker.submit(state('10.0.0.2:1'));
    const third = worker.submit(state('10.0.0.3:1'));
    expect(sink.calls).toHaveLength(1);
    expect(worker.busy).toBe(true);
    held.release();
    await Promise.all([first, second, third]);
    expect(sink.applied()).toEqual(['engine=10.0.0.1:1', 'engine=10.0.0.3:1']);
  });

  it('reports a failed apply, and goes on with the next state', async () => {
    const { sink, worker, outcomes } = setup();
    sink.failNext(new Error('router down'));
    await worker.submit(state('10.0.0.1:1'));
    await worker.submit(state('10.0.0.1:1'));
    expect(outcomes.map((o) => o.result)).toEqual(['failed', 'applied']);
    expect((outcomes[0] as { error: Error }).error.message).toBe('router down');
  });

  it(`aborts an apply that outlives its deadline (${DEFAULT_SINK_APPLY_DEADLINE_MS} ms by default) and reports it failed`, async () => {
    const { clock, sink, worker, outcomes } = setup();
    const held = sink.hangNext();
    const done = worker.submit(state());
    const call = await held.called;
    await clock.advance(DEFAULT_SINK_APPLY_DEADLINE_MS - 1);
    expect(call.signal.aborted).toBe(false);
    await clock.advance(1);
    await done;
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]?.result).toBe('failed');
    expect((outcomes[0] as { error: unknown }).error).toBeInstanceOf(SinkApplyDeadlineError);
  });

  it('leaves no timer behind once an apply settled', async () => {
    const { clock, worker } = setup(5_000);
    await worker.submit(state());
    await until(() => clock.pendingTimers === 0, { what: 'the deadline timer to be cancelled' });
  });

  it('stop() aborts the apply in flight, drops the waiting state, reports it aborted, and may be used again', async () => {
    const { sink, worker, outcomes } = setup();
    const held = sink.hangNext();
    const first = worker.submit(state('10.0.0.1:1'));
    const call = await held.called;
    const waiting = worker.submit(state('10.0.0.2:1'));
    await worker.stop(new Error('leadership ended'));
    await Promise.all([first, waiting]);
    expect(call.signal.aborted).toBe(true);
    expect(sink.calls).toHaveLength(1);
    expect(outcomes).toEqual([{ result: 'aborted' }]);

    await worker.submit(state('10.0.0.3:1'));
    expect(sink.applied().at(-1)).toBe('engine=10.0.0.3:1');
  });

  it('refuses a deadline that is not a positive finite number', () => {
    const clock = new FakeClock();
    const sink = new FakeSink();
    for (const deadlineMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new SinkWorker({ sink, clock, deadlineMs })).toThrow(RangeError);
    }
  });
});
