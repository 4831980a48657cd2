import { describe, expect, it } from 'vitest';
import { initialReflectorStats } from '../../src/model/pod-source-stats.js';
import { createServiceHealth } from '../../src/service/service-health.js';
import { RecordingLogger } from '../support/recording-logger.js';

/** The service's checks over switches a test flips, and what they log. */
function health() {
  const state = { synced: false, healthy: false };
  const logger = new RecordingLogger();
  const endpoints = createServiceHealth({
    leadershipHealthy: () => true,
    storeSynced: () => state.synced,
    podSourceStats: () => ({ ...initialReflectorStats('watch-list'), healthy: state.healthy }),
    shuttingDown: () => false,
    logger,
  });
  const probe = () => endpoints.readyz.report({ verbose: false, exclude: [] });
  const warned = () => logger.at('warn').map((entry) => (entry.obj as { check: string }).check);
  return { state, logger, probe, warned };
}

describe('the service health checks', () => {
  it('warn once per failing check while it keeps failing for the same reason, then debug', () => {
    const { logger, probe, warned } = health();
    for (let index = 0; index < 5; index += 1) expect(probe().status).toBe(500);
    // Two readiness checks fail before the first sync: one warning each, not two per probe.
    expect(warned()).toEqual(['store-synced', 'watch-healthy']);
    expect(logger.at('debug')).toHaveLength(8);
  });

  it('warn again when a check that passed fails again', () => {
    const { state, probe, warned } = health();
    probe();
    state.synced = true;
    state.healthy = true;
    expect(probe().status).toBe(200);
    state.healthy = false;
    probe();
    probe();
    expect(warned()).toEqual(['store-synced', 'watch-healthy', 'watch-healthy']);
  });
});
