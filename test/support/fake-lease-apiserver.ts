/**
 * A loopback HTTP server speaking just enough of coordination.k8s.io/v1 Leases for the Lease
 * lock's unit tests: GET (404 when absent), POST (409 when present), PUT (409 on a stale
 * resourceVersion), a resourceVersion bumped on every write, every request recorded in order,
 * and scripted answers (an error status, or a request left hanging) for the next request.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiConnection } from '../../src/kubernetes/connection.js';

export interface RecordedLeaseRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

type Script = { status: number; body?: unknown } | 'hang';

export class FakeLeaseApiServer {
  readonly requests: RecordedLeaseRequest[] = [];
  /** The stored Lease object, exactly as the server would serve it. */
  lease: Record<string, unknown> | undefined;
  readonly #server: Server;
  readonly #scripts: Script[] = [];
  readonly #hanging = new Set<ServerResponse>();
  #version = 100;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<FakeLeaseApiServer> {
    let fake: FakeLeaseApiServer | undefined;
    const server = createServer((request, response) => fake?.handle(request, response));
    fake = new FakeLeaseApiServer(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** A connection as ./api.ts builds one, with a bearer token so the header can be asserted. */
  connection(token = 'test-token'): ApiConnection {
    return {
      server: this.url,
      requestOptions: async () => ({ headers: { Authorization: `Bearer ${token}` } }),
    };
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

  async close(): Promise<void> {
    for (const response of this.#hanging) response.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text ? JSON.parse(text) : undefined;
    const recorded: RecordedLeaseRequest = {
      method: request.method ?? '',
      path: request.url ?? '',
      headers: request.headers,
      body,
    };
    this.requests.push(recorded);
    const script = this.#scripts.shift();
    if (script === 'hang') {
      this.#hanging.add(response);
      response.on('close', () => this.#hanging.delete(response));
      return;
    }
    if (script) return this.reply(response, script.status, script.body ?? {});
    const [status, answer] = this.answer(recorded);
    this.reply(response, status, answer);
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

  private reply(response: ServerResponse, code: number, answer: unknown): void {
    response.writeHead(code, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(answer));
  }
}

function body(request: RecordedLeaseRequest): Record<string, unknown> {
  return (request.body ?? {}) as Record<string, unknown>;
}

function status(code: number, reason: string, message: string): unknown {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}
