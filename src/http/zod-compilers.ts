/**
 * The schema compilers of both Fastify apps: zod's, through the type provider, for validation and
 * for serialization.
 *
 * Given as Fastify's `schemaController.compilersFactory` option rather than set after the app is
 * built (`setValidatorCompiler`): Fastify's constructor requires its default compilers, Ajv and
 * fast-json-stringify, unless this option names others, and those two cost the service's start
 * some 25 ms of main-thread CPU (about 100 modules) that no route ever uses. Fastify's own
 * `setValidatorCompiler` installs exactly such a factory, so the apps behave as before.
 */
import type { FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>;
type CompilersFactory = NonNullable<SchemaController['compilersFactory']>;

/**
 * Fastify's `schemaController` option with zod's compilers for every route. The casts: Fastify
 * types the factories for Ajv's schemas only; at run time a factory returns the route compiler,
 * as the typed `setValidatorCompiler(validatorCompiler)` installs it.
 */
export const zodSchemaController: SchemaController = {
  compilersFactory: {
    buildValidator: (() => validatorCompiler) as unknown as NonNullable<
      CompilersFactory['buildValidator']
    >,
    buildSerializer: (() => serializerCompiler) as unknown as NonNullable<
      CompilersFactory['buildSerializer']
    >,
  },
};
