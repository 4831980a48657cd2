/**
 * Forced reconciles: `POST /api/v1/cells/{cell}/reconcile` and `POST /api/v1/reconcile`.
 * The only writes of the control plane, so the only routes that declare `adminToken` in their
 * OpenAPI `security`: that declaration is what puts them behind the admin gate
 * (src/http/admin-gate.ts), which alone authorises, so the documentation and the enforcement
 * cannot drift apart.
 * A requeue is safe at any time: the reconcile is level-triggered and idempotent, and a key
 * already queued absorbs the add.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { resolveCellKey } from './cell-lookup.js';
import { cellParams, commonErrors, errorSchema, namespaceQuery, requeueSchema } from './schemas.js';

/** The plugin's one option: the control plane, which queues the reconciles. */
interface RequeueRoutesOptions {
  plane: ControlPlane;
}

/** What the admin gate may answer before these routes run, documented on each. */
const authErrors = { 401: errorSchema, 403: errorSchema } as const;

/**
 * Needs the admin bearer token (or a loopback client when none is configured); the admin gate
 * reads this to refuse the request before its body.
 */
const adminOnly = [{ adminToken: [] }];

/** Registers the two POSTs. */
export const requeueRoutes: FastifyPluginAsyncZod<RequeueRoutesOptions> = async (
  app,
  { plane },
) => {
  app.post(
    '/api/v1/cells/:cell/reconcile',
    {
      schema: {
        operationId: 'reconcileCell',
        summary: 'Reconcile one cell now',
        description:
          'Queues the cell for a reconcile. Also reaches a cell that is observed in the store but not yet published. Needs the admin bearer token, or a loopback client when none is configured.',
        tags: ['reconcile'],
        params: cellParams,
        querystring: z.object({ namespace: namespaceQuery }),
        security: adminOnly,
        response: {
          202: requeueSchema,
          404: errorSchema,
          409: errorSchema,
          ...authErrors,
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const key = resolveCellKey(plane, request.params.cell, request.query.namespace, 'observed');
      plane.enqueue(key);
      return reply.code(202).send({ source: plane.sourceKind, count: 1, queued: [key] });
    },
  );

  app.post(
    '/api/v1/reconcile',
    {
      schema: {
        operationId: 'reconcileAll',
        summary: 'Reconcile every cell now',
        description:
          'Queues every key the store holds and every published cell (so a cell whose pods vanished is removed too).',
        tags: ['reconcile'],
        security: adminOnly,
        response: { 202: requeueSchema, ...authErrors, ...commonErrors },
      },
    },
    async (_request, reply) => {
      const keys = [...new Set([...plane.storeParents(), ...plane.cells.keys()])].sort();
      for (const key of keys) plane.enqueue(key);
      return reply.code(202).send({ source: plane.sourceKind, count: keys.length, queued: keys });
    },
  );
};
