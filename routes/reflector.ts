/** `GET /api/v1/reflector`: the pod source's own account of itself (cursor, counts, state). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { commonErrors, reflectorSchema } from './schemas.js';

/** The plugin's one option: the control plane, the only part of the service a route may read. */
export interface ReflectorRoutesOptions {
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
        summary: 'The pod source',
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
        events: s.events,
        lastEventAtMs: s.lastEventAtMs ?? null,
        lastSyncAtMs: s.lastSyncAtMs ?? null,
        bytesDecoded: s.bytesDecoded,
        lastError: s.lastError ?? null,
        listProgress: s.listProgress ?? null,
      };
    },
  );
};
