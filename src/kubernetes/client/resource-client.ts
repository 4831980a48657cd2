/**
 * One API resource's requests, bounded alike: the EndpointSlice, Lease, pod condition and Event
 * calls each name their own timeout and answer size, and share everything else.
 *
 * Every request goes through `apiRequest` (./api-request.ts) with the resource's per-request
 * timeout and answer bound; an answer over the bound, or a 2xx body that is not JSON, becomes a
 * malformed-answer `ResourceApiError` naming the request, so a log line tells whose answer was bad.
 */
import type { Clock } from '../../runtime/clock.js';
import { type ApiAnswer, apiRequest, parseAnswerJson } from './api-request.js';
import { type ApiConnection, type ClusterOptions, loadApiConnection } from './connection.js';
import { describeCall, ResourceApiError, type ResourceCall } from './resource-api-error.js';

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
  /** The message of the `RangeError` a bad timeout throws; default `timeoutMs must be positive`. */
  timeoutRefusal?: string;
}

/** One request of a resource: the `ApiRequest` fields that differ from call to call. */
interface ResourceRequest {
  method: string;
  path: string;
  body?: unknown;
  contentType?: string;
  signal: AbortSignal;
  /** Which request this is, for errors. */
  call: ResourceCall;
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
    const { maxBodyBytes } = this.#bounds;
    const { call, ...rest } = request;
    return apiRequest(this.#connection, {
      ...rest,
      what: describeCall(call),
      timeoutMs: this.#timeoutMs,
      ...(this.#clock ? { clock: this.#clock } : {}),
      maxBodyBytes,
      tooLarge: () =>
        ResourceApiError.malformed(call, `response larger than ${maxBodyBytes} bytes; refused`),
    });
  }

  /** A 2xx answer's body as JSON; a malformed-answer error naming `call` when it is not. */
  parseJson(body: string, call: ResourceCall): unknown {
    return parseAnswerJson(body, (why) =>
      ResourceApiError.malformed(call, `response is not JSON: ${why}`),
    );
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
