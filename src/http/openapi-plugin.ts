/**
 * @fastify/swagger registered with the API's description, so that `app.swagger()` renders the
 * OpenAPI document of the routes registered after it (./openapi.ts, the generator).
 *
 * Apart from ./app.ts because only the generator asks for it (`buildServer`'s `openApi`), and
 * ./app.ts loads it then only: the service serves no document, and loading the plugin, its YAML
 * writer and its schema resolvers (some 100 modules) cost the service's start about 30 ms of
 * main-thread CPU. The plugin only observes routes as they are added (its `onRoute` hook), so the
 * routes served are the same with or without it.
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { openApiObjectTransform, openApiRouteTransform } from './openapi-transform.js';

/** The API's version in the OpenAPI document. */
const API_VERSION = '1.0.0';

/** Registers the document's plugin on `app`; call it before the routes are registered. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'pool-controller control plane',
        description:
          "Pools and cells of processes as reconciled from pods, the controller's store, queue and source, forced reconciles, health and metrics. Every JSON status response carries `source` (`kubernetes` or `simulated`); every response carries the `X-Pool-Controller-Source` header. Errors are `{status, error, message}`.",
        version: API_VERSION,
      },
      components: {
        securitySchemes: {
          adminToken: {
            type: 'http',
            scheme: 'bearer',
            description:
              'The token in --admin-token-file. Without that flag, POSTs are accepted from loopback clients only (403 otherwise).',
          },
        },
      },
      tags: [
        { name: 'pools', description: 'Pools: cells sharing a pool label value in one namespace.' },
        { name: 'cells', description: 'Cells as reconciled.' },
        { name: 'reconcile', description: 'Forced reconciles (admin).' },
        { name: 'debug', description: "The controller's internals, for port-forward debugging." },
        { name: 'health', description: 'controller-runtime style health checks.' },
        { name: 'observability', description: 'Prometheus.' },
      ],
    },
    transform: openApiRouteTransform,
    transformObject: openApiObjectTransform,
  });
}
