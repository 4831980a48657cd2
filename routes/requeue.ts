/**
 * Forced reconciles: `POST /api/v1/cells/{cell}/reconcile` and `POST /api/v1/reconcile`.
 * The only writes of the control plane, so the only routes behind its admin check
 * (`ControlPlane.authorizeAdmin`, src/service/admin-auth.ts).
 * A requeue is safe at any time: the reconcile is level-triggered and idempotent, and a key
 * already queued absorbs the add.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { resolveCellKey } from './cell-lookup.js';
import { HttpError } from './http-error.js';
import { cellParams, commonErrors, errorSchema, namespaceQuery, requeueSchema } from './schemas.js';

/**
 * The plugin's one option: the control plane, which queues the reconciles and makes the admin
 * decision.
 */
interface RequeueRoutesOptions {
  plane: ControlPlane;
}

const authErrors = { 401: errorSchema, 403: errorSchema } as const;

/**
 * Registers the two POSTs. Their `preHandler` asks the admin check again: src/http/app.ts already
 * refuses an unauthorised POST in `onRequest`, before its body, but the plugin stays guarded on
 * any server it is registered on. A 401 carries `WWW-Authenticate`.
 */
export const requeueRoutes: FastifyPluginAsyncZod<RequeueRoutesOptions> = async (
  app,
  { plane },
) => {
  app.addHook('preHandler', async (request, reply) => {
    const decision = plane.authorizeAdmin(
      request.headers.authorization,
      request.socket.remoteAddress,
      {
        host: request.headers.host,
        origin: request.headers.origin,
        contentType: request.headers['content-type'],
      },
    );
    if (!decision.allowed) {
      if (decision.status === 401)
        reply.header('www-authenticate', 'Bearer realm="pool-controller"');
      throw new HttpError(decision.status, decision.message);
    }
  });

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
        security: [{ adminToken: [] }],
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
        security: [{ adminToken: [] }],
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
