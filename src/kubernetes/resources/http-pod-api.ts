/**
 * LIST and WATCH for pods over plain `node:http(s)`, given a connection (server URL plus auth/TLS
 * options) that ../client/connection.ts builds from client-node's kubeconfig handling.
 *
 * Raw requests rather than client-node's typed client and `Watch` class, because the reflector has
 * to own the bytes: counting them, noticing when they stop, decoding JSON in the worker thread
 * without a model-class round trip, and closing the connection itself on every path (client-node's
 * `Watch` parses with a readline interface and hides the request behind a callback).
 *
 * Size: LIST and WATCH share the request, decoding and failure rules of one resource; splitting
 * them would duplicate those.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { MalformedPodError } from '../../model/pod.js';
import { realClock } from '../../runtime/clock.js';
import {
  ApiConnectionError,
  ApiStatusError,
  isRecord,
  MalformedListError,
  statusFromDecodedResponse,
  statusFromResponse,
} from '../client/api-errors.js';
import {
  type ApiResponse,
  http1Response,
  openApiExchange,
  requestUrl,
} from '../client/api-exchange.js';
import {
  type ApiConnection,
  type ClusterOptions,
  loadApiConnection,
} from '../client/connection.js';
import { isExpiredStatus } from '../client/expired-status.js';
import { Http2Sessions } from '../client/http2-sessions.js';
import { connectionFromSnapshot, type RequestSnapshot } from '../client/request-snapshot.js';
import { goesDirectOverTls, releaseRequestAgent } from '../client/shared-agents.js';
import { type EncodedPod, readPodValue } from '../codec/encoded-pod.js';
import { parseListWithoutManagedFields } from '../codec/managed-fields-skip.js';
import {
  decodeProtobufObject,
  decodeProtobufPodList,
  isProtobufContentType,
  PROTOBUF_CONTENT_TYPE,
  type ProtobufPodPage,
  peekProtobufContinueToken,
} from '../codec/pod-protobuf.js';
import type { RefusedPodError } from '../codec/protobuf-pod-json.js';
import { ProtobufDecodeError } from '../codec/protobuf-reader.js';
import { protobufWatchFramer } from '../codec/protobuf-watch-splitter.js';
import { jsonWatchFramer } from '../codec/watch-line-splitter.js';
import { HttpWatchStream } from './http-watch-stream.js';
import type { ListPodsOptions, PodApi, PodList, WatchPodsOptions, WatchStream } from './pod-api.js';

/**
 * The encodings a client can ask the API server for: `protobuf` (client-go's typed clients' and
 * kube-controller-manager's default) or `json`. Asking for protobuf still accepts JSON, because
 * not every server speaks protobuf (aggregated APIs, test servers); each response is decoded by
 * the Content-Type it arrives with.
 */
type ApiContentType = NonNullable<ClusterOptions['apiContentType']>;

/** Protobuf by default, as client-go's typed clients: on a real API server it is several times cheaper to produce and to read. */
const DEFAULT_API_CONTENT_TYPE: ApiContentType = 'protobuf';

function acceptHeader(contentType: ApiContentType): string {
  return contentType === 'protobuf'
    ? `${PROTOBUF_CONTENT_TYPE}, application/json`
    : 'application/json';
}

/** client-go's pager default (`defaultPageSize`): pages small enough to parse without a spike. */
export const DEFAULT_LIST_PAGE_SIZE = 500;

/** How much of an error body is read: a Status is small; anything bigger is not one. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

function podsPath(namespace: string | undefined): string {
  return namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` : '/api/v1/pods';
}

/**
 * The response's body, inflated as it streams when the server gzipped it. Joined by `pipeline`,
 * not `pipe`: a response destroyed under it (a closed watch, an abandoned page) must end the
 * inflated stream too, or a reader of it would wait for ever.
 */
function bodyOf(response: ApiResponse): Readable {
  if (response.header('content-encoding') !== 'gzip') return response.body;
  const inflated = createGunzip();
  // Errors reach the reader through `inflated` itself; the callback only keeps them handled.
  pipeline(response.body, inflated, () => {});
  return inflated;
}

/**
 * A whole body (kept up to `limit` bytes). `onHead` sees the bytes kept so far after each chunk
 * until it answers true: a LIST page's first bytes already name the next page's token.
 */
async function readAll(
  body: Readable,
  onBytes: ((count: number) => void) | undefined,
  limit = Number.POSITIVE_INFINITY,
  onHead?: (head: Buffer) => boolean,
  overflow?: () => Error,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  let watchingHead = onHead !== undefined;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    onBytes?.(chunk.length);
    if (length < limit) chunks.push(chunk);
    length += chunk.length;
    // Past the limit: with `overflow`, the body is refused rather than cut (a LIST page).
    if (overflow && length > limit) throw overflow();
    if (watchingHead) {
      watchingHead = !onHead?.(chunks.length === 1 ? chunk : Buffer.concat(chunks));
    }
  }
  return Buffer.concat(chunks);
}

/** A LIST page's bytes and the encoding the server chose for them. */
interface PageBody {
  raw: Buffer;
  protobuf: boolean;
}

/**
 * The reflector's `PodApi` over raw HTTP, in the worker thread: it owns the bytes (counted,
 * watched for silence, decoded as JSON or protobuf as the server chose) and releases its
 * connection on every path. Built by `connectPodApi` from the cluster options; the e2e tests
 * build it on a connection of their own to compare the two encodings.
 */
export class HttpPodApi implements PodApi {
  readonly #connection: ApiConnection;
  readonly #accept: string;
  /** Sent with every LIST page and every watch-list: `Accept-Encoding: gzip` when compressing. */
  readonly #wholeReadHeaders: Record<string, string>;
  /** LIST pages and watches go over HTTP/2 when set and the server agrees (`ClusterOptions.apiHttp2`). */
  readonly #http2: Http2Sessions | undefined;

  /**
   * `compression`: ask for gzip on LIST pages and on watch-lists, the two requests that read the
   * whole world (see `ClusterOptions.apiCompression`); a WATCH from a cursor never asks, since its
   * events are small and a gzip stream would hold each one until the server flushes.
   * `http2`: the sessions to read over when the server speaks HTTP/2 (see `connectPodApi`);
   * HTTP/1.1 only when undefined.
   */
  constructor(
    connection: ApiConnection,
    contentType: ApiContentType = DEFAULT_API_CONTENT_TYPE,
    compression = false,
    http2: Http2Sessions | undefined = undefined,
  ) {
    this.#connection = connection;
    this.#accept = acceptHeader(contentType);
    this.#wholeReadHeaders = compression ? { 'Accept-Encoding': 'gzip' } : {};
    this.#http2 = http2;
  }

  /**
   * A paged LIST, as client-go's pager runs it: `limit` per page, following `continue`. When the
   * continue token expires on a later page (410 / Expired: the first page's version was compacted
   * meanwhile), it falls back to one full, unpaged LIST, as the pager's `FullListIfExpired` does;
   * restarting the paged LIST would meet the same expiry on a large, busy collection again.
   */
  async listPods(options: ListPodsOptions): Promise<PodList> {
    const limit = options.limit ?? DEFAULT_LIST_PAGE_SIZE;
    try {
      return await this.#listPaged(options, limit);
    } catch (error) {
      if (!(error instanceof ExpiredContinueError)) throw error;
      return this.#listPaged(options, 0);
    }
  }

  /**
   * Pages of `limit` (0: one unpaged request) until the collection is complete. Page N+1 is
   * requested as soon as page N's first bytes arrive, when they name its `continue` token (the
   * API server writes the list's `metadata` before `items`, in JSON and protobuf alike), so the
   * server produces page N+1 while page N transfers and is decoded; page N+1's head in turn
   * requests page N+2, up to `MAX_PAGES_AHEAD` pages beyond the one being decoded, so the requests
   * follow the server's pace rather than the decoder's. The token is then checked against each
   * parsed page, and prefetches that do not match are abandoned.
   */
  async #listPaged(options: ListPodsOptions, limit: number): Promise<PodList> {
    const pods: EncodedPod[] = [];
    let pages = 0;
    let resourceVersion = '';
    let continueToken: string | undefined;
    const queryFor = (token: string | undefined): Record<string, string> => {
      const query: Record<string, string> = {};
      if (options.labelSelector) query.labelSelector = options.labelSelector;
      if (limit > 0) query.limit = String(limit);
      if (token) query.continue = token;
      return query;
    };
    /** Pages requested and not yet consumed, in order: the current one first. */
    const fetches: PageFetch[] = [];
    let stopped = false;
    /** A token named by the last page's head, waiting for room within `MAX_PAGES_AHEAD`. */
    let waitingToken: string | undefined;
    const request = (token: string | undefined): void => {
      const fetch = this.#fetchPage(options, queryFor(token), token);
      fetches.push(fetch);
      if (limit <= 0) return;
      void fetch.head.then((next) => {
        if (stopped || !next || fetches.at(-1) !== fetch) return;
        if (fetches.length > MAX_PAGES_AHEAD) waitingToken = next;
        else request(next);
      });
    };
    request(undefined);
    try {
      do {
        const current = fetches[0] as PageFetch;
        let body: PageBody;
        try {
          body = await current.body;
        } catch (error) {
          if (continueToken && isExpired(error)) throw new ExpiredContinueError();
          throw error;
        }
        const page = parsePage(body);
        const metadata = isRecord(page.metadata) ? page.metadata : {};
        if (typeof metadata.resourceVersion !== 'string' || metadata.resourceVersion === '') {
          throw new MalformedListError('LIST response has no metadata.resourceVersion');
        }
        resourceVersion = metadata.resourceVersion;
        let pagePods: EncodedPod[];
        if (page.pods) {
          // Read from protobuf straight into pods, validated as they were read.
          if (page.refused) throw refusedListItem(page.refused, pods.length);
          pagePods = page.pods;
        } else {
          const items = page.items ?? [];
          if (!Array.isArray(items))
            throw new MalformedListError('LIST response items is not a list');
          pagePods = new Array<EncodedPod>(items.length);
          for (let index = 0; index < items.length; index += 1) {
            pagePods[index] = readListItem(items[index], pods.length + index);
          }
        }
        for (const pod of pagePods) pods.push(pod);
        pages += 1;
        fetches.shift();
        options.onPage?.({ pages, pods: pods.length }, pagePods);
        continueToken =
          typeof metadata.continue === 'string' && metadata.continue
            ? metadata.continue
            : undefined;
        if (continueToken) {
          if (fetches[0]?.token !== continueToken) {
            // The head said otherwise (never from an API server): start over from the page's word.
            for (const fetch of fetches.splice(0)) fetch.abandon();
            waitingToken = undefined;
            request(continueToken);
          } else if (waitingToken !== undefined && fetches.length <= MAX_PAGES_AHEAD) {
            const next = waitingToken;
            waitingToken = undefined;
            request(next);
          }
        }
      } while (continueToken);
    } finally {
      // Pages fetched ahead for a LIST that failed or ended differently are not wanted.
      stopped = true;
      for (const fetch of fetches.splice(0)) fetch.abandon();
    }
    return { pods, resourceVersion };
  }

  /**
   * Requests one page and reads its whole body (after gzip), abandonable on its own. `head`
   * resolves as soon as the first bytes name the page's continue token (or cannot: the first
   * `HEAD_BYTES` arrived without one, the body ended, or the request failed); it never rejects.
   */
  #fetchPage(options: ListPodsOptions, query: Record<string, string>, token?: string): PageFetch {
    const own = new AbortController();
    const signal = AbortSignal.any([options.signal, own.signal]);
    let resolveHead: (token: string | undefined) => void = () => {};
    const head = new Promise<string | undefined>((resolve) => {
      resolveHead = resolve;
    });
    const body = (async () => {
      try {
        const open = await this.#open(
          'LIST',
          podsPath(options.namespace),
          query,
          signal,
          this.#wholeReadHeaders,
        );
        const protobuf = isProtobufContentType(open.header('content-type'));
        const peek = protobuf ? peekProtobufContinueToken : peekContinueToken;
        try {
          const maxPageBytes = options.maxPageBytes ?? Number.POSITIVE_INFINITY;
          const raw = await readAll(
            bodyOf(open),
            options.onBytes,
            maxPageBytes,
            (head) => {
              const early = peek(head);
              if (early === undefined && head.length < HEAD_BYTES) return false;
              resolveHead(early);
              return true;
            },
            () =>
              new MalformedListError(
                `LIST page larger than ${maxPageBytes} bytes (the server ignored limit?); refused`,
              ),
          );
          const cut = open.truncation();
          if (cut) throw cut;
          return { raw, protobuf };
        } catch (error) {
          if (error instanceof MalformedListError) throw error;
          throw options.signal.aborted
            ? options.signal.reason
            : new ApiConnectionError('LIST', error);
        } finally {
          open.close();
        }
      } finally {
        resolveHead(undefined);
      }
    })();
    // An abandoned prefetch's failure is nobody's: it must not be an unhandled rejection.
    body.catch(() => {});
    return {
      token,
      head,
      body,
      abandon: () => own.abort(new Error('LIST page no longer wanted')),
    };
  }

  async watchPods(options: WatchPodsOptions): Promise<WatchStream> {
    const query: Record<string, string> = {
      watch: 'true',
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(options.timeoutSeconds),
    };
    if (options.resourceVersion !== '' || !options.sendInitialEvents) {
      query.resourceVersion = options.resourceVersion;
    }
    if (options.sendInitialEvents) {
      query.sendInitialEvents = 'true';
      query.resourceVersionMatch = 'NotOlderThan';
    }
    if (options.labelSelector) query.labelSelector = options.labelSelector;
    // A watch-list's initial events are a LIST's bytes: compressed as a LIST is, when asked (the
    // API server gzips them since 1.37, `WatchListCompression`); the body is inflated as a stream.
    const open = await this.#open(
      'WATCH',
      podsPath(options.namespace),
      query,
      options.signal,
      options.sendInitialEvents ? this.#wholeReadHeaders : {},
    );
    const framer = isProtobufContentType(open.header('content-type'))
      ? protobufWatchFramer()
      : jsonWatchFramer();
    return new HttpWatchStream(open, bodyOf(open), options.signal, options.onBytes, framer);
  }

  /** Sends a GET and resolves with a 200 response; anything else becomes an error here. */
  async #open(
    verb: 'LIST' | 'WATCH',
    path: string,
    query: Record<string, string>,
    signal: AbortSignal,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse> {
    signal.throwIfAborted();
    let prepared: Awaited<ReturnType<ApiConnection['requestOptions']>>;
    try {
      prepared = await this.#connection.requestOptions();
    } catch (error) {
      throw new ApiConnectionError(verb, error, false);
    }
    const { agent } = prepared;
    const allHeaders = {
      ...(prepared.headers as OutgoingHttpHeaders),
      Accept: this.#accept,
      ...headers,
    };
    let open: ApiResponse;
    try {
      const overHttp2 =
        this.#http2 && goesDirectOverTls(prepared)
          ? await this.#http2.open(prepared, {
              url: requestUrl(this.#connection.server, path, query),
              headers: allHeaders,
              signal,
            })
          : undefined;
      if (overHttp2) {
        releaseRequestAgent(agent);
        open = overHttp2;
      } else {
        const exchange = await openApiExchange(this.#connection.server, prepared, {
          method: 'GET',
          path,
          query,
          headers: allHeaders,
          signal,
        });
        open = http1Response(exchange, agent);
      }
    } catch (error) {
      releaseRequestAgent(agent);
      throw signal.aborted ? signal.reason : new ApiConnectionError(verb, error, false);
    }
    if (open.status === 200) return open;
    let body = '';
    let decoded: unknown;
    try {
      const raw = await readAll(bodyOf(open), undefined, MAX_ERROR_BODY_BYTES);
      if (isProtobufContentType(open.header('content-type'))) decoded = decodeStatus(raw);
      else body = raw.toString('utf8');
    } catch {
      // The status code alone still classifies the failure.
    } finally {
      open.close();
    }
    const header = open.header('retry-after');
    const code = open.status;
    throw new ApiStatusError(
      verb,
      decoded === undefined
        ? statusFromResponse(code, body, header)
        : statusFromDecodedResponse(code, decoded, '', header),
    );
  }
}

/** A later page's continue token expired: the paged LIST cannot be finished. */
class ExpiredContinueError extends Error {
  override readonly name = 'ExpiredContinueError';
}

function isExpired(error: unknown): boolean {
  return error instanceof ApiStatusError && isExpiredStatus(error.status);
}

/** A LIST item's name in an error: `namespace/name`, or its place in the LIST without a name. */
function itemName(metadata: Record<string, unknown>, index: number): string {
  return typeof metadata.name === 'string'
    ? `${typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : ''}${metadata.name}`
    : `#${index}`;
}

function readListItem(item: unknown, index: number): EncodedPod {
  try {
    return readPodValue(item);
  } catch (error) {
    if (!(error instanceof MalformedPodError)) throw error;
    const metadata = isRecord(item) && isRecord(item.metadata) ? item.metadata : {};
    throw new MalformedListError(`LIST item ${itemName(metadata, index)}: ${error.message}`);
  }
}

/**
 * The LIST error for a protobuf item the pod reader refused, named as a JSON item is (protobuf's
 * empty strings are JSON's absent ones). `before`: pods read from earlier pages.
 */
function refusedListItem(
  refused: { index: number; error: RefusedPodError },
  before: number,
): MalformedListError {
  const { name, namespace } = refused.error.identity;
  const metadata = name === '' ? {} : namespace === '' ? { name } : { name, namespace };
  return new MalformedListError(
    `LIST item ${itemName(metadata, before + refused.index)}: ${refused.error.message}`,
  );
}

/**
 * A protobuf error body as the object ../client/api-errors.ts reads; undefined when it does not
 * decode.
 */
function decodeStatus(raw: Buffer): unknown {
  try {
    return decodeProtobufObject(raw);
  } catch (error) {
    if (!(error instanceof ProtobufDecodeError)) throw error;
    return undefined;
  }
}

/**
 * A `PodApi` for the configured cluster, asking for `options.apiContentType` (protobuf by
 * default), over HTTP/2 unless `options.apiHttp2` is false. With `firstRequest` (the main thread's
 * `snapshotRequest`), the first request goes out without reading the kubeconfig here, and the
 * kubeconfig is read when a later request needs credentials (../client/request-snapshot.ts).
 */
export async function connectPodApi(
  options: ClusterOptions = {},
  firstRequest?: RequestSnapshot,
): Promise<PodApi> {
  return new HttpPodApi(
    firstRequest === undefined
      ? await loadApiConnection(options)
      : connectionFromSnapshot(firstRequest, options, loadApiConnection),
    options.apiContentType,
    options.apiCompression ?? false,
    options.apiHttp2 === false ? undefined : new Http2Sessions(realClock),
  );
}

/** A page requested (maybe ahead of need): its body, and a way to drop it. */
interface PageFetch {
  /** The continue token it was requested with; undefined for the first page. */
  token: string | undefined;
  /** The continue token named by the page's first bytes, as soon as they arrive; never rejects. */
  head: Promise<string | undefined>;
  body: Promise<PageBody>;
  abandon: () => void;
}

/**
 * Pages requested beyond the one being decoded: enough that the next request is always in flight
 * while the decoder works (the API server answers a page of 500 in 15–40 ms, the decoder takes
 * about as long), few enough that a LIST holds at most three pages' bytes at once.
 */
const MAX_PAGES_AHEAD = 2;

/** How far into a page its `metadata` (and so its continue token) is looked for. */
const HEAD_BYTES = 4_096;
const CONTINUE_TOKEN = /"continue":"([A-Za-z0-9+/=_-]+)"/;

/**
 * The continue token from a LIST page's head, before the whole page is parsed: only within
 * `metadata`, which must come before `items` (it does in the API server's output); anything else
 * answers undefined and the caller just waits for the parse. A wrong answer costs one abandoned
 * request: the caller checks the token against the parsed page.
 */
export function peekContinueToken(raw: Buffer): string | undefined {
  const head = raw.subarray(0, HEAD_BYTES).toString('latin1');
  const metadataAt = head.indexOf('"metadata":{');
  const itemsAt = head.indexOf('"items":');
  if (metadataAt < 0 || (itemsAt >= 0 && itemsAt < metadataAt)) return undefined;
  const end = head.indexOf('}', metadataAt);
  if (end < 0) return undefined;
  return CONTINUE_TOKEN.exec(head.slice(metadataAt, end))?.[1];
}

/**
 * A page as its JSON-shaped fields; `pods` (and `refused`, when an item was not a readable pod)
 * instead of `items` when a protobuf page was read straight into pods.
 */
function parsePage({
  raw,
  protobuf,
}: PageBody): Record<string, unknown> & Partial<ProtobufPodPage> {
  if (protobuf) {
    try {
      return decodeProtobufPodList(raw);
    } catch (error) {
      if (!(error instanceof ProtobufDecodeError)) throw error;
      throw new MalformedListError(`LIST response is not a protobuf PodList: ${error.message}`);
    }
  }
  let page: unknown;
  try {
    // Each item's managedFields is never read: skipped, not built (../codec/managed-fields-skip.ts).
    page = parseListWithoutManagedFields(raw);
  } catch (error) {
    throw new MalformedListError(
      `LIST response is not JSON: ${error instanceof Error ? error.message : error}`,
    );
  }
  if (!isRecord(page)) throw new MalformedListError('LIST response is not an object');
  return page;
}
