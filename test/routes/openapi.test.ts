import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderOpenApi } from '../../src/http/openapi.js';

const COMMITTED = new URL('../../openapi.yaml', import.meta.url);

describe('openapi.yaml', () => {
  it('is exactly what the route schemas generate (run `npm run openapi` after changing a route)', async () => {
    const committed = await readFile(COMMITTED, 'utf8');
    expect(committed).toBe(await renderOpenApi());
  });

  it('documents the whole API surface', async () => {
    const doc = await readFile(COMMITTED, 'utf8');
    for (const path of [
      '/healthz',
      '/healthz/{check}',
      '/readyz',
      '/readyz/{check}',
      '/metrics',
      '/api/v1/pools',
      '/api/v1/pools/{pool}',
      '/api/v1/cells',
      '/api/v1/cells/{cell}',
      '/api/v1/cells/{cell}/reconcile',
      '/api/v1/reconcile',
      '/api/v1/store',
      '/api/v1/queue',
      '/api/v1/reflector',
    ]) {
      expect(doc).toContain(`\n  ${path}:\n`);
    }
  });

  it('describes each Server-Sent Event of /api/v1/events (id, event, data), not the stream as one string', async () => {
    const doc = parse(await readFile(COMMITTED, 'utf8'));
    const schema =
      doc.paths['/api/v1/events'].get.responses['200'].content['text/event-stream'].schema;
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties).sort()).toEqual(['data', 'event', 'id']);
    expect([...schema.required].sort()).toEqual(['data', 'event', 'id']);
  });

  it("carries the route schemas' descriptions: fields, parameters and named components", async () => {
    const doc = parse(await readFile(COMMITTED, 'utf8'));
    expect(doc.components.schemas.Cell.properties.generation.description).toBe(
      '16 hex digits; changes on a replaced pod, a container restart or a termination.',
    );
    const events = doc.paths['/api/v1/events'].get;
    const header = events.parameters.find((p: { name: string }) => p.name === 'last-event-id');
    expect(header).toMatchObject({
      in: 'header',
      description:
        'The `id` of the last event received: the stream resumes after it. An id this process did not send is answered with `events.missed` (`missed: null`).',
    });
  });

  it('describes every operation, parameter and field (add a `.describe()` to what this names)', async () => {
    expect(undescribed(parse(await readFile(COMMITTED, 'utf8')))).toEqual([]);
  });
});

interface JsonSchema {
  $ref?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        summary?: string;
        description?: string;
        parameters?: Array<{ name: string; description?: string }>;
        responses?: Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
      }
    >
  >;
  components?: { schemas?: Record<string, JsonSchema> };
}

/**
 * Where the document lacks a description: operations without summary or description,
 * parameters, and every property of every schema (a property that is only a `$ref` is described
 * by the component it names, since OpenAPI 3.0 ignores a `$ref`'s siblings).
 */
function undescribed(doc: OpenApiDocument): string[] {
  const missing: string[] = [];
  const walk = (schema: JsonSchema | undefined, where: string): void => {
    if (!schema || schema.$ref) return;
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      if (!property.$ref && !property.description) missing.push(`${where}.${name}`);
      walk(property, `${where}.${name}`);
    }
    walk(schema.items, `${where}[]`);
    if (typeof schema.additionalProperties === 'object') {
      walk(schema.additionalProperties, `${where}{}`);
    }
    for (const branch of [
      ...(schema.anyOf ?? []),
      ...(schema.oneOf ?? []),
      ...(schema.allOf ?? []),
    ]) {
      walk(branch, where);
    }
  };
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!operation.summary) missing.push(`${where}: summary`);
      if (!operation.description) missing.push(`${where}: description`);
      for (const parameter of operation.parameters ?? []) {
        if (!parameter.description) missing.push(`${where}: parameter ${parameter.name}`);
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        for (const content of Object.values(response.content ?? {})) {
          walk(content.schema, `${where} ${status}`);
        }
      }
    }
  }
  for (const [id, schema] of Object.entries(doc.components?.schemas ?? {})) walk(schema, `#/${id}`);
  return missing;
}
