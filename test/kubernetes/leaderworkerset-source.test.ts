import { describe, expect, it } from 'vitest';
import { ApiStatusError } from '../../src/kubernetes/client/api-errors.js';
import type {
  LeaderWorkerSetApi,
  LeaderWorkerSetWatchEvent,
} from '../../src/kubernetes/resources/leaderworkerset-api.js';
import {
  LeaderWorkerSetSource,
  WORKLOAD_API_RECHECK_MS,
} from '../../src/kubernetes/resources/leaderworkerset-source.js';
import type { Workload, WorkloadApiStatus } from '../../src/model/workload.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';
import { FakeClock } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

function lws(name: string, replicas: number | undefined, resourceVersion = '1'): unknown {
  return {
    apiVersion: 'leaderworkerset.x-k8s.io/v1',
    kind: 'LeaderWorkerSet',
    metadata: { namespace: 'ns', name, resourceVersion },
    spec: replicas === undefined ? {} : { replicas },
    status: { readyReplicas: 1, conditions: [{ type: 'Available', status: 'True' }] },
  };
}

/** A watch the test feeds event by event; `end()` is the server's clean timeout. */
class FedWatch implements AsyncIterable<LeaderWorkerSetWatchEvent> {
  readonly #queue: Array<LeaderWorkerSetWatchEvent | 'end'> = [];
  #wake: (() => void) | undefined;
  constructor(readonly signal: AbortSignal) {
    signal.addEventListener('abort', () => this.#wake?.());
  }
  push(...events: Array<LeaderWorkerSetWatchEvent | 'end'>): void {
    this.#queue.push(...events);
    this.#wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<LeaderWorkerSetWatchEvent> {
    for (;;) {
      this.signal.throwIfAborted();
      const next = this.#queue.shift();
      if (next === 'end') return;
      if (next) {
        yield next;
        continue;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }
}

/** `LeaderWorkerSetApi` answering LISTs from a queue of answers, WATCHes as `FedWatch`es. */
class FakeLwsApi implements LeaderWorkerSetApi {
  readonly lists: Array<{ items: unknown[]; resourceVersion: string } | Error> = [];
  readonly watches: Array<{ cursor: string; watch: FedWatch }> = [];
  listCalls = 0;

  async list(): Promise<{ items: unknown[]; resourceVersion: string }> {
    this.listCalls += 1;
    const answer = this.lists.shift() ?? new Error('no LIST answer queued');
    if (answer instanceof Error) throw answer;
    return answer;
  }

  async watch(
    _namespace: string | undefined,
    cursor: string,
    _timeoutSeconds: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<LeaderWorkerSetWatchEvent>> {
    const watch = new FedWatch(signal);
    this.watches.push({ cursor, watch });
    return watch;
  }
}

function refusal(code: number, reason: string): ApiStatusError {
  return new ApiStatusError('LIST', { code, reason, causes: [] });
}

function setup(): {
  api: FakeLwsApi;
  clock: FakeClock;
  logger: RecordingLogger;
  statuses: WorkloadApiStatus[];
  source: LeaderWorkerSetSource;
} {
  const api = new FakeLwsApi();
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const statuses: WorkloadApiStatus[] = [];
  const source = new LeaderWorkerSetSource({
    api,
    namespace: 'ns',
    clock,
    logger,
    onStatus: (status) => statuses.push(status),
  });
  return { api, clock, logger, statuses, source };
}

const signals = new WeakMap<object, AbortController>();

/** Opens a stream as the runtime's source driver does, with a signal of its own. */
function open(source: LeaderWorkerSetSource): AsyncIterator<SourceEvent<Workload>> {
  const controller = new AbortController();
  const stream = source.source(controller.signal)[Symbol.asyncIterator]();
  signals.set(stream, controller);
  return stream;
}

/** Closes a stream as the driver does: its signal first, then `return()`. */
async function close(stream: AsyncIterator<SourceEvent<Workload>>): Promise<void> {
  signals.get(stream)?.abort(new Error('the stream is closed'));
  await stream.return?.();
}

function keysOf(event: SourceEvent<Workload> | undefined): string[] {
  return event?.type === 'replace' ? [...event.objects.keys()] : [];
}

describe('LeaderWorkerSetSource', () => {
  it('lists the whole world first, then follows the watch from the list and its bookmarks', async () => {
    const { api, source, statuses } = setup();
    api.lists.push({ items: [lws('engine', 3), lws('trainer', undefined)], resourceVersion: '10' });
    const stream = open(source);
    const first = await stream.next();
    expect(first.value).toMatchObject({ type: 'replace' });
    const replaced = first.value as Extract<SourceEvent<Workload>, { type: 'replace' }>;
    expect(replaced.objects.get('ns/engine')).toEqual({
      namespace: 'ns',
      name: 'engine',
      uid: null,
      desiredCells: 3,
      readyReplicas: 1,
      conditions: [
        {
          type: 'Available',
          status: 'True',
          reason: null,
          message: null,
          lastTransitionTime: null,
        },
      ],
    });
    expect(replaced.objects.get('ns/trainer')?.desiredCells).toBe(1);
    expect(source.status().state).toBe('available');
    expect(statuses.map((s) => s.state)).toEqual(['available']);

    const next = stream.next();
    await until(() => api.watches.length === 1, { what: 'the watch' });
    expect(api.watches[0]!.cursor).toBe('10');
    api.watches[0]!.watch.push({ type: 'MODIFIED', object: lws('engine', 5, '11') });
    expect((await next).value).toMatchObject({
      type: 'upsert',
      key: 'ns/engine',
      object: { desiredCells: 5 },
    });
    api.watches[0]!.watch.push(
      { type: 'BOOKMARK', resourceVersion: '20' },
      { type: 'DELETED', object: lws('trainer', 1, '21') },
    );
    expect((await stream.next()).value).toEqual({ type: 'delete', key: 'ns/trainer' });
    api.watches[0]!.watch.push('end');
    const after = stream.next();
    after.catch(() => {});
    await until(() => api.watches.length === 2, { what: 'the re-watch' });
    expect(api.watches[1]!.cursor).toBe('21');
    expect(api.listCalls).toBe(1);
    await finishes(close(stream), { what: 'the stream to close' });
    await after.catch(() => {});
  });

  it.each([
    [404, 'NotFound', 'not-served', /does not serve leaderworkersets.leaderworkerset.x-k8s.io/],
    [
      403,
      'Forbidden',
      'forbidden',
      /may not list leaderworkersets.leaderworkerset.x-k8s.io in namespace ns/,
    ],
  ] as const)(
    'publishes an empty world on a %i, says so once, and asks again each minute',
    async (code, reason, state, message) => {
      const { api, clock, logger, source, statuses } = setup();
      api.lists.push(refusal(code, reason), refusal(code, reason), {
        items: [lws('engine', 2)],
        resourceVersion: '5',
      });
      const stream = open(source);
      expect(keysOf((await stream.next()).value)).toEqual([]);
      expect(source.status()).toMatchObject({ state, message: expect.stringMatching(message) });
      const next = stream.next();
      await clock.advance(WORKLOAD_API_RECHECK_MS);
      expect(api.listCalls).toBe(2);
      expect(keysOf((await next).value)).toEqual([]);
      const third = stream.next();
      await clock.advance(WORKLOAD_API_RECHECK_MS);
      expect(keysOf((await third).value)).toEqual(['ns/engine']);
      expect(statuses.map((s) => s.state)).toEqual([state, 'available']);
      expect(logger.mentioning('pool capacity is Unknown', 'warn')).toHaveLength(1);
      const closing = stream.next();
      closing.catch(() => {});
      closing.catch(() => {});
      await finishes(close(stream), { what: 'the stream to close' });
      await closing.catch(() => {});
    },
  );

  it('closes at once while waiting to ask an absent API again', async () => {
    const { api, source, clock } = setup();
    api.lists.push(refusal(404, 'NotFound'));
    const stream = open(source);
    await stream.next();
    const waiting = stream.next();
    const rejected = expect(waiting).rejects.toThrow(/closed/);
    await until(() => clock.pendingTimers === 1, { what: 'the recheck wait' });
    await finishes(close(stream), { what: 'the stream to close' });
    await rejected;
  });

  it('fails the stream on other errors, a watch ERROR and an unreadable frame, so it relists', async () => {
    const { api, source } = setup();
    api.lists.push(new Error('connect ECONNREFUSED'));
    await expect(open(source).next()).rejects.toThrow(/ECONNREFUSED/);
    expect(source.status()).toMatchObject({ state: 'failing' });

    api.lists.push({ items: [], resourceVersion: '1' });
    const stream = open(source);
    await stream.next();
    const next = stream.next();
    await until(() => api.watches.length === 1, { what: 'the watch' });
    api.watches[0]!.watch.push({
      type: 'ERROR',
      status: { code: 410, reason: 'Gone', causes: [] },
    });
    await expect(next).rejects.toThrow(/HTTP 410 Gone/);

    api.lists.push({ items: [], resourceVersion: '1' });
    const again = open(source);
    await again.next();
    const garbled = again.next();
    await until(() => api.watches.length === 2, { what: 'the second watch' });
    api.watches[1]!.watch.push({ type: 'GARBLED', error: 'a watch frame without a type' });
    await expect(garbled).rejects.toThrow(/without a type/);
  });

  it('leaves out a LWS it cannot read, with a warning, and drops it when it turns unreadable', async () => {
    const { api, source, logger } = setup();
    api.lists.push({ items: [lws('engine', 2), lws('huge', 1_000_000)], resourceVersion: '1' });
    const stream = open(source);
    expect(keysOf((await stream.next()).value)).toEqual(['ns/engine']);
    expect(logger.mentioning('more than the 100000 cells a pool may have', 'warn')).toHaveLength(1);
    const next = stream.next();
    await until(() => api.watches.length === 1, { what: 'the watch' });
    api.watches[0]!.watch.push({ type: 'MODIFIED', object: lws('engine', -1, '2') });
    expect((await next).value).toEqual({ type: 'delete', key: 'ns/engine' });
    const closing = stream.next();
    closing.catch(() => {});
    await finishes(close(stream), { what: 'the stream to close' });
    await closing.catch(() => {});
  });
});
