/**
 * `GET /metrics`: Prometheus text exposition (see src/service/metrics.ts for the names), rendered
 * at most once per `METRICS_CACHE_MS` and served from the cache in between.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { RenderedCache } from './rendered-cache.js';
import { ResponseSlots, sendRendered } from './rendered-response.js';
import { errorSchema } from './schemas.js';

/**
 * How long one render of the exposition is served: at 5,000 pools a render is megabytes and a
 * good part of a second of the event loop, and any number of scrapers then cost one render per
 * this interval. 5 s is a third of the shortest scrape interval in common use (15 s), so a scrape
 * never reads values older than a third of its own period.
 */
export const METRICS_CACHE_MS = 5_000;

/** The plugin's options: the control plane, which renders the exposition text. */
interface MetricsRoutesOptions {
  plane: ControlPlane;
  /** How long a render is served; default `METRICS_CACHE_MS`. */
  cacheMs?: number;
}

/**
 * Registers `GET /metrics`. The body and its content type come from the service's registry; the
 * schema only documents the media type.
 */
export const metricsRoutes: FastifyPluginAsyncZod<MetricsRoutesOptions> = async (
  app,
  { plane, cacheMs = METRICS_CACHE_MS },
) => {
  const endpoint = {
    path: '/metrics',
    cache: new RenderedCache({
      render: () => plane.metrics.render(),
      now: () => plane.now(),
      minIntervalMs: cacheMs,
      maxAgeMs: cacheMs,
    }),
    slots: new ResponseSlots(),
  };
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        description: `controller-runtime's controller and workqueue metrics, the reflector's and the pools' own, and process metrics. Rendered at most once every ${METRICS_CACHE_MS / 1000} s and served from that render in between, gzipped (once per render) when \`Accept-Encoding\` allows, with an \`ETag\` (\`If-None-Match\` → 304); at most 16 responses are sent at once (503 with \`Retry-After\` beyond).`,
        tags: ['observability'],
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4.',
            content: { 'text/plain': { schema: z.string() } },
          },
          304: {
            description: "Not modified: the request's `If-None-Match` names the current render.",
            content: { 'text/plain': { schema: z.string() } },
          },
          503: errorSchema,
        },
      },
    },
    async (request, reply) =>
      sendRendered(request, reply.type(plane.metrics.contentType), endpoint),
  );
};
