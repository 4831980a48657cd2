import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ROUTER_MAX_RESPONSE_BYTES,
  RouterRequestError,
  SglangRouterClient,
} from '../../src/sinks/sglang-router-client.js';
import { FakeClock } from '../support/fake-clock.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A router on loopback whose every answer is `handle`'s. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * An answer that never ends: `{"workers":[` and then padding, as fast as the client reads it,
 * until the client goes away. `sent` counts what was written; `closed` resolves when the client
 * dropped the connection.
 */
function endlessAnswer() {
  const piece = Buffer.alloc(64 * 1024, ' ');
  let resolveClosed: () => void = () => {};
  const state = {
    sent: 0,
    closed: new Promise<void>((resolve) => {
      resolveClosed = resolve;
    }),
    handle(_req: IncomingMessage, res: ServerResponse): void {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.once('close', resolveClosed);
      const pump = (): void => {
        while (!res.destroyed) {
          state.sent += piece.length;
          if (!res.write(piece)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      res.write('{"workers":[');
      pump();
    },
  };
  return state;
}

const signal = (): AbortSignal => new AbortController().signal;

describe('SglangRouterClient bounds every answer', () => {
  it('refuses an answer past 16 MiB as it streams in, without reading the rest', async () => {
    expect(ROUTER_MAX_RESPONSE_BYTES).toBe(16 * 1024 * 1024);
    const answer = endlessAnswer();
    const url = await serve((req, res) => answer.handle(req, res));
    const client = new SglangRouterClient({ url, apiKey: 'sekret-key', clock: new FakeClock() });
    const error = await client.listWorkers(signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RouterRequestError);
    expect((error as Error).message).toBe(
      'GET /workers: the answer is larger than 16 MiB; refused',
    );
    expect((error as Error).message).not.toContain('sekret-key');
    // The connection was dropped: the endless body was not drained.
    await answer.closed;
    expect(answer.sent).toBeLessThan(ROUTER_MAX_RESPONSE_BYTES * 2);
  });

  it('refuses a Content-Length past the cap before reading the body', async () => {
    let resolveClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve;
    });
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2048 });
      res.once('close', resolveClosed);
      res.write('{"workers":['); // and nothing more: only the header can make the call fail now
    });
    const client = new SglangRouterClient({ url, maxResponseBytes: 1024, clock: new FakeClock() });
    await expect(client.getWorker('w-1', signal())).rejects.toThrow(
      new RouterRequestError('GET /workers/w-1: the answer is larger than 1024 bytes; refused'),
    );
    await closed;
  });

  it('reads an answer of exactly the cap', async () => {
    const body = JSON.stringify({ workers: [{ id: 'a', url: 'http://10.0.0.1:8000' }] });
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const client = new SglangRouterClient({
      url,
      maxResponseBytes: Buffer.byteLength(body),
      clock: new FakeClock(),
    });
    await expect(client.listWorkers(signal())).resolves.toEqual([
      { id: 'a', url: 'http://10.0.0.1:8000', healthy: false },
    ]);
    const smaller = new SglangRouterClient({
      url,
      maxResponseBytes: Buffer.byteLength(body) - 1,
      clock: new FakeClock(),
    });
    await expect(smaller.listWorkers(signal())).rejects.toThrow(/larger than \d+ bytes; refused/);
  });

  it('times out an answer whose body stops half way: the timeout covers the body read', async () => {
    // 32 MiB, more than the kernel and fetch buffer between the two ends, so once the server has
    // written it all the client is certainly reading the body; then the body stalls, unfinished.
    const total = 32 * 1024 * 1024;
    let resolveWritten: () => void = () => {};
    const written = new Promise<void>((resolve) => {
      resolveWritten = resolve;
    });
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"workers":[');
      res.write(Buffer.alloc(total, ' '), () => resolveWritten());
    });
    const clock = new FakeClock();
    const client = new SglangRouterClient({
      url,
      timeoutMs: 1_000,
      maxResponseBytes: 4 * total,
      clock,
    });
    const result = client.listWorkers(signal()).catch((e: unknown) => e);
    await written;
    await clock.advance(1_000);
    const error = await result;
    expect(error).toBeInstanceOf(RouterRequestError);
    expect((error as Error).message).toBe('GET /workers: no answer within 1000 ms');
    expect(clock.pendingTimers).toBe(0);
  });

  it('refuses a cap that is not positive', () => {
    expect(
      () => new SglangRouterClient({ url: 'http://127.0.0.1:1', maxResponseBytes: 0 }),
    ).toThrow(RangeError);
  });
});

describe('SglangRouterClient never follows a redirect', () => {
  it('refuses a redirect to another host, naming only its origin, and sends nothing there', async () => {
    const elsewhere: string[] = [];
    const other = await serve((req, res) => {
      elsewhere.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end('{"worker_id":"w-1"}');
    });
    const url = await serve((req, res) => {
      res.writeHead(307, { location: `${other}${req.url}?token=abc` });
      res.end();
    });
    const client = new SglangRouterClient({ url, apiKey: 'sekret-key', clock: new FakeClock() });
    const error = await client.addWorker('http://10.0.0.1:8000', signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RouterRequestError);
    expect((error as Error).message).toBe(
      `POST /workers: HTTP 307 redirect to ${other}; redirects are not followed: configure the URL the router answers on`,
    );
    expect(elsewhere).toEqual([]);
  });

  it('refuses a redirect within the same origin too, and says it stayed there', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(301, { location: '/v2/workers?secret=1' });
      res.end();
    });
    const client = new SglangRouterClient({ url, clock: new FakeClock() });
    await expect(client.listWorkers(signal())).rejects.toThrow(
      new RouterRequestError(
        'GET /workers: HTTP 301 redirect to another path of the same origin; redirects are not followed: configure the URL the router answers on',
      ),
    );
  });
});
