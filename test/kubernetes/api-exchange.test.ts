import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openApiExchange } from '../../src/kubernetes/client/api-exchange.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

interface Seen {
  method: string;
  url: string;
  reused: boolean;
}

/**
 * A server whose answer to the n-th request (1-based) is chosen by `answer`; it records each
 * request's method, URL, and whether it came on a connection already used.
 */
async function serve(
  answer: (n: number, response: http.ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const used = new WeakSet<object>();
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    seen.push({
      method: request.method ?? '',
      url: request.url ?? '',
      reused: used.has(request.socket),
    });
    used.add(request.socket);
    answer(seen.length, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function body(response: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of response) text += String(chunk);
  return text;
}

const signal = new AbortController().signal;

describe('openApiExchange', () => {
  it('joins the path below any prefix of the server URL and adds the query', async () => {
    const { url, seen } = await serve((_n, response) => response.end());
    const { response } = await openApiExchange(
      `${url}/prefix/`,
      {},
      {
        method: 'GET',
        path: '/api/v1/pods?limit=5',
        query: { continue: 'a b' },
        headers: {},
        signal,
      },
    );
    await body(response);
    expect(seen.map((request) => request.url)).toEqual([
      '/prefix/api/v1/pods?limit=5&continue=a+b',
    ]);
  });

  it('does not send a request again when its reused connection breaks after the answer began', async () => {
    const agent = new http.Agent({ keepAlive: true });
    closers.push(async () => agent.destroy());
    const { url, seen } = await serve((n, response) => {
      if (n === 1) {
        response.end('first');
        return;
      }
      response.writeHead(200);
      response.write('par');
      setImmediate(() => response.socket?.destroy());
    });
    const options = { method: 'GET', path: '/x', headers: {}, signal };
    expect(await body((await openApiExchange(url, { agent }, options)).response)).toBe('first');
    const second = await openApiExchange(url, { agent }, options);
    await expect(body(second.response)).rejects.toThrow(/^aborted$/);
    expect(seen.map(({ method, reused }) => ({ method, reused }))).toEqual([
      { method: 'GET', reused: false },
      { method: 'GET', reused: true },
    ]);
  });
});
