/**
 * What the coordination contract suite (test/coordination-contract/) does not already pin down
 * about the Coordinator: a bus whose publish throws. Everything else the Coordinator promises
 * lives in that suite, written against the public API only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

const live: Array<Coordinator<string>> = [];
afterEach(async () => {
  for (const coordinator of live.splice(0)) {
    await finishes(coordinator.stop(), { what: 'Coordinator.stop() in teardown' });
  }
});

describe('Coordinator with a failing bus', () => {
  it('completes its reconciliation and logs the error when the bus throws on publish', async () => {
    const clock = new FakeClock();
    const logger = new RecordingLogger();
    const calls: string[] = [];
    const coordinator = new Coordinator<string>({
      pipeline: {
        render: () => {
          calls.push('render');
          return 'desired';
        },
        deploy: () => {
          calls.push('deploy');
        },
      },
      bus: {
        publish: () => {
          throw new Error('bus down');
        },
      },
      clock,
      logger,
      driftIntervalMs: null,
    });
    live.push(coordinator);
    coordinator.start();
    await until(() => coordinator.state().lastCompleted !== undefined, {
      what: 'the reconciliation to complete',
    });
    expect(coordinator.state().lastCompleted?.result).toBe('success');
    expect(calls).toEqual(['render', 'deploy']);
    expect(logger.mentioning('bus down', 'error').length).toBeGreaterThan(0);
  });
});
