/** `GET /metrics`: Prometheus text exposition (see src/service/metrics.ts for the names). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';

/** The plugin's one option: the control plane, which renders the exposition text. */
export interface MetricsRoutesOptions {
  plane: ControlPlane;
}

/**
 * Registers `GET /metrics`. The body and its content type come from the service's registry; the
 * schema only documents the media type.
 */
export const metricsRoutes: FastifyPluginAsyncZod<MetricsRoutesOptions> = async (
  app,
  { plane },
) => {
  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics',
        description:
          "controller-runtime's controller and workqueue metrics, the reflector's and the pools' own, and process metrics.",
        tags: ['observability'],
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4.',
            content: { 'text/plain': { schema: z.string() } },
          },
        },
      },
    },
    async (_request, reply) => {
      const text = await plane.metrics.render();
      return reply.type(plane.metrics.contentType).send(text);
    },
  );
};
