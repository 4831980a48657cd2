/**
 * The admin routes' gate: a route whose OpenAPI `security` names `adminToken` is behind
 * `plane.authorizeAdmin` (a bearer token, or loopback only), so the documentation and the
 * enforcement cannot drift apart.
 *
 * Auth before validation (and before the body): a caller who may not POST learns only that, not
 * which of its parameters were wrong, nor whether the cell exists.
 */
import type { FastifyRequest } from 'fastify';
import type { ControlPlane } from '../service/control-plane.js';
import { expectsBody } from './body-timeout.js';
import { errorBody } from './error-shape.js';
import { rootPlugin } from './root-plugin.js';

/** Whether the route declares `adminToken` in its OpenAPI `security`. */
function isAdminRoute(request: FastifyRequest): boolean {
  const security = (request.routeOptions.schema as { security?: unknown } | undefined)?.security;
  return (
    Array.isArray(security) &&
    security.some((entry) => typeof entry === 'object' && entry !== null && 'adminToken' in entry)
  );
}

/** Refuses an admin route's request the plane does not authorise, with its status and reason. */
export const adminGate = rootPlugin<{ plane: Pick<ControlPlane, 'authorizeAdmin'> }>(
  'admin-gate',
  async (app, { plane }) => {
    app.addHook('onRequest', async (request, reply) => {
      if (!isAdminRoute(request)) return;
      const decision = plane.authorizeAdmin(
        request.headers.authorization,
        request.socket.remoteAddress,
        {
          host: request.headers.host,
          origin: request.headers.origin,
          contentType: request.headers['content-type'],
        },
      );
      if (decision.allowed) return;
      if (decision.status === 401) {
        reply.header('www-authenticate', 'Bearer realm="pool-controller"');
      }
      // The body, if one is coming, is never read: close instead of draining it.
      if (expectsBody(request)) reply.header('connection', 'close');
      return reply.code(decision.status).send(errorBody(decision.status, decision.message));
    });
  },
);
