/**
 * `GET /api/v1/queue`: what the loop will do next. Clock times from the loop are turned into
 * ages and delays, since its clock is monotonic and means nothing outside the process.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { durationMs } from './duration.js';
import { commonErrors, queueSchema } from './schemas.js';
import type { StatusQueue } from './status-page/page-data.js';

/** The queue as ages and delays from now: what `/api/v1/queue` and the status page show. */
export function queueView(plane: ControlPlane): StatusQueue {
  const state = plane.loopState();
  const now = plane.now();
  return {
    synced: state.synced,
    depth: state.queued.length,
    queued: state.queued,
    inFlight: state.inFlight
      ? { key: state.inFlight.key, runningForMs: durationMs(state.inFlight.sinceMs, now) }
      : null,
    retries: state.retries.map((r) => ({
      key: r.key,
      failures: r.failures,
      dueInMs: r.dueAtMs === undefined ? null : durationMs(now, r.dueAtMs),
    })),
    nextResyncInMs:
      state.nextResyncAtMs === undefined ? null : durationMs(now, state.nextResyncAtMs),
  };
}

/** The plugin's one option: the control plane, the only part of the service a route may read. */
interface QueueRoutesOptions {
  plane: ControlPlane;
}

/** Registers `GET /api/v1/queue`, serving `queueView`, the same view the status page renders. */
export const queueRoutes: FastifyPluginAsyncZod<QueueRoutesOptions> = async (app, { plane }) => {
  app.get(
    '/api/v1/queue',
    {
      schema: {
        operationId: 'getQueue',
        summary: 'The work queue',
        description:
          'Queued keys in order, the in-flight key and for how long, retries, the next resync.',
        tags: ['debug'],
        response: { 200: queueSchema, ...commonErrors },
      },
    },
    async () => ({ source: plane.sourceKind, ...queueView(plane) }),
  );
};
