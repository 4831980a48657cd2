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
export function registerDescriptions(value: unknown, seen = new Set<unknown>()): void {
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

const baseObjectTransform = createJsonSchemaTransformObject({ schemaRegistry: apiSchemas });

/** Document transform: named components, minus noise. */
export const openApiObjectTransform: SwaggerTransformObject = (document) =>
  stripSafeIntegerBounds(
    dropUnreachableInputSchemas(baseObjectTransform(document) as Record<string, unknown>),
  ) as ReturnType<SwaggerTransformObject>;
