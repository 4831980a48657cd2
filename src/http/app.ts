/**
 * The Fastify app of the control plane, built from the service's public objects. It does not
 * listen: `main.ts` listens, tests call `app.inject()`, the OpenAPI generator only reads routes.
 *
 * Size: the one Fastify app: plugins, error shape, framework errors and server timeouts, which
 * must be set together.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { cellsRoutes } from '../../routes/cells.js';
import { coordinatorRoutes } from '../../routes/coordinator.js';
import { eventsRoutes } from '../../routes/events.js';
import { flagzRoutes } from '../../routes/flagz.js';
import { healthRoutes } from '../../routes/health.js';
import { HttpError } from '../../routes/http-error.js';
import { leaderRoutes } from '../../routes/leader.js';
import { metricsRoutes } from '../../routes/metrics.js';
import { queueRoutes } from '../../routes/queue.js';
import { reflectorRoutes } from '../../routes/reflector.js';
import { requeueRoutes } from '../../routes/requeue.js';
import { statusPageRoutes } from '../../routes/status-page.js';
import { storeRoutes } from '../../routes/store.js';
import { type Clock, realClock } from '../runtime/clock.js';
import type { ControlPlane } from '../service/control-plane.js';
import { SERVICE_EVENT_TYPES } from '../service/service-events.js';
import { openApiObjectTransform, openApiRouteTransform } from './openapi-transform.js';
import { DebugRequestLog } from './request-log.js';
import { RouteMethods } from './route-methods.js';

/** Sent on every response, so simulated data is recognisable even in a bare `curl -i`. */
export const SOURCE_HEADER = 'x-pool-controller-source';

/** Requests not logged one by one: liveness/readiness probes and Prometheus scrapes. */
const QUIET_PATHS = /^\/(?:healthz|readyz|metrics)(?:[/?]|$)/;

/** The API's version in the OpenAPI document. */
export const API_VERSION = '1.0.0';

/**
 * What `buildServer` takes besides the control plane: each field is for a caller that is not
 * production (tests, the OpenAPI generator), so the defaults are what the service runs with.
 */
export interface ServerOptions {
  /** Fastify's request logging; off by default (tests, the generator). main passes its pino logger. */
  logger?: FastifyBaseLogger;
  /** Times the body read timeout; tests pass a fake. Default: the real clock. */
  clock?: Clock;
  /** Overrides of `SERVER_TIMEOUTS`, for tests. */
  timeouts?: Partial<ServerTimeouts>;
}

/** How long the server waits for clients, and how many it serves at once. */
export interface ServerTimeouts {
  /** Node `headersTimeout`: the request line and headers must arrive within this. */
  headersMs: number;
  /** Node `requestTimeout`: the whole request, headers and body, must arrive within this. */
  requestMs: number;
  /** A request body must arrive within this once its headers have (the injected clock times it). */
  bodyMs: number;
  /** Node `keepAliveTimeout`: how long an idle keep-alive connection is kept open. */
  keepAliveMs: number;
  /** Node `maxConnections`: connections beyond this are closed as they arrive. */
  maxConnections: number;
}

/**
 * The control plane's requests are a request line, a few headers and at most a tiny JSON body,
 * from probes, Prometheus, routers and people behind `kubectl port-forward`. Node's defaults
 * (60 s for headers, 300 s per request, no cap on connections) let a slow or malicious client hold
 * a connection, a socket and its buffers for minutes each (slowloris).
 */
export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  // Ten seconds is an eternity for a few hundred bytes of headers, even over port-forward.
  headersMs: 10_000,
  // A backstop over headers + body; Node checks it every 30 s (connectionsCheckingInterval).
  requestMs: 30_000,
  // No route needs more than 1 MiB of body, which arrives in well under a second on any link;
  // timed by the injected clock, so tests cut a stalled body off without waiting.
  bodyMs: 10_000,
  // Longer than the 60 s idle timeout of the proxies commonly in front (AWS ALB, nginx's
  // default 75 s upstream keepalive aside), so the proxy closes idle connections first and never
  // reuses one we are closing (a 502); Fastify's default is 72 s, Node's 5 s.
  keepAliveMs: 65_000,
  // Probes, scrapes, a few routers and debugging sessions need tens; the cap bounds sockets and
  // memory when something opens connections without end.
  maxConnections: 1_024,
};

/**
 * The longest path parameter the router accepts. Fastify's default is 100, but a one-pod cell is
 * named after its pod, and a pod name may be a 253-character DNS subdomain.
 */
export const MAX_PARAM_LENGTH = 253;

/** The largest request body: Fastify's default (1 MiB), stated so errors can say it. No route reads a body. */
export const BODY_LIMIT = 1_048_576;

/**
 * Fastify's own start-up lines, `Server listening at http://…` (one per interface for 0.0.0.0):
 * main logs one line of its own, with both listeners, the source and the namespace (issue 41: an
 * operator saw two "listening" lines and more).
 */
const FASTIFY_LISTENING_LINE = /^Server listening at /;

/**
 * Drops Fastify's `Server listening at …` info lines from `log`, the app's root logger (the one
 * `listen` writes them to); request loggers and every other line are untouched.
 */
function dropListeningLines(log: FastifyBaseLogger): void {
  const info = log.info.bind(log) as (...args: unknown[]) => void;
  log.info = ((...args: unknown[]) => {
    if (typeof args[0] === 'string' && FASTIFY_LISTENING_LINE.test(args[0])) return;
    info(...args);
  }) as FastifyBaseLogger['info'];
}

/** The one JSON error shape of the API: `{status, error, message}`. */
function errorBody(status: number, message: string) {
  return { status, error: STATUS_CODES[status] ?? 'Error', message };
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
function sendError(
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
function clientErrorResponse(error: NodeJS.ErrnoException, source: string): string {
  const [status, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'the request did not arrive in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'the request headers are too large']
        : [400, `malformed HTTP request (${error.code ?? error.message})`];
  return rawErrorResponse(status, message, source);
}

/** An error response in the API's shape, as bytes for a socket no reply object owns. */
function rawErrorResponse(status: number, message: string, source: string): string {
  const body = JSON.stringify(errorBody(status, message));
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `${SOURCE_HEADER}: ${source}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** An origin-form (`/path`) or absolute-form (`http://host/path`) request target. */
function isResourceTarget(target: string): boolean {
  if (target.startsWith('/')) return true;
  const lower = target.slice(0, 8).toLowerCase();
  return lower.startsWith('http://') || lower.startsWith('https://');
}

/** Longest part of a request target quoted back in an error. */
const QUOTED_TARGET_LENGTH = 64;

function quoteTarget(target: string): string {
  return target.length <= QUOTED_TARGET_LENGTH
    ? JSON.stringify(target)
    : `${JSON.stringify(target.slice(0, QUOTED_TARGET_LENGTH))}…`;
}

/** Whether a request announces a body (Content-Length > 0, or chunked). */
function expectsBody(request: FastifyRequest): boolean {
  const { 'content-length': length, 'transfer-encoding': encoding } = request.headers;
  return encoding !== undefined || (length !== undefined && length !== '0');
}

/**
 * The admin routes, by what they declare: a route whose OpenAPI `security` names `adminToken` is
 * behind the admin check, so the documentation and the enforcement cannot drift apart.
 */
function isAdminRoute(request: FastifyRequest): boolean {
  const security = (request.routeOptions.schema as { security?: unknown } | undefined)?.security;
  return (
    Array.isArray(security) &&
    security.some((entry) => typeof entry === 'object' && entry !== null && 'adminToken' in entry)
  );
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
 * The control plane's Fastify app, every route registered and the server's limits set, not yet
 * listening. Async because plugin registration is; the same app serves `main.ts`, `app.inject()` in
 * tests and the OpenAPI generator, so what is documented is what is served.
 */
export async function buildServer(
  plane: ControlPlane,
  options: ServerOptions = {},
): Promise<FastifyInstance> {
  const timeouts: ServerTimeouts = { ...SERVER_TIMEOUTS, ...options.timeouts };
  const clock = options.clock ?? realClock;
  /** The response each connection is writing now, for the client-error handler. */
  const responding = new WeakMap<Socket, ServerResponse>();
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    // Node answers an HTTP/1.1 request without Host with a bare, empty 400 before any handler
    // runs; accepted here, the onRequest hook answers it in the API's shape with the source header.
    http: { requireHostHeader: false, headersTimeout: timeouts.headersMs },
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    // The peer address decides loopback-only POSTs; a forwarded-for header must not.
    trustProxy: false,
    return503OnClosing: false,
    bodyLimit: BODY_LIMIT,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Probes and scrapes arrive every few seconds; logging each would drown the cell transitions.
    logController: new DebugRequestLog({
      disableRequestLogging: (request) => QUIET_PATHS.test(request.url),
    }),
    // The router's own refusals (a bad percent-encoding, an over-long parameter) bypass the
    // error handler; without this they answer in Fastify's shape, not the API's.
    frameworkErrors: (error, request, reply) => {
      sendError(request, reply, error, plane.sourceKind);
    },
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Socket) => {
      // A reset connection has no one left to answer.
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const answer = (): void => {
        if (socket.writable) socket.write(clientErrorResponse(error, plane.sourceKind));
        socket.destroy(error);
      };
      // A pipelined request behind one still being answered: the 400 goes after that answer,
      // which writing it now would cut into (and destroying the socket would lose).
      const inFlight = responding.get(socket);
      if (inFlight === undefined) return answer();
      inFlight.once('finish', answer);
      inFlight.once('close', () => socket.destroy(error));
    },
  }).withTypeProvider<ZodTypeProvider>();
  if (options.logger) dropListeningLines(app.log);
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    responding.set(socket, response);
    response.once('close', () => {
      if (responding.get(socket) === response) responding.delete(socket);
    });
  });
  // CONNECT (authority-form) is for proxies; Node hands its socket to whoever listens, and with
  // no one listening drops it without a word.
  app.server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    socket.end(
      rawErrorResponse(
        400,
        'the request target must be a path such as /healthz; this server is no proxy (CONNECT)',
        plane.sourceKind,
      ),
    );
  });
  app.server.maxConnections = timeouts.maxConnections;
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'pool-controller control plane',
        description:
          "Pools and cells of processes as reconciled from pods, the controller's store, queue and source, forced reconciles, health and metrics. Every JSON status response carries `source` (`kubernetes` or `simulated`); every response carries the `X-Pool-Controller-Source` header. Errors are `{status, error, message}`.",
        version: API_VERSION,
      },
      components: {
        securitySchemes: {
          adminToken: {
            type: 'http',
            scheme: 'bearer',
            description:
              'The token in --admin-token-file. Without that flag, POSTs are accepted from loopback clients only (403 otherwise).',
          },
        },
      },
      tags: [
        { name: 'pools', description: 'Pools: cells sharing a pool label value in one namespace.' },
        { name: 'cells', description: 'Cells as reconciled.' },
        { name: 'reconcile', description: 'Forced reconciles (admin).' },
        { name: 'debug', description: "The controller's internals, for port-forward debugging." },
        { name: 'health', description: 'controller-runtime style health checks.' },
        { name: 'observability', description: 'Prometheus.' },
      ],
    },
    transform: openApiRouteTransform,
    transformObject: openApiObjectTransform,
  });

  // Fastify's own 503 for requests that arrive while the server closes (pipelined, or on a busy
  // keep-alive connection) is written raw in its shape; this one is the API's.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Every route, for 405s: which methods exist for a path the router found no route for.
  const routeMethods = new RouteMethods();
  app.addHook('onRoute', (route) => routeMethods.add(route.method, route.url));

  app.addHook('onRequest', async (request, reply) => {
    reply.header(SOURCE_HEADER, plane.sourceKind);
    // `GET *` (asterisk-form) or `CONNECT host:443` (authority-form) name no resource here; the
    // router would serve them as `/`. Absolute-form (`http://host/path`) is a path to it.
    if (!isResourceTarget(request.raw.url ?? '')) {
      return reply
        .code(400)
        .send(
          errorBody(
            400,
            `the request target must be a path such as /healthz, got ${quoteTarget(request.raw.url ?? '')}`,
          ),
        );
    }
    // From SIGTERM on, every response closes its connection: a kept-alive idle socket would hold
    // the server's close open until the shutdown timeout.
    if (plane.shuttingDown) reply.header('connection', 'close');
    if (closing) {
      return reply
        .code(503)
        .header('connection', 'close')
        .send(errorBody(503, 'the control plane is shutting down; retry against another replica'));
    }
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
    if (request.headers.host === undefined && request.raw.httpVersionMinor >= 1) {
      return reply
        .code(400)
        .header('connection', 'close')
        .send(errorBody(400, 'an HTTP/1.1 request needs a Host header'));
    }
    // Decided here, before the body is read or parsed: a wrong method is 405 whatever it sends
    // (a QUERY without a Content-Type would otherwise be refused for that first).
    if (request.is404) return notFound(request, reply);
    // Auth before validation (and before the body): a caller who may not POST learns only that,
    // not which of its parameters were wrong, nor whether the cell exists.
    if (isAdminRoute(request)) {
      const decision = plane.authorizeAdmin(
        request.headers.authorization,
        request.socket.remoteAddress,
        {
          host: request.headers.host,
          origin: request.headers.origin,
          contentType: request.headers['content-type'],
        },
      );
      if (!decision.allowed) {
        if (decision.status === 401) {
          reply.header('www-authenticate', 'Bearer realm="pool-controller"');
        }
        // The body, if one is coming, is never read: close instead of draining it.
        if (expectsBody(request)) reply.header('connection', 'close');
        return reply.code(decision.status).send(errorBody(decision.status, decision.message));
      }
    }
  });

  // Also for a request that began before shutdown (its headers, or all of it, arrived earlier)
  // and is answered after: kept alive, its connection would hold the server's close until the
  // keep-alive timeout, and the process would exit 1 at --shutdown-timeout instead of 0.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (plane.shuttingDown) reply.header('connection', 'close');
    return payload;
  });

  // A body that stalls is cut off after `bodyMs` with a 408 (and the connection closed), timed by
  // the injected clock; Node's `requestTimeout` stays as the backstop. Runs after onRequest, so
  // an unauthorised POST was already refused without reading a byte of its body.
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!expectsBody(request)) return payload;
    const body = new PassThrough();
    const done = new AbortController();
    const finish = (): void => done.abort();
    payload.once('end', finish);
    payload.once('error', finish);
    reply.raw.once('close', finish);
    payload.pipe(body);
    clock.sleep(timeouts.bodyMs, done.signal).then(
      () => {
        payload.unpipe(body);
        reply.header('connection', 'close');
        body.destroy(
          Object.assign(new Error(`the request body did not arrive within ${timeouts.bodyMs} ms`), {
            statusCode: 408,
          }),
        );
      },
      () => {},
    );
    return body as Readable;
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error) || error.validation) {
      return reply.code(400).send(errorBody(400, validationMessage(error)));
    }
    if (error instanceof HttpError) {
      return reply.code(error.statusCode).send(errorBody(error.statusCode, error.message));
    }
    return sendError(request, reply, error, plane.sourceKind);
  });

  /** 405 with `Allow` when the path has routes for other methods, else 404. */
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
  app.setNotFoundHandler(notFound);

  await app.register(healthRoutes, { plane });
  await app.register(metricsRoutes, { plane });
  await app.register(cellsRoutes, { plane });
  await app.register(requeueRoutes, { plane });
  await app.register(storeRoutes, { plane });
  await app.register(queueRoutes, { plane });
  await app.register(reflectorRoutes, { plane });
  await app.register(leaderRoutes, { plane });
  await app.register(coordinatorRoutes, { plane });
  await app.register(eventsRoutes, { plane, eventTypes: SERVICE_EVENT_TYPES });
  await app.register(flagzRoutes, { plane });
  await app.register(statusPageRoutes, { plane });
  return app;
}
