/**
 * The Fastify app of the control plane, built from the service's public objects. It does not
 * listen: `main.ts` listens, tests call `app.inject()`, the OpenAPI generator only reads routes.
 */
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { cellsRoutes } from '../routes/cells.js';
import { healthRoutes } from '../routes/health.js';
import { HttpError } from '../routes/http-error.js';
import { metricsRoutes } from '../routes/metrics.js';
import { queueRoutes } from '../routes/queue.js';
import { reflectorRoutes } from '../routes/reflector.js';
import { requeueRoutes } from '../routes/requeue.js';
import { storeRoutes } from '../routes/store.js';
import type { ControlPlane } from './control-plane.js';
import { openApiObjectTransform, openApiRouteTransform } from './openapi-transform.js';

/** Sent on every response, so simulated data is recognisable even in a bare `curl -i`. */
export const SOURCE_HEADER = 'x-pool-controller-source';

/** Requests not logged one by one: liveness/readiness probes and Prometheus scrapes. */
const QUIET_PATHS = /^\/(?:healthz|readyz|metrics)(?:[/?]|$)/;

/** The API's version in the OpenAPI document. */
export const API_VERSION = '1.0.0';

export interface ServerOptions {
  /** Fastify's request logging; off by default (tests, the generator). main passes its pino logger. */
  logger?: FastifyBaseLogger;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

function errorBody(status: number, message: string) {
  return { status, error: STATUS_TEXT[status] ?? 'Error', message };
}

/** Validation failure → one line naming the parameter: `query parameter alive: alive must be true or false, got "maybe"`. */
function validationMessage(error: FastifyError): string {
  const context =
    error.validationContext === 'querystring'
      ? 'query parameter'
      : error.validationContext === 'params'
        ? 'path parameter'
        : (error.validationContext ?? 'request');
  const first = error.validation?.[0];
  if (!first) return error.message;
  const where = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
  return where ? `${context} ${where}: ${first.message}` : `${context}: ${first.message}`;
}

export async function buildServer(
  plane: ControlPlane,
  options: ServerOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    // The peer address decides loopback-only POSTs; a forwarded-for header must not.
    trustProxy: false,
    // Probes and scrapes arrive every few seconds; logging each would drown the cell transitions.
    logController: new LogController({
      disableRequestLogging: (request) => QUIET_PATHS.test(request.url),
    }),
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

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

  app.addHook('onRequest', async (_request, reply) => {
    reply.header(SOURCE_HEADER, plane.source);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error) || error.validation) {
      return reply.code(400).send(errorBody(400, validationMessage(error)));
    }
    if (error instanceof HttpError) {
      return reply.code(error.statusCode).send(errorBody(error.statusCode, error.message));
    }
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply
      .code(status)
      .send(
        errorBody(status, status >= 500 ? 'internal error; see the service log' : error.message),
      );
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody(404, `no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  await app.register(healthRoutes, { plane });
  await app.register(metricsRoutes, { plane });
  await app.register(cellsRoutes, { plane });
  await app.register(requeueRoutes, { plane });
  await app.register(storeRoutes, { plane });
  await app.register(queueRoutes, { plane });
  await app.register(reflectorRoutes, { plane });
  return app;
}
