/**
 * The messages between the reflector's worker thread and the main thread, one `MessagePort` per
 * stream. Plain data only (structured clone), and kept small: events carry the trimmed Pod view,
 * never the API server's objects.
 */
import type { MessagePort } from 'node:worker_threads';
import type { SourceEvent } from '../runtime/source-event.js';
import type { ClusterOptions } from './api.js';
import type { BackoffOptions } from './backoff.js';
import type { Pod } from './pod.js';
import type { ReflectorStats } from './reflector-stats.js';

/** What a stream's reflector is configured with; everything a worker needs besides the port. */
export interface ReflectorTaskOptions {
  cluster: ClusterOptions;
  namespace?: string;
  labelSelector?: string;
  listPageSize?: number;
  watchTimeoutSeconds?: number;
  idleTimeoutMs?: number;
  backoff?: Partial<Omit<BackoffOptions, 'random'>>;
  /** Pods per `replace-chunk` message. */
  replaceChunkSize: number;
}

/** One piscina task = one reflector stream, talking over `port` (transferred with the task). */
export interface ReflectorTask {
  port: MessagePort;
  options: ReflectorTaskOptions;
}

/** Upserts and deletes travel in batches; a `replace` travels in chunks (see below). */
export type ChangeEvent = Exclude<SourceEvent<Pod>, { type: 'replace' }>;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Worker → main. */
export type WorkerMessage =
  /** Everything that happened in one turn of the worker's event loop, with the stats after it. */
  | { kind: 'batch'; events: ChangeEvent[]; stats: ReflectorStats }
  /**
   * Part of a `replace`. The main side acknowledges each chunk before the worker sends the next:
   * Node delivers every message already queued on a port in one go, so without the ack a
   * 10,000-pod replace would be deserialized in a single main-thread stall, chunks or not.
   */
  | { kind: 'replace-chunk'; pods: Pod[] }
  /** The `replace` is complete: the main side publishes the pods it assembled, as one event. */
  | { kind: 'replace-end'; count: number; stats: ReflectorStats }
  | { kind: 'log'; level: LogLevel; obj: unknown; msg: string | undefined };

/** Main → worker. */
export type MainMessage =
  /** The last `replace-chunk` was received: send the next. */
  | { kind: 'ack' }
  /** Close the stream: abort the reflector (closing its connection) and end the task. */
  | { kind: 'close' };
