/**
 * Pools and cells as the reconcile published them: `GET /api/v1/pools[/{pool}]` and
 * `GET /api/v1/cells[/{cell}]`. The cell bodies come pre-serialized from the control plane.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { resolveCellKey } from './cell-lookup.js';
import { HttpError, sendJsonBytes } from './http-error.js';
import {
  booleanQuery,
  cellListSchema,
  cellParams,
  cellResponseSchema,
  commonErrors,
  errorSchema,
  namespaceQuery,
  poolListSchema,
  poolResponseSchema,
} from './schemas.js';

/** The plugin's one option: the control plane, the only part of the service a route may read. */
interface CellsRoutesOptions {
  plane: ControlPlane;
}

/**
 * Registers the pool and cell reads. The cell bodies are the control plane's cached bytes, sent as
 * they are (`sendJsonBytes`); the pool answers go through the serializer and their schema.
 */
export const cellsRoutes: FastifyPluginAsyncZod<CellsRoutesOptions> = async (app, { plane }) => {
  app.get(
    '/api/v1/pools',
    {
      schema: {
        operationId: 'listPools',
        summary: 'List pools',
        description: 'Every pool (per namespace) with its cell, alive-cell and pod counts.',
        tags: ['pools'],
        querystring: z.object({ namespace: namespaceQuery }),
        response: { 200: poolListSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { namespace } = request.query;
      const pools = plane.cells
        .pools()
        .filter((p) => namespace === undefined || p.namespace === namespace);
      return { source: plane.sourceKind, count: pools.length, pools };
    },
  );

  app.get(
    '/api/v1/pools/:pool',
    {
      schema: {
        operationId: 'getPool',
        summary: 'Get a pool and its cells',
        description:
          'One pool by name with its counts and every cell of it; 404 when there is no such pool (in `?namespace=` when given), 409 when the name is a pool in several namespaces and `?namespace=` does not pick one.',
        tags: ['pools'],
        params: z.object({
          pool: z.string().min(1).describe('The pool name: the value of the pool label.'),
        }),
        querystring: z.object({ namespace: namespaceQuery }),
        response: { 200: poolResponseSchema, 404: errorSchema, 409: errorSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { pool: name } = request.params;
      const { namespace } = request.query;
      const matches = plane.cells
        .pools()
        .filter((p) => p.name === name && (namespace === undefined || p.namespace === namespace));
      if (matches.length === 0) {
        throw new HttpError(
          404,
          namespace === undefined
            ? `no pool ${JSON.stringify(name)}`
            : `no pool ${JSON.stringify(name)} in namespace ${JSON.stringify(namespace)}`,
        );
      }
      if (matches.length > 1) {
        throw new HttpError(
          409,
          `pool ${JSON.stringify(name)} exists in several namespaces (${matches.map((p) => p.namespace).join(', ')}); add ?namespace=`,
        );
      }
      const pool = matches[0]!;
      return {
        source: plane.sourceKind,
        pool,
        cells: plane.cells.list({ pool: pool.name, namespace: pool.namespace }),
      };
    },
  );

  app.get(
    '/api/v1/cells',
    {
      schema: {
        operationId: 'listCells',
        summary: 'List cells',
        description:
          'Every reconciled cell, in `namespace/id` order, optionally filtered. Served from a body cached between reconciles.',
        tags: ['cells'],
        querystring: z.object({
          pool: z.string().min(1).describe('Only cells of this pool.').optional(),
          alive: booleanQuery('alive')
            .describe('Only alive (`true`) or not alive (`false`) cells.')
            .optional(),
          namespace: z.string().min(1).describe('Only cells in this namespace.').optional(),
        }),
        response: { 200: cellListSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { pool, alive, namespace } = request.query;
      return sendJsonBytes(reply, plane.cells.listBody({ pool, alive, namespace }, plane.synced));
    },
  );

  app.get(
    '/api/v1/cells/:cell',
    {
      schema: {
        operationId: 'getCell',
        summary: 'Get a cell',
        description:
          'One cell by the id users see (`engine-00003`). When the id exists in several namespaces, `?namespace=` is required (409 otherwise).',
        tags: ['cells'],
        params: cellParams,
        querystring: z.object({ namespace: namespaceQuery }),
        response: { 200: cellResponseSchema, 404: errorSchema, 409: errorSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const key = resolveCellKey(plane, request.params.cell, request.query.namespace, 'published');
      return sendJsonBytes(reply, plane.cells.cellBody(key)!);
    },
  );
};
