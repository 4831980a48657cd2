/**
 * The routing controller's retry policy: a target that is down never makes runs rarer than the
 * drift interval (found by test/e2e/sglang-router-controller.test.ts: with a router down during a
 * burst of cell changes, the coordinator's backoff reached the one-minute cap, so the router stayed
 * empty for up to a minute after it came back, and a restarted healthy router was not repopulated
 * meanwhile). A target's failure is the sink's to back off; the run succeeds, so drift goes on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS } from '../../src/coordination/coordinator.js';
import type { RoutingState } from '../../src/pools/routing-state.js';
import { RoutingController } from '../../src/service/routing-controller.js';
import { type Sink, SinkApplyError, type SinkTargetStatus } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { routingAtRest } from '../support/routing-at-rest.js';
import { finishes } from '../support/until.js';

/** A sink whose every apply fails while `down`; records when each apply began. */
class UnreachableSink implements Sink {
  readonly kind = 'sglang-router' as const;
  down = true;
  /** What it throws while down: a target's failure, or (a bug) anything else. */
  error: () => unknown = () =>
    new SinkApplyError([
      {
        type: 'sink.failed',
        kind: 'sglang-router',
        target: 'http://router',
        pool: 'engine',
        error: 'GET /workers: connect ECONNREFUSED',
      },
    ]);
  readonly applies: number[] = [];
  constructor(private readonly clock: FakeClock) {}

  async apply(_desired: RoutingState, _signal: AbortSignal): Promise<void> {
    this.applies.push(this.clock.now());
    if (this.down) throw this.error();
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
  it('runs drift at its interval however many runs met the target down, and converges once it is back', async () => {
    const { clock, sink, controller } = start(3_000);
    await routingAtRest(controller, [sink]);
    // A burst of cell changes while the router is down: no run fails, no streak grows.
    for (let i = 0; i < 7; i += 1) {
      controller.trigger(`cell ${i}`);
      await routingAtRest(controller, [sink]);
    }
    expect(controller.state()).toMatchObject({ consecutiveFailures: 0 });
    expect(controller.state().nextRetryAtMs).toBeUndefined();
    await clock.advance(9_000);
    expect(sink.applies.filter((at) => at > 0)).toEqual([3_000, 6_000, 9_000]);

    sink.down = false;
    await clock.advance(3_000);
    expect(sink.applies.at(-1)).toBe(12_000);
    expect(controller.state()).toMatchObject({ consecutiveFailures: 0 });
  });

  it('fails the run on an error that is not a target failure, and retries with the coordinator backoff', async () => {
    const clock = new FakeClock();
    const sink = new UnreachableSink(clock);
    sink.error = () => new TypeError('sink bug');
    const controller = new RoutingController({
      cells: () => [],
      synced: () => true,
      sinks: [sink],
      publish: () => {},
      driftIntervalMs: null,
      clock,
    });
    controllers.push(controller);
    controller.start();
    await routingAtRest(controller, [sink]);
    for (let i = 0; i < 7; i += 1) {
      controller.trigger(`cell ${i}`);
      await routingAtRest(controller, [sink]);
    }
    expect(controller.state().consecutiveFailures).toBe(8);
    expect(controller.state().nextRetryAtMs).toBe(DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS);
    await clock.advance(59_999);
    expect(sink.applies.filter((at) => at > 0)).toEqual([]);
  });
});
