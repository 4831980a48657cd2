/**
 * The routing controller's retry policy: a failure streak never makes runs rarer than the drift
 * interval (found by test/e2e/sglang-router-controller.test.ts: with a router down during a burst
 * of cell changes, the backoff reached the one-minute cap, so the router stayed empty for up to a
 * minute after it came back, and a restarted healthy router was not repopulated meanwhile).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS,
  DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS,
} from '../../src/coordination/coordinator.js';
import type { RoutingState } from '../../src/pools/routing-state.js';
import { RoutingController, retryCapMs } from '../../src/service/routing-controller.js';
import { type Sink, SinkApplyError, type SinkTargetStatus } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { routingAtRest } from '../support/routing-at-rest.js';
import { finishes } from '../support/until.js';

/** A sink whose every apply fails while `down`; records when each apply began. */
class UnreachableSink implements Sink {
  readonly kind = 'sglang-router' as const;
  down = true;
  readonly applies: number[] = [];
  constructor(private readonly clock: FakeClock) {}

  async apply(_desired: RoutingState, _signal: AbortSignal): Promise<void> {
    this.applies.push(this.clock.now());
    if (this.down) {
      throw new SinkApplyError([
        {
          type: 'sink.failed',
          kind: 'sglang-router',
          target: 'http://router',
          pool: 'engine',
          error: 'GET /workers: connect ECONNREFUSED',
        },
      ]);
    }
  }

  status(): SinkTargetStatus[] {
    return [];
  }

  nextAttemptAtMs(): number | undefined {
    return undefined;
  }
}

const controllers: RoutingController[] = [];
afterEach(async () => {
  for (const controller of controllers.splice(0)) {
    await finishes(controller.stop(), { what: 'RoutingController.stop() in teardown' });
  }
});

function start(driftIntervalMs: number | null): {
  clock: FakeClock;
  sink: UnreachableSink;
  controller: RoutingController;
} {
  const clock = new FakeClock();
  const sink = new UnreachableSink(clock);
  const controller = new RoutingController({
    cells: () => [],
    synced: () => true,
    sinks: [sink],
    publish: () => {},
    driftIntervalMs,
    clock,
  });
  controllers.push(controller);
  controller.start();
  return { clock, sink, controller };
}

describe('RoutingController retries', () => {
  it('caps the retry delay at the drift interval, within the coordinator defaults', () => {
    expect(retryCapMs(null)).toBe(DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS);
    expect(retryCapMs(60_000)).toBe(60_000);
    expect(retryCapMs(600_000)).toBe(DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS);
    expect(retryCapMs(2_000)).toBe(2_000);
    expect(retryCapMs(100)).toBe(DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS);
  });

  it('retries at least once per drift interval however long the failure streak, and converges once the sink is back', async () => {
    const { clock, sink, controller } = start(3_000);
    await routingAtRest(controller, [sink]);
    // A burst of cell changes while the router is down: every run fails, the streak grows.
    for (let i = 0; i < 7; i += 1) {
      controller.trigger(`cell ${i}`);
      await routingAtRest(controller, [sink]);
    }
    expect(controller.state().consecutiveFailures).toBe(8);
    // Backoff alone would now wait 2^7 s (capped at 60 s); the drift interval bounds it.
    expect(controller.state().nextRetryAtMs).toBe(3_000);
    await clock.advance(9_000);
    expect(sink.applies.filter((at) => at > 0)).toEqual([3_000, 6_000, 9_000]);

    sink.down = false;
    await clock.advance(3_000);
    expect(sink.applies.at(-1)).toBe(12_000);
    expect(controller.state()).toMatchObject({ consecutiveFailures: 0 });
  });

  it('keeps the plain backoff when drift is off', async () => {
    const { clock, sink, controller } = start(null);
    await routingAtRest(controller, [sink]);
    for (let i = 0; i < 7; i += 1) {
      controller.trigger(`cell ${i}`);
      await routingAtRest(controller, [sink]);
    }
    expect(controller.state().nextRetryAtMs).toBe(DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS);
    await clock.advance(59_999);
    expect(sink.applies.filter((at) => at > 0)).toEqual([]);
  });
});
