// Node `--import` hook (given through NODE_OPTIONS): any import of what only the OpenAPI generator
// needs fails, so a test can prove the service starts and serves without loading it. Fastify's own
// Ajv and fast-json-stringify compilers (src/http/zod-compilers.ts replaces them), @fastify/swagger
// and the YAML writer (src/http/openapi-plugin.ts) cost the service's start ~55 ms of main-thread
// CPU and are never used by a route. Exact specifiers only: Fastify's error serializer needs
// `fast-json-stringify/lib/serializer`, and that stays allowed.
import { registerHooks } from 'node:module';

const DENIED = new Set([
  'ajv',
  '@fastify/ajv-compiler',
  '@fastify/fast-json-stringify-compiler',
  '@fastify/swagger',
  'yaml',
]);
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (DENIED.has(specifier)) throw new Error(`import of ${specifier} denied`);
    return nextResolve(specifier, context);
  },
});
