/**
 * Every error answers in the API's one shape, `{status, error, message}`, with the source header:
 * also the ones Fastify raises itself before or around a route (router refusals, body parsing,
 * unknown routes) and the ones Node raises before there is a request at all.
 */
import { connect } from 'node:net';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_HEADER } from '../../src/http/error-shape.js';
import { BODY_LIMIT, MAX_PARAM_LENGTH } from '../../src/http/server-limits.js';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

type Inject = InjectOptions;

/** Asks the app and checks the shape; returns the message. */
async function errorOf(request: Inject, status: number, error: string): Promise<string> {
  const { app } = await harness();
  const res = await app.inject(request);
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers[SOURCE_HEADER]).toBe('kubernetes');
  const body = res.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'status']);
  expect(body).toMatchObject({ status, error });
  return body.message as string;
}

describe('router refusals', () => {
  it('answers a malformed percent-encoding in the path with a 400 that says so', async () => {
    expect(await errorOf({ url: '/api/v1/cells/%ZZ' }, 400, 'Bad Request')).toBe(
      `malformed URL path "/api/v1/cells/%ZZ": every '%' must start a percent-encoded UTF-8 character (e.g. %2F)`,
    );
    expect(
      await errorOf(
        { method: 'POST', url: '/api/v1/cells/%E0%A4%A/reconcile' },
        400,
        'Bad Request',
      ),
    ).toContain('malformed URL path "/api/v1/cells/%E0%A4%A/reconcile"');
  });

  it('answers an over-long path parameter with a 414 naming the limit', async () => {
    const id = 'a'.repeat(MAX_PARAM_LENGTH + 1);
    expect(await errorOf({ url: `/api/v1/cells/${id}` }, 414, 'URI Too Long')).toBe(
      `a path parameter in "/api/v1/cells/${id}" is longer than ${MAX_PARAM_LENGTH} characters`,
    );
  });

  it('answers an unknown route with a 404 naming it', async () => {
    expect(await errorOf({ url: '/api/v2/cells?x=1' }, 404, 'Not Found')).toBe(
      'no route GET /api/v2/cells',
    );
    expect(await errorOf({ method: 'DELETE', url: '/api/v2/cells' }, 404, 'Not Found')).toBe(
      'no route DELETE /api/v2/cells',
    );
  });

  it('answers a wrong method on an existing route with a 405 and an Allow header', async () => {
    const { app } = await harness();
    for (const [method, url, allow] of [
      ['DELETE', '/api/v1/cells', 'GET, HEAD'],
      ['PUT', '/api/v1/cells/engine-00000?namespace=x', 'GET, HEAD'],
      ['GET', '/api/v1/cells/engine-00000/reconcile', 'POST'],
      ['GET', '/api/v1/reconcile', 'POST'],
      ['POST', '/readyz/watch-healthy', 'GET, HEAD'],
    ] as const) {
      const res = await app.inject({ method, url });
      expect(res.statusCode, `${method} ${url}`).toBe(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.headers[SOURCE_HEADER]).toBe('kubernetes');
      expect(res.json()).toEqual({
        status: 405,
        error: 'Method Not Allowed',
        message: `${method} is not allowed on ${url.split('?')[0]}; allowed: ${allow}`,
      });
    }
  });

  it('answers the QUERY method with a 405 too, not a Content-Type error', async () => {
    const { app } = await harness();
    const res = await app.inject({ method: 'QUERY' as 'GET', url: '/api/v1/cells' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    const unknown = await app.inject({ method: 'QUERY' as 'GET', url: '/api/v2/cells' });
    expect(unknown.statusCode).toBe(404);
  });
});

describe('POST: auth is decided before anything about the request', () => {
  it('answers 401 before validating the query', async () => {
    const { app } = await harness({ adminToken: 't0k' });
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/cells/engine-00000/reconcile?namespace=',
    });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="pool-controller"');
    expect(res.headers[SOURCE_HEADER]).toBe('kubernetes');
    const allowed = await app.inject({
      method: 'POST',
      url: '/api/v1/cells/engine-00000/reconcile?namespace=',
      headers: { authorization: 'Bearer t0k' },
    });
    expect(allowed.statusCode).toBe(400);
  });

  it('answers 403 before validating the query or the body', async () => {
    const { app } = await harness();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/cells/engine-00000/reconcile?namespace=',
      remoteAddress: '10.1.2.3',
      headers: { 'content-type': 'application/json' },
      payload: '{bad',
    });
    expect(res.statusCode).toBe(403);
  });
});

describe('request bodies on the POSTs', () => {
  const post = (headers: Record<string, string>, payload: string): Inject => ({
    method: 'POST',
    url: '/api/v1/reconcile',
    headers,
    payload,
  });

  it('answers a body that is not JSON but says it is with a 400', async () => {
    expect(
      await errorOf(post({ 'content-type': 'application/json' }, '{bad'), 400, 'Bad Request'),
    ).toBe('the request body is not valid JSON, yet its Content-Type is application/json');
  });

  it('answers an empty JSON body with a 400 that says to drop the header', async () => {
    expect(
      await errorOf(post({ 'content-type': 'application/json' }, ''), 400, 'Bad Request'),
    ).toBe(
      'the request body is empty, yet its Content-Type is application/json; without a body, send no Content-Type',
    );
  });

  it('answers an unsupported media type with a 415 naming it', async () => {
    expect(
      await errorOf(
        post({ 'content-type': 'application/xml' }, '<a/>'),
        415,
        'Unsupported Media Type',
      ),
    ).toBe(
      'without --admin-token-file, a POST carries a JSON body (Content-Type: application/json) or none, which a web page on another site cannot send unasked; got Content-Type "application/xml"',
    );
  });

  it("with an admin token, answers an unsupported media type with the parser's 415", async () => {
    const { app } = await harness({ adminToken: 't0k' });
    const res = await app.inject({
      ...post({ 'content-type': 'application/xml', authorization: 'Bearer t0k' }, '<a/>'),
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().message).toBe(
      'unsupported Content-Type "application/xml"; send application/json, or no body at all',
    );
  });

  it('answers a body over the limit with a 413 naming the limit', async () => {
    expect(
      await errorOf(
        post({ 'content-type': 'application/json' }, 'x'.repeat(BODY_LIMIT + 1)),
        413,
        'Payload Too Large',
      ),
    ).toBe(`the request body is larger than ${BODY_LIMIT} bytes`);
  });

  it('still queues for a POST with a valid JSON body or none', async () => {
    const { app } = await harness();
    for (const request of [
      post({ 'content-type': 'application/json' }, '{}'),
      { method: 'POST', url: '/api/v1/reconcile' } as const,
    ]) {
      expect((await app.inject(request)).statusCode).toBe(202);
    }
  });
});

describe('requests Node refuses before Fastify sees them', () => {
  /** Sends raw bytes to a listening app over loopback; resolves with everything it answers. */
  async function raw(bytes: string): Promise<string> {
    const { app } = await harness();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
      let answer = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        answer += chunk;
      });
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  function parse(answer: string) {
    const [head, body] = answer.split('\r\n\r\n');
    const [statusLine, ...headers] = head!.split('\r\n');
    return {
      statusLine,
      headers: Object.fromEntries(
        headers.map((h) => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 2)]),
      ),
      body: JSON.parse(body!) as Record<string, unknown>,
    };
  }

  it('answers unparsable HTTP with a 400 in the API shape', async () => {
    const answer = parse(await raw('NOT HTTP AT ALL\r\n\r\n'));
    expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers[SOURCE_HEADER]).toBe('kubernetes');
    expect(answer.body).toEqual({
      status: 400,
      error: 'Bad Request',
      message: expect.stringMatching(/^malformed HTTP request \(HPE_/),
    });
  });

  it('answers an HTTP/1.1 request without Host with a 400 in the API shape', async () => {
    const answer = parse(await raw('GET /api/v1/cells HTTP/1.1\r\nConnection: close\r\n\r\n'));
    expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers[SOURCE_HEADER]).toBe('kubernetes');
    expect(answer.body).toEqual({
      status: 400,
      error: 'Bad Request',
      message: 'an HTTP/1.1 request needs a Host header',
    });
  });

  it('still serves an HTTP/1.0 request without Host', async () => {
    const answer = await raw('GET /healthz HTTP/1.0\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('answers oversized headers with a 431 in the API shape', async () => {
    const answer = parse(
      await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    );
    expect(answer.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(answer.body).toEqual({
      status: 431,
      error: 'Request Header Fields Too Large',
      message: 'the request headers are too large',
    });
  });
});

describe('requests that arrive while the server closes', () => {
  it("answers them with a 503 in the API shape, not Fastify's", async () => {
    const { app } = await harness();
    // A request that stays in flight, so the server is still closing when the next one arrives.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      entered = resolve;
    });
    app.get('/test-only/slow', async () => {
      entered();
      await held;
      return 'done';
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    let requests = 0;
    let secondArrived: () => void = () => {};
    const second = new Promise<void>((resolve) => {
      secondArrived = resolve;
    });
    app.server.on('request', () => {
      requests += 1;
      if (requests === 2) secondArrived();
    });
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      answer += chunk;
    });
    const ended = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET /test-only/slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await inFlight;
    const closed = app.close();
    // Pipelined behind the slow one on the same connection, so it arrives while closing.
    socket.write('GET /api/v1/cells HTTP/1.1\r\nHost: x\r\n\r\n');
    await second;
    release();
    await Promise.all([closed, ended]);
    const reply = answer.slice(answer.indexOf('HTTP/1.1', 1));
    expect(reply).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(reply.toLowerCase()).toContain(`${SOURCE_HEADER}: kubernetes`);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toEqual({
      status: 503,
      error: 'Service Unavailable',
      message: 'the control plane is shutting down; retry against another replica',
    });
  });
});

describe('request targets and pipelined errors', () => {
  async function listening(routes: (app: FastifyInstance) => void = () => {}) {
    const h = await harness();
    routes(h.app);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    return { ...h, port: (h.app.server.address() as { port: number }).port };
  }

  function exchange(port: number, bytes: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
      let answer = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        answer += chunk;
      });
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  it('answers GET * and other targets that are not a path with a 400', async () => {
    const { port } = await listening();
    for (const line of ['GET *', 'OPTIONS *', 'GET healthz', 'CONNECT localhost:443']) {
      const answer = await exchange(
        port,
        `${line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      expect(answer, line).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      // Node's parser refuses some itself (HPE_INVALID_URL); what it lets through, we refuse.
      if (line.endsWith('*')) {
        expect(answer).toContain('the request target must be a path such as /healthz, got \\"*\\"');
      }
    }
  });

  it('still serves an absolute-form target, as RFC 9112 requires of a server', async () => {
    const { port } = await listening();
    const answer = await exchange(
      port,
      'GET http://x/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('answers unparsable bytes pipelined behind a request in flight after that request, not into it', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const { app, port } = await listening((app) =>
      app.get('/test-only/slow', async () => {
        entered();
        await held;
        return 'done';
      }),
    );
    const refused = new Promise<void>((resolve) => app.server.once('clientError', () => resolve()));
    const answer = exchange(
      port,
      'GET /test-only/slow HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n',
    );
    await Promise.all([inFlight, refused]);
    release();
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(text).toContain('\r\n\r\ndone');
    const second = text.slice(text.indexOf('HTTP/1.1', 1));
    expect(second).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(second).toContain('malformed HTTP request');
  });
});

describe('cross-site requests in loopback-only mode', () => {
  it('refuses the POST a web page can send: text/plain with a foreign Host and Origin', async () => {
    const { app } = await harness();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/reconcile',
      headers: {
        host: 'evil.example:8080',
        origin: 'http://evil.example:8080',
        'content-type': 'text/plain',
      },
      payload: 'x',
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toContain('want a Host header naming loopback');
    const rebound = await app.inject({
      method: 'POST',
      url: '/api/v1/reconcile',
      headers: { host: 'localhost:8080', origin: 'https://evil.example' },
    });
    expect(rebound.statusCode).toBe(403);
    const form = await app.inject({
      method: 'POST',
      url: '/api/v1/reconcile',
      headers: { host: 'localhost:8080', 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(form.statusCode).toBe(415);
  });
});
