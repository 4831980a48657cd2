import type { ValidateFunction } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { ERROR_RESPONSE_DESCRIPTIONS } from '../../src/http/openapi-transform.js';
import { lwsPod } from '../support/lws-pod.js';
import {
  openApiDocument as doc,
  openApiOperations as operations,
  rewriteRefs,
  strictAjv,
} from '../support/openapi-document.js';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

describe('openapi.yaml for client generators', () => {
  it('names every operation with a unique operationId', () => {
    const ids = operations.map(({ path, method, operation }) => [
      `${method.toUpperCase()} ${path}`,
      operation.operationId,
    ]);
    expect(ids.filter(([, id]) => !id || !/^[a-z][A-Za-z]+$/.test(id))).toEqual([]);
    expect(new Set(ids.map(([, id]) => id)).size).toBe(ids.length);
  });

  it('describes every response in words of its own, never "Default Response"', () => {
    const bad = operations.flatMap(({ path, method, operation }) =>
      Object.entries(operation.responses)
        .filter(([, r]) => !r.description || r.description === 'Default Response')
        .map(([status]) => `${method.toUpperCase()} ${path} ${status}`),
    );
    expect(bad).toEqual([]);
    const notFound = doc.paths['/api/v1/cells/{cell}']!.get!.responses['404']!;
    expect(notFound.description).toBe(ERROR_RESPONSE_DESCRIPTIONS[404]);
  });

  it('compiles every schema, component and response alike, under Ajv strict mode', () => {
    const ajv = strictAjv();
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`api#/$defs/${name}`), name).not.toThrow();
    }
    for (const { path, method, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const [type, { schema }] of Object.entries(response.content ?? {})) {
          expect(
            () => ajv.compile(rewriteRefs(schema) as object),
            `${method} ${path} ${status} ${type}`,
          ).not.toThrow();
        }
      }
    }
  });

  it('is what every GET answers: each JSON answer validates against its status schema', async () => {
    const { app } = await harness({
      pods: [
        lwsPod({ group: 0, worker: 0, size: 2, podIP: '10.0.0.1' }),
        lwsPod({ group: 0, worker: 1, size: 2, ready: false }),
      ],
    });
    const ajv = strictAjv();
    const example: Record<string, string> = {
      '{pool}': 'engine',
      '{cell}': 'engine-00000',
      '{check}': 'ping',
    };
    const checked: string[] = [];
    for (const { path, method, operation } of operations) {
      // The event stream never ends; its messages have tests of their own (events.test.ts).
      if (method !== 'get' || path === '/api/v1/events') continue;
      const url = path.replace(/\{[a-z]+\}/g, (p) => example[p]!);
      const res = await app.inject({ url });
      const response = operation.responses[String(res.statusCode)];
      expect(response, `${url} answered ${res.statusCode}, undocumented`).toBeDefined();
      const json = response!.content?.['application/json']?.schema;
      if (json === undefined) continue;
      const validate: ValidateFunction = ajv.compile(rewriteRefs(json) as object);
      expect(validate(res.json()) ? [] : validate.errors, `${url} (${res.statusCode})`).toEqual([]);
      checked.push(url);
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        '/api/v1/pools/engine',
        '/api/v1/cells/engine-00000',
        '/api/v1/leader',
        '/api/v1/coordinator',
        '/api/v1/sinks',
      ]),
    );
  });

  it('keeps the promise that every JSON status response carries `source`', async () => {
    const missing = operations.flatMap(({ path, method, operation }) => {
      const ok = operation.responses['200'] ?? operation.responses['202'];
      const schema = ok?.content?.['application/json']?.schema as
        | { properties?: Record<string, unknown> }
        | undefined;
      return schema && !schema.properties?.source ? [`${method.toUpperCase()} ${path}`] : [];
    });
    expect(missing).toEqual([]);
  });
});
