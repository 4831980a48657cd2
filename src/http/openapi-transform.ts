/**
 * How route schemas become the OpenAPI document: zod → JSON Schema through the zod type
 * provider, with our named components, every description the schemas carry, and without the
 * noise zod adds.
 *
 * The provider reads metadata from one registry only, ours (`apiSchemas`), while `.describe()`
 * writes to zod's global one; so before a route is converted, the descriptions of every schema
 * it reaches are copied into ours. Without that, no field or parameter description would reach
 * the document.
 */
import type { SwaggerTransformObject } from '@fastify/swagger';
import {
  createJsonSchemaTransform,
  createJsonSchemaTransformObject,
} from 'fastify-type-provider-zod';
import { z } from 'zod';
import { apiSchemas } from '../../routes/schemas.js';

/**
 * Copies the global description of `value` and of every schema inside it into `apiSchemas`,
 * keeping what is registered there (ids, patterns). Walks zod's definitions generically (object
 * shapes, elements, options, inner types, pipes), so a new kind of wrapper needs nothing here.
 */
function registerDescriptions(value: unknown, seen = new Set<unknown>()): void {
  if (value === null || typeof value !== 'object' || seen.has(value)) return;
  seen.add(value);
  if (Array.isArray(value)) {
    for (const item of value) registerDescriptions(item, seen);
    return;
  }
  if (!(value instanceof z.core.$ZodType)) {
    // A plain object holding schemas: an object's shape, a response map, a route's schema parts.
    for (const child of Object.values(value)) registerDescriptions(child, seen);
    return;
  }
  const description = z.globalRegistry.get(value)?.description;
  if (description !== undefined) {
    const own = apiSchemas.has(value) ? apiSchemas.get(value) : undefined;
    if (own?.description !== description) apiSchemas.add(value, { ...own, description });
  }
  for (const child of Object.values(value._zod.def)) registerDescriptions(child, seen);
}

/** zod's bounds for `.int()`: true of every JS integer, noise in a contract. */
const SAFE_INTEGER_BOUNDS = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

function stripSafeIntegerBounds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripSafeIntegerBounds);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if ((key === 'minimum' || key === 'maximum') && SAFE_INTEGER_BOUNDS.has(child as number))
      continue;
    out[key] = stripSafeIntegerBounds(child);
  }
  return out;
}

/**
 * The zod provider emits an `…Input` twin of every named schema for request bodies; ours take
 * no bodies, so the twins nothing reaches from the paths are dropped.
 */
function dropUnreachableInputSchemas(doc: Record<string, unknown>): Record<string, unknown> {
  const components = doc.components as { schemas?: Record<string, unknown> } | undefined;
  const schemas = components?.schemas;
  if (!schemas) return doc;
  const refsIn = (value: unknown): string[] =>
    [...JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
  const reachable = new Set<string>();
  const pending = refsIn({ ...doc, components: { ...components, schemas: {} } });
  for (const id of Object.keys(schemas)) if (!id.endsWith('Input')) pending.push(id);
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (reachable.has(id)) continue;
    reachable.add(id);
    pending.push(...refsIn(schemas[id]));
  }
  const kept = Object.fromEntries(Object.entries(schemas).filter(([id]) => reachable.has(id)));
  return { ...doc, components: { ...components, schemas: kept } };
}

const baseRouteTransform = createJsonSchemaTransform({ schemaRegistry: apiSchemas });

/** Route transform for @fastify/swagger: zod → JSON Schema with our named components. */
export const openApiRouteTransform: ReturnType<typeof createJsonSchemaTransform> = (route) => {
  registerDescriptions(route.schema);
  return baseRouteTransform(route);
};

/**
 * What an error answer means, by status, for every operation that declares it: the body is the
 * one `Error` shape, so the status is all that differs, and generators show this text on the
 * response (without it, @fastify/swagger writes "Default Response").
 */
export const ERROR_RESPONSE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  400: 'Bad request: a parameter (or a body) is invalid; `message` names it.',
  401: 'No bearer token, or not the one in `--admin-token-file` (with `WWW-Authenticate`).',
  403: 'Refused: without `--admin-token-file` only loopback clients may POST, and not from a browser page.',
  404: 'Not found: no such pool, cell or check; `message` names it.',
  409: 'Ambiguous: the id is in several namespaces; name one with `?namespace=`.',
  500: 'Internal error; the details are in the service log, never in the answer.',
  503: 'Too many of these responses at once, or the service is shutting down; retry after `Retry-After` seconds.',
};

/** The text @fastify/swagger puts on a response with no description of its own. */
const SWAGGER_PLACEHOLDER = 'Default Response';

/**
 * Every response gets a real description: errors by status (`ERROR_RESPONSE_DESCRIPTIONS`); any
 * other response without one is a route that forgot it, and the document is refused naming it.
 */
function describeResponses(doc: Record<string, unknown>): Record<string, unknown> {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, { responses?: unknown }>>;
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const responses = (operation.responses ?? {}) as Record<string, { description?: string }>;
      for (const [status, response] of Object.entries(responses)) {
        if (response.description !== undefined && response.description !== SWAGGER_PLACEHOLDER)
          continue;
        const text = ERROR_RESPONSE_DESCRIPTIONS[status];
        if (text === undefined) {
          throw new Error(
            `${method.toUpperCase()} ${path}: response ${status} has no description (describe its schema)`,
          );
        }
        response.description = text;
      }
    }
  }
  return doc;
}

/**
 * `{nullable: true, allOf: [{$ref}]}` — what the generator writes for a nullable named schema —
 * and `{nullable: true, anyOf: [...]}` (a nullable union) are refused by Ajv's strict mode
 * ("nullable" cannot be used without "type"), and a `null` would fail the `allOf` anyway.
 * Written as `anyOf` the options or an explicit null (`{type: object, nullable: true, enum:
 * [null]}`, the OpenAPI 3.0 way to say "null").
 */
function nullableReferences(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(nullableReferences);
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(record)) out[key] = nullableReferences(child);
  const { nullable, allOf, anyOf, type, ...rest } = out;
  if (nullable !== true || type !== undefined) return out;
  const explicitNull = { type: 'object', nullable: true, enum: [null] };
  if (Array.isArray(allOf) && allOf.length === 1 && anyOf === undefined) {
    return { ...rest, anyOf: [allOf[0], explicitNull] };
  }
  // A nullable union (`z.union([...]).nullable()`): the null joins the options.
  if (Array.isArray(anyOf) && allOf === undefined)
    return { ...rest, anyOf: [...anyOf, explicitNull] };
  return out;
}

const baseObjectTransform = createJsonSchemaTransformObject({ schemaRegistry: apiSchemas });

/** Document transform: named components, minus noise, every response described. */
export const openApiObjectTransform: SwaggerTransformObject = (document) =>
  describeResponses(
    nullableReferences(
      stripSafeIntegerBounds(
        dropUnreachableInputSchemas(baseObjectTransform(document) as Record<string, unknown>),
      ),
    ) as Record<string, unknown>,
  ) as ReturnType<SwaggerTransformObject>;
