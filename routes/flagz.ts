/**
 * `GET /flagz`: every flag as this process runs with it and where its value came from, after
 * Kubernetes components' `/flagz` (KEP-4828), as JSON. Secrets are never shown: a flag that names
 * where one is (a token file, a kubeconfig) shows only that it was set.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { commonErrors, sourceKindSchema } from './schemas.js';

/** The body of `GET /flagz`. */
const flagzSchema = z
  .object({
    source: sourceKindSchema,
    flags: z
      .array(
        z.object({
          flag: z.string().describe('The flag without dashes, e.g. `listen`.'),
          env: z.string().describe('Its environment variable, e.g. `POOL_CONTROLLER_LISTEN`.'),
          value: z
            .union([z.string(), z.array(z.string())])
            .nullable()
            .describe(
              'The value as given (a repeated flag: every value), or the default as `--help` shows it; `null` when there is none; `(withheld)` for a set flag that names a secret.',
            ),
          from: z
            .enum(['flag', 'environment', 'default'])
            .describe('Where the value came from: the command line, the environment, the default.'),
        }),
      )
      .describe('Every flag, in the order of the flag table (src/cli/flag-table.ts).'),
  })
  .describe("This process's effective flags and where each value came from.");

/** The plugin's one option: the control plane, which holds the parsed flags. */
interface FlagzRoutesOptions {
  plane: ControlPlane;
}

/** Registers `GET /flagz`. */
export const flagzRoutes: FastifyPluginAsyncZod<FlagzRoutesOptions> = async (app, { plane }) => {
  app.get(
    '/flagz',
    {
      schema: {
        operationId: 'getFlagz',
        summary: 'Effective flags',
        description:
          "Every flag as this replica runs with it, and where its value came from (`flag`, `environment` or `default`), after Kubernetes components' `/flagz` (KEP-4828), as JSON. A flag that names where a secret is (`--admin-token-file`, `--sglang-router-api-key-file`, `--kubeconfig`) shows `(withheld)` when set; no file's contents are ever shown.",
        tags: ['debug'],
        response: { 200: flagzSchema, ...commonErrors },
      },
    },
    async () => ({ source: plane.sourceKind, flags: [...plane.flags()] }),
  );
};
