/**
 * `/healthz`, `/readyz` and `/<endpoint>/<check>`, controller-runtime style: the control plane's
 * health endpoints produce the reports (src/service/health.ts); this plugin only serves them.
 * Liveness is "the process serves, and a leader's Lease renewal is not wedged" (`ping`,
 * `leader-election`); readiness is "the store has synced and the watch is healthy now, and we are
 * not shutting down".
 */
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { HttpError } from './http-error.js';
import { errorSchema } from './schemas.js';

/** The plugin's one option: the control plane, whose health endpoints produce every report. */
interface HealthRoutesOptions {
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

/**
 * Registers `/healthz`, `/readyz` and one `/<endpoint>/<check>` route per check. Used by both
 * listeners (the API's and the probe listener), so a probe gets the same answer on either.
 */
export const healthRoutes: FastifyPluginAsyncZod<HealthRoutesOptions> = async (app, { plane }) => {
  const endpoints = [
    [plane.health.healthz, 'Liveness: the process is serving.'],
    [
      plane.health.readyz,
      'Readiness: the store has synced, the watch is healthy now, and the process is not shutting down.',
    ],
  ] as const;
  for (const [health, description] of endpoints) {
    const endpoint = health.name;
    const checks = health.checkNames.join(', ');
    app.get(
      `/${endpoint}`,
      {
        schema: {
          operationId: endpoint,
          summary: `${endpoint}: all checks`,
          description: `${description} Checks: ${checks}. 200 \`ok\`, or 500 with one \`[+]name ok\` / \`[-]name failed: reason withheld\` line per check.`,
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
        return send(reply, health.report({ verbose: verbose !== undefined, exclude: excluded }));
      },
    );
    app.get(
      `/${endpoint}/:check`,
      {
        schema: {
          operationId: `${endpoint}Check`,
          summary: `${endpoint}: one check`,
          description: `One check by name; on failure 500 with the reason withheld, as in the full report. Checks: ${checks}.`,
          tags: ['health'],
          params: z.object({ check: z.string().describe(`The check's name: ${checks}.`) }),
          response: {
            200: text('`ok`'),
            404: errorSchema,
            500: text(
              '`internal server error: reason withheld`: the reason is logged, never served.',
            ),
          },
        },
      },
      async (request, reply) => {
        const response = health.reportOne(request.params.check);
        if (!response) {
          throw new HttpError(
            404,
            `no ${endpoint} check ${JSON.stringify(request.params.check)}; checks: ${checks}`,
          );
        }
        return send(reply, response);
      },
    );
  }
};

function send(reply: FastifyReply, response: { status: number; body: string }) {
  return reply
    .code(response.status)
    .header('x-content-type-options', 'nosniff')
    .type('text/plain; charset=utf-8')
    .send(response.body);
}
