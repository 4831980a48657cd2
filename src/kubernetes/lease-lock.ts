/**
 * The `LeaseLock` of leader election over a coordination.k8s.io/v1 Lease.
 *
 * Port of client-go's `resourcelock.LeaseLock`: GET the Lease (404: none yet), POST to create it,
 * PUT to update it at the resourceVersion last read, so the API server's optimistic concurrency
 * decides every race (409 becomes `LeaseConflictError`). Like client-go it keeps the last Lease
 * object it saw and replaces only the spec fields leader election owns, so labels, annotations and
 * newer spec fields (`strategy`, `preferredHolder`) set by others survive an update.
 *
 * Requests go over plain `node:http(s)` with the connection ./api.ts builds from client-node's
 * kubeconfig handling (auth, TLS), as the pod adapter does; `connectLeaseLock` is the one place
 * that obtains that connection.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import http from 'node:http';
import https from 'node:https';
import {
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type ObservedLease,
} from '../coordination/lease-record.js';
import { statusFromResponse } from './api-errors.js';
import { type ApiConnection, type ClusterOptions, loadApiConnection } from './connection.js';

const LEASES_API = '/apis/coordination.k8s.io/v1';

/** A Lease is a few hundred bytes; anything much bigger is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface KubernetesLeaseLockOptions {
  /** Where and how requests go (./api.ts's `loadApiConnection`). */
  connection: ApiConnection;
  namespace: string;
  name: string;
}

/** The API server answered a Lease request with an unexpected status (not 404 on GET, not 409). */
export class LeaseApiError extends Error {
  override readonly name = 'LeaseApiError';
  constructor(
    readonly method: string,
    readonly statusCode: number,
    detail: string,
  ) {
    super(`${method} Lease failed: HTTP ${statusCode}${detail ? `: ${detail}` : ''}`);
  }
}

/** A 2xx answer that is not a readable Lease. */
export class MalformedLeaseError extends Error {
  override readonly name = 'MalformedLeaseError';
}

type JsonObject = Record<string, unknown>;

function isRecord(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface Answer {
  statusCode: number;
  body: string;
  retryAfter: string | undefined;
}

export class KubernetesLeaseLock implements LeaseLock {
  readonly #connection: ApiConnection;
  readonly #namespace: string;
  readonly #name: string;
  /** The last Lease object read or written, to carry its metadata and unknown fields into a PUT. */
  #last: JsonObject | undefined;

  constructor(options: KubernetesLeaseLockOptions) {
    if (!options.namespace || !options.name) {
      throw new RangeError('KubernetesLeaseLock: namespace and name must be non-empty');
    }
    this.#connection = options.connection;
    this.#namespace = options.namespace;
    this.#name = options.name;
  }

  describe(): string {
    return `${this.#namespace}/${this.#name}`;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | null> {
    const answer = await this.#request('GET', this.#itemPath(), undefined, signal);
    if (answer.statusCode === 404) return null;
    this.#expect('GET', answer, [200]);
    return this.#read(answer.body);
  }

  async create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.#name, namespace: this.#namespace },
      spec: specOf(record),
    };
    const answer = await this.#request('POST', this.#collectionPath(), lease, signal);
    this.#expect('POST', answer, [200, 201]);
    return this.#read(answer.body);
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
    const answer = await this.#request('PUT', this.#itemPath(), lease, signal);
    this.#expect('PUT', answer, [200]);
    return this.#read(answer.body);
  }

  #collectionPath(): string {
    return `${LEASES_API}/namespaces/${encodeURIComponent(this.#namespace)}/leases`;
  }

  #itemPath(): string {
    return `${this.#collectionPath()}/${encodeURIComponent(this.#name)}`;
  }

  #expect(method: string, answer: Answer, ok: number[]): void {
    if (ok.includes(answer.statusCode)) return;
    const status = statusFromResponse(answer.statusCode, answer.body, answer.retryAfter);
    if (answer.statusCode === 409) {
      throw new LeaseConflictError(
        `${method} Lease ${this.describe()}: conflict${status.message ? `: ${status.message}` : ''}`,
      );
    }
    throw new LeaseApiError(
      method,
      answer.statusCode,
      [status.reason, status.message].filter(Boolean).join(': '),
    );
  }

  #read(body: string): ObservedLease {
    let lease: unknown;
    try {
      lease = JSON.parse(body);
    } catch (error) {
      throw new MalformedLeaseError(
        `Lease response is not JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const observed = parseLease(lease);
    this.#last = lease as JsonObject;
    return observed;
  }

  /** One request with an optional JSON body; resolves with any status, rejects on transport errors. */
  async #request(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body: unknown,
    signal: AbortSignal,
  ): Promise<Answer> {
    signal.throwIfAborted();
    const prepared = await this.#connection.requestOptions();
    signal.throwIfAborted();
    const url = new URL(this.#connection.server);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
    const transport = url.protocol === 'http:' ? http : https;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = {
      ...(prepared.headers as Record<string, string>),
      Accept: 'application/json',
    };
    if (payload !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    const agent = prepared.agent as { destroy?: () => void } | undefined;
    let request: ClientRequest | undefined;
    try {
      return await new Promise<Answer>((resolve, reject) => {
        request = transport.request(url, { ...prepared, method, headers, signal });
        request.on('response', (response: IncomingMessage) => {
          readBody(response).then(
            (text) => {
              const retryAfter = response.headers['retry-after'];
              resolve({
                statusCode: response.statusCode ?? 0,
                body: text,
                retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
              });
            },
            (error: unknown) => reject(signal.aborted ? signal.reason : error),
          );
        });
        request.on('error', (error) =>
          reject(
            signal.aborted
              ? signal.reason
              : new Error(`${method} Lease ${this.describe()}: ${error.message}`, { cause: error }),
          ),
        );
        request.end(payload);
      });
    } finally {
      request?.destroy();
      agent?.destroy?.();
    }
  }
}

/** Reads a response body, refusing one too big to be a Lease or a Status. */
async function readBody(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > MAX_BODY_BYTES) throw new MalformedLeaseError('Lease response is too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
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
 * A Lease object into a record, as client-go's `LeaseSpecToLeaderElectionRecord` reads one:
 * absent fields are zero values (a Lease created by someone else may carry none of them).
 */
export function parseLease(value: unknown): ObservedLease {
  if (!isRecord(value) || !isRecord(value.metadata)) {
    throw new MalformedLeaseError('Lease response has no metadata');
  }
  const resourceVersion = value.metadata.resourceVersion;
  if (typeof resourceVersion !== 'string' || resourceVersion === '') {
    throw new MalformedLeaseError('Lease response has no metadata.resourceVersion');
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
  options: ClusterOptions & { namespace: string; name: string },
): Promise<KubernetesLeaseLock> {
  const { namespace, name, ...cluster } = options;
  return new KubernetesLeaseLock({
    connection: await loadApiConnection(cluster),
    namespace,
    name,
  });
}
