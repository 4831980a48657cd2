/**
 * A request body that stalls is cut off after `bodyMs` with a 408 (and the connection closed),
 * timed by the injected clock; Node's `requestTimeout` stays as the backstop. A `preParsing`
 * hook, so it runs after every `onRequest` check: an unauthorised POST was already refused without
 * reading a byte of its body.
 */
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../runtime/clock.js';
import { rootPlugin } from './root-plugin.js';

/** Whether a request announces a body (Content-Length > 0, or chunked). */
export function expectsBody(request: FastifyRequest): boolean {
  const { 'content-length': length, 'transfer-encoding': encoding } = request.headers;
  return encoding !== undefined || (length !== undefined && length !== '0');
}

/** Times each announced body from its headers on `clock`; a body-less request costs no timer. */
export const bodyTimeout = rootPlugin<{ clock: Clock; bodyMs: number }>(
  'body-timeout',
  async (app, { clock, bodyMs }) => {
    app.addHook('preParsing', async (request, reply, payload) => {
      if (!expectsBody(request)) return payload;
      const body = new PassThrough();
      const done = new AbortController();
      const finish = (): void => done.abort();
      payload.once('end', finish);
      payload.once('error', finish);
      reply.raw.once('close', finish);
      payload.pipe(body);
      clock.sleep(bodyMs, done.signal).then(
        () => {
          payload.unpipe(body);
          reply.header('connection', 'close');
          body.destroy(
            Object.assign(new Error(`the request body did not arrive within ${bodyMs} ms`), {
              statusCode: 408,
            }),
          );
        },
        () => {},
      );
      return body as Readable;
    });
  },
);
