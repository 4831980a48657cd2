import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeConfigError } from '../../src/kubernetes/client/connection.js';
import { WorkerEventStream } from '../../src/kubernetes/reflector-worker/main-thread-stream.js';
import type {
  ChangeEvent,
  MainMessage,
  ReflectorTaskOptions,
  WorkerMessage,
} from '../../src/kubernetes/reflector-worker/protocol.js';
import {
  MAX_CHUNKS_IN_FLIGHT,
  runReflectorTask,
} from '../../src/kubernetes/reflector-worker/worker-thread-task.js';
import type { ListPodsOptions, PodApi } from '../../src/kubernetes/resources/pod-api.js';
import type { Pod } from '../../src/model/pod.js';
import { drain } from '../support/drain.js';
import { encodedPod, FakePodApi } from '../support/fake-pod-api.js';
import { pod, rawPod } from '../support/pods.js';
import { until as waitUntil } from '../support/until.js';

/** `until` from test/support, named apart from the channel's own `until`. */
const waitFor = (condition: () => boolean, what: string): Promise<void> =>
  waitUntil(condition, { what });

const options: ReflectorTaskOptions = { cluster: {}, replaceChunkSize: 2, maxListBytes: 1 << 30 };
const ports: MessagePort[] = [];

afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

/**
 * A message of the test's own, never one of the protocol's: the task ignores kinds it does not
 * know, and the main side's recorder keeps it apart.
 */
interface Marker {
  kind: 'test-marker';
  id: number;
}

/** The main side of a task's port, recording what the worker side posts. */
function channel() {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  const received: Array<WorkerMessage | Marker> = [];
  const waiters: Array<() => void> = [];
  port1.on('message', (message: WorkerMessage | Marker) => {
    received.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  const until = async (test: () => boolean): Promise<void> => {
    while (!test()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const send = (message: MainMessage) => port1.postMessage(message);
  let markers = 0;
  let echoing = false;
  /**
   * Resolves once the task has handled every message sent to it so far, and whatever it posted
   * in answer has arrived: a marker goes to the worker side, where a listener registered after the
   * task's own (so called after it for each message) sends it straight back, and a port delivers
   * in order. What a test asserts has not happened after this did not happen in answer to what
   * it sent. Call it only once the task runs, so its listener comes first.
   */
  const flushed = async (): Promise<void> => {
    if (!echoing) {
      echoing = true;
      port2.on('message', (message: MainMessage | Marker) => {
        if (message.kind === 'test-marker') port2.postMessage(message);
      });
    }
    markers += 1;
    const id = markers;
    port1.postMessage({ kind: 'test-marker', id } satisfies Marker);
    await until(() => received.some((m) => m.kind === 'test-marker' && m.id === id));
  };
  return { main: port1, worker: port2, received, until, send, flushed };
}

function decode<T>(bytes: Uint8Array | undefined): T {
  return JSON.parse(new TextDecoder().decode(bytes)) as T;
}

function ofKind<K extends WorkerMessage['kind']>(
  messages: ReadonlyArray<WorkerMessage | Marker>,
  kind: K,
) {
  return messages.filter((m): m is Extract<WorkerMessage, { kind: K }> => m.kind === kind);
}

describe('runReflectorTask', () => {
  it('sends the LIST in chunks, at most MAX_CHUNKS_IN_FLIGHT unacknowledged, and its end after the last ack', async () => {
    const api = new FakePodApi();
    // Two chunks more than the window holds (two pods a chunk), the last one short.
    const names = Array.from({ length: 2 * MAX_CHUNKS_IN_FLIGHT + 3 }, (_, i) => `p${i}`);
    api.world = { pods: names.map((name) => pod({ name })), resourceVersion: '9' };
    const { worker, received, until, send, flushed } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => api);
    await until(() => ofKind(received, 'replace-chunk').length === MAX_CHUNKS_IN_FLIGHT);
    await flushed();
    expect(ofKind(received, 'replace-chunk')).toHaveLength(MAX_CHUNKS_IN_FLIGHT);
    // Each ack frees one place.
    send({ kind: 'ack' });
    await until(() => ofKind(received, 'replace-chunk').length === MAX_CHUNKS_IN_FLIGHT + 1);
    send({ kind: 'ack' });
    await until(() => ofKind(received, 'replace-chunk').length === MAX_CHUNKS_IN_FLIGHT + 2);
    await flushed();
    expect(ofKind(received, 'replace-chunk')).toHaveLength(MAX_CHUNKS_IN_FLIGHT + 2);
    // Every chunk is out, MAX_CHUNKS_IN_FLIGHT of them unacknowledged; the end waits until the
    // main side has decoded them all.
    for (let ack = 0; ack < MAX_CHUNKS_IN_FLIGHT - 1; ack += 1) send({ kind: 'ack' });
    await flushed();
    expect(ofKind(received, 'replace-end')).toHaveLength(0);
    send({ kind: 'ack' });
    await until(() => ofKind(received, 'replace-end').length === 1);
    expect(
      ofKind(received, 'replace-chunk').flatMap((m) =>
        decode<Pod[]>(m.pods).map((p) => p.metadata.name),
      ),
    ).toEqual(names);
    expect(decode<Pod[]>(ofKind(received, 'replace-chunk').at(-1)?.pods)).toHaveLength(1);
    expect(ofKind(received, 'replace-end')[0]).toMatchObject({
      count: names.length,
      stats: { lists: 1, cursor: '9' },
    });
    expect(api.log).toEqual(['LIST', 'WATCH rv=9']);
    send({ kind: 'close' });
    await expect(task).resolves.toEqual({ closed: true });
  });

  it('connects with the first request’s settings the main thread resolved, when the task has them', async () => {
    const api = new FakePodApi();
    const firstRequest = {
      server: 'https://127.0.0.1:6443',
      scheme: 'https' as const,
      headers: { Authorization: 'Bearer from-the-main-thread' },
      material: {},
    };
    const connected: unknown[] = [];
    const { worker, received, until, send } = channel();
    const task = runReflectorTask({ port: worker, options, firstRequest }, async (...args) => {
      connected.push(args);
      return api;
    });
    await until(() => ofKind(received, 'replace-end').length === 1);
    expect(connected).toEqual([[options.cluster, firstRequest]]);
    send({ kind: 'close' });
    await expect(task).resolves.toEqual({ closed: true });
  });

  it('posts the frames of one turn as one batch, with the stats after them', async () => {
    const api = new FakePodApi();
    const { worker, received, until, send } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => api);
    await until(() => ofKind(received, 'replace-end').length === 1);
    const before = ofKind(received, 'batch').length;
    api.watch
      .push({ type: 'ADDED', object: rawPod({ name: 'a', resourceVersion: '2' }) })
      .push({ type: 'MODIFIED', object: rawPod({ name: 'a', resourceVersion: '3' }) })
      .push({ type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '4' }) });
    await until(() => ofKind(received, 'batch').some((b) => b.events !== undefined));
    const batches = ofKind(received, 'batch')
      .slice(before)
      .filter((b) => b.events !== undefined);
    expect(batches).toHaveLength(1);
    expect(decode<ChangeEvent[]>(batches[0]?.events).map((e) => e.type)).toEqual([
      'upsert',
      'upsert',
      'delete',
    ]);
    expect(batches[0]?.stats).toMatchObject({
      cursor: '4',
      events: { ADDED: 1, MODIFIED: 1, DELETED: 1 },
    });
    send({ kind: 'close' });
    await task;
  });

  it('closes its reflector, and with it the watch, when asked to close', async () => {
    const api = new FakePodApi();
    const { worker, received, until, send } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => api);
    await until(() => ofKind(received, 'replace-end').length === 1);
    await waitFor(() => api.watches.at(-1)?.awaitingFrame === true, 'the reflector to watch');
    expect(api.watch.released).toBe(false);
    send({ kind: 'close' });
    await task;
    expect(api.watch.released).toBe(true);
  });

  it('stops when the main side of the port goes away', async () => {
    const api = new FakePodApi();
    const { main, worker, received, until } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => api);
    await until(() => ofKind(received, 'replace-end').length === 1);
    main.close();
    await task;
    expect(api.watch.released).toBe(true);
  });

  it('stops sending a replace midway when closed while waiting for an acknowledgement', async () => {
    const api = new FakePodApi();
    api.world = { pods: ['a', 'b', 'c'].map((name) => pod({ name })), resourceVersion: '9' };
    const { worker, received, until, send } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => api);
    await until(() => ofKind(received, 'replace-chunk').length === 1);
    send({ kind: 'close' });
    await task;
    expect(ofKind(received, 'replace-end')).toEqual([]);
    expect(api.log).toEqual(['LIST']);
  });

  it('fails when it cannot reach a cluster, and closes its port', async () => {
    const { worker } = channel();
    let closed = false;
    worker.on('close', () => {
      closed = true;
    });
    const failure = runReflectorTask({ port: worker, options }, async () => {
      throw new KubeConfigError('no cluster configuration found');
    });
    await expect(failure).rejects.toThrow('no cluster configuration found');
    await waitFor(() => closed, 'the port to close');
  });

  it('feeds a WorkerEventStream end to end: replace, then changes', async () => {
    const api = new FakePodApi();
    api.world = { pods: ['a', 'b', 'c'].map((name) => pod({ name })), resourceVersion: '9' };
    const { port1, port2 } = new MessageChannel();
    const task = runReflectorTask({ port: port2, options }, async () => api);
    const stream = new WorkerEventStream({
      port: port1,
      task,
      abortTask: () => {},
      maxBufferedEvents: 100,
      closeGraceMs: 1_000,
    });
    const events = drain({ [Symbol.asyncIterator]: () => stream });
    await waitFor(() => api.watches.length > 0, 'the WATCH to open');
    api.watch.push({ type: 'DELETED', object: rawPod({ name: 'b', resourceVersion: '10' }) });
    await waitFor(() => events.items.length >= 2, 'the change to reach the stream');
    expect(events.items[0]?.type === 'replace' && [...events.items[0].objects.keys()]).toEqual([
      'default/a',
      'default/b',
      'default/c',
    ]);
    expect(events.items[1]).toMatchObject({ type: 'delete', key: 'default/b' });
    await events.close();
    await task;
    expect(api.watch.released).toBe(true);
  });
});

/**
 * A LIST of two pages of pods named `first` and `second`: page 1 is reported at once, page 2 once
 * the test calls `nextPage` (and `beforeSecond` is done); the watch is a plain fake's.
 */
function twoPages(
  first: string[],
  second: string[],
  beforeSecond: (options: ListPodsOptions) => Promise<void> = async () => {},
): { paged: PodApi; nextPage: () => void } {
  const api = new FakePodApi();
  let nextPage: () => void = () => {};
  const secondPage = new Promise<void>((resolve) => {
    nextPage = resolve;
  });
  const paged: PodApi = {
    listPods: async (listOptions) => {
      api.requests.push({ verb: 'LIST', at: 0 } as never);
      const one = first.map((name) => encodedPod(pod({ name })));
      listOptions.onPage?.({ pages: 1, pods: one.length }, one);
      await secondPage;
      await beforeSecond(listOptions);
      const two = second.map((name) => encodedPod(pod({ name })));
      listOptions.onPage?.({ pages: 2, pods: one.length + two.length }, two);
      return { pods: [...one, ...two], resourceVersion: '9' };
    },
    watchPods: (watchOptions) => api.watchPods(watchOptions),
  };
  return { paged, nextPage };
}

describe('runReflectorTask: a paged LIST is streamed while it runs', () => {
  it('sends each page as chunks before the LIST completes, and replace-end only after the last page', async () => {
    const { paged, nextPage } = twoPages(['a', 'b', 'c'], ['d']);
    const { worker, received, until, send, flushed } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => paged);
    await until(() => ofKind(received, 'replace-chunk').length === 1);
    send({ kind: 'ack' });
    await until(() => ofKind(received, 'replace-chunk').length === 2);
    send({ kind: 'ack' });
    await flushed();
    // Page 1 is all on the main side while page 2 is still "transferring".
    expect(ofKind(received, 'replace-end')).toHaveLength(0);
    nextPage();
    await until(() => ofKind(received, 'replace-chunk').length === 3);
    send({ kind: 'ack' });
    await until(() => ofKind(received, 'replace-end').length === 1);
    const chunks = ofKind(received, 'replace-chunk');
    expect(chunks.map((m) => decode<Pod[]>(m.pods).map((p) => p.metadata.name))).toEqual([
      ['a', 'b'],
      ['c'],
      ['d'],
    ]);
    expect(chunks.map((m) => m.restart ?? false)).toEqual([true, false, false]);
    expect(ofKind(received, 'replace-end')[0]).toMatchObject({ count: 4 });
    send({ kind: 'close' });
    await expect(task).resolves.toEqual({ closed: true });
  });
});

describe('runReflectorTask: a LIST over the worker memory budget', () => {
  it('is refused before it is published, and the reflector lists again', async () => {
    const { paged, nextPage } = twoPages(['a', 'b'], ['c', 'd']);
    nextPage();
    const { worker, received, until, send } = channel();
    // Room for about two pods' JSON: the second page goes over.
    const budget = 2 * new TextEncoder().encode(JSON.stringify(pod({ name: 'a' }))).length + 10;
    const task = runReflectorTask(
      {
        port: worker,
        options: { ...options, maxListBytes: budget, backoff: { initialMs: 50, maxMs: 50 } },
      },
      async () => paged,
    );
    // Every chunk acknowledged as it comes, as the main side does.
    let acked = 0;
    const ackArrived = (): void => {
      for (; acked < ofKind(received, 'replace-chunk').length; acked += 1) send({ kind: 'ack' });
    };
    // Two LISTs begun (a chunk marked restart each), and none published.
    await until(() => {
      ackArrived();
      return ofKind(received, 'replace-chunk').filter((m) => m.restart).length >= 2;
    });
    expect(ofKind(received, 'replace-end')).toHaveLength(0);
    // The refusal reaches the main side with the backoff after it, not only with the next LIST.
    await until(() => {
      ackArrived();
      return ofKind(received, 'batch').some(
        (m) => m.stats.phase === 'backoff' && /memory budget/.test(m.stats.lastError ?? ''),
      );
    });
    send({ kind: 'close' });
    await expect(task).resolves.toEqual({ closed: true });
  });
});

describe('runReflectorTask: stats while a LIST streams', () => {
  it('sends the stats with the chunks, not in messages of their own per socket read', async () => {
    const { paged, nextPage } = twoPages(['a', 'b'], ['c'], async (listOptions) => {
      // Page 2's bytes arrive in many reads, each a stats change in the reflector.
      for (let read = 0; read < 50; read += 1) {
        listOptions.onBytes?.(1_000);
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
    const { worker, received, until, send } = channel();
    const task = runReflectorTask({ port: worker, options }, async () => paged);
    await until(() => ofKind(received, 'replace-chunk').length === 1);
    const batchesBefore = ofKind(received, 'batch').length;
    send({ kind: 'ack' });
    nextPage();
    await until(() => ofKind(received, 'replace-chunk').length === 2);
    send({ kind: 'ack' });
    await until(() => ofKind(received, 'replace-end').length === 1);
    // Fifty reads, and not one stats message between the LIST's first chunk and its end.
    expect(ofKind(received, 'batch').length).toBe(batchesBefore);
    const [first, second] = ofKind(received, 'replace-chunk');
    expect(first?.stats.listProgress).toMatchObject({ pages: 1, pods: 2 });
    expect(second?.stats.bytesDecoded).toBeGreaterThanOrEqual(50_000);
    expect(ofKind(received, 'replace-end')[0]?.stats.lists).toBe(1);
    // Once the LIST is published, stats travel on their own again (the watch opening).
    await until(() => ofKind(received, 'batch').length > batchesBefore);
    send({ kind: 'close' });
    await expect(task).resolves.toEqual({ closed: true });
  });
});

describe('runReflectorTask: many relists on one stream', () => {
  it('leaves no listener behind per streamed relist (no EventTarget leak warning after a dozen)', async () => {
    const api = new FakePodApi();
    api.world = { pods: [pod({ name: 'a' })], resourceVersion: '1' };
    const paged: PodApi = {
      listPods: async (listOptions) => {
        const list = await api.listPods(listOptions);
        listOptions.onPage?.({ pages: 1, pods: list.pods.length }, list.pods);
        return list;
      },
      watchPods: (watchOptions) => api.watchPods(watchOptions),
    };
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      const { worker, received, until, send } = channel();
      const task = runReflectorTask(
        {
          port: worker,
          options: { ...options, replaceChunkSize: 10, backoff: { initialMs: 1, maxMs: 1 } },
        },
        async () => paged,
      );
      for (let relist = 1; relist <= 12; relist += 1) {
        await until(() => ofKind(received, 'replace-chunk').length === relist);
        send({ kind: 'ack' });
        await until(() => ofKind(received, 'replace-end').length === relist);
        await until(() => api.watches.length === relist);
        api.watch.push({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
      }
      await until(() => ofKind(received, 'replace-chunk').length === 13);
      send({ kind: 'close' });
      await expect(task).resolves.toEqual({ closed: true });
      // Node emits 'warning' from a process.nextTick queued when the warning is raised; a tick
      // queued now runs after every such one, so each warning the relists raised has been seen.
      await new Promise<void>((resolve) => process.nextTick(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.includes('MaxListenersExceeded'))).toEqual([]);
  });
});
