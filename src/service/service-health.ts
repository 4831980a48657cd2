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
import { type HealthCheck, HealthEndpoint } from './health.js';

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

/**
 * The two endpoints' checks; failures are logged: a check's new reason warns, the same reason
 * again (the next probe) is debug, and a check that passed warns again when it next fails.
 */
export function createServiceHealth(sources: ServiceHealthSources): {
  healthz: HealthEndpoint;
  readyz: HealthEndpoint;
} {
  const { logger } = sources;
  // The reasons never reach a probe's response (they may quote an error's text); the log has them.
  // Remembered per check: before the first sync two readiness checks fail on every probe, and one
  // remembered reason for all of them warned twice per probe.
  const lastFailures = new Map<string, string>();
  const onHealthFailure = (endpoint: string, check: string, reason: string): void => {
    const key = `${endpoint}/${check}`;
    // Probes repeat every few seconds: a new reason is worth a warning, a repeated one debug.
    const level = lastFailures.get(key) === reason ? 'debug' : 'warn';
    lastFailures.set(key, reason);
    logger[level]({ endpoint, check, reason }, 'health check failed');
  };
  /** The checks, each forgetting its last failure when it passes. */
  const remembering = (endpoint: string, checks: HealthCheck[]): HealthCheck[] =>
    checks.map(({ name, check }) => ({
      name,
      check: () => {
        const reason = check();
        if (reason === undefined) lastFailures.delete(`${endpoint}/${name}`);
        return reason;
      },
    }));
  return {
    // Liveness asks only "is this process serving": restarting us cannot fix the API server.
    healthz: new HealthEndpoint(
      'healthz',
      remembering('healthz', [
        { name: 'ping', check: () => undefined },
        {
          // client-go's healthz adaptor: a leader whose renew loop is wedged must be restarted.
          name: 'leader-election',
          check: () =>
            sources.leadershipHealthy()
              ? undefined
              : 'this replica leads but has not renewed its Lease for longer than the lease duration',
        },
      ]),
      onHealthFailure,
    ),
    readyz: new HealthEndpoint(
      'readyz',
      remembering('readyz', [
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
      ]),
      onHealthFailure,
    ),
  };
}
