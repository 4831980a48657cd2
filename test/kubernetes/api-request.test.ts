import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { apiRequest } from '../../src/kubernetes/api-request.js';
import { loadApiConnection } from '../../src/kubernetes/connection.js';
import { FakeApiServer } from '../support/fake-apiserver.js';

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

describe('apiRequest on kept-alive connections', () => {
  async function fake(): Promise<{
    server: FakeApiServer;
    connection: Awaited<ReturnType<typeof loadApiConnection>>;
  }> {
    const server = await FakeApiServer.start();
    closers.push(() => server.close());
    const connection = await loadApiConnection({ kubeconfigPath: server.writeKubeconfig() });
    return { server, connection };
  }
  const get = { ...request, path: '/api/v1/pods', maxBodyBytes: 4096 };

  it('sends a GET again at once when the connection it reused was closed under it', async () => {
    const { server, connection } = await fake();
    await apiRequest(connection, get);
    server.cutReusedConnections = 1;
    await expect(apiRequest(connection, get)).resolves.toMatchObject({ statusCode: 200 });
    expect(server.cutRequests).toEqual([{ method: 'GET', path: '/api/v1/pods' }]);
    expect(server.connections).toBe(2);
  });

  it.each([
    ['POST', 'a second create may not have the effect of one'],
    ['PUT', 'the first may have landed, and the second would hide it behind a conflict'],
  ])('does not send a %s again: %s', async (method) => {
    const { server, connection } = await fake();
    await apiRequest(connection, get);
    server.cutReusedConnections = 1;
    const write = { ...get, method, what: `${method} Thing ns/a`, body: { kind: 'Thing' } };
    await expect(apiRequest(connection, write)).rejects.toThrow(`${method} Thing ns/a: `);
    expect(server.cutRequests).toEqual([{ method, path: '/api/v1/pods' }]);
    expect(server.requests).toHaveLength(1);
  });
});
