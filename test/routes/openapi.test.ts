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
});
