/**
 * openapi.yaml as client generators and validators read it: the parsed document, its operations,
 * and Ajv in strict mode with the document's schemas loaded, so a test can validate an answer
 * against the schema its status documents (test/routes/openapi-generators.test.ts with
 * `app.inject`, test/routes/openapi-client.test.ts with a generated client over loopback).
 */
import { readFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';

// ajv-formats is CommonJS with its function as `default`.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** One documented response: what a status means and, per media type, the body's schema. */
export interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: unknown }>;
}

/** One operation of the document, as far as the tests read it. */
export interface OpenApiOperation {
  operationId?: string;
  responses: Record<string, OpenApiResponse>;
}

/** The parts of openapi.yaml the tests read: paths and component schemas. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, unknown> };
}

/** The repository's openapi.yaml, parsed once per test file that imports this. */
export const openApiDocument = parse(
  await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
) as OpenApiDocument;

/** Every operation of the document, flattened: path, lower-case method, operation. */
export const openApiOperations = Object.entries(openApiDocument.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
);

/** The document's schemas with `#/components/schemas/X` pointing into one Ajv schema, `api`. */
export function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [
      key,
      key === '$ref' && typeof child === 'string'
        ? child.replace('#/components/schemas/', 'api#/$defs/')
        : rewriteRefs(child),
    ]),
  );
}

/** Ajv as a strict generator or validator runs it: strict mode, formats checked. */
export function strictAjv(): Ajv {
  const ajv = new Ajv({ strict: true, allErrors: true });
  addFormats(ajv);
  // OpenAPI's own annotation keyword beside JSON Schema's.
  ajv.addKeyword({ keyword: 'example' });
  ajv.addSchema({ $id: 'api', $defs: rewriteRefs(openApiDocument.components.schemas) });
  return ajv;
}
