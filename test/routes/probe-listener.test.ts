/**
 * `--health-probe-listen`: the probes on a listener of their own, which clients of the main
 * listener (event streams included) cannot starve.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_HEADER } from '../../src/http/error-shape.js';
import { buildProbeServer } from '../../src/http/probe-app.js';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

function get(port: number, path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, agent: false }, resolve).on('error', reject).end();
  });
}

async function body(res: IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let text = '';
  for await (const chunk of res) text += chunk;
  return text;
}

describe('the probe listener', () => {
  it('answers /healthz and /readyz while event streams hold every connection of the main listener', async () => {
    const h = await harness({ server: { timeouts: { maxConnections: 2 } } });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const main = (h.app.server.address() as AddressInfo).port;
    const probes = await buildProbeServer(h.service);
    await probes.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (probes.server.address() as AddressInfo).port;
      const streams = [await get(main, '/api/v1/events'), await get(main, '/api/v1/events')];
      // The main listener is full: a probe there is refused.
      await expect(get(main, '/healthz')).rejects.toThrow();
      const healthz = await get(port, '/healthz');
      expect(healthz.statusCode).toBe(200);
      expect(healthz.headers[SOURCE_HEADER]).toBe('kubernetes');
      expect(await body(healthz)).toBe('ok');
      const readyz = await get(port, '/readyz?verbose');
      expect(readyz.statusCode).toBe(200);
      expect(await body(readyz)).toContain('[+]store-synced ok');
      expect((await get(port, '/readyz/shutdown')).statusCode).toBe(200);
      for (const s of streams) s.destroy();
    } finally {
      await probes.close();
    }
  });

  it('serves nothing but the probes, and closes connections once shutdown began', async () => {
    const h = await harness();
    const probes = await buildProbeServer(h.service);
    try {
      const api = await probes.inject({ url: '/api/v1/cells' });
      expect(api.statusCode).toBe(404);
      expect(api.json().message).toContain('it serves /healthz and /readyz');
      h.service.beginShutdown();
      const readyz = await probes.inject({ url: '/readyz' });
      expect(readyz.statusCode).toBe(500);
      expect(readyz.headers.connection).toBe('close');
    } finally {
      await probes.close();
    }
  });
});
