/** `GET /api/v1/leader`: who leads, and whether this replica does. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { commonErrors, leaderSchema } from './schemas.js';

/** The plugin's one option: the control plane, the only part of the service a route may read. */
interface LeaderRoutesOptions {
  plane: ControlPlane;
}

/**
 * Registers `GET /api/v1/leader`, answered by every replica, so a person can ask any pod who leads.
 */
export const leaderRoutes: FastifyPluginAsyncZod<LeaderRoutesOptions> = async (app, { plane }) => {
  app.get(
    '/api/v1/leader',
    {
      schema: {
        operationId: 'getLeader',
        summary: 'Leadership',
        description:
          "This replica's identity, whether it leads, the observed leader and the Lease. Every replica answers; only the leader acts.",
        tags: ['coordination'],
        response: { 200: leaderSchema, ...commonErrors },
      },
    },
    async () => ({ source: plane.sourceKind, ...plane.leader() }),
  );
};
