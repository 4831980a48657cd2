/**
 * `LeaderWorkerSetSource`: the LeaderWorkerSets of the watched namespace(s) as a `Source<Workload>`
 * for a reconcile loop of their own, on the main thread (the list is one small object per pool, so
 * no worker thread is needed).
 *
 * Each stream LISTs, publishes the whole world as a `replace`, then WATCHes from the list's
 * version, reconnecting from its cursor after each clean server-side end. Anything else (a
 * dropped connection, a 410 for an expired cursor, an unreadable frame) fails the stream, and the
 * runtime's source driver reopens it after its backoff, which relists: the same rule as the pod
 * reflector, kept simple because nothing here is large.
 *
 * An API that is not served (404: the CRD is not installed) or not permitted (403) is not a
 * failure: the stream publishes an empty world (every pool's capacity is then `Unknown`), says so
 * once in the log and in `status()`, and asks again every `WORKLOAD_API_RECHECK_MS`, so a CRD
 * installed or a permission granted later is picked up without a restart.
 */
import {
  MalformedWorkloadError,
  parseLeaderWorkerSet,
  type Workload,
  type WorkloadApiState,
  type WorkloadApiStatus,
  type WorkloadSource,
} from '../../model/workload.js';
import { type Clock, realClock } from '../../runtime/clock.js';
import { type Logger, silentLogger } from '../../runtime/logger.js';
import type { ObjectKey, Source, SourceEvent } from '../../runtime/source-event.js';
import { ApiStatusError } from '../client/api-errors.js';
import { safeErrorMessage } from '../client/safe-error.js';
import type { LeaderWorkerSetApi } from './leaderworkerset-api.js';

/**
 * How often an API that was not served or not permitted is asked again: one cheap request a
 * minute, so installing the LWS CRD or granting the permission takes effect within a minute.
 */
export const WORKLOAD_API_RECHECK_MS = 60_000;

/**
 * How long each WATCH asks the server to keep it open (client-go's `minWatchTimeout`, 5 min):
 * the server ends it cleanly and the stream re-watches from its cursor.
 */
const WORKLOAD_WATCH_TIMEOUT_SECONDS = 300;

/** The permission the controller needs, as `kubectl auth can-i` and the RBAC rules spell it. */
const LEADERWORKERSET_RESOURCE = 'leaderworkersets.leaderworkerset.x-k8s.io';

/** Options of `LeaderWorkerSetSource`. */
interface LeaderWorkerSetSourceOptions {
  api: LeaderWorkerSetApi;
  /** `undefined`: every namespace. */
  namespace?: string | undefined;
  /** Times the recheck of an absent API; default the real clock. */
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  /** Hears every change of `status().state`, after it changed. */
  onStatus?: ((status: WorkloadApiStatus) => void) | undefined;
}

function keyOf(workload: Workload): ObjectKey {
  return `${workload.namespace}/${workload.name}`;
}

function rawKey(object: unknown): ObjectKey | undefined {
  const metadata = (object as { metadata?: { namespace?: unknown; name?: unknown } } | null)
    ?.metadata;
  return typeof metadata?.namespace === 'string' && typeof metadata.name === 'string'
    ? `${metadata.namespace}/${metadata.name}`
    : undefined;
}

function resourceVersionOf(object: unknown): string | undefined {
  const version = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata
    ?.resourceVersion;
  return typeof version === 'string' && version !== '' ? version : undefined;
}

/** The LWS of the watched namespace(s) as a workload source (see the module comment). */
export class LeaderWorkerSetSource implements WorkloadSource {
  readonly source: Source<Workload>;
  readonly #api: LeaderWorkerSetApi;
  readonly #namespace: string | undefined;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #onStatus: ((status: WorkloadApiStatus) => void) | undefined;
  readonly #closed = new AbortController();
  #status: WorkloadApiStatus = {
    state: 'pending',
    message: 'the LeaderWorkerSets have not been listed yet',
  };

  constructor(options: LeaderWorkerSetSourceOptions) {
    this.#api = options.api;
    this.#namespace = options.namespace;
    this.#clock = options.clock ?? realClock;
    this.#logger = options.logger ?? silentLogger;
    this.#onStatus = options.onStatus;
    // The stream's own signal (RUNTIME.md, amendment 2) ends the request or wait in flight, so
    // closing never waits for a minute's recheck or a quiet watch.
    this.source = (signal) => this.#stream(AbortSignal.any([signal, this.#closed.signal]));
  }

  status(): WorkloadApiStatus {
    return this.#status;
  }

  async close(): Promise<void> {
    this.#closed.abort(new Error('the LeaderWorkerSet source is closed'));
  }

  async *#stream(signal: AbortSignal): AsyncGenerator<SourceEvent<Workload>, void, undefined> {
    let listed: { items: unknown[]; resourceVersion: string };
    for (;;) {
      try {
        listed = await this.#api.list(this.#namespace, signal);
        break;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        const code = error instanceof ApiStatusError ? error.status.code : undefined;
        if (code !== 404 && code !== 403) {
          this.#setStatus('failing', `listing LeaderWorkerSets failed: ${safeErrorMessage(error)}`);
          throw error;
        }
        this.#setStatus(
          code === 404 ? 'not-served' : 'forbidden',
          code === 404
            ? `the API server does not serve ${LEADERWORKERSET_RESOURCE} (is the LeaderWorkerSet CRD installed?); asking again every ${WORKLOAD_API_RECHECK_MS / 1000} s`
            : `the controller may not list ${LEADERWORKERSET_RESOURCE}${this.#namespace ? ` in namespace ${this.#namespace}` : ''} (HTTP 403): grant get, list and watch, or turn the watch off with --watch-leaderworkersets=false; asking again every ${WORKLOAD_API_RECHECK_MS / 1000} s`,
        );
        yield { type: 'replace', objects: new Map() };
        await this.#clock.sleep(WORKLOAD_API_RECHECK_MS, signal);
      }
    }
    const objects = new Map<ObjectKey, Workload>();
    for (const item of listed.items) {
      const workload = this.#read(item);
      if (workload) objects.set(keyOf(workload), workload);
    }
    this.#setStatus(
      'available',
      `listing and watching ${LEADERWORKERSET_RESOURCE} in ${this.#namespace === undefined ? 'all namespaces' : `namespace ${this.#namespace}`}`,
    );
    yield { type: 'replace', objects };
    let cursor = listed.resourceVersion;
    for (;;) {
      const events = await this.#api.watch(
        this.#namespace,
        cursor,
        WORKLOAD_WATCH_TIMEOUT_SECONDS,
        signal,
      );
      for await (const event of events) {
        switch (event.type) {
          case 'BOOKMARK':
            cursor = event.resourceVersion;
            break;
          case 'ERROR':
            throw new ApiStatusError('WATCH', event.status);
          case 'GARBLED':
            throw new Error(`WATCH LeaderWorkerSet: ${event.error}`);
          case 'DELETED': {
            const key = rawKey(event.object);
            cursor = resourceVersionOf(event.object) ?? cursor;
            if (key !== undefined) yield { type: 'delete', key };
            break;
          }
          default: {
            cursor = resourceVersionOf(event.object) ?? cursor;
            const workload = this.#read(event.object);
            const key = workload ? keyOf(workload) : rawKey(event.object);
            if (workload) yield { type: 'upsert', key: keyOf(workload), object: workload };
            else if (key !== undefined) yield { type: 'delete', key };
          }
        }
      }
    }
  }

  /** One LWS, or `undefined` (logged) when it cannot be read: it then counts as absent. */
  #read(object: unknown): Workload | undefined {
    try {
      return parseLeaderWorkerSet(object);
    } catch (error) {
      if (!(error instanceof MalformedWorkloadError)) throw error;
      this.#logger.warn({ err: error.message }, `${error.message}; its pool's capacity is Unknown`);
      return undefined;
    }
  }

  #setStatus(state: WorkloadApiState, message: string): void {
    if (this.#status.state === state) return;
    this.#status = { state, message };
    if (state === 'available') this.#logger.info({ state }, message);
    else this.#logger.warn({ state }, `pool capacity is Unknown: ${message}`);
    this.#onStatus?.(this.#status);
  }
}
