/**
 * `GET /api/v1/store`: the store as observed, members per parent. Compared with `/api/v1/cells`
 * it shows pending work: keys the store has but no reconcile has published yet.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/control-plane.js';
import { podKey } from '../src/kubernetes/pod.js';
import { memberOf } from '../src/pools/cell-state.js';
import { booleanQuery, commonErrors, storeSchema } from './schemas.js';

export interface StoreRoutesOptions {
  plane: ControlPlane;
}

export const storeRoutes: FastifyPluginAsyncZod<StoreRoutesOptions> = async (app, { plane }) => {
  app.get(
    '/api/v1/store',
    {
      schema: {
        summary: 'The store snapshot',
        tags: ['debug'],
        querystring: z.object({
          objects: booleanQuery('objects').describe('Add a view of every pod.').optional(),
        }),
        response: { 200: storeSchema, ...commonErrors },
      },
    },
    async (request) => {
      const withObjects = request.query.objects === true;
      const parents = plane.storeParents().map((key) => {
        const pods = plane.storeMembers(key);
        const entry = {
          key,
          reconciled: plane.cells.get(key) !== undefined,
          members: pods.map(podKey),
        };
        if (!withObjects) return entry;
        return {
          ...entry,
          pods: pods.map((pod) => ({
            key: podKey(pod),
            namespace: pod.metadata.namespace,
            ...memberOf(pod, plane.labels),
          })),
        };
      });
      return {
        source: plane.source,
        synced: plane.synced,
        objects: plane.storeObjectCount,
        parentCount: parents.length,
        parents,
      };
    },
  );
};
