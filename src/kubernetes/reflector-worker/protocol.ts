/**
 * The messages between the reflector's worker thread and the main thread, one `MessagePort` per
 * stream. Plain data only, and kept small: pods and events travel as JSON text in transferred
 * buffers (`JsonBytes`, written by ../codec/pod-json-writer.ts), carrying the trimmed Pod view, never the
 * API server's objects; stats, log lines and the control messages are structured-cloned.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Pod } from '../../model/pod.js';
import type { PodSourceStats } from '../../model/pod-source-stats.js';
import type { SourceEvent } from '../../runtime/source-event.js';
import type { ClusterOptions } from '../client/connection.js';
import type { RequestSnapshot } from '../client/request-snapshot.js';
import type { KubernetesReflectorOptions } from '../reflector/reflector.js';

/**
 * The reflector settings that cross to the worker: plain data, picked from the reflector's own
 * options so each is declared (and documented) once.
 */
export type ReflectorSettings = Pick<
  KubernetesReflectorOptions,
  | 'namespace'
  | 'labelSelector'
  | 'listPageSize'
  | 'watchTimeoutSeconds'
  | 'idleTimeoutMs'
  | 'backoff'
  | 'initialList'
>;

/** What a stream's reflector is configured with; everything a worker needs besides the port. */
export interface ReflectorTaskOptions extends ReflectorSettings {
  cluster: ClusterOptions;
  /** Pods per `replace-chunk` message. */
  replaceChunkSize: number;
  /**
   * Most bytes of pods' JSON one LIST or watch-list may hold in the worker before it is refused
   * (and retried like any failed LIST). The pods' JSON lives in buffers outside the V8 heap, so the
   * worker's heap limit alone no longer bounds what a huge LIST makes it hold.
   */
  maxListBytes: number;
}

/** One piscina task = one reflector stream, talking over `port` (transferred with the task). */
export interface ReflectorTask {
  port: MessagePort;
  options: ReflectorTaskOptions;
  /**
   * The stream's first request's settings, resolved by the main thread, so that the worker sends
   * it without loading client-node and reading the kubeconfig first; absent when the main side has
   * none (the worker then reads the kubeconfig itself). Credentials: never logged.
   */
  firstRequest?: RequestSnapshot;
}

/** Upserts and deletes travel in batches; a `replace` travels in chunks (see below). */
export type ChangeEvent = Exclude<SourceEvent<Pod>, { type: 'replace' }>;

/**
 * The levels a worker's log message may carry: the main thread writes each through its own pino
 * logger, so worker lines share the process's level, format and redaction. Not the service's
 * `LogLevel` (`--log-level`, which adds fatal, trace and silent): the main thread's logger
 * applies that filter to what arrives.
 */
export type WorkerLogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * Pods and events cross as JSON text in a transferred buffer rather than as structured-clone
 * objects: the main thread's `JSON.parse` builds them about a third faster than deserialization
 * does, and its objects are smaller in the heap (about 2.0 KB per cached pod against 3.3 KB), since
 * it internalizes the strings that every pod repeats (keys, condition types, `"True"`).
 * Transferring the buffer moves it without a copy.
 */
export type JsonBytes = Uint8Array;

/** Worker → main. */
export type WorkerMessage =
  /**
   * The task is running on a thread: the first message of every stream. Until it arrives the task
   * may still sit in piscina's queue, waiting for a thread that is starting, or that died while
   * starting and will never take it (see `WorkerPodSource`).
   */
  | { kind: 'started' }
  /**
   * What happened in one turn of the worker's event loop, or the next `MAX_EVENTS_PER_BATCH` events
   * of a burst decoded in one turn (`events`: JSON of `ChangeEvent[]`, absent when only the stats
   * changed), with the stats after it.
   */
  | { kind: 'batch'; events?: JsonBytes; stats: PodSourceStats }
  /**
   * Part of a `replace` (`pods`: JSON of `Pod[]`). The main side decodes one chunk per turn of
   * its event loop, however many arrived together (Node delivers every message already queued on
   * a port in one go, so a 10,000-pod replace would otherwise be decoded in one main-thread stall),
   * and acknowledges each once decoded; the worker keeps at most `MAX_CHUNKS_IN_FLIGHT`
   * (./worker-thread-task.ts) unacknowledged. Chunks are streamed while the LIST is still running,
   * page by page; `restart` marks the first chunk of a LIST that (re)starts, so the main side
   * drops whatever an earlier, failed or superseded LIST had sent. Nothing assembled reaches the
   * store before `replace-end`. `stats`: the stats when the chunk left; while a LIST streams they
   * travel only with its chunks.
   */
  | { kind: 'replace-chunk'; pods: JsonBytes; stats: PodSourceStats; restart?: true }
  /**
   * The `replace` is complete: the main side publishes the pods it assembled, as one event, after
   * checking it assembled `count` distinct pods (otherwise the stream fails and is reopened).
   * `restart`: no chunk of this LIST was sent (it is empty), so drop what was assembled first.
   */
  | { kind: 'replace-end'; count: number; stats: PodSourceStats; restart?: true }
  | { kind: 'log'; level: WorkerLogLevel; obj: unknown; msg: string | undefined };

/** Main → worker. */
export type MainMessage =
  /** A `replace-chunk` was decoded: its place in the worker's window is free. */
  | { kind: 'ack' }
  /** Close the stream: abort the reflector (closing its connection) and end the task. */
  | { kind: 'close' };
