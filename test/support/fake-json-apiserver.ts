/**
 * The base of the loopback fakes that speak one JSON resource of the Kubernetes API to the raw
 * HTTP clients (./fake-lease-apiserver.ts, ./fake-endpointslice-apiserver.ts): the server on a
 * free port, an `ApiConnection` to it with a bearer token, a request body read as JSON, JSON
 * replies and `metav1.Status` bodies, and a close that drops open connections. What each resource
 * answers is the subclass's `handle`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiConnection } from '../../src/kubernetes/client/connection.js';

/** A request as received: the raw URL (path and query), its headers, its body parsed as JSON. */
export interface ReceivedJsonRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export abstract class FakeJsonApiServer {
  readonly #server: Server;
  readonly #defaultToken: string;

  protected constructor(defaultToken: string) {
    this.#defaultToken = defaultToken;
    this.#server = createServer((request, response) => {
      void this.#receive(request, response);
    });
  }

  /** Listens on a free loopback port; the subclass's `start` calls it once. */
  protected async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** A connection as ./connection.ts builds one, with a bearer token so the header can be asserted. */
  connection(token = this.#defaultToken): ApiConnection {
    return {
      server: this.url,
      requestOptions: async () => ({ headers: { Authorization: `Bearer ${token}` } }),
    };
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Answers one request (with `reply`), or leaves it open. */
  protected abstract handle(request: ReceivedJsonRequest, response: ServerResponse): void;

  protected reply(response: ServerResponse, code: number, answer: unknown): void {
    response.writeHead(code, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(answer));
  }

  async #receive(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    this.handle(
      {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: text ? JSON.parse(text) : undefined,
      },
      response,
    );
  }
}

/** A `metav1.Status` body, as the API server answers a refusal (or a DELETE). */
export function apiStatus(code: number, reason: string, message: string): unknown {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    status: code < 300 ? 'Success' : 'Failure',
    code,
    reason,
    message,
  };
}
