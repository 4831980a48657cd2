/**
 * The API's one error shape, `{status, error, message}` with the source header, for every way a
 * request can fail: a route's `HttpError`, a validation failure, Fastify's own refusals (reworded
 * for the person who sent the request), an unexpected throw (a 5xx whose details stay in the log),
 * and requests that never became one (written raw to the socket).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { HttpError } from '../../routes/http-error.js';
import { nodeHttp } from '../kubernetes/client/node-http.js';
import type { ControlPlane } from '../service/control-plane.js';
import { rootPlugin } from './root-plugin.js';
import { BODY_LIMIT, MAX_PARAM_LENGTH } from './server-limits.js';

/** Sent on every response, so simulated data is recognisable even in a bare `curl -i`. */
export const SOURCE_HEADER = 'x-pool-controller-source';

/** The one JSON error shape of the API: `{status, error, message}`. */
export function errorBody(status: number, message: string) {
  return { status, error: nodeHttp.STATUS_CODES[status] ?? 'Error', message };
}

/**
 * Fastify's own request errors, reworded for the person who sent the request: its texts name its
 * internals (`FST_ERR_…`, "url component") or say only the status. `undefined`: keep its message.
 */
function frameworkMessage(error: FastifyError, request: FastifyRequest): string | undefined {
  const path = request.url.split('?')[0];
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return `malformed URL path ${JSON.stringify(path)}: every '%' must start a percent-encoded UTF-8 character (e.g. %2F)`;
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return `a path parameter in ${JSON.stringify(path)} is longer than ${MAX_PARAM_LENGTH} characters`;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `unsupported Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')}; send application/json, or no body at all`;
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'the request body is not valid JSON, yet its Content-Type is application/json';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'the request body is empty, yet its Content-Type is application/json; without a body, send no Content-Type';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `the request body is larger than ${BODY_LIMIT} bytes`;
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'the request body is not as long as its Content-Length says';
    default:
      return undefined;
  }
}

/**
 * Any other error, in the API's shape. Sets the source header itself: a request the router
 * refused has been through no hook. A 5xx is logged and its details stay in the log.
 */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: FastifyError,
  source: string,
): FastifyReply {
  const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  const message =
    status >= 500
      ? 'internal error; see the service log'
      : (frameworkMessage(error, request) ?? error.message);
  return reply.code(status).header(SOURCE_HEADER, source).send(errorBody(status, message));
}

/**
 * Requests that never become a request (unparsable HTTP, headers too large, too slow): Node hands
 * the socket over before any route, hook or reply exists, so the answer is written by hand, in the
 * API's error shape like every other. Statuses as Node and Fastify choose them.
 */
export function clientErrorResponse(error: NodeJS.ErrnoException, source: string): string {
  const [status, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'the request did not arrive in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'the request headers are too large']
        : [400, `malformed HTTP request (${error.code ?? error.message})`];
  return rawErrorResponse(status, message, source);
}

/** An error response in the API's shape, as bytes for a socket no reply object owns. */
export function rawErrorResponse(status: number, message: string, source: string): string {
  const body = JSON.stringify(errorBody(status, message));
  return [
    `HTTP/1.1 ${status} ${nodeHttp.STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `${SOURCE_HEADER}: ${source}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Validation failure → one line naming the parameter: `query parameter alive: alive must be true or false, got "maybe"`. */
function validationMessage(error: FastifyError): string {
  const context =
    error.validationContext === 'querystring'
      ? 'query parameter'
      : error.validationContext === 'params'
        ? 'path parameter'
        : error.validationContext === 'headers'
          ? 'header'
          : (error.validationContext ?? 'request');
  const first = error.validation?.[0];
  if (!first) return error.message;
  const where = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
  return where ? `${context} ${where}: ${first.message}` : `${context}: ${first.message}`;
}

/**
 * The app's error handler: validation failures name the parameter, a route's `HttpError` keeps its
 * status and message, anything else goes through `sendError`.
 */
export const errorShape = rootPlugin<{ plane: Pick<ControlPlane, 'sourceKind'> }>(
  'error-shape',
  async (app, { plane }) => {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      if (hasZodFastifySchemaValidationErrors(error) || error.validation) {
        return reply.code(400).send(errorBody(400, validationMessage(error)));
      }
      if (error instanceof HttpError) {
        return reply.code(error.statusCode).send(errorBody(error.statusCode, error.message));
      }
      return sendError(request, reply, error, plane.sourceKind);
    });
  },
);
