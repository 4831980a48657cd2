/**
 * One API resource's requests, bounded alike: the EndpointSlice, Lease, pod condition and Event
 * calls each name their own timeout, answer size and error types, and share everything else.
 *
 * Every request goes through `apiRequest` (./api-request.ts) with the resource's per-request
 * timeout and answer bound; an answer over the bound, or a 2xx body that is not JSON, becomes the
 * resource's own malformed-answer error, so a caller's `instanceof` tells whose answer was bad.
 */
import type { Clock } from '../../runtime/clock.js';
import { type ApiAnswer, apiRequest, parseAnswerJson } from './api-request.js';
import { type ApiConnection, type ClusterOptions, loadApiConnection } from './connection.js';

/**
 * What a resource's API is built from: an already loaded connection (`resourceApiOptions` loads
 * one from the cluster options), and the per-request bound in time.
 */
export interface ResourceApiOptions {
  connection: ApiConnection;
  /** Per request, the answer's body included; default the resource's own (`ResourceBounds`). */
  timeoutMs?: number | undefined;
  /** Where the request timeout is measured; default the real clock. */
  clock?: Clock | undefined;
}

/**
 * What one resource fixes for all its requests. The timeout is checked (positive) when the client
 * is built, so no resource can be built to wait for ever.
 */
export interface ResourceBounds {
  /** The timeout when the options give none. */
  defaultTimeoutMs: number;
  /** A larger answer is refused unread. */
  maxBodyBytes: number;
  /** The resource's error for an answer it refuses (too large, or a 2xx that is not JSON). */
  malformed: new (
    message: string,
  ) => Error;
  /** The message of the `RangeError` a bad timeout throws; default `timeoutMs must be positive`. */
  timeoutRefusal?: string;
}

/** One request of a resource: the `ApiRequest` fields that differ from call to call. */
export interface ResourceRequest {
  method: string;
  path: string;
  body?: unknown;
  contentType?: string;
  signal: AbortSignal;
  /** The request in words, for errors: `APPLY pods/status ns/name`. Never a header. */
  what: string;
}

/**
 * The requests of one resource (see the header). Holds no state but its options: every answer,
 * whatever its status, goes back to the caller, who knows what the status means.
 */
export class ResourceClient {
  readonly #connection: ApiConnection;
  readonly #timeoutMs: number;
  readonly #clock: Clock | undefined;
  readonly #bounds: ResourceBounds;

  constructor(options: ResourceApiOptions, bounds: ResourceBounds) {
    this.#connection = options.connection;
    this.#clock = options.clock;
    this.#timeoutMs = options.timeoutMs ?? bounds.defaultTimeoutMs;
    if (!(this.#timeoutMs > 0)) {
      throw new RangeError(bounds.timeoutRefusal ?? 'timeoutMs must be positive');
    }
    this.#bounds = bounds;
  }

  /** One request; resolves with any status, rejects on transport errors and oversized answers. */
  send(request: ResourceRequest): Promise<ApiAnswer> {
    const { maxBodyBytes, malformed: Malformed } = this.#bounds;
    return apiRequest(this.#connection, {
      ...request,
      timeoutMs: this.#timeoutMs,
      ...(this.#clock ? { clock: this.#clock } : {}),
      maxBodyBytes,
      tooLarge: () =>
        new Malformed(`${request.what}: response larger than ${maxBodyBytes} bytes; refused`),
    });
  }

  /** A 2xx answer's body as JSON; the resource's malformed error names `what` when it is not. */
  parseJson(body: string, what: string): unknown {
    const Malformed = this.#bounds.malformed;
    return parseAnswerJson(body, what, (message) => new Malformed(message));
  }
}

/** The options of a resource's API on the configured cluster (kubeconfig, in-cluster, context). */
export async function resourceApiOptions(
  options: ClusterOptions & { timeoutMs?: number },
): Promise<ResourceApiOptions> {
  const { timeoutMs, ...cluster } = options;
  return {
    connection: await loadApiConnection(cluster),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  };
}

/**
 * The API server refused a resource's request (a status its caller does not accept). Each
 * resource's error extends it, so a caller reads `statusCode` (an Event's 404: re-create) and
 * `reason` alike, and every message says `<what>: HTTP <code> <reason>: <detail>`.
 */
export class ResourceApiError extends Error {
  constructor(
    what: string,
    readonly statusCode: number,
    readonly reason: string | undefined,
    detail: string | undefined,
  ) {
    super(`${what}: HTTP ${statusCode}${reason ? ` ${reason}` : ''}${detail ? `: ${detail}` : ''}`);
  }
}
