/**
 * Errors a handler throws to answer with a status and a message; the server's error handler
 * turns them (and validation failures) into the one JSON error shape, `{status, error, message}`.
 */
import type { FastifyReply } from 'fastify';

/**
 * Thrown by handlers (and `resolveCellKey`) to answer with `statusCode` and a message for a
 * person; the error handler in src/http/app.ts sends it in the API's error shape. Only for
 * expected refusals: any other error becomes an answer whose message, for a 5xx, is not the
 * error's.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Sends bytes that already are the JSON body (the cached cell lists). A Buffer skips Fastify's
 * serializer entirely; the route's response schema still documents the shape.
 */
export function sendJsonBytes(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(body);
}
