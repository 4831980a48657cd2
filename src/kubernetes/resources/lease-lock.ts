/**
 * The `LeaseLock` of leader election over a coordination.k8s.io/v1 Lease.
 *
 * Port of client-go's `resourcelock.LeaseLock`: GET the Lease (404: none yet), POST to create it,
 * PUT to update it at the resourceVersion last read, so the API server's optimistic concurrency
 * decides every race (409 becomes `LeaseConflictError`). Like client-go it keeps the last Lease
 * object it saw and replaces only the spec fields leader election owns, so labels, annotations and
 * newer spec fields (`strategy`, `preferredHolder`) set by others survive an update.
 *
 * Requests go over plain `node:http(s)` (../client/api-request.ts, shared with the EndpointSlice
 * API) with the connection ../client/connection.ts builds from client-node's kubeconfig handling
 * (auth, TLS); `connectLeaseLock` is the one place that obtains that connection.
 */

import {
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type ObservedLease,
} from '../../coordination/lease-record.js';
import type { Clock } from '../../runtime/clock.js';
import { isRecord } from '../client/api-errors.js';
import { type ApiAnswer, answerStatus } from '../client/api-request.js';
import {
  type ApiConnection,
  type ClusterOptions,
  loadApiConnection,
} from '../client/connection.js';
import { describeCall, ResourceApiError, type ResourceCall } from '../client/resource-api-error.js';
import { type ResourceBounds, ResourceClient } from '../client/resource-client.js';
import { redactSecrets } from '../client/safe-error.js';

const LEASES_API = '/apis/coordination.k8s.io/v1';

/** A Lease is a few hundred bytes; anything much bigger is not one, and is refused unread. */
export const LEASE_MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * 5 s: client-go bounds each Lease request by half the renew deadline (10 s by default), so a
 * request to an API server that never answers cannot stall a follower's campaign either.
 */
export const DEFAULT_LEASE_REQUEST_TIMEOUT_MS = 5_000;

/**
 * Which Lease the lock holds, and over which connection; both names are required and checked at
 * construction, since an empty one would only fail at the first request.
 */
export interface KubernetesLeaseLockOptions {
  /** Where and how requests go (../client/connection.ts's `loadApiConnection`). */
  connection: ApiConnection;
  namespace: string;
  name: string;
  /** Per request, the answer's body included; default `DEFAULT_LEASE_REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs?: number;
  /** Where the request timeout is measured; default the real clock. */
  clock?: Clock;
}

type JsonObject = Record<string, unknown>;

/** What bounds every Lease request (`ResourceClient`). */
const LEASE_BOUNDS: ResourceBounds = {
  defaultTimeoutMs: DEFAULT_LEASE_REQUEST_TIMEOUT_MS,
  maxBodyBytes: LEASE_MAX_RESPONSE_BYTES,
  timeoutRefusal: 'KubernetesLeaseLock: requestTimeoutMs must be positive',
};

/**
 * The `LeaseLock` the leader elector uses against a real cluster. It remembers the last Lease it
 * read or wrote, so an update carries the object's metadata and the fields it does not own; a 409
 * becomes `LeaseConflictError`, which the elector reads as "someone else wrote first", not as a
 * failure.
 */
export class KubernetesLeaseLock implements LeaseLock {
  readonly #client: ResourceClient;
  readonly #namespace: string;
  readonly #name: string;
  /** The last Lease object read or written, to carry its metadata and unknown fields into a PUT. */
  #last: JsonObject | undefined;

  constructor(options: KubernetesLeaseLockOptions) {
    if (!options.namespace || !options.name) {
      throw new RangeError('KubernetesLeaseLock: namespace and name must be non-empty');
    }
    this.#client = new ResourceClient(
      { connection: options.connection, timeoutMs: options.requestTimeoutMs, clock: options.clock },
      LEASE_BOUNDS,
    );
    this.#namespace = options.namespace;
    this.#name = options.name;
  }

  describe(): string {
    return `${this.#namespace}/${this.#name}`;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | null> {
    const call = this.#call('GET');
    const answer = await this.#request('GET', this.#itemPath(), undefined, signal, call);
    if (answer.statusCode === 404) return null;
    this.#expect(call, answer, [200]);
    return this.#read(answer.body, call);
  }

  async create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.#name, namespace: this.#namespace },
      spec: specOf(record),
    };
    const call = this.#call('CREATE');
    const answer = await this.#request('POST', this.#collectionPath(), lease, signal, call);
    this.#expect(call, answer, [200, 201]);
    return this.#read(answer.body, call);
  }

  async update(
    record: LeaseRecord,
    resourceVersion: string,
    signal: AbortSignal,
  ): Promise<ObservedLease> {
    const last = this.#last;
    const lastMetadata = isRecord(last?.metadata) ? last.metadata : undefined;
    const base: JsonObject =
      last && lastMetadata?.resourceVersion === resourceVersion
        ? last
        : { metadata: { name: this.#name, namespace: this.#namespace } };
    const lease = {
      ...base,
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { ...(base.metadata as JsonObject), resourceVersion },
      spec: { ...(isRecord(base.spec) ? base.spec : {}), ...specOf(record) },
    };
    const call = this.#call('UPDATE');
    const answer = await this.#request('PUT', this.#itemPath(), lease, signal, call);
    this.#expect(call, answer, [200]);
    return this.#read(answer.body, call);
  }

  #collectionPath(): string {
    return `${LEASES_API}/namespaces/${encodeURIComponent(this.#namespace)}/leases`;
  }

  #itemPath(): string {
    return `${this.#collectionPath()}/${encodeURIComponent(this.#name)}`;
  }

  /** One request of this Lease, as its errors name it. */
  #call(verb: 'GET' | 'CREATE' | 'UPDATE'): ResourceCall {
    return { verb, resource: 'Lease', target: this.describe() };
  }

  #expect(call: ResourceCall, answer: ApiAnswer, ok: number[]): void {
    if (ok.includes(answer.statusCode)) return;
    if (answer.statusCode === 409) {
      const { message } = answerStatus(answer);
      throw new LeaseConflictError(
        `${describeCall(call)}: conflict${message ? `: ${redactSecrets(message)}` : ''}`,
      );
    }
    throw ResourceApiError.refused(call, answer.statusCode, answerStatus(answer));
  }

  #read(body: string, call: ResourceCall): ObservedLease {
    const lease = this.#client.parseJson(body, call);
    const observed = parseLease(lease, call);
    this.#last = lease as JsonObject;
    return observed;
  }

  /** One request with an optional JSON body; resolves with any status, rejects on transport errors. */
  #request(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body: unknown,
    signal: AbortSignal,
    call: ResourceCall,
  ): Promise<ApiAnswer> {
    return this.#client.send({ method, path, body, signal, call });
  }
}

/** The spec fields leader election owns. Times pass through: they are MicroTime strings already. */
function specOf(record: LeaseRecord): JsonObject {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTime,
    renewTime: record.renewTime,
    leaseTransitions: record.leaseTransitions,
  };
}

/**
 * A Lease object (the answer to `call`) into a record, as client-go's
 * `LeaseSpecToLeaderElectionRecord` reads one: absent fields are zero values (a Lease created by
 * someone else may carry none of them).
 */
function parseLease(value: unknown, call: ResourceCall): ObservedLease {
  if (!isRecord(value) || !isRecord(value.metadata)) {
    throw ResourceApiError.malformed(call, 'the answer has no metadata');
  }
  const resourceVersion = value.metadata.resourceVersion;
  if (typeof resourceVersion !== 'string' || resourceVersion === '') {
    throw ResourceApiError.malformed(call, 'the answer has no metadata.resourceVersion');
  }
  const spec = isRecord(value.spec) ? value.spec : {};
  const text = (field: unknown): string | null =>
    typeof field === 'string' && field !== '' ? field : null;
  const count = (field: unknown): number =>
    typeof field === 'number' && Number.isFinite(field) ? field : 0;
  return {
    resourceVersion,
    record: {
      holderIdentity: typeof spec.holderIdentity === 'string' ? spec.holderIdentity : '',
      leaseDurationSeconds: count(spec.leaseDurationSeconds),
      acquireTime: text(spec.acquireTime),
      renewTime: text(spec.renewTime),
      leaseTransitions: count(spec.leaseTransitions),
    },
  };
}

/** A lock for `namespace/name` on the configured cluster (kubeconfig, in-cluster, context). */
export async function connectLeaseLock(
  options: ClusterOptions & { namespace: string; name: string; requestTimeoutMs?: number },
): Promise<KubernetesLeaseLock> {
  const { namespace, name, requestTimeoutMs, ...cluster } = options;
  return new KubernetesLeaseLock({
    connection: await loadApiConnection(cluster),
    namespace,
    name,
    ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
  });
}
