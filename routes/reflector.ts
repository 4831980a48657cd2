/** `GET /api/v1/reflector`: the pod source's own account of itself (cursor, counts, state). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { commonErrors, reflectorSchema } from './schemas.js';

/** Epoch ms as the API shows every time: RFC 3339. */
function rfc3339(epochMs: number | undefined): string | null {
  return epochMs === undefined ? null : new Date(epochMs).toISOString();
}

/** The plugin's one option: the control plane, the only part of the service a route may read. */
interface ReflectorRoutesOptions {
  plane: ControlPlane;
}

/**
 * Registers `GET /api/v1/reflector`: the pod source's stats in the response schema's shape (absent
 * values as `null`), for the simulated source as for the real one.
 */
export const reflectorRoutes: FastifyPluginAsyncZod<ReflectorRoutesOptions> = async (
  app,
  { plane },
) => {
  app.get(
    '/api/v1/reflector',
    {
      schema: {
        operationId: 'getReflector',
        summary: 'The pod source',
        description:
          "The pod source's account of itself: its phase and health (what `/readyz` checks), the watch cursor, counts of lists, relists, watch opens and frames, the last event and sync times, and the LIST under way.",
        tags: ['debug'],
        response: { 200: reflectorSchema, ...commonErrors },
      },
    },
    async () => {
      const s = plane.reflector();
      return {
        source: plane.sourceKind,
        phase: s.phase,
        healthy: s.healthy,
        cursor: s.cursor ?? null,
        lists: s.lists,
        relists: Object.fromEntries(
          Object.entries(s.relists).map(([reason, count]) => [reason, count ?? 0]),
        ),
        watchOpens: s.watchOpens,
        initialList: s.initialList,
        watchListFallbacks: s.watchListFallbacks,
        initialEventsTimeouts: s.initialEventsTimeouts,
        stalledWatches: s.stalledWatches,
        events: s.events,
        droppedEvents: Object.fromEntries(
          Object.entries(s.droppedEvents).map(([reason, count]) => [reason, count ?? 0]),
        ),
        lastEventAt: rfc3339(s.lastEventAtMs),
        lastSyncAt: rfc3339(s.lastSyncAtMs),
        bytesDecoded: s.bytesDecoded,
        lastError: s.lastError ?? null,
        listProgress: s.listProgress
          ? {
              pages: s.listProgress.pages,
              pods: s.listProgress.pods,
              startedAt: new Date(s.listProgress.startedAtMs).toISOString(),
            }
          : null,
      };
    },
  );
};
