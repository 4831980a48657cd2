/**
 * A loopback HTTP server speaking just enough of the pods API for protocol edge cases: paged LIST
 * (limit/continue), WATCH as newline-delimited JSON that a test writes frame by frame, scripted
 * error responses, and connections a test can end cleanly or break. Unit tests only: the e2e layer
 * talks to a real kube-apiserver.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGzip, type Gzip, gzipSync } from 'node:zlib';

export interface RecordedHttpRequest {
  verb: 'LIST' | 'WATCH';
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
}

/** A scripted answer for the next request of a verb. */
export interface ScriptedResponse {
  status: number;
  /** Text, or bytes as they are (a protobuf body, with its Content-Type in `headers`). */
  body?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Write the body, then destroy the socket without finishing the response. */
  breakAfterBody?: boolean;
  gzip?: boolean;
  /** Write the first `bytes` of the body, then the rest only once `until` resolves. */
  holdAfter?: { bytes: number; until: Promise<void> };
}

/** One open WATCH response. */
export class ServerWatch {
  readonly #response: ServerResponse;
  /** Resolves when the client closed (or lost) the connection. */
  readonly closed: Promise<void>;
  #isClosed = false;

  /** The body's gzip stream, when the watch is compressed: each write is flushed at once. */
  readonly #gzip: Gzip | undefined;

  constructor(
    readonly request: RecordedHttpRequest,
    response: ServerResponse,
    gzip = false,
  ) {
    this.#response = response;
    if (gzip) {
      this.#gzip = createGzip();
      this.#gzip.pipe(response);
    }
    this.closed = new Promise((resolve) =>
      response.on('close', () => {
        this.#isClosed = true;
        resolve();
      }),
    );
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** One frame, newline-terminated, as the API server writes them. */
  send(frame: unknown): this {
    return this.sendRaw(`${JSON.stringify(frame)}\n`);
  }

  /** Raw text: partial frames, garbage, several frames in one write. */
  sendRaw(text: string): this {
    if (this.#gzip) {
      // As the API server's gzip writer does: flushed, so the client can inflate it at once.
      this.#gzip.write(text);
      this.#gzip.flush();
    } else this.#response.write(text);
    return this;
  }

  /** A clean end, as when the server's timeoutSeconds runs out. */
  end(): void {
    if (this.#gzip) this.#gzip.end();
    else this.#response.end();
  }

  /** The connection breaks mid-response. */
  destroy(): void {
    this.#response.socket?.destroy();
  }
}

export class FakeApiServer {
  readonly requests: RecordedHttpRequest[] = [];
  readonly watches: ServerWatch[] = [];
  /** What LIST serves, in order; `resourceVersion` is the collection's version. */
  pods: unknown[] = [];
  resourceVersion = '1';
  /**
   * Answer a LIST and a WATCH that ask for gzip (`Accept-Encoding: gzip`) with a gzip body, as the
   * API server does for large LISTs and (since 1.37) watch-lists. Off: every body is identity.
   */
  gzipWhenAsked = false;
  /** TCP connections accepted: a client that reuses its connections opens few. */
  connections = 0;
  /**
   * How many of the next requests that arrive on an already used connection are cut without an
   * answer, as a server closing an idle kept-alive connection just as the client reuses it.
   */
  cutReusedConnections = 0;
  /** Requests cut that way (not in `requests`: the server never handled them). */
  cutRequests: Array<{ method: string; path: string }> = [];
  readonly #usedSockets = new WeakSet<object>();
  readonly #server: Server;
  readonly #scripts: Record<'LIST' | 'WATCH', Array<ScriptedResponse | 'normal'>> = {
    LIST: [],
    WATCH: [],
  };
  readonly #watchWaiters: Array<() => void> = [];

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<FakeApiServer> {
    const server = createServer();
    // Kept-alive connections stay until the test closes them, however slow the machine: tests
    // count connections, and node's 5 s idle timeout would otherwise close one between requests.
    server.keepAliveTimeout = 0;
    const fake = new FakeApiServer(server);
    server.on('request', (request, response) => fake.#handle(request, response));
    server.on('connection', () => {
      fake.connections += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /**
   * The next requests of `verb` get these answers, in order, instead of the normal ones;
   * `'normal'` lets one request through to the normal answer (a first page, say).
   */
  script(verb: 'LIST' | 'WATCH', ...responses: Array<ScriptedResponse | 'normal'>): this {
    this.#scripts[verb].push(...responses);
    return this;
  }

  /** The `count`-th WATCH (1-based; default the latest, or the first), once it has arrived. */
  async watch(count = Math.max(1, this.watches.length)): Promise<ServerWatch> {
    while (this.watches.length < count) {
      await new Promise<void>((resolve) => this.#watchWaiters.push(resolve));
    }
    return this.watches[count - 1] as ServerWatch;
  }

  /** Writes a kubeconfig for this server (plain http needs insecure-skip-tls-verify in client-node). */
  writeKubeconfig(options: { context?: string; token?: string } = {}): string {
    const context = options.context ?? 'fake';
    const dir = mkdtempSync(join(tmpdir(), 'pool-controller-kubeconfig-'));
    const path = join(dir, 'config');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        `current-context: ${context}`,
        'clusters:',
        `- name: fake`,
        '  cluster:',
        `    server: ${this.url}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: fake',
        '  user:',
        `    token: ${options.token ?? 'fake-token'}`,
        'contexts:',
        `- name: ${context}`,
        '  context:',
        '    cluster: fake',
        '    user: fake',
        '',
      ].join('\n'),
    );
    return path;
  }

  /** Stops listening and breaks every open connection. */
  async close(): Promise<void> {
    for (const watch of this.watches) watch.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (this.#usedSockets.has(request.socket) && this.cutReusedConnections > 0) {
      this.cutReusedConnections -= 1;
      this.cutRequests.push({ method: request.method ?? '', path: url.pathname });
      request.socket.destroy();
      return;
    }
    this.#usedSockets.add(request.socket);
    const query = Object.fromEntries(url.searchParams);
    const verb = query.watch === 'true' ? 'WATCH' : 'LIST';
    const recorded: RecordedHttpRequest = {
      verb,
      path: url.pathname,
      query,
      headers: request.headers,
    };
    this.requests.push(recorded);
    const scripted = this.#scripts[verb].shift();
    if (scripted && scripted !== 'normal') {
      respondScripted(response, scripted);
      return;
    }
    const gzip = this.gzipWhenAsked && /\bgzip\b/.test(String(request.headers['accept-encoding']));
    if (verb === 'LIST') {
      this.#list(query, response, gzip);
      return;
    }
    response.writeHead(200, {
      'Content-Type': 'application/json',
      'Transfer-Encoding': 'chunked',
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
    });
    response.flushHeaders();
    this.watches.push(new ServerWatch(recorded, response, gzip));
    for (const wake of this.#watchWaiters.splice(0)) wake();
  }

  #list(query: Record<string, string>, response: ServerResponse, gzip: boolean): void {
    const limit = query.limit ? Number(query.limit) : this.pods.length;
    const start = query.continue ? Number(query.continue) : 0;
    const end = Math.min(this.pods.length, start + limit);
    const body = JSON.stringify({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: {
        resourceVersion: this.resourceVersion,
        ...(end < this.pods.length ? { continue: String(end) } : {}),
      },
      items: this.pods.slice(start, end),
    });
    response.writeHead(200, {
      'Content-Type': 'application/json',
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
    });
    response.end(gzip ? gzipSync(body) : body);
  }
}

function respondScripted(response: ServerResponse, scripted: ScriptedResponse): void {
  const body = scripted.body ?? '';
  const encoded = scripted.gzip ? gzipSync(body) : Buffer.from(body);
  response.writeHead(scripted.status, {
    'Content-Type': 'application/json',
    ...(scripted.gzip ? { 'Content-Encoding': 'gzip' } : {}),
    ...scripted.headers,
  });
  if (scripted.breakAfterBody) {
    response.write(encoded);
    setImmediate(() => response.socket?.destroy());
    return;
  }
  if (scripted.holdAfter) {
    const { bytes, until } = scripted.holdAfter;
    response.write(encoded.subarray(0, bytes));
    void until.then(() => response.end(encoded.subarray(bytes)));
    return;
  }
  response.end(encoded);
}
