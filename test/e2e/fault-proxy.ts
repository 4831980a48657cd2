/**
 * A fault-injecting proxy between a controller and a real kube-apiserver, on 127.0.0.1 only.
 *
 * A plain TCP relay would only see TLS records, so it could reset, stall or slow a connection but
 * never tell a WATCH from a LIST, nor answer 429. This proxy therefore terminates TLS itself, with
 * a self-signed certificate made by openssl when it starts (`caPath`; `writeKubeconfig` writes a
 * kubeconfig that trusts it), and forwards each request to the apiserver over TLS, verified with
 * the apiserver's real CA. Request and response bodies are streamed chunk by chunk, unchanged
 * (compressed LISTs stay compressed), so the faults act on the bytes a client would really see.
 *
 * Faults (`setFault`; `clear()` ends one):
 * - `reset`: every open connection is reset (TCP RST) at once, and so is every new one.
 * - `stall`: half-open. Streams in flight stop receiving bytes and new requests get no answer,
 *   with no FIN either; stalled exchanges stay dead after `clear()`, as a lost peer would. Only
 *   the client's own idle detection gets it out.
 * - `cut-mid-frame`: a WATCH response's next chunk is forwarded only up to the middle of its first
 *   frame, then the connection is reset: a frame is left half-written.
 * - `status`: every new request is answered by the proxy with the given status (429, 500, 503)
 *   and a Kubernetes `Status` body, plus `Retry-After` when given.
 * - `delay`: every response chunk is held back `ms` before it is forwarded (order kept).
 * - `drop-watch`: WATCH requests are reset (open WATCH connections too); LIST and everything else
 *   is forwarded.
 * - `oversized-frame`: once, into an open WATCH response (or the next one), a single frame of
 *   `bytes` bytes: what it takes to run a reflector worker thread out of its heap. The fault then
 *   clears itself.
 * - `down`: the apiserver unreachable, as the proxy shows it while the apiserver process is
 *   stopped: every open connection is reset, and every new request is read (and counted by kind)
 *   and its connection reset without an answer. What it costs the apiserver: nothing.
 * - `inflate-list`: the next LIST of pods is answered by the proxy with up to `pages` pages of
 *   made-up pods (each with a `paddingBytes` annotation), chained by `continue` tokens only the
 *   proxy understands: a LIST too big for a small worker heap, growing page by page as a real
 *   one would. The next LIST that starts over (no `continue`) ends the fault and is forwarded.
 * - `strip-initial-events-end`: every `k8s.io/initial-events-end` BOOKMARK of a JSON WATCH is
 *   left out (other frames, other bookmarks included, go through): a watch-list never hears that
 *   its initial events ended, as behind a proxy that drops bookmarks.
 * - `stale-copy`: every MODIFIED frame of a JSON WATCH is followed by a copy of itself at
 *   resourceVersion − `behind` (at least 1) with the opposite readiness (the pod's `Ready` and
 *   `ContainersReady` conditions and each container's `ready` flipped): a server whose history
 *   goes back, as in issue 36's finding 5.
 * - `stranger-copy`: every MODIFIED frame of a JSON WATCH is followed by a copy of itself as
 *   another pod (`-stranger` after its name and uid, same resourceVersion) with `labels` laid over
 *   its own: a pod the client's label selector may not select, as a broken server or proxy sends.
 *
 * The two frame-rewriting faults act on JSON WATCH responses only (a protobuf stream goes through
 * unchanged, counted nowhere): frames are re-cut on their newlines, so a frame split across chunks
 * is rewritten whole. While one is in force, WATCH requests are sent upstream without
 * `Accept-Encoding`, so the frames arrive as plain lines.
 *
 * Every request is also recorded with its arrival time and kind (`arrivals`: LIST and WATCH of
 * pods, Lease, other), whatever the fault, so a test can count what a client sent in a window
 * (`countArrivals`): the request rate while the apiserver is down is one of the bounds checked.
 * Each record also keeps the request's query and `Accept-Encoding`, and, once a forwarded request
 * is answered, the apiserver's status, `Content-Encoding` and body bytes as they crossed the wire
 * (whether they really began as gzip): what a client asked for and what it was sent.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSelfSignedCertificate } from '../support/self-signed-certificate.js';

export type ProxyFault =
  | { readonly kind: 'reset' }
  | { readonly kind: 'stall' }
  | { readonly kind: 'cut-mid-frame' }
  | { readonly kind: 'status'; readonly status: number; readonly retryAfterSeconds?: number }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'drop-watch' }
  | { readonly kind: 'oversized-frame'; readonly bytes: number }
  | { readonly kind: 'down' }
  /**
   * WATCHes asking for the initial events (`sendInitialEvents=true`, a watch-list) answered 422
   * Invalid, as an API server with the WatchList feature off answers them; the rest forwarded.
   */
  | { readonly kind: 'refuse-watch-list' }
  | { readonly kind: 'strip-initial-events-end' }
  | { readonly kind: 'stale-copy'; readonly behind: number }
  | { readonly kind: 'stranger-copy'; readonly labels: Readonly<Record<string, string>> }
  | {
      readonly kind: 'inflate-list';
      readonly pages: number;
      readonly podsPerPage: number;
      readonly paddingBytes: number;
    };

export type ProxyFaultKind = ProxyFault['kind'];

export interface FaultProxyOptions {
  /** The apiserver, e.g. `https://127.0.0.1:41234`. */
  readonly upstream: string;
  /** PEM of the CA that signs the apiserver's serving certificate. */
  readonly upstreamCaPath: string;
}

/** What a request asked for, as the request-rate bound counts them: each kind on its own. */
export type RequestKind = 'list' | 'watch' | 'lease' | 'other';

/** One request as it reached the proxy, and how the apiserver answered it when forwarded. */
export interface Arrival {
  /** `Date.now()` when its head was read. */
  readonly at: number;
  readonly kind: RequestKind;
  /** The request's query (`sendInitialEvents`, `resourceVersion`, `limit`, ...). */
  readonly query: URLSearchParams;
  /** Its `Accept-Encoding` header, as the client sent it. */
  readonly acceptEncoding: string | undefined;
  /** Set once the apiserver's answer to a forwarded request began; the proxy's own answers have none. */
  answer?: UpstreamAnswer;
}

/** What the apiserver answered, as it crossed the proxy (bodies are forwarded unchanged). */
export interface UpstreamAnswer {
  readonly status: number;
  /** Its `Content-Encoding` header. */
  readonly contentEncoding: string | undefined;
  /** Body bytes forwarded so far, as they came on the wire (compressed when it was). */
  bytes: number;
  /** The body's first two bytes are gzip's magic number (0x1f 0x8b): really gzip, not only labelled. */
  gzipMagic: boolean;
}

/** Arrivals kept; far more than any scenario sends, so a runaway client cannot grow the list. */
const MAX_ARRIVALS = 1_000_000;

/** What the proxy has seen and done, for assertions and diagnostics. */
export interface FaultProxyCounters {
  requests: number;
  watches: number;
  lists: number;
  /** Faults actually applied to a request or stream, per kind. */
  injected: Partial<Record<ProxyFaultKind, number>>;
}

interface Exchange {
  readonly socket: Socket;
  readonly watch: boolean;
  /** Set when a `stall` caught this exchange: nothing more is forwarded, ever. */
  stalled: boolean;
  /** Set when a `cut-mid-frame` should hit this exchange's next chunk. */
  cut: boolean;
  /** The response once its headers went out (frames can be injected into it). */
  res?: ServerResponse;
  /** The upstream answered in protobuf: injected frames are length-prefixed, not lines. */
  protobuf?: boolean;
  /** The start of a JSON frame whose newline has not come yet, held while frames are rewritten. */
  partial?: Buffer | undefined;
  /** The request's record, where the apiserver's answer is noted. */
  readonly arrival: Arrival;
}

/** The faults that rewrite a JSON WATCH frame by frame. */
type FrameFault = Extract<
  ProxyFault,
  { kind: 'strip-initial-events-end' | 'stale-copy' | 'stranger-copy' }
>;

function isFrameFault(fault: ProxyFault | undefined): fault is FrameFault {
  return (
    fault?.kind === 'strip-initial-events-end' ||
    fault?.kind === 'stale-copy' ||
    fault?.kind === 'stranger-copy'
  );
}

/** The annotation on the bookmark that ends a watch-list's initial events (KEP-3157). */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
/** The pod conditions `stale-copy` flips: what readiness is judged on. */
const READINESS_CONDITIONS = new Set(['Ready', 'ContainersReady']);

interface WatchFrameJson {
  type?: unknown;
  object?: {
    metadata?: {
      name?: unknown;
      uid?: unknown;
      resourceVersion?: unknown;
      labels?: Record<string, unknown>;
      annotations?: Record<string, unknown>;
    };
    status?: {
      conditions?: Array<{ type?: unknown; status?: unknown }>;
      containerStatuses?: Array<{ ready?: unknown }>;
    };
  };
}

/** `frame`'s pod with every readiness signal turned the other way (in place). */
function flipReadiness(frame: WatchFrameJson): void {
  const status = frame.object?.status;
  for (const condition of status?.conditions ?? []) {
    if (typeof condition.type !== 'string' || !READINESS_CONDITIONS.has(condition.type)) continue;
    condition.status = condition.status === 'True' ? 'False' : 'True';
  }
  for (const container of status?.containerStatuses ?? [])
    container.ready = container.ready !== true;
}

const REASONS: Record<number, string> = {
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host']);

function isWatchRequest(url: URL): boolean {
  const watch = url.searchParams.get('watch');
  return watch === 'true' || watch === '1';
}

function requestKind(method: string | undefined, url: URL, watch: boolean): RequestKind {
  if (
    url.pathname.startsWith('/apis/coordination.k8s.io/') &&
    /\/leases(\/|$)/.test(url.pathname)
  ) {
    return 'lease';
  }
  if (method === 'GET' && /\/pods$/.test(url.pathname)) return watch ? 'watch' : 'list';
  return 'other';
}

/** Resets a connection (RST, not FIN) where the platform allows it, else destroys it. */
function resetSocket(socket: Socket): void {
  if (socket.destroyed) return;
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

export class FaultProxy {
  readonly url: string;
  readonly port: number;
  /** The proxy's own certificate, self-signed for 127.0.0.1: the CA its clients trust. */
  readonly caPath: string;
  readonly counters: FaultProxyCounters = { requests: 0, watches: 0, lists: 0, injected: {} };
  /** Every request in arrival order (see the file comment), up to `MAX_ARRIVALS`. */
  readonly arrivals: Arrival[] = [];
  readonly #server: https.Server;
  readonly #upstream: URL;
  readonly #agent: https.Agent;
  readonly #dir: string;
  readonly #sockets = new Set<Socket>();
  readonly #exchanges = new Set<Exchange>();
  #fault: ProxyFault | undefined;
  #inflating = false;
  #closed = false;

  private constructor(
    server: https.Server,
    options: FaultProxyOptions,
    dir: string,
    caPath: string,
    port: number,
  ) {
    this.#server = server;
    this.#upstream = new URL(options.upstream);
    this.#agent = new https.Agent({
      keepAlive: true,
      ca: readFileSync(options.upstreamCaPath),
      maxSockets: 64,
    });
    this.#dir = dir;
    this.caPath = caPath;
    this.port = port;
    this.url = `https://127.0.0.1:${port}`;
    server.on('secureConnection', (socket: Socket) => {
      if (this.#fault?.kind === 'reset') {
        this.#count('reset');
        resetSocket(socket);
        return;
      }
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res));
  }

  /** Makes a certificate, listens on 127.0.0.1 (a free port) and resolves once listening. */
  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const dir = mkdtempSync(join(tmpdir(), 'pool-fault-proxy-'));
    const { certPath, keyPath } = writeSelfSignedCertificate(dir, 'proxy', {
      commonName: 'pool-fault-proxy',
      subjectAltName: 'IP:127.0.0.1',
      days: 2,
    });
    const server = https.createServer({
      key: readFileSync(keyPath),
      cert: readFileSync(certPath),
      // HTTP/1.1 only: the faults act on one exchange per connection at a time.
      ALPNProtocols: ['http/1.1'],
    });
    // Long-lived WATCH responses must not be cut by the proxy's own timeouts.
    server.requestTimeout = 0;
    server.headersTimeout = 60_000;
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    return new FaultProxy(server, options, dir, certPath, port);
  }

  /** The fault now in force, if any. */
  get fault(): ProxyFault | undefined {
    return this.#fault;
  }

  /** Puts a fault in force; it acts on what is open now as described in the file comment. */
  setFault(fault: ProxyFault): void {
    this.#fault = fault;
    this.#inflating = false;
    switch (fault.kind) {
      case 'reset':
      case 'down':
        for (const socket of this.#sockets) {
          this.#count(fault.kind);
          resetSocket(socket);
        }
        break;
      case 'drop-watch':
        for (const exchange of this.#exchanges) {
          if (!exchange.watch) continue;
          this.#count('drop-watch');
          resetSocket(exchange.socket);
        }
        break;
      case 'stall':
        for (const exchange of this.#exchanges) {
          if (!exchange.stalled) this.#count('stall');
          exchange.stalled = true;
        }
        break;
      case 'cut-mid-frame':
        for (const exchange of this.#exchanges) if (exchange.watch) exchange.cut = true;
        break;
      case 'oversized-frame':
        for (const exchange of this.#exchanges) {
          if (exchange.watch && exchange.res && !exchange.stalled) {
            this.#writeOversized(exchange.res, fault.bytes, exchange.protobuf === true);
            break;
          }
        }
        break;
      default:
        break;
    }
  }

  /** Ends the fault: new exchanges are forwarded normally (stalled ones stay stalled). */
  clear(): void {
    this.#fault = undefined;
    for (const exchange of this.#exchanges) exchange.cut = false;
  }

  /** Resets every open connection once, without leaving a fault in force. */
  resetConnections(): number {
    let count = 0;
    for (const socket of this.#sockets) {
      count += 1;
      resetSocket(socket);
    }
    return count;
  }

  /** Requests of `kind` that arrived in `[from, to)` (`Date.now()` times). */
  countArrivals(kind: RequestKind, from: number, to: number): number {
    let count = 0;
    for (const arrival of this.arrivals) {
      if (arrival.kind === kind && arrival.at >= from && arrival.at < to) count += 1;
    }
    return count;
  }

  /** Open client connections (for diagnostics). */
  get openConnections(): number {
    return this.#sockets.size;
  }

  /** Writes a kubeconfig that reaches the apiserver through this proxy with `token`. */
  writeKubeconfig(path: string, token: string, user = 'through-proxy'): string {
    const config = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'fault-proxy',
          cluster: {
            server: this.url,
            'certificate-authority-data': readFileSync(this.caPath).toString('base64'),
          },
        },
      ],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: 'fault-proxy', context: { cluster: 'fault-proxy', user } }],
      'current-context': 'fault-proxy',
    };
    writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    return path;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const socket of this.#sockets) socket.destroy();
    this.#agent.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    rmSync(this.#dir, { recursive: true, force: true });
  }

  /** One page of made-up pods, streamed a pod at a time. */
  #servePage(
    res: ServerResponse,
    fault: Extract<ProxyFault, { kind: 'inflate-list' }>,
    page: number,
  ): void {
    this.#count('inflate-list');
    const last = page + 1 >= fault.pages;
    if (last) {
      this.#fault = undefined;
      this.#inflating = false;
    }
    const padding = 'x'.repeat(fault.paddingBytes);
    res.writeHead(200, { 'content-type': 'application/json' });
    const metadata = {
      resourceVersion: '1',
      ...(last ? {} : { continue: `fault-proxy-${page + 1}` }),
    };
    res.write(
      `{"kind":"PodList","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"items":[`,
    );
    for (let i = 0; i < fault.podsPerPage; i += 1) {
      const n = page * fault.podsPerPage + i;
      const pod = {
        metadata: {
          name: `inflated-${n}`,
          namespace: 'inflated',
          uid: `inflated-uid-${n}`,
          resourceVersion: '1',
          labels: { 'fault-proxy/inflated': String(n) },
          annotations: { 'fault-proxy/padding': padding },
        },
        spec: { containers: [{ name: 'c' }] },
        status: {},
      };
      res.write(`${i === 0 ? '' : ','}${JSON.stringify(pod)}`);
    }
    res.end(']}');
  }

  /**
   * One frame of `bytes` bytes, written in 1 MiB pieces, in the stream's own encoding: a JSON
   * line (a pod whose name is that long), or a protobuf frame (its 4-byte length, then the bytes).
   */
  #writeOversized(res: ServerResponse, bytes: number, protobuf: boolean): void {
    this.#fault = undefined;
    this.#count('oversized-frame');
    const piece = Buffer.alloc(1 << 20, 'x');
    if (protobuf) {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes);
      res.write(length);
    } else {
      res.write('{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"');
    }
    for (let written = 0; written < bytes; written += piece.length) {
      res.write(written + piece.length <= bytes ? piece : piece.subarray(0, bytes - written));
    }
    if (!protobuf) res.write('"}}}\n');
  }

  #count(kind: ProxyFaultKind): void {
    this.counters.injected[kind] = (this.counters.injected[kind] ?? 0) + 1;
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.#upstream);
    const watch = isWatchRequest(url);
    this.counters.requests += 1;
    if (watch) this.counters.watches += 1;
    else if (req.method === 'GET') this.counters.lists += 1;
    const arrival: Arrival = {
      at: Date.now(),
      kind: requestKind(req.method, url, watch),
      query: url.searchParams,
      acceptEncoding: req.headers['accept-encoding'],
    };
    if (this.arrivals.length < MAX_ARRIVALS) this.arrivals.push(arrival);
    const exchange: Exchange = { socket: req.socket, watch, stalled: false, cut: false, arrival };
    const fault = this.#fault;
    if (fault?.kind === 'down') {
      this.#count('down');
      req.resume();
      resetSocket(req.socket);
      return;
    }
    if (fault?.kind === 'reset' || (fault?.kind === 'drop-watch' && watch)) {
      this.#count(fault.kind);
      resetSocket(req.socket);
      return;
    }
    const refusedWatchList =
      fault?.kind === 'refuse-watch-list' &&
      watch &&
      url.searchParams.get('sendInitialEvents') === 'true';
    if (refusedWatchList) {
      this.#count('refuse-watch-list');
      const body = JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'fault proxy: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
        reason: 'Invalid',
        code: 422,
      });
      req.resume();
      res.writeHead(422, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
      return;
    }
    if (fault?.kind === 'status') {
      this.#count('status');
      const reason = REASONS[fault.status] ?? 'InternalError';
      const body = JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `fault proxy: injected ${fault.status}`,
        reason,
        code: fault.status,
        ...(fault.retryAfterSeconds !== undefined
          ? { details: { retryAfterSeconds: fault.retryAfterSeconds } }
          : {}),
      });
      req.resume();
      res.writeHead(fault.status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...(fault.retryAfterSeconds !== undefined
          ? { 'retry-after': String(fault.retryAfterSeconds) }
          : {}),
      });
      res.end(body);
      return;
    }
    if (fault?.kind === 'stall') {
      // Never answered, never closed: the request just disappears.
      this.#count('stall');
      exchange.stalled = true;
      req.resume();
      this.#exchanges.add(exchange);
      req.socket.once('close', () => this.#exchanges.delete(exchange));
      return;
    }
    if (
      fault?.kind === 'inflate-list' &&
      !watch &&
      req.method === 'GET' &&
      /\/pods$/.test(url.pathname)
    ) {
      const token = url.searchParams.get('continue') ?? '';
      if (token.startsWith('fault-proxy-') || !this.#inflating) {
        this.#inflating = true;
        req.resume();
        this.#servePage(res, fault, token ? Number(token.slice('fault-proxy-'.length)) : 0);
        return;
      }
      // A LIST starting over: the inflated one was abandoned (its reader died). Done.
      this.#fault = undefined;
      this.#inflating = false;
    }
    if (fault?.kind === 'cut-mid-frame' && watch) exchange.cut = true;
    this.#exchanges.add(exchange);
    this.#forward(req, res, url, exchange);
  }

  #forward(req: IncomingMessage, res: ServerResponse, url: URL, exchange: Exchange): void {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    headers.host = this.#upstream.host;
    if (exchange.watch && isFrameFault(this.#fault)) delete headers['accept-encoding'];
    const upstream = https.request(url, { method: req.method, headers, agent: this.#agent });
    let done = false;
    // Clients keep connections alive across requests: the listener goes when its exchange does.
    const onClientClose = (): void => {
      finish();
      upstream.destroy();
    };
    const finish = (): void => {
      if (done) return;
      done = true;
      this.#exchanges.delete(exchange);
      req.socket.off('close', onClientClose);
    };
    req.socket.once('close', onClientClose);
    upstream.on('error', () => {
      finish();
      if (exchange.stalled) return;
      // The apiserver went away (a restart): the client sees the connection drop, as it would.
      resetSocket(req.socket);
    });
    upstream.on('response', (upstreamRes) => {
      if (exchange.stalled) {
        upstreamRes.destroy();
        return;
      }
      const responseHeaders: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(upstreamRes.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) responseHeaders[name] = value;
      }
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, responseHeaders);
      res.flushHeaders();
      exchange.res = res;
      exchange.protobuf = String(upstreamRes.headers['content-type'] ?? '').includes('protobuf');
      const answer: UpstreamAnswer = {
        status: upstreamRes.statusCode ?? 0,
        contentEncoding: upstreamRes.headers['content-encoding'],
        bytes: 0,
        gzipMagic: false,
      };
      exchange.arrival.answer = answer;
      let head = Buffer.alloc(0);
      // Chunks go out through one chain, so a delay never reorders them.
      let chain = Promise.resolve();
      upstreamRes.on('data', (chunk: Buffer) => {
        answer.bytes += chunk.length;
        if (head.length < 2) {
          head = Buffer.concat([head, chunk]).subarray(0, 2);
          answer.gzipMagic = head.length === 2 && head[0] === 0x1f && head[1] === 0x8b;
        }
        chain = chain.then(() => this.#relay(chunk, res, exchange, upstreamRes));
      });
      upstreamRes.on('end', () => {
        chain = chain.then(() => {
          finish();
          if (exchange.stalled || res.destroyed) return;
          // A frame held for rewriting that never got its newline goes out as it came.
          if (exchange.partial) res.write(exchange.partial);
          res.end();
        });
      });
      upstreamRes.on('error', () => {
        finish();
        if (!exchange.stalled) resetSocket(req.socket);
      });
    });
    req.pipe(upstream);
  }

  async #relay(
    chunk: Buffer,
    res: ServerResponse,
    exchange: Exchange,
    upstreamRes: IncomingMessage,
  ): Promise<void> {
    const fault = this.#fault;
    if (fault?.kind === 'delay') {
      this.#count('delay');
      await new Promise((resolve) => setTimeout(resolve, fault.ms));
    }
    if (exchange.stalled || res.destroyed) {
      // Half-open: the bytes are swallowed and the connection kept, with no FIN.
      upstreamRes.destroy();
      return;
    }
    if (fault?.kind === 'oversized-frame' && exchange.watch) {
      this.#writeOversized(res, fault.bytes, exchange.protobuf === true);
    }
    if (exchange.watch && exchange.protobuf !== true) {
      if (isFrameFault(fault)) {
        this.#rewriteFrames(chunk, res, exchange, fault);
        return;
      }
      if (exchange.partial) {
        // The fault was lifted with half a frame held: it goes out first, unchanged.
        res.write(exchange.partial);
        exchange.partial = undefined;
      }
    }
    if (exchange.cut && chunk.length > 1) {
      this.#count('cut-mid-frame');
      const newline = chunk.indexOf(0x0a);
      const frameEnd = newline === -1 ? chunk.length : newline;
      const half = Math.max(1, Math.floor(frameEnd / 2));
      res.write(chunk.subarray(0, half), () => resetSocket(exchange.socket));
      upstreamRes.destroy();
      return;
    }
    res.write(chunk);
  }

  /** Writes the whole frames `chunk` completes, rewritten by `fault`; holds back the rest. */
  #rewriteFrames(chunk: Buffer, res: ServerResponse, exchange: Exchange, fault: FrameFault): void {
    const bytes = exchange.partial ? Buffer.concat([exchange.partial, chunk]) : chunk;
    const out: Buffer[] = [];
    let start = 0;
    for (;;) {
      const newline = bytes.indexOf(0x0a, start);
      if (newline === -1) break;
      out.push(...this.#rewriteFrame(bytes.subarray(start, newline + 1), fault));
      start = newline + 1;
    }
    exchange.partial = start < bytes.length ? Buffer.from(bytes.subarray(start)) : undefined;
    if (out.length > 0) res.write(Buffer.concat(out));
  }

  /** One JSON frame (with its newline) as `fault` would have it: left out, as is, or doubled. */
  #rewriteFrame(line: Buffer, fault: FrameFault): Buffer[] {
    let frame: WatchFrameJson;
    try {
      frame = JSON.parse(line.toString('utf8')) as WatchFrameJson;
    } catch {
      return [line];
    }
    if (fault.kind === 'strip-initial-events-end') {
      const end = frame.object?.metadata?.annotations?.[INITIAL_EVENTS_END];
      if (frame.type !== 'BOOKMARK' || end !== 'true') return [line];
      this.#count(fault.kind);
      return [];
    }
    if (fault.kind === 'stranger-copy') {
      const metadata = frame.object?.metadata;
      if (frame.type !== 'MODIFIED' || !metadata) return [line];
      const copy = structuredClone(frame);
      const stranger = copy.object?.metadata;
      if (stranger) {
        stranger.name = `${String(metadata.name)}-stranger`;
        stranger.uid = `${String(metadata.uid)}-stranger`;
        stranger.labels = { ...metadata.labels, ...fault.labels };
      }
      this.#count(fault.kind);
      return [line, Buffer.from(`${JSON.stringify(copy)}\n`)];
    }
    const version = frame.object?.metadata?.resourceVersion;
    if (frame.type !== 'MODIFIED' || typeof version !== 'string' || !/^[1-9]\d*$/.test(version)) {
      return [line];
    }
    const behind = BigInt(version) - BigInt(fault.behind);
    const copy = structuredClone(frame);
    const metadata = copy.object?.metadata;
    if (metadata) metadata.resourceVersion = String(behind < 1n ? 1n : behind);
    flipReadiness(copy);
    this.#count(fault.kind);
    return [line, Buffer.from(`${JSON.stringify(copy)}\n`)];
  }
}
