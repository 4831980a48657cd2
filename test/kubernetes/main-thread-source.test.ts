/**
 * The worker-backed source with a real worker thread (the compiled build, as in production) against
 * a loopback fake API server.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultCompileCacheDir } from '../../src/kubernetes/reflector-worker/compile-cache.js';
import {
  WorkerPodSource,
  type WorkerPodSourceOptions,
} from '../../src/kubernetes/reflector-worker/main-thread-source.js';
import { ReflectorThreads } from '../../src/kubernetes/reflector-worker/reflector-threads.js';
import type { Pod } from '../../src/model/pod.js';
import { ReconcileLoop } from '../../src/runtime/reconcile-loop.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';
import { type Drain, drain } from '../support/drain.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { FakeClock } from '../support/fake-clock.js';
import { rawPod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { until } from '../support/until.js';

let server: FakeApiServer;
const sources: WorkerPodSource[] = [];

beforeEach(async () => {
  server = await FakeApiServer.start();
});

afterEach(async () => {
  await Promise.all(sources.splice(0).map((source) => source.close()));
  await server.close();
});

function workerSource(options: Partial<WorkerPodSourceOptions> = {}): WorkerPodSource {
  const source = new WorkerPodSource({ kubeconfigPath: server.writeKubeconfig(), ...options });
  sources.push(source);
  return source;
}

/**
 * Waits for a condition on real threads and sockets, re-checked every turn (test/support/until),
 * failing naming `what`. The ceiling is generous: a worker thread starts, and a loaded two-core
 * machine may run it slowly.
 */
function waitFor(what: string, condition: () => boolean): Promise<void> {
  return until(condition, { what, withinMs: 15_000 });
}

/**
 * A stream from `source` whose signal aborts closes its watch in the worker and ends cleanly,
 * without the consumer calling `return()`, and the source goes back to idle.
 */
async function expectAbortToCloseTheWatch(source: WorkerPodSource): Promise<void> {
  const opened = new AbortController();
  const stream = drain(source.source(opened.signal));
  const watch = await server.watch();
  opened.abort();
  await watch.closed;
  await waitFor('the stream to end', () => stream.done);
  expect(stream.error).toBeUndefined();
  await waitFor('the idle phase', () => source.stats().phase === 'idle');
}

function replaceKeys(stream: Drain<SourceEvent<Pod>>, index: number): string[] {
  const event = stream.items[index];
  if (event?.type !== 'replace') throw new Error(`event ${index} is ${event?.type}, not a replace`);
  return [...event.objects.keys()].sort();
}

describe('WorkerPodSource: the worker compile cache', () => {
  /** One sync by a worker, then the source closed: the thread ends, and Node writes its cache. */
  async function syncOnce(options: Partial<WorkerPodSourceOptions>): Promise<void> {
    server.pods = [rawPod({ name: 'a' })];
    const source = workerSource(options);
    const stream = drain(source.source(new AbortController().signal));
    await server.watch();
    await waitFor('the replace', () => stream.items.length === 1);
    await stream.close();
    await source.close();
  }

  it('keeps the worker thread compiled code in the directory it is given', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'pool-controller-test-')), 'cache');
    await syncOnce({ compileCacheDir: dir });
    // Into a folder per Node version, as the thread ends.
    const stored = () => (existsSync(dir) ? readdirSync(dir, { recursive: true }).length : 0);
    await waitFor('the compile cache written', () => stored() > 1);
  });

  it('writes the cache after the first sync, while the worker still runs', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'pool-controller-test-')), 'cache');
    server.pods = [rawPod({ name: 'a' })];
    const source = workerSource({ compileCacheDir: dir });
    const stream = drain(source.source(new AbortController().signal));
    await waitFor('the replace', () => stream.items.length === 1);
    const stored = () => (existsSync(dir) ? readdirSync(dir, { recursive: true }).length : 0);
    await waitFor('the compile cache written', () => stored() > 1);
    await stream.close();
  });

  it('keeps none when told not to', async () => {
    const before = new Set(readdirSync(tmpdir()));
    await syncOnce({ compileCacheDir: false });
    const created = readdirSync(tmpdir()).filter((name) => !before.has(name));
    expect(created.filter((name) => name.startsWith('pool-controller-compile-cache'))).toEqual([]);
  });

  it('defaults to a folder of its own under the OS temp dir', () => {
    expect(defaultCompileCacheDir()).toMatch(
      new RegExp(`^${tmpdir().replace(/[/\\]/g, '.')}.pool-controller-compile-cache-\\d+$`),
    );
  });
});

describe('WorkerPodSource', () => {
  it('streams the LIST as one replace and WATCH frames as changes, from a worker thread', async () => {
    server.pods = ['a', 'b', 'c'].map((name) => rawPod({ name }));
    server.resourceVersion = '5';
    const source = workerSource({ labelSelector: 'app=engine', replaceChunkSize: 2 });
    const stream = drain(source.source(new AbortController().signal));
    const watch = await server.watch();
    await waitFor('the replace', () => stream.items.length === 1);
    expect(replaceKeys(stream, 0)).toEqual(['default/a', 'default/b', 'default/c']);
    expect(watch.request.query).toMatchObject({
      resourceVersion: '5',
      labelSelector: 'app=engine',
    });

    watch.send({ type: 'ADDED', object: rawPod({ name: 'd', resourceVersion: '6' }) });
    watch.send({ type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '7' }) });
    await waitFor('two changes', () => stream.items.length === 3);
    expect(stream.items.slice(1).map((e) => [e.type, 'key' in e ? e.key : ''])).toEqual([
      ['upsert', 'default/d'],
      ['delete', 'default/a'],
    ]);
    await waitFor('stats at the new cursor', () => source.stats().cursor === '7');
    expect(source.stats()).toMatchObject({
      phase: 'watching',
      healthy: true,
      lists: 1,
      watchOpens: 1,
      events: { ADDED: 1, DELETED: 1 },
    });
    expect(source.stats().bytesDecoded).toBeGreaterThan(0);
    await stream.close();
  });

  it('sends the first request with the credentials the main thread resolved, over a real worker', async () => {
    server.pods = [rawPod({ name: 'a' })];
    const source = workerSource({ kubeconfigPath: server.writeKubeconfig({ token: 'main-read' }) });
    const stream = drain(source.source(new AbortController().signal));
    await server.watch();
    await waitFor('the replace', () => stream.items.length === 1);
    // Every request of the stream, the first from the main thread's settings and the rest from the
    // worker's own reading of the kubeconfig, carries the same token.
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
    for (const request of server.requests) {
      expect(request.headers.authorization).toBe('Bearer main-read');
    }
    await stream.close();
  });

  it('leaves out LIST items a broken server sends from outside the namespace or the selector', async () => {
    // The fake answers every LIST with all its pods, whatever the request's scope: as a broken
    // server or a proxy would. Two pages, so the strangers come in the pages the worker streams.
    server.pods = [
      rawPod({ name: 'a', namespace: 'pools' }),
      rawPod({ name: 'victim', namespace: 'kube-system' }),
      rawPod({ name: 'b', namespace: 'pools' }),
      rawPod({ name: 'stranger', namespace: 'pools', labels: { app: 'other' } }),
    ];
    server.resourceVersion = '9';
    const logger = new RecordingLogger();
    const source = workerSource({
      namespace: 'pools',
      labelSelector: 'app=engine',
      listPageSize: 2,
      replaceChunkSize: 1,
      logger,
    });
    const stream = drain(source.source(new AbortController().signal));
    const watch = await server.watch();
    await waitFor('the replace', () => stream.items.length === 1);
    expect(replaceKeys(stream, 0)).toEqual(['pools/a', 'pools/b']);
    // One LIST of two pages, then the WATCH from its version: the replace's count held, no reopen.
    expect(server.requests.map((r) => [r.verb, r.query.continue ?? ''])).toEqual([
      ['LIST', ''],
      ['LIST', '2'],
      ['WATCH', ''],
    ]);
    expect(watch.request.query).toMatchObject({ resourceVersion: '9' });
    await waitFor('both drops counted', () => {
      return source.stats().droppedEvents['out-of-scope'] === 2;
    });
    expect(logger.mentioning('reflector dropped a LIST item', 'warn').map((e) => e.obj)).toEqual([
      { key: 'kube-system/victim', namespace: 'pools' },
      { key: 'pools/stranger' },
    ]);
  });

  it('closes the connection in the worker when the stream is closed', async () => {
    const source = workerSource();
    const stream = drain(source.source(new AbortController().signal));
    const watch = await server.watch();
    await stream.close();
    await watch.closed;
    expect(stream.error).toBeUndefined();
    await waitFor('the stopped phase', () => source.stats().phase === 'idle');
  });

  it('closes the connection in the worker when the stream’s signal aborts, without return()', async () => {
    await expectAbortToCloseTheWatch(workerSource());
  });

  it('fails the stream when the worker thread dies mid-stream; the next stream relists', async () => {
    server.pods = [rawPod({ name: 'a' })];
    const source = workerSource();
    const first = drain(source.source(new AbortController().signal));
    await server.watch(1);
    await waitFor('the first replace', () => first.items.length === 1);
    // The server has the WATCH before the worker has its answer and reports it: a crash before
    // that report would lose the count, so the crash comes after it.
    await waitFor('the first watch in the stats', () => source.stats().watchOpens === 1);
    await source.terminateWorker();
    await waitFor('the stream to fail', () => first.done);
    expect(first.error).toBeInstanceOf(Error);
    expect(String(first.error)).toContain('reflector worker failed');

    server.pods = [rawPod({ name: 'b' })];
    const second = drain(source.source(new AbortController().signal));
    await server.watch(2);
    await waitFor('the second replace', () => second.items.length === 1);
    expect(replaceKeys(second, 0)).toEqual(['default/b']);
    await waitFor('the second watch in the stats', () => source.stats().healthy);
    expect(source.stats()).toMatchObject({ lists: 2, watchOpens: 2, phase: 'watching' });
    expect(source.stats().lastError).toContain('reflector worker failed');
    await second.close();
  });

  it('fails a stream whose thread dies while starting; the next stream runs', async () => {
    server.pods = [rawPod({ name: 'a' })];
    const source = workerSource();
    const first = drain(source.source(new AbortController().signal));
    await server.watch(1);
    await waitFor('the first replace', () => first.items.length === 1);
    // When the crashed thread's exit is handled, piscina has already begun starting its
    // replacement: the second stream's task is queued for a thread that is still booting, and the
    // second termination kills that thread before it ever takes the task.
    await source.terminateWorker();
    const second = drain(source.source(new AbortController().signal));
    await source.terminateWorker();
    await waitFor('the second stream to fail', () => second.done);
    expect(String(second.error)).toMatch(/reflector worker/);

    const third = drain(source.source(new AbortController().signal));
    await server.watch(2);
    await waitFor('the third replace', () => third.items.length === 1);
    expect(replaceKeys(third, 0)).toEqual(['default/a']);
    await third.close();
    await first.finished;
  });

  it('replaces a thread that does not start a stream within the start timeout', async () => {
    const clock = new FakeClock();
    const source = workerSource({ clock, streamStartTimeoutMs: 1_000 });
    // Piscina gives a thread only one abortable task at a time, so a second stream waits in its
    // queue while the first runs: from the source's side, exactly what a wedged thread looks like.
    const running = drain(source.source(new AbortController().signal));
    await server.watch(1);
    const waiting = drain(source.source(new AbortController().signal));
    await clock.advance(1_000);
    await waitFor('the waiting stream to fail', () => waiting.done);
    expect(String(waiting.error)).toContain('no reflector worker thread started the stream');
    await waitFor('the running stream to fail', () => running.done);
    expect(String(running.error)).toContain('reflector worker failed');

    const next = drain(source.source(new AbortController().signal));
    await server.watch(2);
    await waitFor('the next replace', () => next.items.length === 1);
    await next.close();
  });

  it('fails the stream when the worker runs out of memory', async () => {
    const source = workerSource({
      resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 },
    });
    // 100,000 pods in pages of 500: the worker's heap fills gradually (a LIST is held whole until
    // it is complete) and the worker, not the process, runs out of memory. (One single allocation
    // far past the limit, such as a 200 MB string, would be a fatal error for the whole process:
    // resourceLimits bounds growth, not one giant request.) 32 MB: a started worker holds a
    // fraction of it, so the LIST still fills the rest over a dozen pages or more; twice that took twice as
    // long, most of it V8 collecting a nearly full heap again and again. A held pod's JSON is off
    // the heap, but its key and version are strings on it: a 1,000-character uid makes each pod
    // weigh about as much on the heap as its JSON does, so the heap fills before the LIST reaches
    // its byte budget (which refuses the LIST instead, tested in worker-thread-task.test.ts).
    const one = rawPod({ name: 'same', uid: 'u'.repeat(1_000) });
    server.pods = Array.from({ length: 100_000 }, () => one);
    const stream = drain(source.source(new AbortController().signal));
    // Awaited, not polled: the worker takes seconds to fill its heap, and a check every turn
    // would keep a core busy that the worker and the fake server need. The test's own timeout
    // bounds it.
    await stream.finished;
    expect(String(stream.error)).toMatch(/memory/i);
  }, 90_000);

  it('fails the stream with a clear message when the kubeconfig cannot be read', async () => {
    const source = workerSource({ kubeconfigPath: '/nonexistent/kubeconfig' });
    const stream = drain(source.source(new AbortController().signal));
    await waitFor('the stream to fail', () => stream.done);
    expect(String(stream.error)).toContain('cannot read kubeconfig /nonexistent/kubeconfig');
  });

  it('feeds a ReconcileLoop that recovers from a worker crash, dropping a pod deleted meanwhile', async () => {
    server.pods = [
      rawPod({ name: 'a1', labels: { cell: 'a' } }),
      rawPod({ name: 'a2', labels: { cell: 'a' } }),
      rawPod({ name: 'b1', labels: { cell: 'b' } }),
    ];
    const source = workerSource();
    const reconciled: string[] = [];
    const loop = new ReconcileLoop<Pod>({
      source: source.source,
      keyMap: (pod) => pod.metadata.labels.cell,
      reconcile: async (key) => {
        reconciled.push(key);
      },
      sourceRetryDelayMs: 50,
      // The crash is the point here: logged, not raised as the no-logger process warning.
      logger: new RecordingLogger(),
    });
    await loop.start();
    const members = (cell: string) => loop.getByParent(cell).map((pod) => pod.metadata.name);
    expect(members('a')).toEqual(['a1', 'a2']);
    expect(members('b')).toEqual(['b1']);

    await source.terminateWorker();
    // While the reflector is down, a1 is deleted: no DELETED frame will ever say so.
    server.pods = server.pods.filter(
      (pod) => (pod as { metadata: { name: string } }).metadata.name !== 'a1',
    );
    await waitFor('the relist to drop a1', () => members('a').join() === 'a2');
    expect(source.stats().lists).toBe(2);
    await loop.stop();
    await waitFor('the stream to close', () => source.stats().phase === 'idle');
  });

  it('refuses new streams once closed, and reports itself stopped', async () => {
    const source = workerSource();
    expect(source.stats().phase).toBe('idle');
    await source.close();
    await source.close();
    expect(source.stats().phase).toBe('stopped');
    const stream = drain(source.source(new AbortController().signal));
    await waitFor('the stream to fail', () => stream.done);
    expect(String(stream.error)).toContain('closed');
  });

  it('rejects nonsensical tunables at construction', () => {
    expect(() => new WorkerPodSource({ replaceChunkSize: 0 })).toThrow(RangeError);
    expect(() => new WorkerPodSource({ idleTimeoutMs: -1 })).toThrow(RangeError);
    expect(() => new WorkerPodSource({ streamStartTimeoutMs: 0 })).toThrow(RangeError);
  });
});

describe('WorkerPodSource: the first stream, opened before the loop asks for it', () => {
  /**
   * A source on threads whose tasks are counted as they are handed to piscina: one task is one
   * stream, so the count says whether a consumer took a stream over or had one opened for it.
   */
  function countingSource(options: Partial<WorkerPodSourceOptions> = {}): {
    source: WorkerPodSource;
    tasks: () => number;
  } {
    const threads = new ReflectorThreads({ compileCacheDir: false });
    const run = threads.pool.run.bind(threads.pool);
    let tasks = 0;
    threads.pool.run = (task, runOptions) => {
      tasks += 1;
      return run(task, runOptions);
    };
    return { source: workerSource({ ...options, threads }), tasks: () => tasks };
  }

  const lists = (): number => server.requests.filter((r) => r.verb === 'LIST').length;

  it('hands the first consumer the early stream, with what arrived before it, in order', async () => {
    server.pods = [rawPod({ name: 'a' })];
    server.resourceVersion = '5';
    const { source, tasks } = countingSource();
    source.openFirstStream();
    const watch = await server.watch();
    await waitFor('the replace buffered', () => source.queuedItems() === 1);
    watch.send({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '6' }) });
    watch.send({ type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '7' }) });
    await waitFor('both changes buffered', () => source.queuedItems() === 3);

    const stream = drain(source.source(new AbortController().signal));
    await waitFor('the buffered events', () => stream.items.length === 3);
    expect(replaceKeys(stream, 0)).toEqual(['default/a']);
    expect(stream.items.slice(1).map((e) => [e.type, 'key' in e ? e.key : ''])).toEqual([
      ['upsert', 'default/b'],
      ['delete', 'default/a'],
    ]);
    expect(tasks()).toBe(1);
    expect(server.requests.map((r) => r.verb)).toEqual(['LIST', 'WATCH']);
    await stream.close();
    await watch.closed;
  });

  it('opens one stream however often it is called', async () => {
    const { source, tasks } = countingSource();
    source.openFirstStream();
    source.openFirstStream();
    const stream = drain(source.source(new AbortController().signal));
    source.openFirstStream();
    await server.watch();
    expect(tasks()).toBe(1);
    await stream.close();
  });

  it('closes the adopted stream when the consumer’s signal aborts', async () => {
    const { source, tasks } = countingSource();
    source.openFirstStream();
    await expectAbortToCloseTheWatch(source);
    expect(tasks()).toBe(1);
  });

  it('closes the early stream when the first consumer’s signal is already aborted', async () => {
    const { source, tasks } = countingSource();
    source.openFirstStream();
    const watch = await server.watch();
    const aborted = new AbortController();
    aborted.abort();
    const stream = drain(source.source(aborted.signal));
    await watch.closed;
    await waitFor('the stream to fail', () => stream.done);
    expect(String(stream.error)).toContain('aborted');
    await waitFor('the idle phase', () => source.stats().phase === 'idle');
    expect(source.stats().lastError).toBeUndefined();
    expect(tasks()).toBe(1);
  });

  it('gives the next consumer a new stream, which relists', async () => {
    server.pods = [rawPod({ name: 'a' })];
    const { source, tasks } = countingSource();
    source.openFirstStream();
    const first = drain(source.source(new AbortController().signal));
    await server.watch(1);
    await waitFor('the first replace', () => first.items.length === 1);
    await first.close();

    server.pods = [rawPod({ name: 'b' })];
    const second = drain(source.source(new AbortController().signal));
    await server.watch(2);
    await waitFor('the second replace', () => second.items.length === 1);
    expect(replaceKeys(second, 0)).toEqual(['default/b']);
    expect(tasks()).toBe(2);
    expect(lists()).toBe(2);
    await second.close();
  });

  it('ends the early stream and its task when closed before anyone took it', async () => {
    // The close grace runs on a clock that never moves: close() resolves only if the task ended
    // by itself, the worker closing its connection when asked.
    const clock = new FakeClock();
    const logger = new RecordingLogger();
    const { source } = countingSource({ clock, logger });
    source.openFirstStream();
    const watch = await server.watch();
    await source.close();
    await watch.closed;
    expect(source.stats().phase).toBe('stopped');
    expect(source.stats().lastError).toBeUndefined();
    expect(logger.mentioning('did not close its stream in time')).toEqual([]);
    source.openFirstStream();
    expect(lists()).toBe(1);
  });

  it('hands a failure from before the first consumer to it, as a rejected next()', async () => {
    const { source, tasks } = countingSource({ kubeconfigPath: '/nonexistent/kubeconfig' });
    source.openFirstStream();
    await waitFor('the early stream to fail', () => source.stats().lastError !== undefined);
    const stream = drain(source.source(new AbortController().signal));
    await waitFor('the stream to fail', () => stream.done);
    expect(String(stream.error)).toContain('cannot read kubeconfig /nonexistent/kubeconfig');
    expect(tasks()).toBe(1);
  });
});
