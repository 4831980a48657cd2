/**
 * The health probes on a listener of their own (`--health-probe-listen`), as controller-runtime
 * serves them (`--health-probe-bind-address`): `/healthz`, `/readyz` and `/<endpoint>/<check>`,
 * nothing else. On the main listener, API clients and event streams share the connection cap
 * with the kubelet; here nothing else competes, so a client holding connections there can never
 * make the liveness probe fail and the pod restart. The main listener keeps serving the probes
 * too, for whatever already points at it.
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { healthRoutes } from '../../routes/health.js';
import { nodeHttp } from '../kubernetes/client/node-http.js';
import type { ControlPlane } from '../service/control-plane.js';
import { SOURCE_HEADER } from './error-shape.js';
import { SERVER_TIMEOUTS } from './server-limits.js';
import { zodSchemaController } from './zod-compilers.js';

/**
 * Connections the probe listener keeps at most: the kubelet opens one per probe, a few per
 * period; the cap only bounds what a stray client can hold.
 */
const PROBE_MAX_CONNECTIONS = 64;

function errorBody(status: number, message: string) {
  return { status, error: nodeHttp.STATUS_CODES[status] ?? 'Error', message };
}

/** The probe app; `main.ts` listens on it beside the main app. */
export async function buildProbeServer(plane: ControlPlane): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    http: { headersTimeout: SERVER_TIMEOUTS.headersMs },
    requestTimeout: SERVER_TIMEOUTS.requestMs,
    // The kubelet opens a new connection for every probe; one left open is only a stray client.
    keepAliveTimeout: 5_000,
    return503OnClosing: false,
    // No route takes a body.
    bodyLimit: 1_024,
    schemaController: zodSchemaController,
  }).withTypeProvider<ZodTypeProvider>();
  app.server.maxConnections = PROBE_MAX_CONNECTIONS;
  app.addHook('onRequest', async (_request, reply) => {
    reply.header(SOURCE_HEADER, plane.sourceKind);
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (plane.shuttingDown) reply.header('connection', 'close');
    return payload;
  });
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    return reply
      .code(status)
      .send(errorBody(status, status >= 500 ? 'internal error' : error.message));
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(
        errorBody(
          404,
          `no route ${request.method} ${JSON.stringify(request.url.split('?')[0]!.slice(0, 64))} on the probe listener; it serves /healthz and /readyz`,
        ),
      ),
  );
  await app.register(healthRoutes, { plane });
  return app;
}
