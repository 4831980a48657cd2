/**
 * The reflector's thread started on its own (as the command's entry starts it, before the rest of
 * the service loads), then handed to a `WorkerPodSource` or closed by whoever started it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runServiceCommand } from '../../src/cli/service-command.js';
import { WorkerPodSource } from '../../src/kubernetes/reflector-worker/main-thread-source.js';
import { ReflectorThreads } from '../../src/kubernetes/reflector-worker/reflector-threads.js';
import { drain } from '../support/drain.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { rawPod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { until } from '../support/until.js';

let server: FakeApiServer;
const started: ReflectorThreads[] = [];

beforeEach(async () => {
  server = await FakeApiServer.start();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((threads) => threads.close()));
  await server.close();
});

function startThreads(): ReflectorThreads {
  const threads = new ReflectorThreads({ compileCacheDir: false });
  started.push(threads);
  return threads;
}

/** A thread is up and waiting for work: the state the entry hands over. */
function threadUp(threads: ReflectorThreads): Promise<void> {
  return until(() => threads.pool.threads.length === 1, {
    what: 'the reflector thread to start',
    withinMs: 15_000,
  });
}

describe('ReflectorThreads', () => {
  it('starts its thread at once, before any stream asks for it', async () => {
    const threads = startThreads();
    await threadUp(threads);
    expect(threads.pool.threads).toHaveLength(1);
  });

  it('runs the streams of the source it is handed to, which closes it with itself', async () => {
    const threads = startThreads();
    await threadUp(threads);
    server.pods = [rawPod({ name: 'a' })];
    const source = new WorkerPodSource({ kubeconfigPath: server.writeKubeconfig(), threads });
    const stream = drain(source.source(new AbortController().signal));
    await server.watch();
    await until(() => stream.items.length === 1, { what: 'the replace', withinMs: 15_000 });
    expect(stream.items[0]?.type).toBe('replace');
    await stream.close();
    await source.close();
    expect(threads.pool.threads).toHaveLength(0);
  });

  it('sizes a LIST’s budget by its own limits, and refuses limits given twice', () => {
    const threads = startThreads();
    expect(threads.resourceLimits).toEqual({ maxOldGenerationSizeMb: 2048 });
    expect(
      () =>
        new WorkerPodSource({
          kubeconfigPath: server.writeKubeconfig(),
          threads,
          resourceLimits: { maxOldGenerationSizeMb: 64 },
        }),
    ).toThrow(/belong to the threads given/);
    expect(
      () =>
        new WorkerPodSource({
          kubeconfigPath: server.writeKubeconfig(),
          threads,
          compileCacheDir: false,
        }),
    ).toThrow(/belong to the threads given/);
  });

  it('is closed by a source that refuses its options, which would otherwise leave it running', async () => {
    const threads = startThreads();
    await threadUp(threads);
    expect(
      () =>
        new WorkerPodSource({
          kubeconfigPath: server.writeKubeconfig(),
          threads,
          labelSelector: 'app in (',
        }),
    ).toThrow();
    await until(() => threads.pool.threads.length === 0, {
      what: 'the thread closed',
      withinMs: 15_000,
    });
  });

  it('keeps the errors its pool reports before anyone listens, and hands them to its adopter', async () => {
    const threads = startThreads();
    // What piscina does for a thread that dies between tasks: an `error` of the pool, which with
    // no listener would be thrown, crashing the process before the service has a logger.
    expect(() => threads.pool.emit('error', new Error('thread died early'))).not.toThrow();
    const logger = new RecordingLogger();
    const source = new WorkerPodSource({
      kubeconfigPath: server.writeKubeconfig(),
      threads,
      logger,
    });
    expect(logger.mentioning('thread died early', 'error')).toHaveLength(1);
    threads.pool.emit('error', new Error('thread died later'));
    expect(logger.mentioning('thread died later', 'error')).toHaveLength(1);
    expect(logger.mentioning('thread died early', 'error')).toHaveLength(1);
    await source.close();
  });
});

describe('the command and the thread its entry started', () => {
  it('closes the thread when the command ends without a source (a usage error)', async () => {
    const threads = startThreads();
    await threadUp(threads);
    const code = await runServiceCommand(['--no-such-flag'], { PATH: process.env.PATH }, threads);
    expect(code).toBe(2);
    expect(threads.pool.threads).toHaveLength(0);
  });
});
