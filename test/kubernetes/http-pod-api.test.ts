import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiConnectionError,
  ApiStatusError,
  MalformedListError,
} from '../../src/kubernetes/client/api-errors.js';
import { KubeConfigError } from '../../src/kubernetes/client/connection.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { KubernetesReflector } from '../../src/kubernetes/reflector/reflector.js';
import { connectPodApi, peekContinueToken } from '../../src/kubernetes/resources/http-pod-api.js';
import type { PodApi, WatchFrame } from '../../src/kubernetes/resources/pod-api.js';
import { parsePod } from '../../src/model/pod.js';
import { decodedEvents, decodedPod } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { FakeClock } from '../support/fake-clock.js';
import { rawPod } from '../support/pods.js';
import {
  concatBytes,
  encodePodList,
  encodeStatus,
  encodeWatchFrame,
} from '../support/protobuf-writer.js';
import { until } from '../support/until.js';

let server: FakeApiServer;
let api: PodApi;

beforeEach(async () => {
  server = await FakeApiServer.start();
  api = await connectPodApi({ kubeconfigPath: server.writeKubeconfig({ token: 's3cret' }) });
});

afterEach(async () => {
  await server.close();
});

const signal = () => new AbortController().signal;

function names(pods: Array<{ metadata: { name: string } }>): string[] {
  return pods.map((p) => p.metadata.name);
}

async function collect(frames: AsyncIterable<WatchFrame>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const frame of frames) out.push(frame.kind === 'decoded' ? frame.value : frame);
  return out;
}

describe('HttpPodApi connections', () => {
  it('reuses one kept-alive connection for LISTs one after another and the watch that follows', async () => {
    server.pods = ['a', 'b'].map((name) => rawPod({ name }));
    for (let i = 0; i < 3; i += 1) await api.listPods({ signal: signal() });
    const stream = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 60,
      signal: signal(),
    });
    expect(server.requests).toHaveLength(4);
    expect(server.connections).toBe(1);
    stream.close();
  });

  it('sends a LIST again at once on a new connection when its kept-alive one was closed under it', async () => {
    server.pods = [rawPod({ name: 'a' })];
    await api.listPods({ signal: signal() });
    server.cutReusedConnections = 1;
    const list = await api.listPods({ signal: signal() });
    expect(names(list.pods)).toEqual(['a']);
    expect(server.cutRequests).toEqual([{ method: 'GET', path: '/api/v1/pods' }]);
    expect(server.requests).toHaveLength(2);
    expect(server.connections).toBe(2);
  });

  it('sends it again only once: when the resend is cut too, the LIST fails as a connection error', async () => {
    // Two LISTs side by side leave two kept-alive connections in the pool.
    await Promise.all([api.listPods({ signal: signal() }), api.listPods({ signal: signal() })]);
    expect(server.connections).toBe(2);
    server.cutReusedConnections = 2;
    await expect(api.listPods({ signal: signal() })).rejects.toBeInstanceOf(ApiConnectionError);
    expect(server.cutRequests).toHaveLength(2);
  });

  it('does not give a closed watch’s connection to the next request', async () => {
    const first = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 60,
      signal: signal(),
    });
    first.close();
    await api.listPods({ signal: signal() });
    expect(server.connections).toBe(2);
  });
});

describe('HttpPodApi LIST', () => {
  it('follows continue pages and returns every pod with the collection version', async () => {
    server.pods = ['a', 'b', 'c', 'd', 'e'].map((name) => rawPod({ name }));
    server.resourceVersion = '77';
    const progress: Array<{ pages: number; pods: number }> = [];
    const list = await api.listPods({
      namespace: 'pools',
      labelSelector: 'app=engine',
      limit: 2,
      signal: signal(),
      onPage: (page) => progress.push(page),
    });
    expect(names(list.pods)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(list.resourceVersion).toBe('77');
    expect(progress).toEqual([
      { pages: 1, pods: 2 },
      { pages: 2, pods: 4 },
      { pages: 3, pods: 5 },
    ]);
    expect(server.requests.map((r) => [r.path, r.query])).toEqual([
      ['/api/v1/namespaces/pools/pods', { labelSelector: 'app=engine', limit: '2' }],
      ['/api/v1/namespaces/pools/pods', { labelSelector: 'app=engine', limit: '2', continue: '2' }],
      ['/api/v1/namespaces/pools/pods', { labelSelector: 'app=engine', limit: '2', continue: '4' }],
    ]);
  });

  it("requests the next page as soon as this page's head names its token, before its body ends", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = JSON.stringify({
      kind: 'PodList',
      metadata: { resourceVersion: '5', continue: 'next' },
      items: [rawPod({ name: 'a' }), rawPod({ name: 'b' })],
    });
    const second = JSON.stringify({
      kind: 'PodList',
      metadata: { resourceVersion: '5' },
      items: [rawPod({ name: 'c' })],
    });
    server.script(
      'LIST',
      // The metadata (and its token) in the first bytes; the items only once released.
      { status: 200, body: first, holdAfter: { bytes: first.indexOf('"items"'), until: held } },
      { status: 200, body: second },
    );
    const listed = api.listPods({ namespace: 'pools', limit: 2, signal: signal() });
    await until(() => server.requests.length >= 2, { what: 'the request for page 2' });
    // Page 2 was asked for while page 1 is still arriving.
    expect(server.requests.map((r) => r.query.continue)).toEqual([undefined, 'next']);
    release();
    const list = await listed;
    expect(names(list.pods)).toEqual(['a', 'b', 'c']);
    expect(list.resourceVersion).toBe('5');
  });

  it('falls back to one full, unpaged LIST when a later page answers 410 (continue token expired)', async () => {
    server.pods = ['a', 'b', 'c', 'd', 'e'].map((name) => rawPod({ name }));
    server.resourceVersion = '90';
    server.script('LIST', 'normal', {
      status: 410,
      body: JSON.stringify({
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'The provided continue parameter is too old',
      }),
    });
    const list = await api.listPods({ labelSelector: 'app=engine', limit: 2, signal: signal() });
    expect(names(list.pods)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(list.resourceVersion).toBe('90');
    expect(server.requests.map((r) => r.query)).toEqual([
      { labelSelector: 'app=engine', limit: '2' },
      { labelSelector: 'app=engine', limit: '2', continue: '2' },
      { labelSelector: 'app=engine' },
    ]);
  });

  it('does not fall back when the first page answers 410, nor for other errors on a later page', async () => {
    server.pods = ['a', 'b', 'c'].map((name) => rawPod({ name }));
    server.script('LIST', { status: 410, body: '{"kind":"Status","code":410}' });
    await expect(api.listPods({ limit: 2, signal: signal() })).rejects.toMatchObject({
      status: { code: 410 },
    });
    server.script('LIST', 'normal', { status: 500, body: '{"kind":"Status","code":500}' });
    await expect(api.listPods({ limit: 2, signal: signal() })).rejects.toMatchObject({
      status: { code: 500 },
    });
    expect(server.requests).toHaveLength(3);
  });

  it('lists all namespaces when none is given, with a default page size of 500', async () => {
    await api.listPods({ signal: signal() });
    expect(server.requests[0]).toMatchObject({ path: '/api/v1/pods', query: { limit: '500' } });
  });

  it('authenticates with the kubeconfig credentials', async () => {
    await api.listPods({ signal: signal() });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer s3cret');
  });

  it('refuses a page larger than maxPageBytes (a server that ignored limit) instead of holding it', async () => {
    server.pods = Array.from({ length: 200 }, (_, index) => rawPod({ name: `pod-${index}` }));
    const bytes: number[] = [];
    const failure = api.listPods({
      signal: signal(),
      maxPageBytes: 64 * 1024,
      onBytes: (count) => bytes.push(count),
    });
    await expect(failure).rejects.toBeInstanceOf(MalformedListError);
    await expect(failure).rejects.toThrow(
      'LIST page larger than 65536 bytes (the server ignored limit?); refused',
    );
    // The same answer within the bound is read whole.
    const list = await api.listPods({ signal: signal(), maxPageBytes: 10 * 1024 * 1024 });
    expect(list.pods).toHaveLength(200);
  });

  it('fails the whole LIST when any item on any page is unreadable, naming it', async () => {
    const broken = rawPod({ name: 'broken', namespace: 'ns' });
    delete (broken.metadata as Record<string, unknown>).uid;
    server.pods = [rawPod({ name: 'a' }), rawPod({ name: 'b' }), broken];
    const failure = api.listPods({ limit: 2, signal: signal() });
    await expect(failure).rejects.toBeInstanceOf(MalformedListError);
    await expect(failure).rejects.toThrow('LIST item ns/broken: malformed pod: metadata.uid');
  });

  it.each([
    ['not JSON', '{"items": ['],
    ['without a resourceVersion', JSON.stringify({ items: [] })],
    [
      'with items that are not a list',
      JSON.stringify({ metadata: { resourceVersion: '1' }, items: {} }),
    ],
  ])('rejects a response body %s', async (_, body) => {
    server.script('LIST', { status: 200, body });
    await expect(api.listPods({ signal: signal() })).rejects.toBeInstanceOf(MalformedListError);
  });

  it('reports a refusal as ApiStatusError with the Status and Retry-After', async () => {
    server.script('LIST', {
      status: 429,
      headers: { 'Retry-After': '3' },
      body: JSON.stringify({
        kind: 'Status',
        code: 429,
        reason: 'TooManyRequests',
        message: 'slow down',
      }),
    });
    const error = await api.listPods({ signal: signal() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiStatusError);
    expect((error as ApiStatusError).status).toEqual({
      code: 429,
      reason: 'TooManyRequests',
      message: 'slow down',
      causes: [],
      retryAfterMs: 3_000,
    });
  });

  it('does not ask for gzip unless told to, and still reads a gzip-encoded page', async () => {
    const body = JSON.stringify({
      metadata: { resourceVersion: '9' },
      items: [rawPod({ name: 'y' })],
    });
    server.script('LIST', { status: 200, body, gzip: true });
    const list = await api.listPods({ signal: signal() });
    expect(names(list.pods)).toEqual(['y']);
    expect(server.requests[0]?.headers['accept-encoding']).toBe(undefined);
  });

  it('asks for gzip with apiCompression and reads a gzip-encoded page, counting the decoded bytes', async () => {
    const body = JSON.stringify({
      metadata: { resourceVersion: '9' },
      items: [rawPod({ name: 'z' })],
    });
    server.script('LIST', { status: 200, body, gzip: true });
    let bytes = 0;
    const compressing = await connectPodApi({
      kubeconfigPath: server.writeKubeconfig({ token: 's3cret' }),
      apiCompression: true,
    });
    const list = await compressing.listPods({ signal: signal(), onBytes: (n) => (bytes += n) });
    expect(names(list.pods)).toEqual(['z']);
    expect(server.requests[0]?.headers['accept-encoding']).toBe('gzip');
    expect(bytes).toBe(Buffer.byteLength(body));
  });

  it('reports a response that breaks off as a connection failure the server answered', async () => {
    server.script('LIST', { status: 200, body: '{"metadata":{', breakAfterBody: true });
    const failure = await api.listPods({ signal: signal() }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiConnectionError);
    expect(failure).toMatchObject({ answered: true });
  });

  it('rejects with the signal reason when aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(api.listPods({ signal: controller.signal })).rejects.toBe(reason);
  });

  it('reports an unreachable server as a connection failure nothing answered', async () => {
    await server.close();
    const failure = await api.listPods({ signal: signal() }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiConnectionError);
    expect(failure).toMatchObject({ answered: false, message: expect.stringMatching(/^LIST: /) });
    const watch = await api
      .watchPods({ resourceVersion: '1', timeoutSeconds: 300, signal: signal() })
      .catch((error: unknown) => error);
    expect(watch).toMatchObject({ name: 'ApiConnectionError', answered: false });
    server = await FakeApiServer.start();
  });
});

describe('HttpPodApi WATCH', () => {
  it('always sends watch, allowWatchBookmarks and timeoutSeconds, plus the cursor and selector', async () => {
    const stream = await api.watchPods({
      namespace: 'pools',
      labelSelector: 'cell in (a,b)',
      resourceVersion: '41',
      timeoutSeconds: 377,
      signal: signal(),
    });
    expect(server.requests[0]).toMatchObject({
      path: '/api/v1/namespaces/pools/pods',
      query: {
        watch: 'true',
        allowWatchBookmarks: 'true',
        timeoutSeconds: '377',
        resourceVersion: '41',
        labelSelector: 'cell in (a,b)',
      },
    });
    stream.close();
  });

  it('asks a watch-list for the initial events from the freshest state: NotOlderThan, no resourceVersion', async () => {
    const stream = await api.watchPods({
      namespace: 'pools',
      resourceVersion: '',
      sendInitialEvents: true,
      timeoutSeconds: 377,
      signal: signal(),
    });
    expect(server.requests[0]?.query).toEqual({
      watch: 'true',
      allowWatchBookmarks: 'true',
      timeoutSeconds: '377',
      sendInitialEvents: 'true',
      resourceVersionMatch: 'NotOlderThan',
    });
    expect(server.requests[0]?.headers['accept-encoding']).toBeUndefined();
    stream.close();
  });

  it('yields the frames the server writes until its clean end, counting bytes', async () => {
    let bytes = 0;
    const stream = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 300,
      signal: signal(),
      onBytes: (n) => (bytes += n),
    });
    const watch = await server.watch();
    const text = '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}}\n{"type":"ERR';
    watch.sendRaw(text).sendRaw('OR","object":{"code":410}}\n').sendRaw('not json\n').end();
    const frames = await collect(stream);
    expect(frames).toEqual([
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '2' } } },
      { type: 'ERROR', object: { code: 410 } },
      { kind: 'garbled', error: expect.any(String) },
    ]);
    expect(bytes).toBe(text.length + 'OR","object":{"code":410}}\n'.length + 'not json\n'.length);
  });

  it('reports a broken connection as ApiConnectionError', async () => {
    const stream = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 300,
      signal: signal(),
    });
    const watch = await server.watch();
    watch.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '2' } } });
    const frames = stream[Symbol.asyncIterator]();
    // The bookmark arrived, so the connection had answered; then it breaks.
    expect((await frames.next()).value).toMatchObject({ value: { type: 'BOOKMARK' } });
    watch.destroy();
    const failure = await frames.next().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiConnectionError);
    expect(failure).toMatchObject({ answered: true });
  });

  it('reports a refused WATCH as ApiStatusError before any frame', async () => {
    server.script('WATCH', {
      status: 410,
      body: JSON.stringify({
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version',
      }),
    });
    const error = await api
      .watchPods({ resourceVersion: '1', timeoutSeconds: 300, signal: signal() })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiStatusError);
    expect((error as ApiStatusError).status).toMatchObject({ code: 410, reason: 'Expired' });
  });

  it('closes the connection when its signal aborts, and a pending read rejects with the reason', async () => {
    const controller = new AbortController();
    const stream = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 300,
      signal: controller.signal,
    });
    const watch = await server.watch();
    const reading = collect(stream);
    const reason = new Error('closing');
    controller.abort(reason);
    await expect(reading).rejects.toBe(reason);
    await watch.closed;
  });

  it('closes the connection on close(), even when nobody is reading', async () => {
    const stream = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 300,
      signal: signal(),
    });
    const watch = await server.watch();
    stream.close();
    stream.close();
    await watch.closed;
    expect(watch.isClosed).toBe(true);
  });

  it('closes the connection when the consumer stops iterating', async () => {
    const stream = await api.watchPods({
      resourceVersion: '1',
      timeoutSeconds: 300,
      signal: signal(),
    });
    const watch = await server.watch();
    watch.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '2' } } });
    for await (const _ of stream) break;
    await watch.closed;
  });
});

describe('HttpPodApi over protobuf', () => {
  it('asks for protobuf (JSON accepted) and reads protobuf LIST pages, WATCH frames and Status errors', async () => {
    const protobuf = { 'Content-Type': 'application/vnd.kubernetes.protobuf' };
    const pods = ['a', 'b', 'c'].map((name) =>
      rawPod({ name, labels: { app: 'engine', n: name } }),
    );
    server.script(
      'LIST',
      {
        status: 200,
        headers: protobuf,
        body: encodePodList({
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '61', continue: 'page-2' },
          items: pods.slice(0, 2),
        }),
      },
      {
        status: 200,
        headers: protobuf,
        body: encodePodList({ metadata: { resourceVersion: '61' }, items: pods.slice(2) }),
      },
    );
    const list = await api.listPods({ limit: 2, signal: signal() });
    expect(list.resourceVersion).toBe('61');
    expect(list.pods.map(decodedPod)).toEqual(pods.map((pod) => parsePod(pod)));
    expect(server.requests.map((r) => r.query)).toEqual([
      { limit: '2' },
      { limit: '2', continue: 'page-2' },
    ]);

    const events = [
      { type: 'ADDED', object: rawPod({ name: 'd', resourceVersion: '62' }) },
      { type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: '63' } } },
      { type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '64' }) },
      { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'gone' } },
    ];
    const body = concatBytes(...events.map((event) => encodeWatchFrame(event)));
    server.script('WATCH', {
      status: 200,
      headers: { 'Content-Type': 'application/vnd.kubernetes.protobuf;stream=watch' },
      body,
    });
    let bytes = 0;
    const stream = await api.watchPods({
      resourceVersion: '61',
      timeoutSeconds: 300,
      signal: signal(),
      onBytes: (n) => (bytes += n),
    });
    const frames: WatchFrame[] = [];
    for await (const frame of stream) frames.push(frame);
    expect(frames.map((frame) => readFrame(frame))).toEqual(
      events.map((value) => readFrame({ kind: 'decoded', value })),
    );
    expect(bytes).toBe(body.length);

    server.script('LIST', {
      status: 403,
      headers: protobuf,
      body: encodeStatus({
        status: 'Failure',
        message: 'pods is forbidden: User "system:anonymous" cannot list resource "pods"',
        reason: 'Forbidden',
        details: { kind: 'pods' },
        code: 403,
      }),
    });
    const error = await api.listPods({ signal: signal() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiStatusError);
    expect((error as ApiStatusError).status).toEqual({
      code: 403,
      reason: 'Forbidden',
      message: 'pods is forbidden: User "system:anonymous" cannot list resource "pods"',
      causes: [],
    });

    const accept = 'application/vnd.kubernetes.protobuf, application/json';
    expect(server.requests.map((r) => [r.verb, r.headers.accept])).toEqual([
      ['LIST', accept],
      ['LIST', accept],
      ['WATCH', accept],
      ['LIST', accept],
    ]);
    const jsonOnly = await connectPodApi({
      kubeconfigPath: server.writeKubeconfig(),
      apiContentType: 'json',
    });
    await jsonOnly.listPods({ signal: signal() });
    (
      await jsonOnly.watchPods({ resourceVersion: '1', timeoutSeconds: 1, signal: signal() })
    ).close();
    expect(server.requests.slice(4).map((r) => [r.verb, r.headers.accept])).toEqual([
      ['LIST', 'application/json'],
      ['WATCH', 'application/json'],
    ]);
  });
});

describe('KubernetesReflector over HTTP: an expired continue token', () => {
  it('publishes the full, unpaged LIST at once: no backoff, no relist, no error', async () => {
    server.pods = ['a', 'b', 'c', 'd', 'e'].map((name) => rawPod({ name }));
    server.resourceVersion = '90';
    server.script('LIST', 'normal', { status: 410, body: '{"kind":"Status","code":410}' });
    const clock = new FakeClock();
    const reflector = new KubernetesReflector({ api, clock, listPageSize: 2, random: () => 0 });
    const stream = drain(decodedEvents(reflector.watch()));
    await server.watch(1);
    const first = stream.items[0];
    expect(first?.type).toBe('replace');
    expect(first?.type === 'replace' ? [...first.objects.keys()].sort() : []).toEqual([
      'default/a',
      'default/b',
      'default/c',
      'default/d',
      'default/e',
    ]);
    // No time passed: nothing waited for a backoff.
    expect(clock.now()).toBe(0);
    expect(server.requests.map((r) => [r.verb, r.query.limit, r.query.continue])).toEqual([
      ['LIST', '2', undefined],
      ['LIST', '2', '2'],
      ['LIST', undefined, undefined],
      ['WATCH', undefined, undefined],
    ]);
    expect(reflector.stats()).toMatchObject({ lists: 1, relists: {} });
    expect(reflector.stats().lastError).toBeUndefined();
    await stream.close();
  });
});

describe('--kube-api-compression: gzip on both ways of reading the world', () => {
  /** A reflector reading `server` in `initialList` mode, compressing or not. */
  async function reflectorOn(initialList: 'list' | 'watch-list', apiCompression: boolean) {
    server.gzipWhenAsked = true;
    server.pods = ['a', 'b', 'c'].map((name) => rawPod({ name }));
    server.resourceVersion = '90';
    const compressing = await connectPodApi({
      kubeconfigPath: server.writeKubeconfig(),
      apiCompression,
    });
    const reflector = new KubernetesReflector({
      api: compressing,
      clock: new FakeClock(),
      listPageSize: 2,
      random: () => 0,
      initialList,
    });
    return { reflector, stream: drain(reflector.watch()) };
  }

  const keysOf = (event: unknown) =>
    event && (event as { type: string }).type === 'replace'
      ? [...(event as { objects: Map<string, unknown> }).objects.keys()].sort()
      : [];

  it('asks for gzip on every LIST page, inflates them, and not on the WATCH that follows', async () => {
    const { stream } = await reflectorOn('list', true);
    const watch = await server.watch(1);
    await until(() => stream.items.length === 1, { what: 'the replace' });
    expect(keysOf(stream.items[0])).toEqual(['default/a', 'default/b', 'default/c']);
    expect(server.requests.map((r) => [r.verb, r.headers['accept-encoding']])).toEqual([
      ['LIST', 'gzip'],
      ['LIST', 'gzip'],
      ['WATCH', undefined],
    ]);
    watch.send({ type: 'ADDED', object: rawPod({ name: 'd', resourceVersion: '91' }) });
    await until(() => stream.items.length === 2, { what: 'the event after it' });
    expect(stream.items[1]).toMatchObject({ type: 'upsert', key: 'default/d' });
    await stream.close();
  });

  it('asks for gzip on a watch-list and inflates it as a stream: the initial events, then each later event as it comes', async () => {
    const { stream } = await reflectorOn('watch-list', true);
    const watch = await server.watch(1);
    expect(watch.request.query).toMatchObject({ sendInitialEvents: 'true' });
    expect(watch.request.headers['accept-encoding']).toBe('gzip');
    for (const name of ['a', 'b', 'c']) {
      watch.send({ type: 'ADDED', object: rawPod({ name, resourceVersion: '90' }) });
    }
    watch.send({
      type: 'BOOKMARK',
      object: {
        metadata: { resourceVersion: '90', annotations: { 'k8s.io/initial-events-end': 'true' } },
      },
    });
    await until(() => stream.items.length === 1, { what: 'the replace' });
    expect(keysOf(stream.items[0])).toEqual(['default/a', 'default/b', 'default/c']);
    // The gzip stream is flushed per event: one event arrives alone, not held for the next.
    watch.send({ type: 'DELETED', object: rawPod({ name: 'b', resourceVersion: '92' }) });
    await until(() => stream.items.length === 2, { what: 'the event after it' });
    expect(stream.items[1]).toMatchObject({ type: 'delete', key: 'default/b' });
    expect(server.requests.map((r) => r.verb)).toEqual(['WATCH']);
    await stream.close();
  });

  it('asks for no gzip on either path when off, and the same world is read', async () => {
    const { stream } = await reflectorOn('list', false);
    await server.watch(1);
    await until(() => stream.items.length === 1, { what: 'the replace' });
    expect(keysOf(stream.items[0])).toEqual(['default/a', 'default/b', 'default/c']);
    expect(server.requests.every((r) => r.headers['accept-encoding'] === undefined)).toBe(true);
    await stream.close();
  });

  it('fails a watch-list whose gzip body is corrupt as a connection error, and falls back to LIST', async () => {
    server.script('WATCH', {
      status: 200,
      body: Buffer.from('not gzip at all'),
      headers: { 'Content-Encoding': 'gzip' },
    });
    const { reflector, stream } = await reflectorOn('watch-list', true);
    // The scripted answer is not an open watch: the first one is the WATCH after the LIST.
    await server.watch(1);
    await until(() => stream.items.length === 1, { what: 'the replace' });
    expect(keysOf(stream.items[0])).toEqual(['default/a', 'default/b', 'default/c']);
    expect(server.requests.map((r) => [r.verb, r.query.sendInitialEvents])).toEqual([
      ['WATCH', 'true'],
      ['LIST', undefined],
      ['LIST', undefined],
      ['WATCH', undefined],
    ]);
    expect(reflector.stats()).toMatchObject({ watchListFallbacks: 1, initialList: 'watch-list' });
    expect(reflector.stats().lastError).toMatch(/^watch-list: WATCH: /);
    await stream.close();
  });
});

describe('connectPodApi', () => {
  it('fails clearly for a kubeconfig that does not exist', async () => {
    await expect(connectPodApi({ kubeconfigPath: '/nonexistent/kubeconfig' })).rejects.toThrow(
      /cannot read kubeconfig \/nonexistent\/kubeconfig/,
    );
  });

  it('fails clearly for a context the kubeconfig does not have, listing the ones it has', async () => {
    const path = server.writeKubeconfig({ context: 'here' });
    const failure = connectPodApi({ kubeconfigPath: path, context: 'elsewhere' });
    await expect(failure).rejects.toBeInstanceOf(KubeConfigError);
    await expect(failure).rejects.toThrow(
      'context "elsewhere" is not in the kubeconfig (it has: here)',
    );
  });

  it('uses the named context', async () => {
    const other = await connectPodApi({
      kubeconfigPath: server.writeKubeconfig({ context: 'second' }),
      context: 'second',
    });
    await other.listPods({ signal: signal() });
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a plain-http server without insecure-skip-tls-verify at connect time', async () => {
    const path = server.writeKubeconfig();
    writeFileSync(
      path,
      `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: ${server.url}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n`,
    );
    await expect(connectPodApi({ kubeconfigPath: path })).rejects.toBeInstanceOf(KubeConfigError);
  });
});

describe('peekContinueToken: the next page is requested before this one is parsed', () => {
  const page = (text: string) => Buffer.from(text);
  it("reads the token from the page's metadata when metadata comes before items", () => {
    expect(
      peekContinueToken(
        page(
          '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"eyJydiI6IjkifQ","remainingItemCount":3},"items":[',
        ),
      ),
    ).toBe('eyJydiI6IjkifQ');
  });
  it('answers undefined for a last page, items first, or a token only inside items', () => {
    expect(peekContinueToken(page('{"metadata":{"resourceVersion":"9"},"items":[]}'))).toBe(
      undefined,
    );
    expect(
      peekContinueToken(
        page('{"items":[{"metadata":{"continue":"x"}}],"metadata":{"resourceVersion":"9"}}'),
      ),
    ).toBe(undefined);
    expect(
      peekContinueToken(
        page('{"metadata":{"resourceVersion":"9"},"items":[{"a":{"continue":"x"}}]}'),
      ),
    ).toBe(undefined);
  });
});
