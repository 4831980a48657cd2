/**
 * The routing controller's resting point, for tests that drive it with `FakeSink`s: the moment it
 * did all it can without the fake clock or the test, so "nothing else happened" can be asserted
 * without counting event-loop turns.
 */
import type { CoordinatorState } from '../../src/index.js';
import type { Sink } from '../../src/sinks/sink.js';
import { FakeSink } from './fake-sink.js';
import { until } from './until.js';

/**
 * Waits until `controller` is idle with nothing about to begin (a retry or drift waits on the
 * clock), or runs a deploy that a `FakeSink` among `sinks` holds for the test.
 */
export function routingAtRest(
  controller: { state(): CoordinatorState },
  sinks: readonly Sink[],
): Promise<void> {
  return until(
    () => {
      const state = controller.state();
      if (!state.running) return state.pendingReasons.length === 0;
      return sinks.some((sink) => sink instanceof FakeSink && sink.holding);
    },
    { what: 'the routing controller to come to rest' },
  );
}
