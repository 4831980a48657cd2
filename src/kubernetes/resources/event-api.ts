/**
 * events.k8s.io/v1 Events: POST one Event, PATCH one Event's series. The two calls client-go's
 * `tools/events` sink makes (it never updates anything else: a v1 Event is immutable but for its
 * series).
 *
 * Requests go over plain `node:http(s)` (../client/api-request.ts), bounded in time and in the
 * size of the answer, as the EndpointSlice API does. Errors name the verb, the Event and the
 * server's `Status`, never a request header.
 */
import { isRecord } from '../client/api-errors.js';
import { answerStatus } from '../client/api-request.js';
import type { ClusterOptions } from '../client/connection.js';
import { ResourceApiError, type ResourceCall } from '../client/resource-api-error.js';
import {
  type ResourceApiOptions,
  ResourceClient,
  resourceApiOptions,
} from '../client/resource-client.js';

/** 10 s per request: an Event is small; a slower answer is a stuck server. */
const EVENT_REQUEST_TIMEOUT_MS = 10_000;
/** An Event is at most a few KiB; a larger answer is not one and is refused unread. */
const EVENT_MAX_RESPONSE_BYTES = 256 * 1024;

/** The object an Event is about (`regarding`). */
export interface EventObjectReference {
  /** A pod (cell and sink Events), or a pool's LeaderWorkerSet (capacity Events). */
  apiVersion: 'v1' | 'leaderworkerset.x-k8s.io/v1';
  kind: 'Pod' | 'LeaderWorkerSet';
  namespace: string;
  name: string;
  uid?: string;
}

/** An Event as created: every field events.k8s.io/v1 requires. */
export interface KubernetesEvent {
  name: string;
  namespace: string;
  /** MicroTime of the first occurrence. */
  eventTime: string;
  series?: { count: number; lastObservedTime: string };
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  regarding: EventObjectReference;
  note: string;
  type: 'Normal' | 'Warning';
}

/**
 * The two writes the recorder needs (a new Event, a series update), so the recorder's bounds and
 * timing are tested against a fake without an API server.
 */
export interface EventApi {
  create(event: KubernetesEvent, signal: AbortSignal): Promise<void>;
  /** Rejects with a `ResourceApiError` of status 404 when the Event is gone (expired, deleted). */
  patchSeries(
    namespace: string,
    name: string,
    series: { count: number; lastObservedTime: string },
    signal: AbortSignal,
  ): Promise<void>;
}

/** What bounds every Event request (`ResourceClient`). */
const EVENT_BOUNDS = {
  defaultTimeoutMs: EVENT_REQUEST_TIMEOUT_MS,
  maxBodyBytes: EVENT_MAX_RESPONSE_BYTES,
};

/**
 * `EventApi` over events.k8s.io/v1: POST to create, merge PATCH of `series` to count a repeat.
 * Every request is bounded in time and body, as the other resource calls are.
 */
class KubernetesEventApi implements EventApi {
  readonly #client: ResourceClient;

  constructor(options: ResourceApiOptions) {
    this.#client = new ResourceClient(options, EVENT_BOUNDS);
  }

  async create(event: KubernetesEvent, signal: AbortSignal): Promise<void> {
    const { name, namespace, ...fields } = event;
    await this.#send(
      'CREATE',
      `${namespace}/${name}`,
      'POST',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name, namespace }, ...fields },
      'application/json',
      signal,
    );
  }

  async patchSeries(
    namespace: string,
    name: string,
    series: { count: number; lastObservedTime: string },
    signal: AbortSignal,
  ): Promise<void> {
    await this.#send(
      'PATCH',
      `${namespace}/${name}`,
      'PATCH',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events/${encodeURIComponent(name)}`,
      { series },
      'application/merge-patch+json',
      signal,
    );
  }

  async #send(
    verb: 'CREATE' | 'PATCH',
    target: string,
    method: 'POST' | 'PATCH',
    path: string,
    body: unknown,
    contentType: string,
    signal: AbortSignal,
  ): Promise<void> {
    const call: ResourceCall = { verb, resource: 'Event', target };
    const answer = await this.#client.send({ method, path, body, contentType, signal, call });
    if (answer.statusCode !== 200 && answer.statusCode !== 201) {
      throw ResourceApiError.refused(call, answer.statusCode, answerStatus(answer));
    }
    // A 2xx that is not an Event (a proxy, a broken server) is never counted as written.
    const stored = this.#client.parseJson(answer.body, call);
    if (!isRecord(stored)) throw ResourceApiError.malformed(call, 'the answer is not an Event');
  }
}

/** The Event API of the configured cluster (kubeconfig, in-cluster, context). */
export async function connectEventApi(
  options: ClusterOptions & { timeoutMs?: number } = {},
): Promise<KubernetesEventApi> {
  return new KubernetesEventApi(await resourceApiOptions(options));
}
