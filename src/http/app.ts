/**
 * The Fastify app of the control plane, built from the service's public objects. It does not
 * listen: `main.ts` listens, tests call `app.inject()`, the OpenAPI generator only reads routes.
 *
 * Size: the one Fastify app: plugins, error shape, framework errors and server timeouts, which
 * must be set together.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { cellsRoutes } from '../../routes/cells.js';
import { coordinatorRoutes } from '../../routes/coordinator.js';
import { eventsRoutes } from '../../routes/events.js';
import { flagzRoutes } from '../../routes/flagz.js';
import { healthRoutes } from '../../routes/health.js';
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
import { adminGate } from './admin-gate.js';
import { bodyTimeout } from './body-timeout.js';
import { closeOnShutdown } from './close-on-shutdown.js';
import { clientErrorResponse, errorShape, rawErrorResponse, sendError } from './error-shape.js';
import { hostHeader } from './host-header.js';
import { methodNotAllowed } from './method-not-allowed.js';
import { DebugRequestLog } from './request-log.js';
import { requestTarget } from './request-target.js';
import {
  BODY_LIMIT,
  MAX_PARAM_LENGTH,
  SERVER_TIMEOUTS,
  type ServerTimeouts,
} from './server-limits.js';
import { zodSchemaController } from './zod-compilers.js';

/** Requests not logged one by one: liveness/readiness probes and Prometheus scrapes. */
const QUIET_PATHS = /^\/(?:healthz|readyz|metrics)(?:[/?]|$)/;

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
  /**
   * Describe the routes for `app.swagger()` (the OpenAPI generator, ./openapi.ts). Off by
   * default: the service serves no document, and @fastify/swagger with its YAML writer costs its
   * start some 30 ms of main-thread CPU (./openapi-plugin.ts).
   */
  openApi?: boolean;
}

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
    schemaController: zodSchemaController,
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

  // The generator's document only: the service never serves it, so it does not load it.
  if (options.openApi) {
    const { registerOpenApi } = await import('./openapi-plugin.js');
    await registerOpenApi(app);
  }

  // Hooks in the order they must run: the source header first, then the refusals that need no
  // route (shutdown, Host, wrong method), the admin gate, and the body's timeout after all of them.
  await app.register(requestTarget, { plane });
  await app.register(closeOnShutdown, { plane });
  await app.register(hostHeader);
  await app.register(methodNotAllowed);
  await app.register(adminGate, { plane });
  await app.register(bodyTimeout, { clock, bodyMs: timeouts.bodyMs });
  await app.register(errorShape, { plane });

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
