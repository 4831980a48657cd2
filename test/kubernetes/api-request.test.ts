import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { apiRequest } from '../../src/kubernetes/api-request.js';

const signal = new AbortController().signal;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function serve(body: string): Promise<string> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const request = {
  method: 'GET',
  path: '/x?y=1',
  signal,
  what: 'GET Thing ns/a',
  maxBodyBytes: 16,
  tooLarge: () => new RangeError('Thing response is too large'),
};

describe('apiRequest', () => {
  it('refuses a body over the bound with the caller’s error', async () => {
    const server = await serve('x'.repeat(64));
    const connection = { server, requestOptions: async () => ({}) };
    await expect(apiRequest(connection, request)).rejects.toThrow(
      new RangeError('Thing response is too large'),
    );
    await expect(apiRequest(connection, { ...request, maxBodyBytes: 64 })).resolves.toMatchObject({
      statusCode: 200,
      body: 'x'.repeat(64),
    });
  });

  it('names the request when its options cannot be prepared, redacting any credential', async () => {
    const connection = {
      server: 'http://127.0.0.1:1',
      requestOptions: async () => {
        throw new Error('exec plugin said Authorization: Bearer tok-123');
      },
    };
    const error = await apiRequest(connection, request).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^GET Thing ns\/a: exec plugin said/);
    expect((error as Error).message).not.toContain('tok-123');
    expect((error as Error).cause).toBeUndefined();
  });
});
