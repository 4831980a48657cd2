import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ResourceApiError } from '../../src/kubernetes/client/resource-api-error.js';
import {
  ENDPOINTSLICE_MAX_RESPONSE_BYTES,
  ENDPOINTSLICE_REQUEST_TIMEOUT_MS,
  type EndpointSliceApi,
  KubernetesEndpointSliceApi,
} from '../../src/kubernetes/resources/endpointslice-api.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeEndpointSliceApiServer } from '../support/fake-endpointslice-apiserver.js';
import { until } from '../support/until.js';

const signal = new AbortController().signal;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function fake(): Promise<FakeEndpointSliceApiServer> {
  const server = await FakeEndpointSliceApiServer.start();
  closers.push(() => server.close());
  return server;
}

/** A raw server for what the fake does not model: pages, silence. */
async function raw(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const slice = (name: string) => ({
  metadata: { name, namespace: 'ns', labels: { a: 'b' } },
  addressType: 'IPv4' as const,
  endpoints: [{ addresses: ['10.0.0.1'] }],
  ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
});

describe('KubernetesEndpointSliceApi', () => {
  it('applies, lists by selector and deletes with a uid precondition', async () => {
    const server = await fake();
    const api = new KubernetesEndpointSliceApi({ connection: server.connection() });
    const stored = await api.apply(slice('s1'), signal);
    expect(stored.metadata).toMatchObject({ name: 's1', namespace: 'ns', uid: expect.any(String) });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer secret-token');
    expect(await api.list('ns', 'a=b', signal)).toEqual([stored]);
    expect(await api.list('ns', 'a=c', signal)).toEqual([]);
    expect(await api.list(undefined, 'a=b', signal)).toHaveLength(1);

    await expect(api.delete('ns', 's1', 'another-uid', signal)).rejects.toThrow(ResourceApiError);
    await expect(api.delete('ns', 's1', stored.metadata.uid, signal)).resolves.toBe(true);
    // Already gone is not an error.
    await expect(api.delete('ns', 's1', stored.metadata.uid, signal)).resolves.toBe(false);
  });

  it('names the verb, object and Status in errors, never the token', async () => {
    const server = await fake();
    const api = new KubernetesEndpointSliceApi({ connection: server.connection('tok-123') });
    const loopback = { ...slice('s1'), endpoints: [{ addresses: ['127.0.0.1'] }] };
    const error = await api.apply(loopback, signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceApiError);
    expect(error).toMatchObject({
      statusCode: 422,
      retriable: false,
      call: { verb: 'APPLY', resource: 'EndpointSlice', target: 'ns/s1' },
    });
    expect((error as Error).message).toMatch(
      /^APPLY EndpointSlice ns\/s1: HTTP 422 Invalid: .*loopback/,
    );
    expect((error as Error).message).not.toContain('tok-123');
  });

  it('follows continue tokens across LIST pages', async () => {
    const seen: string[] = [];
    const url = await raw((request, response) => {
      const query = new URL(request.url ?? '/', 'http://x').searchParams;
      seen.push(query.get('continue') ?? '');
      const page = query.get('continue') === 'next' ? 2 : 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          metadata: page === 1 ? { continue: 'next' } : {},
          items: [{ ...slice(`s${page}`), metadata: { name: `s${page}`, namespace: 'ns' } }],
        }),
      );
    });
    const api = new KubernetesEndpointSliceApi({
      connection: { server: url, requestOptions: async () => ({}) },
    });
    const slices = await api.list('ns', 'a=b', signal);
    expect(slices.map((s) => s.metadata.name)).toEqual(['s1', 's2']);
    expect(seen).toEqual(['', 'next']);
  });

  it('gives up on a silent server after its timeout, and on the caller’s abort at once', async () => {
    const url = await raw(() => {});
    const api = new KubernetesEndpointSliceApi({
      connection: { server: url, requestOptions: async () => ({}) },
      timeoutMs: 100,
    });
    await expect(api.list('ns', 'a=b', signal)).rejects.toThrow(
      'LIST EndpointSlice ns/*: no answer within 100 ms',
    );
    const controller = new AbortController();
    const pending = api.delete('ns', 's1', undefined, controller.signal);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });

  const calls: Array<
    [string, string, (api: EndpointSliceApi, s: AbortSignal) => Promise<unknown>]
  > = [
    ['LIST', 'ns/*', (api, s) => api.list('ns', 'a=b', s)],
    ['APPLY', 'ns/s1', (api, s) => api.apply(slice('s1'), s)],
    ['DELETE', 'ns/s1', (api, s) => api.delete('ns', 's1', 'uid-1', s)],
  ];

  it.each(calls)(
    'refuses a %s answer past 32 MiB without reading the rest',
    async (verb, target, call) => {
      let closedConnection = false;
      const piece = Buffer.alloc(256 * 1024, ' ');
      const url = await raw((request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.once('close', () => {
          closedConnection = true;
        });
        const pump = (): void => {
          while (!response.destroyed)
            if (!response.write(piece)) return void response.once('drain', pump);
        };
        pump();
      });
      const api = new KubernetesEndpointSliceApi({
        connection: { server: url, requestOptions: async () => ({}) },
        clock: new FakeClock(),
      });
      const error = await call(api, signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResourceApiError);
      expect(error).toMatchObject({
        statusCode: undefined,
        reason: 'MalformedAnswer',
        message: `${verb} EndpointSlice ${target}: response larger than ${ENDPOINTSLICE_MAX_RESPONSE_BYTES} bytes; refused`,
      });
      expect(ENDPOINTSLICE_MAX_RESPONSE_BYTES).toBe(32 * 1024 * 1024);
      await until(() => closedConnection, { what: 'the client to close the connection' });
    },
  );

  it.each(calls)(
    'gives up on a %s answer that stops after its head, on the injected clock',
    async (verb, target, call) => {
      let answered = false;
      const url = await raw((request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"kind":"EndpointSlice', () => {
          answered = true;
        });
      });
      const clock = new FakeClock();
      const api = new KubernetesEndpointSliceApi({
        connection: { server: url, requestOptions: async () => ({}) },
        clock,
      });
      const pending = call(api, signal).catch((e: unknown) => e);
      await until(() => answered, { what: 'the server to answer' });
      await clock.advance(ENDPOINTSLICE_REQUEST_TIMEOUT_MS - 1);
      expect(clock.pendingTimers).toBe(1);
      await clock.advance(1);
      expect(await pending).toEqual(
        new Error(
          `${verb} EndpointSlice ${target}: no answer within ${ENDPOINTSLICE_REQUEST_TIMEOUT_MS} ms`,
        ),
      );
    },
  );
});
