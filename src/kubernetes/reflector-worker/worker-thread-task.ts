/**
 * The worker-thread half of the worker-backed source: runs one reflector stream and posts what it
 * yields over the task's `MessagePort`. Lives here rather than in workers/ so that tests can run it
 * in-process with a fake API; workers/reflector.worker.ts only hands it to piscina.
 */
import { flushCompileCache } from 'node:module';
import type { MessagePort } from 'node:worker_threads';
import type { Logger } from '../../runtime/logger.js';
import type { ObjectKey } from '../../runtime/source-event.js';
import { type ClusterOptions, preloadClientNode } from '../client/connection.js';
import type { RequestSnapshot } from '../client/request-snapshot.js';
import type { EncodedChange, EncodedPod } from '../codec/encoded-pod.js';
import { writeChangeEventsJson, writeEncodedPodsJson } from '../codec/pod-json-writer.js';
import { KubernetesReflector } from '../reflector/reflector.js';
import { connectPodApi } from '../resources/http-pod-api.js';
import type { PodApi } from '../resources/pod-api.js';
import type { MainMessage, ReflectorTask, WorkerLogLevel, WorkerMessage } from './protocol.js';

/**
 * Events per message while a backlog drains (a burst decoded in one turn of the worker's loop):
 * large enough that a burst of thousands costs tens of messages, small enough that an event waits
 * for at most this many others to be decoded (~60 µs each on JSON) before it leaves.
 */
export const MAX_EVENTS_PER_BATCH = 64;

/**
 * Replace chunks posted and not yet acknowledged by the main side. One at a time left the main
 * thread idle while this thread was in a long decode: acks are read only between socket reads, so
 * one chunk left per turn of this thread's loop, and when a 10,000-pod watch-list's last byte came
 * 10–17 chunks were still waiting here, then sent one round trip each (20–45 ms before the
 * `replace-end`). The main side decodes one chunk per turn of its own loop whatever arrived
 * (./main-thread-stream.ts), so the window does not lengthen its tasks; it bounds how far this
 * thread runs ahead of a main thread that is behind (8 × `replaceChunkSize` pods).
 */
export const MAX_CHUNKS_IN_FLIGHT = 8;

/**
 * Once per thread, after its first sync (the `replace-end` posted): loads client-node's
 * kubeconfig bundle, which a stream whose first request came with the main thread's settings
 * (`ReflectorTask.firstRequest`) has not needed yet, so that the next request needing credentials
 * does not wait for it; then writes the thread's compile cache (when one is on, `compileCacheDir`
 * in ./main-thread-source.ts): by then the code a sync runs is compiled and goes into the cache
 * too, and the next process's worker finds it even when this one never ends cleanly (Node writes
 * it by itself only when the thread exits).
 */
let firstSyncDone = false;
function afterFirstSync(): void {
  if (firstSyncDone) return;
  firstSyncDone = true;
  preloadClientNode();
  try {
    flushCompileCache();
  } catch {
    // A cache that cannot be written is only a slower next start.
  }
}

/** A LIST held more pods' JSON in the worker than its budget allows. */
class ListTooLargeError extends Error {
  override readonly name = 'ListTooLargeError';
  constructor(maxBytes: number) {
    super(
      `the LIST's pods exceed the reflector worker's memory budget (${Math.round(maxBytes / 1024 / 1024)} MiB)`,
    );
  }
}

/**
 * How the task reaches the API server; tests pass a fake. Pods are read as `EncodedPod`s: this
 * thread only moves them on, as the JSON the main thread parses.
 */
type ConnectPodApi = (cluster: ClusterOptions, firstRequest?: RequestSnapshot) => Promise<PodApi>;

/** How a task ended: only ever because the main side closed it. */
export interface ReflectorTaskResult {
  closed: true;
}

function post(port: MessagePort, message: WorkerMessage, transfer?: ArrayBuffer[]): void {
  port.postMessage(message, transfer);
}

/** Bytes in a buffer of their own, and that buffer, to transfer without a copy. */
function transferable(bytes: Uint8Array): { bytes: Uint8Array; transfer: ArrayBuffer[] } {
  return { bytes, transfer: [bytes.buffer as ArrayBuffer] };
}

/** A `Logger` whose entries travel to the main thread's logger. */
function portLogger(port: MessagePort): Logger {
  const at =
    (level: WorkerLogLevel) =>
    (obj?: unknown, msg?: string): void => {
      try {
        post(port, { kind: 'log', level, obj, msg });
      } catch {
        // Something in `obj` does not clone: send its text instead of losing the entry.
        post(port, { kind: 'log', level, obj: String(obj), msg });
      }
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * Runs until the main side sends `close` (or its port goes away). Throws only when it cannot
 * start (a configuration the API adapter rejects), which the main side sees as a failed stream.
 */
export async function runReflectorTask(
  task: ReflectorTask,
  connect: ConnectPodApi = connectPodApi,
): Promise<ReflectorTaskResult> {
  const { port, options } = task;
  const closer = new AbortController();
  let onAck: (() => void) | undefined;
  port.on('message', (message: MainMessage) => {
    if (message.kind === 'ack') onAck?.();
    else if (message.kind === 'close') closer.abort();
  });
  port.on('close', () => closer.abort());
  post(port, { kind: 'started' });

  try {
    const api = await connect(options.cluster, task.firstRequest);
    if (closer.signal.aborted) return { closed: true };

    let batch: EncodedChange[] = [];
    let flushScheduled = false;
    /** Posts the waiting events, with the stats after them. */
    const postEvents = (): void => {
      const { bytes, transfer } = transferable(writeChangeEventsJson(batch));
      batch = [];
      post(port, { kind: 'batch', events: bytes, stats: reflector.stats() }, transfer);
    };
    const flush = (): void => {
      flushScheduled = false;
      if (batch.length > 0) postEvents();
      else {
        // While a LIST's pages stream, the stats travel with its chunks (and its replace-end):
        // its bytes change them with every socket read, and a message per read cost both threads
        // more than the pods' own hop. A LIST that failed is no longer listing: its backoff, error
        // and health go out at once.
        const stats = reflector.stats();
        if (!(streaming && stats.phase === 'listing')) post(port, { kind: 'batch', stats });
      }
    };
    /**
     * Events leave at the end of the turn of the worker's event loop that decoded them (a quiet
     * watch's event waits for nothing else), or as soon as `MAX_EVENTS_PER_BATCH` are waiting: a
     * burst decoded in one turn (one socket read can hold hundreds) goes in batches, so its first
     * events do not wait for its last to be decoded, and it still costs a message per batch, not
     * per event.
     */
    const queueEvent = (event: EncodedChange): void => {
      batch.push(event);
      if (batch.length >= MAX_EVENTS_PER_BATCH) postEvents();
      scheduleFlush();
    };
    const scheduleFlush = (): void => {
      if (flushScheduled) return;
      flushScheduled = true;
      // One message per turn of the event loop: every frame decoded from the chunks that arrived
      // in this turn, and the stats after them.
      setImmediate(flush);
    };
    // Chunks of the LIST under way, streamed to the main thread page by page while the LIST runs:
    // encoded here as each page arrives, posted while fewer than `MAX_CHUNKS_IN_FLIGHT` wait for
    // the main side's ack.
    const outbox: Array<{ bytes: Uint8Array; transfer: ArrayBuffer[]; restart: boolean }> = [];
    let inFlight = 0;
    /** The current LIST's pages are being streamed (its reflector's API reports pages). */
    let streaming = false;
    /** The next chunk (or, if none, the `replace-end`) must tell the main side a LIST restarted. */
    let restartPending = false;
    const queueChunk = (pods: readonly EncodedPod[]): void => {
      outbox.push({ ...transferable(writeEncodedPodsJson(pods)), restart: restartPending });
      restartPending = false;
    };
    let drained: (() => void) | undefined;
    const pump = (): void => {
      if (closer.signal.aborted) return;
      while (inFlight < MAX_CHUNKS_IN_FLIGHT && outbox.length > 0) {
        const chunk = outbox.shift() as (typeof outbox)[number];
        inFlight += 1;
        const stats = reflector.stats();
        post(
          port,
          chunk.restart
            ? { kind: 'replace-chunk', pods: chunk.bytes, stats, restart: true }
            : { kind: 'replace-chunk', pods: chunk.bytes, stats },
          chunk.transfer,
        );
      }
      // Nothing in flight means the window took every waiting chunk: the main side has them all.
      if (inFlight === 0) drained?.();
    };
    onAck = () => {
      // An ack for a chunk of a LIST that restarted still frees its place.
      if (inFlight > 0) inFlight -= 1;
      pump();
    };
    /** Bytes of pods' JSON the current LIST holds (see `ReflectorTaskOptions.maxListBytes`). */
    let listBytes = 0;
    const onListPage = (pods: readonly EncodedPod[], page: number): void => {
      if (page === 1) listBytes = 0;
      for (const pod of pods) listBytes += pod.json.length;
      if (listBytes > options.maxListBytes) {
        // Thrown into the LIST: it fails, its pods are let go of, and the reflector retries.
        throw new ListTooLargeError(options.maxListBytes);
      }
      if (page === 1) {
        // A new LIST: chunks of an earlier one that were not sent yet are void, and its first
        // chunk (or its replace-end) tells the main side to drop what it assembled.
        outbox.length = 0;
        streaming = true;
        restartPending = true;
      }
      const size = options.replaceChunkSize;
      for (let start = 0; start < pods.length; start += size)
        queueChunk(pods.slice(start, start + size));
      pump();
    };

    const reflector = new KubernetesReflector({
      api,
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      listPageSize: options.listPageSize,
      // One page may not exceed what the whole LIST may hold: refused as it is read.
      maxListPageBytes: options.maxListBytes,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      idleTimeoutMs: options.idleTimeoutMs,
      backoff: options.backoff,
      ...(options.initialList ? { initialList: options.initialList } : {}),
      logger: portLogger(port),
      onStatsChange: scheduleFlush,
      onListPage,
    });

    const sendReplace = async (objects: ReadonlyMap<ObjectKey, EncodedPod>): Promise<void> => {
      if (batch.length > 0) flush();
      // A LIST whose pages were not reported (an API that does not page) goes out the same way,
      // as one page now: the same chunks, acks and restart marks.
      if (!streaming) onListPage([...objects.values()], 1);
      streaming = false;
      // Wait until the main side has every chunk, then end.
      if (outbox.length > 0 || inFlight > 0) {
        const onAbort = (): void => drained?.();
        await new Promise<void>((resolve) => {
          drained = resolve;
          closer.signal.addEventListener('abort', onAbort, { once: true });
        });
        // One listener per relist would pile up on the stream's signal: remove it.
        closer.signal.removeEventListener('abort', onAbort);
        drained = undefined;
      }
      if (!closer.signal.aborted) post(port, endOf(objects.size));
      afterFirstSync();
    };
    const endOf = (count: number): WorkerMessage => {
      const restart = restartPending;
      restartPending = false;
      return restart
        ? { kind: 'replace-end', count, stats: reflector.stats(), restart: true }
        : { kind: 'replace-end', count, stats: reflector.stats() };
    };

    // Batches: the events of one socket read come in one step (a `replace` alone in its own).
    const iterator = reflector.watchBatches()[Symbol.asyncIterator]();
    const onClose = (): void => void iterator.return?.();
    closer.signal.addEventListener('abort', onClose, { once: true });
    try {
      while (!closer.signal.aborted) {
        const result = await iterator.next();
        if (result.done) break;
        for (const event of result.value) {
          if (event.type === 'replace') await sendReplace(event.objects);
          else queueEvent(event);
        }
      }
    } finally {
      closer.signal.removeEventListener('abort', onClose);
      await iterator.return?.();
      if (batch.length > 0 || flushScheduled) flush();
    }
    return { closed: true };
  } finally {
    port.close();
  }
}
