/**
 * A loopback HTTP server speaking just enough of discovery.k8s.io/v1 EndpointSlices for the
 * EndpointSlice sink's unit tests: LIST (one namespace or all, `key=value` label selectors),
 * server-side apply (PATCH application/apply-patch+yaml; 422 for a loopback address, as the real
 * API server's validation answers), DELETE (404 when absent, 409 when a uid precondition fails).
 * Every request is recorded in order; scripted answers fail the requests whose path matches.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiConnection } from '../../src/kubernetes/connection.js';

export interface RecordedSliceRequest {
  method: string;
  /** Path without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
}

type StoredSlice = Record<string, unknown> & {
  metadata: Record<string, unknown> & {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
  };
};

interface Failure {
  /** Fails requests whose `METHOD path` contains this. */
  match: string;
  status: number;
  /** How many times; default forever (until `heal`). */
  times?: number;
}

const API = '/apis/discovery.k8s.io/v1';

export class FakeEndpointSliceApiServer {
  readonly requests: RecordedSliceRequest[] = [];
  /** By `namespace/name`, as the server would serve them. */
  readonly slices = new Map<string, StoredSlice>();
  readonly #server: Server;
  #failures: Failure[] = [];
  #version = 100;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<FakeEndpointSliceApiServer> {
    let fake: FakeEndpointSliceApiServer | undefined;
    const server = createServer((request, response) => {
      void fake?.handle(request, response);
    });
    fake = new FakeEndpointSliceApiServer(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  connection(token = 'secret-token'): ApiConnection {
    return {
      server: this.url,
      requestOptions: async () => ({ headers: { Authorization: `Bearer ${token}` } }),
    };
  }

  /** `LIST <ns|*>`, `APPLY <name>`, `DELETE <name>` for every request, in order. */
  sequence(): string[] {
    return this.requests.map((r) => {
      const parts = r.path.slice(API.length + 1).split('/');
      if (r.method === 'GET') return `LIST ${parts[0] === 'namespaces' ? parts[1] : '*'}`;
      return `${r.method === 'PATCH' ? 'APPLY' : r.method} ${parts[3]}`;
    });
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  /** Requests whose `METHOD path` contains `match` are answered with `status`. */
  fail(match: string, status = 500, times?: number): void {
    this.#failures.push({ match, status, ...(times !== undefined ? { times } : {}) });
  }

  heal(): void {
    this.#failures = [];
  }

  /** Stores a slice as another writer would (a fresh uid and resourceVersion). */
  put(slice: StoredSlice): void {
    this.#version += 1;
    const key = `${slice.metadata.namespace}/${slice.metadata.name}`;
    const existing = this.slices.get(key);
    this.slices.set(key, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      ...slice,
      metadata: {
        ...slice.metadata,
        uid: (existing?.metadata.uid as string | undefined) ?? randomUUID(),
        resourceVersion: String(this.#version),
      },
    });
  }

  /** `ip:port` of a stored slice, sorted. */
  endpoints(namespace: string, name: string): string[] | undefined {
    const slice = this.slices.get(`${namespace}/${name}`);
    if (!slice) return undefined;
    const ports = (slice.ports as Array<{ port: number }>).map((p) => p.port);
    const out: string[] = [];
    for (const endpoint of slice.endpoints as Array<{ addresses: string[] }>) {
      for (const ip of endpoint.addresses) {
        for (const port of ports) out.push(`${ip.includes(':') ? `[${ip}]` : ip}:${port}`);
      }
    }
    return out.sort();
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(request.url ?? '/', 'http://fake');
    const recorded: RecordedSliceRequest = {
      method: request.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    this.requests.push(recorded);
    const failure = this.#failures.find((f) =>
      `${recorded.method} ${recorded.path}`.includes(f.match),
    );
    if (failure) {
      if (failure.times !== undefined) {
        failure.times -= 1;
        if (failure.times <= 0) this.#failures = this.#failures.filter((f) => f !== failure);
      }
      return reply(response, failure.status, status(failure.status, 'InternalError', 'scripted'));
    }
    const [code, answer] = this.answer(recorded);
    reply(response, code, answer);
  }

  private answer(request: RecordedSliceRequest): [number, unknown] {
    if (!request.path.startsWith(`${API}/`)) return [404, status(404, 'NotFound', 'no such API')];
    const parts = request.path.slice(API.length + 1).split('/');
    const namespaced = parts[0] === 'namespaces';
    const namespace = namespaced ? parts[1] : undefined;
    const rest = namespaced ? parts.slice(2) : parts;
    if (rest[0] !== 'endpointslices') return [404, status(404, 'NotFound', 'no such resource')];
    const name = rest[1];
    if (request.method === 'GET' && name === undefined) return this.list(namespace, request);
    if (namespace === undefined || name === undefined) {
      return [405, status(405, 'MethodNotAllowed', 'method not allowed')];
    }
    const key = `${namespace}/${name}`;
    if (request.method === 'PATCH') return this.apply(key, namespace, name, request);
    if (request.method === 'DELETE') {
      const existing = this.slices.get(key);
      if (!existing) return [404, status(404, 'NotFound', `endpointslices "${name}" not found`)];
      const uid = (request.body as { preconditions?: { uid?: string } } | undefined)?.preconditions
        ?.uid;
      if (uid !== undefined && uid !== existing.metadata.uid) {
        return [409, status(409, 'Conflict', 'Precondition failed: UID in precondition')];
      }
      this.slices.delete(key);
      return [200, status(200, '', '')];
    }
    return [405, status(405, 'MethodNotAllowed', 'method not allowed')];
  }

  private list(namespace: string | undefined, request: RecordedSliceRequest): [number, unknown] {
    const selector = request.query.get('labelSelector') ?? '';
    const required = selector
      .split(',')
      .filter(Boolean)
      .map((term) => term.split('=') as [string, string]);
    const items = [...this.slices.values()].filter(
      (slice) =>
        (namespace === undefined || slice.metadata.namespace === namespace) &&
        required.every(([key, value]) => slice.metadata.labels?.[key] === value),
    );
    return [
      200,
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSliceList',
        metadata: { resourceVersion: String(this.#version) },
        items,
      },
    ];
  }

  private apply(
    key: string,
    namespace: string,
    name: string,
    request: RecordedSliceRequest,
  ): [number, unknown] {
    if (request.headers['content-type'] !== 'application/apply-patch+yaml') {
      return [415, status(415, 'UnsupportedMediaType', 'not an apply patch')];
    }
    if (!request.query.get('fieldManager')) {
      return [422, status(422, 'Invalid', 'fieldManager is required for apply requests')];
    }
    const body = request.body as StoredSlice;
    for (const endpoint of (body.endpoints as Array<{ addresses: string[] }> | undefined) ?? []) {
      for (const ip of endpoint.addresses) {
        if (ip.startsWith('127.') || ip === '::1') {
          return [
            422,
            status(
              422,
              'Invalid',
              `EndpointSlice.discovery.k8s.io "${name}" is invalid: endpoints[0].addresses[0]: Invalid value: "${ip}": may not be in the loopback range`,
            ),
          ];
        }
      }
    }
    const existing = this.slices.get(key);
    if (existing && existing.addressType !== body.addressType) {
      return [422, status(422, 'Invalid', 'addressType: field is immutable')];
    }
    this.put({ ...body, metadata: { ...body.metadata, namespace, name } });
    return [existing ? 200 : 201, this.slices.get(key)];
  }
}

function reply(response: ServerResponse, code: number, answer: unknown): void {
  response.writeHead(code, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify(answer));
}

function status(code: number, reason: string, message: string): unknown {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    status: code < 300 ? 'Success' : 'Failure',
    code,
    reason,
    message,
  };
}
