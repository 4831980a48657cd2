/**
 * Fastify's request log at `debug` instead of `info`. Every request costs two lines ("incoming
 * request", "request completed"), and an open status page alone asks for its data every few
 * seconds while its event stream is down: at `info` that would bury the cell transitions and the
 * leadership changes an operator reads the log for. `--log-level debug` brings them back.
 * Errors stay where Fastify puts them: a failed request is still logged at `error`.
 */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * The `logController` `buildServer` passes to Fastify: it keeps Fastify's own request logging and
 * its disable rule, and only moves the two per-request lines to `debug`.
 */
export class DebugRequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    if (error) {
      reply.log.error(
        { res: reply, err: error, responseTime: reply.elapsedTime },
        'request errored',
      );
    } else {
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
}
