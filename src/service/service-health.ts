/**
 * The service's `/healthz` and `/readyz` checks, in controller-runtime's format (health.ts).
 *
 * Liveness asks only whether restarting this process could help: it is serving, and, as
 * client-go's leader-election healthz adaptor says, a leader whose renew loop is wedged must be
 * restarted. Readiness asks whether its answers are true now: the initial list is applied, the pod
 * watch delivers (`PodSourceStats.healthy`, the one definition of a healthy watch), and shutdown
 * has not begun (so load balancers drain it before the server closes).
 */
import type { PodSourceStats } from '../model/pod-source-stats.js';
import type { Logger } from '../runtime/logger.js';
import { HealthEndpoint } from './health.js';

/** What the checks read; each is called on every probe, so each is cheap and synchronous. */
interface ServiceHealthSources {
  /** This replica leads and renews its Lease in time (or does not lead). */
  leadershipHealthy: () => boolean;
  /** The loop's store holds the initial list. */
  storeSynced: () => boolean;
  podSourceStats: () => PodSourceStats;
  shuttingDown: () => boolean;
  logger: Logger;
}

/** The two endpoints' checks; failures are logged (a new reason warns, a repeat is debug). */
export function createServiceHealth(sources: ServiceHealthSources): {
  healthz: HealthEndpoint;
  readyz: HealthEndpoint;
} {
  const { logger } = sources;
  // The reasons never reach a probe's response (they may quote an error's text); the log has them.
  let lastFailure = '';
  const onHealthFailure = (endpoint: string, check: string, reason: string): void => {
    const key = `${endpoint}/${check}: ${reason}`;
    // Probes repeat every few seconds: a new reason is worth a warning, a repeated one debug.
    const level = key === lastFailure ? 'debug' : 'warn';
    lastFailure = key;
    logger[level]({ endpoint, check, reason }, 'health check failed');
  };
  return {
    // Liveness asks only "is this process serving": restarting us cannot fix the API server.
    healthz: new HealthEndpoint(
      'healthz',
      [
        { name: 'ping', check: () => undefined },
        {
          // client-go's healthz adaptor: a leader whose renew loop is wedged must be restarted.
          name: 'leader-election',
          check: () =>
            sources.leadershipHealthy()
              ? undefined
              : 'this replica leads but has not renewed its Lease for longer than the lease duration',
        },
      ],
      onHealthFailure,
    ),
    readyz: new HealthEndpoint(
      'readyz',
      [
        {
          name: 'store-synced',
          check: () =>
            sources.storeSynced() ? undefined : 'the initial list has not been applied yet',
        },
        {
          name: 'watch-healthy',
          check: () => {
            const stats = sources.podSourceStats();
            return stats.healthy
              ? undefined
              : `the pod watch is not delivering (phase ${stats.phase}${stats.lastError ? `, last error: ${stats.lastError}` : ''})`;
          },
        },
        {
          name: 'shutdown',
          check: () => (sources.shuttingDown() ? 'the process is shutting down' : undefined),
        },
      ],
      onHealthFailure,
    ),
  };
}
