/**
 * `/healthz`, `/readyz` and `/<endpoint>/<check>`, controller-runtime style (src/health.ts).
 * Liveness is "the process serves"; readiness is "the store has synced and the watch is healthy
 * now, and we are not shutting down".
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/control-plane.js';
import { type HealthCheck, type HealthResponse, runChecks, runOneCheck } from '../src/health.js';
import { HttpError } from './http-error.js';
import { errorSchema } from './schemas.js';

export interface HealthRoutesOptions {
  plane: ControlPlane;
}

/** A plain-text response, documented as such. */
function text(description: string) {
  return { description, content: { 'text/plain': { schema: z.string() } } };
}

/** `?exclude=a&exclude=b` arrives as a string or an array; `?verbose` as an empty string. */
const healthQuery = z.object({
  verbose: z
    .string()
    .optional()
    .describe('Present (any value): list every check even when all pass.'),
  exclude: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('A check to skip; repeatable.'),
});

export const healthRoutes: FastifyPluginAsyncZod<HealthRoutesOptions> = async (app, { plane }) => {
  const endpoints: Array<[string, readonly HealthCheck[], string]> = [
    ['healthz', plane.health.healthz, 'Liveness: the process is serving.'],
    [
      'readyz',
      plane.health.readyz,
      'Readiness: the store has synced, the watch is healthy now, and the process is not shutting down.',
    ],
  ];
  for (const [endpoint, checks, description] of endpoints) {
    app.get(
      `/${endpoint}`,
      {
        schema: {
          summary: `${endpoint}: all checks`,
          description: `${description} Checks: ${checks.map((c) => c.name).join(', ')}. 200 \`ok\`, or 500 with one \`[+]name ok\` / \`[-]name failed: reason withheld\` line per check.`,
          tags: ['health'],
          querystring: healthQuery,
          response: {
            200: text('`ok`, or with `?verbose` every check and a final `check passed` line.'),
            500: text(
              'Every check, failures as `[-]name failed: reason withheld`, and a final `check failed` line.',
            ),
          },
        },
      },
      async (request, reply) => {
        const { verbose, exclude } = request.query;
        const excluded = exclude === undefined ? [] : Array.isArray(exclude) ? exclude : [exclude];
        return send(
          reply,
          runChecks(endpoint, checks, { verbose: verbose !== undefined, exclude: excluded }),
        );
      },
    );
    app.get(
      `/${endpoint}/:check`,
      {
        schema: {
          summary: `${endpoint}: one check`,
          description: `One check by name; on failure, the reason. Checks: ${checks.map((c) => c.name).join(', ')}.`,
          tags: ['health'],
          params: z.object({ check: z.string() }),
          response: {
            200: text('`ok`'),
            404: errorSchema,
            500: text('`internal server error: <reason>`'),
          },
        },
      },
      async (request, reply) => {
        const check = checks.find((c) => c.name === request.params.check);
        if (!check) {
          throw new HttpError(
            404,
            `no ${endpoint} check ${JSON.stringify(request.params.check)}; checks: ${checks.map((c) => c.name).join(', ')}`,
          );
        }
        return send(reply, runOneCheck(check));
      },
    );
  }
};

function send(reply: import('fastify').FastifyReply, response: HealthResponse) {
  return reply
    .code(response.status)
    .header('x-content-type-options', 'nosniff')
    .type('text/plain; charset=utf-8')
    .send(response.body);
}
