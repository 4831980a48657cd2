import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { apiRequest } from '../../src/kubernetes/client/api-request.js';
import { loadApiConnection } from '../../src/kubernetes/client/connection.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { FakeClock } from '../support/fake-clock.js';

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
  timeoutMs: 10_000,
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

/** A server on loopback whose every answer is `handle`'s. */
async function serveWith(
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<string> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('apiRequest bounds every answer in size and time', () => {
  it('refuses an endless body once it passes the bound, and drops the connection', async () => {
    let sent = 0;
    let resolveClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve;
    });
    const piece = Buffer.alloc(64 * 1024, ' ');
    const server = await serveWith((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.once('close', resolveClosed);
      const pump = (): void => {
        while (!response.destroyed) {
          sent += piece.length;
          if (!response.write(piece)) {
            response.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    const connection = { server, requestOptions: async () => ({}) };
    const bound = 1024 * 1024;
    await expect(
      apiRequest(connection, { ...request, maxBodyBytes: bound, clock: new FakeClock() }),
    ).rejects.toThrow(new RangeError('Thing response is too large'));
    await closed;
    expect(sent).toBeLessThan(64 * bound);
  });

  it('gives up on a body that stops half way, on the injected clock', async () => {
    // 32 MiB, more than the kernel buffers between the two ends hold, so once the server has
    // written it all the client is certainly reading the body; then the body stalls, unfinished.
    const total = 32 * 1024 * 1024;
    let resolveWritten: () => void = () => {};
    const written = new Promise<void>((resolve) => {
      resolveWritten = resolve;
    });
    const server = await serveWith((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(Buffer.alloc(total, ' '), () => resolveWritten());
    });
    const clock = new FakeClock();
    const connection = { server, requestOptions: async () => ({}) };
    const pending = apiRequest(connection, {
      ...request,
      timeoutMs: 1_000,
      maxBodyBytes: 4 * total,
      clock,
    }).catch((e: unknown) => e);
    await written;
    await clock.advance(1_000);
    expect(await pending).toEqual(new Error('GET Thing ns/a: no answer within 1000 ms'));
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops its timer once the answer is complete', async () => {
    const server = await serve('{}');
    const clock = new FakeClock();
    const connection = { server, requestOptions: async () => ({}) };
    await expect(apiRequest(connection, { ...request, clock })).resolves.toMatchObject({
      statusCode: 200,
    });
    expect(clock.pendingTimers).toBe(0);
  });

  it('refuses a timeout that is not positive, sending nothing', async () => {
    let requests = 0;
    const server = await serveWith((_request, response) => {
      requests += 1;
      response.end('{}');
    });
    const connection = { server, requestOptions: async () => ({}) };
    await expect(apiRequest(connection, { ...request, timeoutMs: 0 })).rejects.toThrow(
      new RangeError('GET Thing ns/a: timeoutMs must be positive'),
    );
    expect(requests).toBe(0);
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
