/**
 * `GET /api/v1/store`: the store as observed, members per parent. Compared with `/api/v1/cells`
 * it shows pending work: keys the store has but no reconcile has published yet.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { booleanQuery, commonErrors, storeSchema } from './schemas.js';

/** The plugin's one option: the control plane, the only part of the service a route may read. */
interface StoreRoutesOptions {
  plane: ControlPlane;
}

/**
 * Registers `GET /api/v1/store`; the pod views (`?objects=true`) are built only when asked for,
 * since they are the one answer that grows with every pod.
 */
export const storeRoutes: FastifyPluginAsyncZod<StoreRoutesOptions> = async (app, { plane }) => {
  app.get(
    '/api/v1/store',
    {
      schema: {
        operationId: 'getStore',
        summary: 'The store snapshot',
        description:
          'What the local cache holds: pods per parent (cell key), whether each parent has been reconciled into a cell yet, and with `?objects=true` a view of every pod with its resourceVersion, to compare with what the API server lists.',
        tags: ['debug'],
        querystring: z.object({
          objects: booleanQuery('objects').describe('Add a view of every pod.').optional(),
        }),
        response: { 200: storeSchema, ...commonErrors },
      },
    },
    async (request) => plane.storeSnapshot({ objects: request.query.objects === true }),
  );
};
