/**
 * RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host. Node would answer
 * it with a bare, empty 400 before any handler runs; the app accepts such requests
 * (`requireHostHeader: false`) so that this hook answers in the API's shape with the source header.
 */
import { errorBody } from './error-shape.js';
import { rootPlugin } from './root-plugin.js';

/** Answers a Host-less HTTP/1.1 request; HTTP/1.0 needs no Host and is served. */
export const hostHeader = rootPlugin('host-header', async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.host === undefined && request.raw.httpVersionMinor >= 1) {
      return reply
        .code(400)
        .header('connection', 'close')
        .send(errorBody(400, 'an HTTP/1.1 request needs a Host header'));
    }
  });
});
