/**
 * A loopback HTTP server speaking just enough of coordination.k8s.io/v1 Leases for the Lease
 * lock's unit tests: GET (404 when absent), POST (409 when present), PUT (409 on a stale
 * resourceVersion), a resourceVersion bumped on every write, every request recorded in order,
 * and scripted answers (an error status, or a request left hanging) for the next request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  FakeJsonApiServer,
  type ReceivedJsonRequest,
  apiStatus as status,
} from './fake-json-apiserver.js';

export interface RecordedLeaseRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

type Script = { status: number; body?: unknown } | 'hang';

export class FakeLeaseApiServer extends FakeJsonApiServer {
  readonly requests: RecordedLeaseRequest[] = [];
  /** The stored Lease object, exactly as the server would serve it. */
  lease: Record<string, unknown> | undefined;
  readonly #scripts: Script[] = [];
  readonly #hanging = new Set<ServerResponse>();
  #version = 100;

  private constructor() {
    super('test-token');
  }

  static start(): Promise<FakeLeaseApiServer> {
    return new FakeLeaseApiServer().listen();
  }

  /** `METHOD path-tail` for every request, e.g. `GET leases/leader`, `POST leases`. */
  sequence(): string[] {
    return this.requests.map((r) => `${r.method} ${r.path.split('/').slice(-2).join('/')}`);
  }

  /** The next request gets this answer instead of the normal one. */
  next(script: Script): void {
    this.#scripts.push(script);
  }

  /** Stores a Lease with a fresh resourceVersion, as another writer would. */
  put(lease: Record<string, unknown>): void {
    this.#version += 1;
    const metadata = { ...(lease.metadata as object), resourceVersion: String(this.#version) };
    this.lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease, metadata };
  }

  override async close(): Promise<void> {
    for (const response of this.#hanging) response.destroy();
    await super.close();
  }

  protected handle(request: ReceivedJsonRequest, response: ServerResponse): void {
    const { url: path, ...rest } = request;
    const recorded: RecordedLeaseRequest = { ...rest, path };
    this.requests.push(recorded);
    const script = this.#scripts.shift();
    if (script === 'hang') {
      this.#hanging.add(response);
      response.on('close', () => this.#hanging.delete(response));
      return;
    }
    const [code, answer] = script ? [script.status, script.body ?? {}] : this.answer(recorded);
    this.reply(response, code, answer);
  }

  private answer(request: RecordedLeaseRequest): [number, unknown] {
    const lease = body(request);
    if (request.method === 'GET') {
      return this.lease ? [200, this.lease] : [404, status(404, 'NotFound', 'not found')];
    }
    if (request.method === 'POST') {
      if (this.lease) return [409, status(409, 'AlreadyExists', 'already exists')];
      this.put(lease);
      return [201, this.lease];
    }
    if (request.method === 'PUT') {
      if (!this.lease) return [404, status(404, 'NotFound', 'not found')];
      const sent = (lease.metadata as Record<string, unknown> | undefined)?.resourceVersion;
      const current = (this.lease.metadata as Record<string, unknown>).resourceVersion;
      if (sent !== current) {
        return [
          409,
          status(409, 'Conflict', 'the object has been modified; please apply your changes'),
        ];
      }
      this.put(lease);
      return [200, this.lease];
    }
    return [405, status(405, 'MethodNotAllowed', 'method not allowed')];
  }
}

function body(request: RecordedLeaseRequest): Record<string, unknown> {
  return (request.body ?? {}) as Record<string, unknown>;
}
