/**
 * Connections end with the service: from SIGTERM on (`plane.shuttingDown`) every response closes
 * its connection, and once the server closes, a request that still arrives (pipelined, or on a
 * busy keep-alive connection) gets the API's 503 instead of Fastify's raw one.
 *
 * A kept-alive idle socket would hold the server's close open until the keep-alive timeout, and
 * the process would exit 1 at --shutdown-timeout instead of 0.
 */
import type { ControlPlane } from '../service/control-plane.js';
import { errorBody } from './error-shape.js';
import { rootPlugin } from './root-plugin.js';

/** Registered before the checks that may refuse a request, so their answers close too. */
export const closeOnShutdown = rootPlugin<{ plane: Pick<ControlPlane, 'shuttingDown'> }>(
  'close-on-shutdown',
  async (app, { plane }) => {
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    app.addHook('onRequest', async (_request, reply) => {
      if (plane.shuttingDown) reply.header('connection', 'close');
      if (closing) {
        return reply
          .code(503)
          .header('connection', 'close')
          .send(
            errorBody(503, 'the control plane is shutting down; retry against another replica'),
          );
      }
    });
    // Also for a request that began before shutdown (its headers, or all of it, arrived earlier)
    // and is answered after.
    app.addHook('onSend', async (_request, reply, payload) => {
      if (plane.shuttingDown) reply.header('connection', 'close');
      return payload;
    });
  },
);
