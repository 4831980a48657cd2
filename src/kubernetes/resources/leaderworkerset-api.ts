/**
 * LIST and WATCH of LeaderWorkerSets (`leaderworkerset.x-k8s.io/v1`), JSON only: the list is one
 * object per pool, small enough for one unpaged, bounded answer, and the objects are read by the
 * neutral model (`parseLeaderWorkerSet`), so no codec of the pod path is needed here.
 *
 * The transport only: a LIST resolves with the raw items and the collection's resourceVersion, a
 * WATCH with its raw events; any refusal is an `ApiStatusError` (its `status.code` says 404 for an
 * API that is not served, 403 for one the controller may not read), so the source
 * (./leaderworkerset-source.ts) decides what each means.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import {
  ApiConnectionError,
  ApiStatusError,
  isRecord,
  MalformedListError,
  readStatus,
  statusFromResponse,
} from '../client/api-errors.js';
import { openApiExchange } from '../client/api-exchange.js';
import { apiRequest } from '../client/api-request.js';
import {
  type ApiConnection,
  type ClusterOptions,
  loadApiConnection,
} from '../client/connection.js';
import { releaseRequestAgent } from '../client/shared-agents.js';
import { splitWatchFrames } from '../codec/watch-framing.js';
import { jsonWatchFramer } from '../codec/watch-line-splitter.js';

/** The API group and version the controller reads: LWS's served and stored version. */
const LEADERWORKERSET_API = 'leaderworkerset.x-k8s.io/v1';

/**
 * Largest LIST answer read: 16 MiB. A LWS is a few KiB (its pod template included), so this is
 * thousands of pools; a larger answer is refused rather than buffered.
 */
const MAX_LEADERWORKERSET_LIST_BYTES = 16 * 1024 * 1024;

/** A LIST bounded in time as the other resources' requests are: 30 s, the API server's own default. */
const LEADERWORKERSET_LIST_TIMEOUT_MS = 30_000;

/** How much of a refused WATCH's body is read: a Status is small. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** One event of a LWS WATCH, the object still raw (the source parses it). */
export type LeaderWorkerSetWatchEvent =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: unknown }
  /** Only moves the cursor. */
  | { type: 'BOOKMARK'; resourceVersion: string }
  /** The server ended the watch with a Status (410 Gone: the cursor expired). */
  | { type: 'ERROR'; status: ReturnType<typeof readStatus> }
  /** A frame that did not decode: the source relists. */
  | { type: 'GARBLED'; error: string };

/** What the LWS source needs from the API server; tests give a fake. */
export interface LeaderWorkerSetApi {
  /** All LWS of `namespace` (`undefined`: every namespace), with the collection's version. */
  list(
    namespace: string | undefined,
    signal: AbortSignal,
  ): Promise<{ items: unknown[]; resourceVersion: string }>;
  /**
   * A WATCH from `resourceVersion`, ended by the server after `timeoutSeconds`; resolves once the
   * server accepted it. Iteration ends cleanly at the server's timeout; aborting `signal` closes it.
   */
  watch(
    namespace: string | undefined,
    resourceVersion: string,
    timeoutSeconds: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<LeaderWorkerSetWatchEvent>>;
}

function collectionPath(namespace: string | undefined): string {
  const base = `/apis/${LEADERWORKERSET_API}`;
  return namespace
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/leaderworkersets`
    : `${base}/leaderworkersets`;
}

function bodyOf(response: Readable & { headers: Record<string, unknown> }): Readable {
  return response.headers['content-encoding'] === 'gzip' ? response.pipe(createGunzip()) : response;
}

/** One frame of a WATCH body as a `LeaderWorkerSetWatchEvent`. */
function readEvent(value: unknown): LeaderWorkerSetWatchEvent {
  if (!isRecord(value) || typeof value.type !== 'string') {
    return { type: 'GARBLED', error: 'a watch frame without a type' };
  }
  const { type, object } = value;
  if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') return { type, object };
  if (type === 'ERROR') return { type, status: readStatus(object) };
  if (type === 'BOOKMARK') {
    const metadata = isRecord(object) && isRecord(object.metadata) ? object.metadata : {};
    const version = metadata.resourceVersion;
    return typeof version === 'string'
      ? { type, resourceVersion: version }
      : { type: 'GARBLED', error: 'a bookmark without a resourceVersion' };
  }
  return { type: 'GARBLED', error: `a watch frame of type ${JSON.stringify(type.slice(0, 40))}` };
}

/** `LeaderWorkerSetApi` over the configured cluster connection (see the module comment). */
class HttpLeaderWorkerSetApi implements LeaderWorkerSetApi {
  readonly #connection: ApiConnection;

  constructor(connection: ApiConnection) {
    this.#connection = connection;
  }

  async list(
    namespace: string | undefined,
    signal: AbortSignal,
  ): Promise<{ items: unknown[]; resourceVersion: string }> {
    const what = `LIST LeaderWorkerSet ${namespace ?? '*'}`;
    let answer: Awaited<ReturnType<typeof apiRequest>>;
    try {
      answer = await apiRequest(this.#connection, {
        method: 'GET',
        path: collectionPath(namespace),
        signal,
        timeoutMs: LEADERWORKERSET_LIST_TIMEOUT_MS,
        what,
        maxBodyBytes: MAX_LEADERWORKERSET_LIST_BYTES,
        tooLarge: () =>
          new MalformedListError(
            `${what}: response larger than ${MAX_LEADERWORKERSET_LIST_BYTES} bytes; refused`,
          ),
      });
    } catch (error) {
      if (signal.aborted || error instanceof MalformedListError) throw error;
      throw new ApiConnectionError('LIST', error, false);
    }
    if (answer.statusCode !== 200) {
      throw new ApiStatusError(
        'LIST',
        statusFromResponse(answer.statusCode, answer.body, answer.retryAfter),
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.body);
    } catch {
      throw new MalformedListError(`${what}: the answer is not JSON`);
    }
    if (!isRecord(parsed) || !Array.isArray(parsed.items) || !isRecord(parsed.metadata)) {
      throw new MalformedListError(`${what}: the answer is not a list`);
    }
    const version = parsed.metadata.resourceVersion;
    if (typeof version !== 'string' || version === '') {
      throw new MalformedListError(`${what}: the list has no resourceVersion`);
    }
    return { items: parsed.items, resourceVersion: version };
  }

  async watch(
    namespace: string | undefined,
    resourceVersion: string,
    timeoutSeconds: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<LeaderWorkerSetWatchEvent>> {
    signal.throwIfAborted();
    let prepared: Awaited<ReturnType<ApiConnection['requestOptions']>>;
    try {
      prepared = await this.#connection.requestOptions();
    } catch (error) {
      throw new ApiConnectionError('WATCH', error, false);
    }
    const { agent } = prepared;
    let exchange: Awaited<ReturnType<typeof openApiExchange>>;
    try {
      exchange = await openApiExchange(this.#connection.server, prepared, {
        method: 'GET',
        path: collectionPath(namespace),
        query: {
          watch: 'true',
          allowWatchBookmarks: 'true',
          resourceVersion,
          timeoutSeconds: String(timeoutSeconds),
        },
        headers: { ...(prepared.headers as OutgoingHttpHeaders), Accept: 'application/json' },
        signal,
      });
    } catch (error) {
      releaseRequestAgent(agent);
      throw signal.aborted ? signal.reason : new ApiConnectionError('WATCH', error, false);
    }
    const { request, response } = exchange;
    const close = (): void => {
      response.destroy();
      request.destroy();
      releaseRequestAgent(agent);
    };
    if (response.statusCode !== 200) {
      let body = '';
      try {
        const chunks: Buffer[] = [];
        let length = 0;
        for await (const chunk of bodyOf(response) as AsyncIterable<Buffer>) {
          if (length < MAX_ERROR_BODY_BYTES) chunks.push(chunk);
          length += chunk.length;
        }
        body = Buffer.concat(chunks).toString('utf8');
      } catch {
        // The status code alone still says what failed.
      } finally {
        close();
      }
      const retryAfter = response.headers['retry-after'];
      throw new ApiStatusError(
        'WATCH',
        statusFromResponse(
          response.statusCode ?? 0,
          body,
          Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        ),
      );
    }
    signal.addEventListener('abort', close, { once: true });
    async function* events(): AsyncGenerator<LeaderWorkerSetWatchEvent, void, undefined> {
      try {
        for await (const frame of splitWatchFrames(jsonWatchFramer, bodyOf(response))) {
          yield frame.kind === 'garbled'
            ? { type: 'GARBLED', error: frame.error }
            : readEvent(frame.value);
        }
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw new ApiConnectionError('WATCH', error);
      } finally {
        signal.removeEventListener('abort', close);
        close();
      }
    }
    return events();
  }
}

/** The LWS API on the configured cluster (kubeconfig, in-cluster, context). */
export async function connectLeaderWorkerSetApi(
  options: ClusterOptions = {},
): Promise<HttpLeaderWorkerSetApi> {
  return new HttpLeaderWorkerSetApi(await loadApiConnection(options));
}
