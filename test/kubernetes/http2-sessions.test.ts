import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import type { ServerHttp2Stream } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiConnectionError } from '../../src/kubernetes/client/api-errors.js';
import { loadApiConnection } from '../../src/kubernetes/client/connection.js';
import {
  HTTP2_PING_TIMEOUT_MS,
  HTTP2_STREAM_WINDOW_BYTES,
  Http2Sessions,
} from '../../src/kubernetes/client/http2-sessions.js';
import type { WatchFrame } from '../../src/kubernetes/codec/watch-framing.js';
import { HttpPodApi } from '../../src/kubernetes/resources/http-pod-api.js';
import { MAX_UNREAD_BYTES } from '../../src/kubernetes/resources/http-watch-stream.js';
import type { Clock } from '../../src/runtime/clock.js';
import { realClock } from '../../src/runtime/clock.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeHttp2ApiServer, type ServerStream } from '../support/fake-http2-apiserver.js';
import { rawPod } from '../support/pods.js';
import { until, untilAsync } from '../support/until.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const servers: FakeHttp2ApiServer[] = [];
const sessionsMade: Http2Sessions[] = [];

afterEach(async () => {
  for (const sessions of sessionsMade.splice(0)) sessions.destroy();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: { http1Only?: boolean } = {}): Promise<FakeHttp2ApiServer> {
  const server = await FakeHttp2ApiServer.start(options);
  servers.push(server);
  return server;
}

async function podApiOn(
  server: FakeHttp2ApiServer,
  options: { http2?: boolean; clock?: Clock; caFile?: string } = {},
): Promise<HttpPodApi> {
  const connection = await loadApiConnection({
    kubeconfigPath: server.writeKubeconfig('h2-token', options.caFile),
  });
  let sessions: Http2Sessions | undefined;
  if (options.http2 !== false) {
    sessions = new Http2Sessions(options.clock ?? realClock);
    sessionsMade.push(sessions);
  }
  return new HttpPodApi(connection, 'json', false, sessions);
}

/** A LIST page of pods named `names`, continuing with `next` when given. */
function listPage(names: string[], resourceVersion: string, next?: string): string {
  return JSON.stringify({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion, ...(next ? { continue: next } : {}) },
    items: names.map((name) => rawPod({ name, resourceVersion })),
  });
}

/** Answers LISTs with one page of `a` and `b`, at resourceVersion 10. */
function answerLists(stream: ServerStream): void {
  stream.answer(200, listPage(['a', 'b'], '10'), JSON_TYPE);
}

const signal = (): AbortSignal => AbortSignal.timeout(10_000);

/** A WATCH of the test namespace from `resourceVersion`. */
function watchFrom(api: HttpPodApi, resourceVersion: string) {
  return api.watchPods({
    namespace: 'pools',
    resourceVersion,
    timeoutSeconds: 30,
    signal: signal(),
  });
}

describe('Http2Sessions under the pod API', () => {
  it('reads LIST pages and a watch as streams of one HTTP/2 connection, with the same headers', async () => {
    const server = await serve();
    server.onStream = (stream) => {
      if (stream.path.includes('watch=true')) {
        stream.stream?.respond({ ':status': 200, ...JSON_TYPE });
        stream.stream?.end(
          `${JSON.stringify({ type: 'ADDED', object: rawPod({ name: 'c', resourceVersion: '12' }) })}\n`,
        );
      } else if (stream.path.includes('continue=')) {
        stream.answer(200, listPage(['b'], '11'), JSON_TYPE);
      } else {
        stream.answer(200, listPage(['a'], '11', 'next-page'), JSON_TYPE);
      }
    };
    const api = await podApiOn(server);
    const list = await api.listPods({ namespace: 'pools', limit: 1, signal: signal() });
    expect(list.pods.map((pod) => pod.metadata.name)).toEqual(['a', 'b']);
    const watch = await watchFrom(api, list.resourceVersion);
    const frames: WatchFrame[] = [];
    for await (const frame of watch) frames.push(frame);
    expect(
      frames.map((frame) =>
        frame.kind === 'decoded' ? (frame.value as { type: string }).type : '',
      ),
    ).toEqual(['ADDED']);

    expect(server.connections).toBe(1);
    expect(server.streams.map((stream) => stream.connection)).toEqual([1, 1, 1]);
    for (const { headers } of server.streams) {
      expect(headers.authorization).toBe('Bearer h2-token');
      expect(headers.accept).toBe('application/json');
      expect(headers[':method']).toBe('GET');
    }
    expect(server.streams[0]?.path).toBe('/api/v1/namespaces/pools/pods?limit=1');
  });

  it('reads a server that offers only HTTP/1.1 over HTTP/1.1, after one look at its offer', async () => {
    const server = await serve({ http1Only: true });
    server.onStream = answerLists;
    const api = await podApiOn(server);
    const first = await api.listPods({ namespace: 'pools', signal: signal() });
    expect(first.pods.map((pod) => pod.metadata.name)).toEqual(['a', 'b']);
    // The look (a TLS connection offering h2) and the HTTP/1.1 agent's connection.
    expect(server.connections).toBe(2);
    await api.listPods({ namespace: 'pools', signal: signal() });
    expect(server.connections).toBe(2);
    expect(server.streams[1]?.headers.authorization).toBe('Bearer h2-token');
  });

  it('with HTTP/2 off, never offers it', async () => {
    const server = await serve({ http1Only: true });
    server.onStream = answerLists;
    const api = await podApiOn(server, { http2: false });
    await api.listPods({ namespace: 'pools', signal: signal() });
    expect(server.connections).toBe(1);
  });

  it('stops the server within the stream window while a watch reader takes nothing, and resumes', async () => {
    const server = await serve();
    // Pods with a 64 KiB annotation: 24 MiB of watch events in few frames.
    const padding = 'x'.repeat(64 * 1024);
    const line = (index: number): string => {
      const pod = rawPod({ name: `p${index}`, resourceVersion: String(100 + index) });
      (pod.metadata as Record<string, unknown>).annotations = { padding };
      return `${JSON.stringify({ type: 'ADDED', object: pod })}\n`;
    };
    const lines = Math.ceil((24 * 1024 * 1024) / line(0).length);
    let written = 0;
    let waitingForDrain = false;
    let sent = 0;
    server.onStream = (stream) => {
      if (!stream.path.includes('watch=true')) return answerLists(stream);
      const out = stream.stream as ServerHttp2Stream;
      out.respond({ ':status': 200, ...JSON_TYPE });
      const pump = (): void => {
        waitingForDrain = false;
        while (sent < lines) {
          const text = line(sent);
          sent += 1;
          written += text.length;
          if (!out.write(text)) {
            waitingForDrain = true;
            out.once('drain', pump);
            return;
          }
        }
        out.end();
      };
      pump();
    };
    const api = await podApiOn(server);
    const watch = await watchFrom(api, '1');
    const frames = watch[Symbol.asyncIterator]();
    // Stalled: the server waits for a window update across a LIST on the same connection and
    // back, so any update sent before that LIST has arrived.
    await untilAsync(
      async () => {
        const before = written;
        await api.listPods({ namespace: 'pools', signal: signal() });
        return waitingForDrain && written === before;
      },
      { what: 'the server to stall on the stream window' },
    );
    expect(waitingForDrain).toBe(true);
    expect(written).toBeLessThan(MAX_UNREAD_BYTES + 2 * HTTP2_STREAM_WINDOW_BYTES + 1024 * 1024);
    expect(sent).toBeLessThan(lines);

    let taken = 0;
    for (;;) {
      const next = await frames.next();
      if (next.done) break;
      taken += 1;
    }
    expect(taken).toBe(lines);
    expect(server.connections).toBe(1);
  });

  it('pings a session whose stream was cancelled, and replaces it when no answer comes in time', async () => {
    const clock = new FakeClock();
    const server = await serve();
    const watches: ServerStream[] = [];
    server.onStream = (stream) => {
      if (stream.path.includes('watch=true')) {
        stream.stream?.respond({ ':status': 200, ...JSON_TYPE });
        watches.push(stream);
      } else answerLists(stream);
    };
    const api = await podApiOn(server, { clock });
    await api.listPods({ namespace: 'pools', signal: signal() });
    const watch = await watchFrom(api, '10');
    // The reader gives up on a silent watch (as the idle watchdog does): the session is suspect.
    watch.close();
    server.freeze();
    const list = api.listPods({ namespace: 'pools', signal: signal() });
    await until(() => clock.pendingDueTimes().includes(clock.now() + HTTP2_PING_TIMEOUT_MS), {
      what: 'the ping to wait for its answer',
    });
    expect(server.connections).toBe(1);
    await clock.advance(HTTP2_PING_TIMEOUT_MS);
    expect((await list).pods.map((pod) => pod.metadata.name)).toEqual(['a', 'b']);
    expect(server.connections).toBe(2);
    expect(server.streams.at(-1)?.connection).toBe(2);
  });

  it('keeps a session whose ping is answered', async () => {
    const server = await serve();
    server.onStream = (stream) => {
      if (stream.path.includes('watch=true'))
        stream.stream?.respond({ ':status': 200, ...JSON_TYPE });
      else answerLists(stream);
    };
    const api = await podApiOn(server);
    const watch = await watchFrom(api, '10');
    watch.close();
    await api.listPods({ namespace: 'pools', signal: signal() });
    expect(server.connections).toBe(1);
  });

  it('fails a watch whose connection breaks as a connection error, and reconnects for the next request', async () => {
    const server = await serve();
    server.onStream = (stream) => {
      if (!stream.path.includes('watch=true')) return answerLists(stream);
      stream.stream?.respond({ ':status': 200, ...JSON_TYPE });
      stream.stream?.write(
        `${JSON.stringify({ type: 'ADDED', object: rawPod({ name: 'c', resourceVersion: '12' }) })}\n`,
      );
    };
    const api = await podApiOn(server);
    const watch = await watchFrom(api, '10');
    const frames = watch[Symbol.asyncIterator]();
    expect((await frames.next()).done).toBe(false);
    server.dropConnections();
    await expect(frames.next()).rejects.toBeInstanceOf(ApiConnectionError);
    const list = await api.listPods({ namespace: 'pools', signal: signal() });
    expect(list.pods).toHaveLength(2);
    expect(server.connections).toBe(2);
  });

  it('fails a LIST page cut off by a lost connection as a connection error, not a malformed page', async () => {
    const server = await serve();
    const page = listPage(['a', 'b'], '10');
    server.onStream = (stream) => {
      stream.stream?.respond({ ':status': 200, ...JSON_TYPE });
      stream.stream?.write(page.slice(0, page.length / 2));
    };
    const api = await podApiOn(server);
    const list = api.listPods({
      namespace: 'pools',
      signal: signal(),
      // The first bytes are in: the connection goes with the rest of the page.
      onBytes: () => server.dropConnections(),
    });
    await expect(list).rejects.toBeInstanceOf(ApiConnectionError);
  });

  it('opens a new connection when the CA changes, and closes the old one once its watch ends', async () => {
    const server = await serve();
    const watches: ServerStream[] = [];
    server.onStream = (stream) => {
      if (!stream.path.includes('watch=true')) return answerLists(stream);
      stream.stream?.respond({ ':status': 200, ...JSON_TYPE });
      watches.push(stream);
    };
    const caFile = join(mkdtempSync(join(tmpdir(), 'pool-controller-ca-')), 'ca.crt');
    const api = await podApiOn(server, { caFile });
    const watch = await watchFrom(api, '10');
    const frames = watch[Symbol.asyncIterator]();
    // The same certificate with another line after it: other bytes, so other TLS material.
    appendFileSync(caFile, '\n');
    await api.listPods({ namespace: 'pools', signal: signal() });
    expect(server.streams.map((stream) => stream.connection)).toEqual([1, 2]);

    const oldSession = watches[0]?.stream?.session;
    const oldClosed = new Promise<void>((resolve) => oldSession?.on('close', () => resolve()));
    watches[0]?.stream?.end();
    expect((await frames.next()).done).toBe(true);
    await oldClosed;
    await api.listPods({ namespace: 'pools', signal: signal() });
    expect(server.streams.at(-1)?.connection).toBe(2);
  });

  it('fails a request whose TLS connection is refused, and connects again for the next one', async () => {
    const server = await serve();
    server.onStream = answerLists;
    // A kubeconfig that trusts only the system's CAs: the server's self-signed certificate fails.
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'pool-controller-kubeconfig-')), 'config');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'fake',
        clusters: [{ name: 'fake', cluster: { server: server.url } }],
        users: [{ name: 'fake', user: { token: 'h2-token' } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
      }),
    );
    const sessions = new Http2Sessions(realClock);
    sessionsMade.push(sessions);
    const api = new HttpPodApi(
      await loadApiConnection({ kubeconfigPath: kubeconfig }),
      'json',
      false,
      sessions,
    );
    for (const attempt of [1, 2]) {
      await expect(
        api.listPods({ namespace: 'pools', signal: signal() }),
        `attempt ${attempt}`,
      ).rejects.toMatchObject({ name: 'ApiConnectionError', answered: false });
    }
    expect(server.tcpConnections).toBe(2);
    expect(server.connections).toBe(0);
  });

  it('opens a new connection for the requests after the server says GOAWAY', async () => {
    const server = await serve();
    server.onStream = answerLists;
    const api = await podApiOn(server);
    await api.listPods({ namespace: 'pools', signal: signal() });
    server.goAway();
    const list = await api.listPods({ namespace: 'pools', signal: signal() });
    expect(list.pods).toHaveLength(2);
    expect(server.connections).toBe(2);
    expect(server.streams.at(-1)?.connection).toBe(2);
  });

  it('cancels the stream on the server when the request is aborted before its answer', async () => {
    const server = await serve();
    const held: ServerStream[] = [];
    server.onStream = (stream) => held.push(stream);
    const api = await podApiOn(server);
    const controller = new AbortController();
    const list = api.listPods({ namespace: 'pools', signal: controller.signal });
    await until(() => held.length === 1, { what: 'the LIST to arrive' });
    const closed = new Promise<number | undefined>((resolve) =>
      held[0]?.stream?.on('close', () => resolve(held[0]?.stream?.rstCode)),
    );
    controller.abort(new Error('not wanted'));
    await expect(list).rejects.toThrow('not wanted');
    expect(await closed).toBe(8); // NGHTTP2_CANCEL
  });

  it('reads an error status from an HTTP/2 answer', async () => {
    const server = await serve();
    server.onStream = (stream) =>
      stream.answer(
        403,
        JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'no' }),
        JSON_TYPE,
      );
    const api = await podApiOn(server);
    await expect(api.listPods({ namespace: 'pools', signal: signal() })).rejects.toMatchObject({
      status: { code: 403, reason: 'Forbidden' },
    });
  });
});
