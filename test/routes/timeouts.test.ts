/**
 * Slow clients: a stalled request body is cut off (timed by the fake clock, so no test waits),
 * an unauthorised POST is refused before its body is read, and the server's own limits are set.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_HEADER } from '../../src/http/error-shape.js';
import { SERVER_TIMEOUTS } from '../../src/http/server-limits.js';
import { closeAll, type Harness, harness } from '../support/service-harness.js';
import { until } from '../support/until.js';

afterEach(closeAll);

const BODY_MS = 500;

interface Client {
  socket: Socket;
  /** Everything answered so far. */
  answer(): string;
  closed: Promise<void>;
}

async function listen(h: Harness): Promise<number> {
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return (h.app.server.address() as { port: number }).port;
}

async function client(port: number, bytes: string): Promise<Client> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve).once('error', reject);
  });
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    answer += chunk;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(bytes);
  return { socket, answer: () => answer, closed };
}

/** Headers of a POST announcing a 20-byte JSON body, and its first 3 bytes: then nothing. */
function stalledPost(extraHeaders = ''): string {
  return `POST /api/v1/reconcile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 20\r\n${extraHeaders}\r\n{"a`;
}

function parse(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine, ...headers] = head.split('\r\n');
  return {
    statusLine,
    headers: Object.fromEntries(
      headers.map((h) => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 2)]),
    ),
    body: JSON.parse(body) as unknown,
  };
}

describe('a stalled request body', () => {
  it('is cut off after the body timeout with a 408 in the API shape, and the connection closed', async () => {
    const h = await harness({ server: { timeouts: { bodyMs: BODY_MS } } });
    const port = await listen(h);
    const timersBefore = h.clock.pendingTimers;
    const c = await client(port, stalledPost());
    await until(() => h.clock.pendingTimers > timersBefore, { what: 'the body timer armed' });
    await h.clock.advance(BODY_MS - 1);
    // The timer is not due: the body timer is still the one pending, and nothing was answered.
    expect(h.clock.pendingTimers).toBeGreaterThan(timersBefore);
    expect(c.answer()).toBe('');
    await h.clock.advance(1);
    await c.closed;
    const answer = parse(c.answer());
    expect(answer.statusLine).toBe('HTTP/1.1 408 Request Timeout');
    expect(answer.headers[SOURCE_HEADER]).toBe('kubernetes');
    expect(answer.headers.connection).toBe('close');
    expect(answer.body).toEqual({
      status: 408,
      error: 'Request Timeout',
      message: `the request body did not arrive within ${BODY_MS} ms`,
    });
  });

  it('is not cut off when it completes in time', async () => {
    const h = await harness({ server: { timeouts: { bodyMs: BODY_MS } } });
    const port = await listen(h);
    const timersBefore = h.clock.pendingTimers;
    const c = await client(port, stalledPost('Connection: close\r\n'));
    await until(() => h.clock.pendingTimers > timersBefore, { what: 'the body timer armed' });
    await h.clock.advance(BODY_MS - 1);
    c.socket.write('":1,"b":22222222}');
    await c.closed;
    expect(c.answer()).toMatch(/^HTTP\/1\.1 202 Accepted\r\n/);
    // The timer was released with the body, not left to fire later.
    expect(h.clock.pendingTimers).toBe(timersBefore);
  });

  it('of an unauthorised POST is never waited for: 401 at once, connection closed', async () => {
    const h = await harness({ adminToken: 't0k', server: { timeouts: { bodyMs: BODY_MS } } });
    const port = await listen(h);
    const timersBefore = h.clock.pendingTimers;
    const c = await client(port, stalledPost());
    // No clock advance at all: the refusal does not wait for the body.
    await c.closed;
    const answer = parse(c.answer());
    expect(answer.statusLine).toBe('HTTP/1.1 401 Unauthorized');
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['www-authenticate']).toBe('Bearer realm="pool-controller"');
    expect(h.clock.pendingTimers).toBe(timersBefore);
  });

  it('of a POST from a non-loopback peer is refused with a 403 before the body', async () => {
    const h = await harness({ server: { timeouts: { bodyMs: BODY_MS } } });
    const timersBefore = h.clock.pendingTimers;
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/v1/reconcile',
      remoteAddress: '10.0.0.1',
      headers: { 'content-type': 'application/json', 'content-length': '20' },
      payload: '{"a',
    });
    expect(res.statusCode).toBe(403);
    expect(h.clock.pendingTimers).toBe(timersBefore);
  });
});

describe('server limits', () => {
  it('sets the header, request and keep-alive timeouts and the connection cap', async () => {
    const { app } = await harness();
    expect(app.server.headersTimeout).toBe(SERVER_TIMEOUTS.headersMs);
    expect(app.server.requestTimeout).toBe(SERVER_TIMEOUTS.requestMs);
    expect(app.server.keepAliveTimeout).toBe(SERVER_TIMEOUTS.keepAliveMs);
    expect(app.server.maxConnections).toBe(SERVER_TIMEOUTS.maxConnections);
    // Headers must be bounded well below a request, and a request below Node's 300 s default.
    expect(SERVER_TIMEOUTS.headersMs).toBeLessThan(SERVER_TIMEOUTS.requestMs);
    expect(SERVER_TIMEOUTS.requestMs).toBeLessThan(300_000);
  });

  it('takes overrides', async () => {
    const { app } = await harness({
      server: { timeouts: { headersMs: 1_000, requestMs: 2_000, maxConnections: 3 } },
    });
    expect([
      app.server.headersTimeout,
      app.server.requestTimeout,
      app.server.maxConnections,
    ]).toEqual([1_000, 2_000, 3]);
  });
});
