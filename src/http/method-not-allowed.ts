/**
 * `405 Method Not Allowed` with an `Allow` header when the path has routes for other methods,
 * else the API's 404 (RFC 9110 §15.5.6): every route is recorded as it is registered
 * (./route-methods.ts), so the plugin must be registered before the routes.
 *
 * Decided in `onRequest`, before the body is read or parsed: a wrong method is 405 whatever it
 * sends (a QUERY without a Content-Type would otherwise be refused for that first), and before the
 * admin gate, since a path that has no such route has nothing to guard.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './error-shape.js';
import { rootPlugin } from './root-plugin.js';
import { RouteMethods } from './route-methods.js';

/** Records every route, and answers a request no route matches with a 405 or a 404. */
export const methodNotAllowed = rootPlugin('method-not-allowed', async (app) => {
  const routeMethods = new RouteMethods();
  app.addHook('onRoute', (route) => routeMethods.add(route.method, route.url));

  const notFound = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = routeMethods.allowed(path);
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send(
          errorBody(
            405,
            `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
          ),
        );
    }
    return reply.code(404).send(errorBody(404, `no route ${request.method} ${path}`));
  };
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return notFound(request, reply);
  });
  app.setNotFoundHandler(notFound);
});
