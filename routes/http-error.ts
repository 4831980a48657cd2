/**
 * Errors a handler throws to answer with a status and a message; the server's error handler
 * turns them (and validation failures) into the one JSON error shape, `{status, error, message}`.
 */
import type { FastifyReply } from 'fastify';

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
