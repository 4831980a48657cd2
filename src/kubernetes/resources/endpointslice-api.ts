/**
 * discovery.k8s.io/v1 EndpointSlices: LIST by label selector (one namespace or all), server-side
 * apply of one slice, DELETE of one slice with a uid precondition.
 *
 * Requests go over plain `node:http(s)` (../client/api-request.ts) with the connection
 * ../client/connection.ts builds from client-node's kubeconfig handling (auth, TLS), as the Lease
 * lock does. Every request has a bounded timeout and honours the caller's signal. Errors name the
 * verb, the object and the server's `Status` (reason and message), never a request header, so a
 * bearer token cannot leak into a log line or an event.
 */
import { isRecord } from '../client/api-errors.js';
import { type ApiAnswer, answerStatus } from '../client/api-request.js';
import type { ClusterOptions } from '../client/connection.js';
import { ResourceApiError, type ResourceCall } from '../client/resource-api-error.js';
import {
  type ResourceApiOptions,
  ResourceClient,
  resourceApiOptions,
} from '../client/resource-client.js';

const ENDPOINTSLICES_API = '/apis/discovery.k8s.io/v1';

/** The field manager of every apply: the owner of the fields the controller writes. */
const ENDPOINTSLICE_FIELD_MANAGER = 'pool-controller';
/** 10 s per request: an apply or a page of slices is small; a slower answer is a stuck server. */
export const ENDPOINTSLICE_REQUEST_TIMEOUT_MS = 10_000;
/** Slices per LIST page: a controller's slices are few; paging only bounds a surprise. */
const ENDPOINTSLICE_LIST_PAGE_SIZE = 500;
/** A page of 500 slices of a few KiB each fits easily; anything bigger is refused, not buffered. */
export const ENDPOINTSLICE_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/**
 * The slice's `addressType`, immutable once the slice exists: changing it means deleting the slice
 * and creating it again, which the sink does. `FQDN` is read (a listed slice may be one) but never
 * written.
 */
type EndpointSliceAddressType = 'IPv4' | 'IPv6' | 'FQDN';

/**
 * One endpoint of a slice. The sink writes `addresses` (one IP each) and `conditions`; the index
 * signature keeps every other field of a listed endpoint as read, so the comparison with the
 * desired slice sees what the server really holds.
 */
export interface EndpointSliceEndpoint {
  addresses: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  hostname?: string;
  targetRef?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * One port of a slice, as the API spells it; every field is optional there (a port without `port`
 * means all ports), and a listed slice's ports are kept as read for the comparison.
 */
export interface EndpointSlicePort {
  name?: string;
  port?: number;
  protocol?: string;
  appProtocol?: string;
}

/** An EndpointSlice as written (`apply`) or read (`list`): the fields the sink compares. */
export interface EndpointSlice {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
  addressType: EndpointSliceAddressType;
  endpoints: EndpointSliceEndpoint[];
  ports: EndpointSlicePort[];
}

/** What the sink needs of the API; the fake in the unit tests speaks HTTP to the real class. */
export interface EndpointSliceApi {
  /** Every slice matching `labelSelector` in `namespace`, or in all namespaces when undefined. */
  list(
    namespace: string | undefined,
    labelSelector: string,
    signal: AbortSignal,
  ): Promise<EndpointSlice[]>;
  /** Server-side apply (force, strict field validation); resolves with the stored slice. */
  apply(slice: EndpointSlice, signal: AbortSignal): Promise<EndpointSlice>;
  /**
   * Deletes `namespace/name`, only if its uid is still `uid` (when given). Resolves `false` when
   * the slice was already gone.
   */
  delete(
    namespace: string,
    name: string,
    uid: string | undefined,
    signal: AbortSignal,
  ): Promise<boolean>;
}

/** What bounds every EndpointSlice request (`ResourceClient`). */
const ENDPOINTSLICE_BOUNDS = {
  defaultTimeoutMs: ENDPOINTSLICE_REQUEST_TIMEOUT_MS,
  maxBodyBytes: ENDPOINTSLICE_MAX_RESPONSE_BYTES,
};

/**
 * The `EndpointSliceApi` over the cluster's HTTP API: paged LIST, server-side apply and a
 * uid-guarded DELETE, each bounded in time and size, each failure a `ResourceApiError` naming
 * the verb, the slice and the server's Status. Unit tests run it against a fake HTTP server, so the
 * requests it sends are what is tested.
 */
export class KubernetesEndpointSliceApi implements EndpointSliceApi {
  readonly #client: ResourceClient;

  constructor(options: ResourceApiOptions) {
    this.#client = new ResourceClient(options, ENDPOINTSLICE_BOUNDS);
  }

  async list(
    namespace: string | undefined,
    labelSelector: string,
    signal: AbortSignal,
  ): Promise<EndpointSlice[]> {
    const collection = collectionPath(namespace);
    const call = sliceCall('LIST', `${namespace ?? '*'}/*`);
    const slices: EndpointSlice[] = [];
    let continueToken: string | undefined;
    do {
      const query = new URLSearchParams({
        labelSelector,
        limit: String(ENDPOINTSLICE_LIST_PAGE_SIZE),
      });
      if (continueToken) query.set('continue', continueToken);
      const answer = await this.#request('GET', `${collection}?${query}`, undefined, signal, call);
      expect(call, answer, [200]);
      const list = this.#client.parseJson(answer.body, call);
      if (!isRecord(list) || !Array.isArray(list.items)) {
        throw ResourceApiError.malformed(call, 'the answer has no items');
      }
      for (const item of list.items) slices.push(parseEndpointSlice(item, call));
      const metadata = isRecord(list.metadata) ? list.metadata : {};
      continueToken =
        typeof metadata.continue === 'string' && metadata.continue ? metadata.continue : undefined;
    } while (continueToken);
    return slices;
  }

  async apply(slice: EndpointSlice, signal: AbortSignal): Promise<EndpointSlice> {
    const { namespace, name } = slice.metadata;
    const call = sliceCall('APPLY', `${namespace}/${name}`);
    const query = new URLSearchParams({
      fieldManager: ENDPOINTSLICE_FIELD_MANAGER,
      force: 'true',
      fieldValidation: 'Strict',
    });
    const body = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name,
        namespace,
        ...(slice.metadata.labels ? { labels: slice.metadata.labels } : {}),
      },
      addressType: slice.addressType,
      endpoints: slice.endpoints,
      ports: slice.ports,
    };
    const answer = await this.#request(
      'PATCH',
      `${itemPath(namespace, name)}?${query}`,
      body,
      signal,
      call,
    );
    expect(call, answer, [200, 201]);
    return parseEndpointSlice(this.#client.parseJson(answer.body, call), call);
  }

  async delete(
    namespace: string,
    name: string,
    uid: string | undefined,
    signal: AbortSignal,
  ): Promise<boolean> {
    const call = sliceCall('DELETE', `${namespace}/${name}`);
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      ...(uid ? { preconditions: { uid } } : {}),
    };
    const answer = await this.#request('DELETE', itemPath(namespace, name), body, signal, call);
    if (answer.statusCode === 404) return false;
    expect(call, answer, [200, 202]);
    return true;
  }

  /** One request with an optional JSON body; resolves with any status, rejects on transport errors. */
  #request(
    method: 'GET' | 'PATCH' | 'DELETE',
    path: string,
    body: unknown,
    signal: AbortSignal,
    call: ResourceCall,
  ): Promise<ApiAnswer> {
    return this.#client.send({
      method,
      path,
      body,
      ...(method === 'PATCH' ? { contentType: 'application/apply-patch+yaml' } : {}),
      signal,
      call,
    });
  }
}

function collectionPath(namespace: string | undefined): string {
  return namespace === undefined
    ? `${ENDPOINTSLICES_API}/endpointslices`
    : `${ENDPOINTSLICES_API}/namespaces/${encodeURIComponent(namespace)}/endpointslices`;
}

function itemPath(namespace: string, name: string): string {
  return `${collectionPath(namespace)}/${encodeURIComponent(name)}`;
}

/** One EndpointSlice request, as its errors name it. */
function sliceCall(verb: 'LIST' | 'APPLY' | 'DELETE', target: string): ResourceCall {
  return { verb, resource: 'EndpointSlice', target };
}

function expect(call: ResourceCall, answer: ApiAnswer, ok: number[]): void {
  if (!ok.includes(answer.statusCode))
    throw ResourceApiError.refused(call, answer.statusCode, answerStatus(answer));
}

/**
 * One slice as the server returned it for `call`: the compared fields, leniently (absent lists
 * are empty).
 */
function parseEndpointSlice(value: unknown, call: ResourceCall): EndpointSlice {
  if (!isRecord(value) || !isRecord(value.metadata)) {
    throw ResourceApiError.malformed(call, 'a slice in the answer has no metadata');
  }
  const metadata = value.metadata;
  if (typeof metadata.name !== 'string' || typeof metadata.namespace !== 'string') {
    throw ResourceApiError.malformed(
      call,
      'a slice in the answer has no metadata.name or namespace',
    );
  }
  const addressType = value.addressType;
  if (addressType !== 'IPv4' && addressType !== 'IPv6' && addressType !== 'FQDN') {
    throw ResourceApiError.malformed(
      call,
      `slice ${metadata.namespace}/${metadata.name} has addressType ${JSON.stringify(addressType)}`,
    );
  }
  const labels: Record<string, string> = {};
  if (isRecord(metadata.labels)) {
    for (const [key, label] of Object.entries(metadata.labels)) {
      if (typeof label === 'string') labels[key] = label;
    }
  }
  const endpoints: EndpointSliceEndpoint[] = [];
  for (const endpoint of Array.isArray(value.endpoints) ? value.endpoints : []) {
    if (!isRecord(endpoint)) continue;
    const addresses = Array.isArray(endpoint.addresses)
      ? endpoint.addresses.filter((a): a is string => typeof a === 'string')
      : [];
    endpoints.push({ ...endpoint, addresses });
  }
  const ports: EndpointSlicePort[] = [];
  for (const port of Array.isArray(value.ports) ? value.ports : []) {
    if (isRecord(port)) ports.push(port as EndpointSlicePort);
  }
  return {
    metadata: {
      name: metadata.name,
      namespace: metadata.namespace,
      ...(typeof metadata.uid === 'string' ? { uid: metadata.uid } : {}),
      ...(typeof metadata.resourceVersion === 'string'
        ? { resourceVersion: metadata.resourceVersion }
        : {}),
      labels,
    },
    addressType,
    endpoints,
    ports,
  };
}

/** The EndpointSlice API of the configured cluster (kubeconfig, in-cluster, context). */
export async function connectEndpointSliceApi(
  options: ClusterOptions & { timeoutMs?: number } = {},
): Promise<KubernetesEndpointSliceApi> {
  return new KubernetesEndpointSliceApi(await resourceApiOptions(options));
}
