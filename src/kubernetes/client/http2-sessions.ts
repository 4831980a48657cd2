/**
 * HTTP/2 to the API server for the reads that carry the whole collection: pod LIST pages and
 * watches (../resources/http-pod-api.ts). One TLS connection per server and TLS material carries
 * them all as streams, as Go's transport (so client-go) does by default.
 *
 * Why: over HTTP/1.1 the API server flushes each of a watch-list's initial events as a chunk and a
 * TLS record of its own, and Node's HTTP parser pays per record; over HTTP/2 the same bytes arrive
 * in DATA frames that fill larger reads (10,000 engine pods, 49.6 MB of protobuf: 12,000 socket
 * reads against 32,000). Measured against kube-apiserver v1.37.2 (bench:peers, quiet, three runs
 * each, docs/performance.md): time to synced 850 against 941 ms at 10,000 pods and 2,856 against
 * 3,307 ms at 50,000, this process's CPU 10-15 % lower, the API server's within 10 % either way.
 * With Node's default 64 KiB stream window a raw watch-list read was slower than over HTTP/1.1
 * (581–830 against 414–530 ms): the windows below are what makes it pay.
 *
 * ALPN offers `h2` and `http/1.1`, so a server or a proxy in front of it that speaks only
 * HTTP/1.1 answers as such; that is remembered for the material, and the caller goes over its
 * HTTP/1.1 agent (`open` answers undefined).
 *
 * A connection can die without a word (a node gone, a NAT entry expired). Go's transport pings
 * after 30 s without a frame; here, a stream its reader cancelled before the end (the reflector's
 * idle watchdog does that to a silent watch, ./idle-watchdog.ts) marks the session suspect, and
 * the next request pings it first: no answer within `HTTP2_PING_TIMEOUT_MS`, and the session is
 * dropped for a new one.
 */
import http2, {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import type { RequestOptions } from 'node:https';
import { isIP } from 'node:net';
import tls, { type ConnectionOptions } from 'node:tls';
import type { Clock } from '../../runtime/clock.js';
import { type ApiResponse, firstHeaderValue } from './api-exchange.js';
import {
  type AgentMaterial,
  agentMaterial,
  IDLE_CONNECTION_TIMEOUT_MS,
  sameMaterial,
  TCP_KEEPALIVE_MS,
} from './shared-agents.js';

/**
 * Bytes a stream may receive before its reader consumes them: Go's transport's per-stream window
 * (4 MiB). Node's default, 64 KiB, makes the server wait for a window update every 64 KiB of a
 * 50 MB watch-list. The reader pausing (../resources/http-watch-stream.ts) stops the updates, so
 * this is also what a stalled stream can hold beyond the reader's own bound.
 */
export const HTTP2_STREAM_WINDOW_BYTES = 4 * 1024 * 1024;

/**
 * Bytes the whole connection may receive ahead of its readers: room for the watch and the LIST
 * pages fetched ahead (at most four streams at full window). Go's transport allows 1 GiB; this
 * bounds what one connection can pin.
 */
const HTTP2_SESSION_WINDOW_BYTES = 4 * HTTP2_STREAM_WINDOW_BYTES;

/**
 * How long opening a session may take, TCP and TLS together: client-go's dial timeout (30 s). The
 * session is shared, so it cannot end with the first request's signal; this ends a connection
 * that a vanished server never answers.
 */
const HTTP2_CONNECT_TIMEOUT_MS = 30_000;

/** How long a suspect session has to answer a ping: Go's transport's `PingTimeout` as client-go sets it. */
export const HTTP2_PING_TIMEOUT_MS = 15_000;

/** What a request through `Http2Sessions.open` carries besides the connection's options. */
interface Http2Request {
  /** The whole URL: the server's base joined with the path and query. */
  url: URL;
  headers: OutgoingHttpHeaders;
  signal: AbortSignal;
}

/** The protocol a server agreed to, and the session when it is HTTP/2. */
type Negotiated = { protocol: 'h2'; session: ClientHttp2Session } | { protocol: 'http/1.1' };

/** The session (or the HTTP/1.1 answer) for one server and TLS material. */
interface Entry {
  readonly origin: string;
  readonly material: AgentMaterial;
  /** Settles once TLS has chosen the protocol; rejects when the connection could not be made. */
  negotiated: Promise<Negotiated>;
  /** Streams open on the session; it holds the process alive only while there are any. */
  openStreams: number;
  /** A stream was cancelled before its end: ping before the next request. */
  suspect: boolean;
  /** The session closed, failed or was told to go away: no new stream on it. */
  retired: boolean;
}

/** A stream refused by the server before it did any work (RFC 9113 §8.7): safe to send again. */
function wasRefused(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ERR_HTTP2_GOAWAY_SESSION' || code === 'ERR_HTTP2_INVALID_SESSION') return true;
  return (
    code === 'ERR_HTTP2_STREAM_ERROR' && /REFUSED_STREAM/.test(String((error as Error).message))
  );
}

/**
 * The HTTP/2 sessions of one `ApiConnection`: one current session per server and TLS material. A
 * rotated client certificate (exec plugins) makes a new one; the old one finishes its streams
 * and closes.
 */
export class Http2Sessions {
  readonly #clock: Clock;
  #current: Entry | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Sends a GET over HTTP/2 and resolves at the response head, whatever its status; undefined
   * when the server answered ALPN with HTTP/1.1, for the caller to send it that way. Rejects with
   * the transport's error, or the signal's reason.
   */
  open(prepared: RequestOptions, request: Http2Request): Promise<ApiResponse | undefined> {
    return this.#open(prepared, request, true);
  }

  /** Closes every session now; streams still open fail. */
  destroy(): void {
    if (this.#current) this.#retireWhenOpen(this.#current, true);
  }

  /** `open`; `resendIfRefused`: a stream refused before any work goes once more, on a fresh session. */
  async #open(
    prepared: RequestOptions,
    request: Http2Request,
    resendIfRefused: boolean,
  ): Promise<ApiResponse | undefined> {
    const entry = this.#entryFor(request.url, prepared);
    const negotiated = await raceSignal(entry.negotiated, request.signal);
    if (negotiated.protocol !== 'h2') return undefined;
    if (entry.suspect) {
      entry.suspect = false;
      if (!(await this.#answersPing(negotiated.session, request.signal))) {
        this.#retire(entry, negotiated.session, true);
        return this.#open(prepared, request, resendIfRefused);
      }
    }
    try {
      return await this.#stream(entry, negotiated.session, prepared, request);
    } catch (error) {
      if (!resendIfRefused || request.signal.aborted || !wasRefused(error)) throw error;
      // Refused before any work (a GOAWAY crossing the request): its session takes no more.
      this.#retire(entry, negotiated.session, false);
      return this.#open(prepared, request, false);
    }
  }

  /** The current entry when it fits the request, else a new one (connecting). */
  #entryFor(url: URL, prepared: RequestOptions): Entry {
    const material = agentMaterial(prepared);
    const current = this.#current;
    if (
      current &&
      !current.retired &&
      current.origin === url.origin &&
      sameMaterial(current.material, material)
    ) {
      return current;
    }
    // Rotated material or another server: the old session finishes its streams, then closes.
    if (current) this.#retireWhenOpen(current, false);
    const entry: Entry = {
      origin: url.origin,
      material,
      negotiated: Promise.resolve({ protocol: 'http/1.1' }),
      openStreams: 0,
      suspect: false,
      retired: false,
    };
    entry.negotiated = this.#connect(entry, url);
    // A failed connection is the request's failure; the next request connects again.
    entry.negotiated.catch(() => {
      entry.retired = true;
      if (this.#current === entry) this.#current = undefined;
    });
    this.#current = entry;
    return entry;
  }

  /** Opens TLS offering both protocols, and starts HTTP/2 on it when the server picks it. */
  #connect(entry: Entry, url: URL): Promise<Negotiated> {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const options: ConnectionOptions = {
      ...(entry.material as ConnectionOptions),
      host,
      port: Number(url.port || 443),
      ALPNProtocols: ['h2', 'http/1.1'],
    };
    // SNI names a host, never an address (as node's https agent decides).
    if (options.servername === undefined && isIP(host) === 0) options.servername = host;
    return new Promise<Negotiated>((resolve, reject) => {
      const socket = tls.connect(options);
      const timer = new AbortController();
      const failed = (error: Error): void => {
        timer.abort();
        socket.destroy();
        reject(error);
      };
      socket.on('error', failed);
      this.#clock.sleep(HTTP2_CONNECT_TIMEOUT_MS, timer.signal).then(
        () => failed(new Error(`no TLS connection within ${HTTP2_CONNECT_TIMEOUT_MS} ms`)),
        () => {},
      );
      socket.once('secureConnect', () => {
        timer.abort();
        socket.off('error', failed);
        if (socket.alpnProtocol !== 'h2') {
          socket.destroy();
          resolve({ protocol: 'http/1.1' });
          return;
        }
        let session: ClientHttp2Session;
        try {
          socket.setKeepAlive(true, TCP_KEEPALIVE_MS);
          session = http2.connect(url.origin, {
            createConnection: () => socket,
            settings: { initialWindowSize: HTTP2_STREAM_WINDOW_BYTES },
          });
          // Without a listener, a session's error would be an uncaught exception; its streams
          // report it to their own readers.
          session.on('error', () => this.#retire(entry, session, true));
          session.setLocalWindowSize(HTTP2_SESSION_WINDOW_BYTES);
        } catch (error) {
          // Thrown inside a socket event, it would otherwise be uncaught: the request fails.
          socket.destroy();
          reject(error);
          return;
        }
        session.on('goaway', () => this.#retire(entry, session, false));
        session.on('close', () => this.#retire(entry, session, false));
        // Idle: closed below the API server's own idle timeout, as the HTTP/1.1 agent's sockets are.
        session.setTimeout(IDLE_CONNECTION_TIMEOUT_MS, () => {
          if (entry.openStreams === 0) this.#retire(entry, session, false);
        });
        session.unref();
        resolve({ protocol: 'h2', session });
      });
    });
  }

  /** `#retire`, once the entry's connection is made (or at once, when it failed). */
  #retireWhenOpen(entry: Entry, now: boolean): void {
    entry.retired = true;
    if (this.#current === entry) this.#current = undefined;
    entry.negotiated.then(
      (negotiated) => {
        if (negotiated.protocol === 'h2') this.#retire(entry, negotiated.session, now);
      },
      () => {},
    );
  }

  /** No new streams on the entry's session; `now` also ends the ones it has. */
  #retire(entry: Entry, session: ClientHttp2Session | undefined, now: boolean): void {
    entry.retired = true;
    if (this.#current === entry) this.#current = undefined;
    if (!session || session.destroyed) return;
    if (now) session.destroy();
    else if (!session.closed) session.close();
  }

  /** Whether the session acknowledges a ping within `HTTP2_PING_TIMEOUT_MS`. */
  async #answersPing(session: ClientHttp2Session, signal: AbortSignal): Promise<boolean> {
    const timer = new AbortController();
    const linked = AbortSignal.any([signal, timer.signal]);
    const acked = new Promise<boolean>((resolve) => {
      const sent = session.ping((error) => resolve(error === null));
      if (!sent) resolve(false);
    });
    const timedOut = this.#clock.sleep(HTTP2_PING_TIMEOUT_MS, linked).then(
      () => false,
      () => false,
    );
    try {
      const answered = await Promise.race([acked, timedOut]);
      signal.throwIfAborted();
      return answered;
    } finally {
      timer.abort();
    }
  }

  /** One GET stream on the session, resolved at its response head. */
  #stream(
    entry: Entry,
    session: ClientHttp2Session,
    prepared: RequestOptions,
    request: Http2Request,
  ): Promise<ApiResponse> {
    const { url, signal } = request;
    const headers: OutgoingHttpHeaders = {
      ...lowerCased(request.headers),
      ':method': 'GET',
      ':path': `${url.pathname}${url.search}`,
    };
    // client-node puts a kubeconfig's username and password here, not in a header.
    if (typeof prepared.auth === 'string' && headers.authorization === undefined) {
      headers.authorization = `Basic ${Buffer.from(prepared.auth).toString('base64')}`;
    }
    signal.throwIfAborted();
    const stream: ClientHttp2Stream = session.request(headers, { endStream: true });
    entry.openStreams += 1;
    session.ref();
    let ended = false;
    stream.once('end', () => {
      ended = true;
    });
    stream.once('close', () => {
      entry.openStreams -= 1;
      if (entry.openStreams === 0 && !session.destroyed) session.unref();
    });
    const close = (): void => {
      if (stream.destroyed) return;
      if (!ended) entry.suspect = true;
      stream.close(http2.constants.NGHTTP2_CANCEL);
    };
    const onAbort = (): void => close();
    signal.addEventListener('abort', onAbort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', onAbort));
    return new Promise<ApiResponse>((resolve, reject) => {
      let settled = false;
      stream.once('response', (head: IncomingHttpHeaders) => {
        settled = true;
        resolve({
          status: Number(head[':status']),
          header: (name) => firstHeaderValue(head[name]),
          body: stream,
          close,
          truncation: () => {
            const code = stream.rstCode;
            if (code === undefined || code === http2.constants.NGHTTP2_NO_ERROR) return undefined;
            const lost = session.destroyed ? ', its connection lost' : '';
            return new Error(`the HTTP/2 stream was reset before its end (code ${code}${lost})`);
          },
        });
      });
      // After the head, the body's reader meets the failure; before it, the request fails.
      stream.on('error', (error) => {
        if (settled) return;
        settled = true;
        reject(signal.aborted ? signal.reason : error);
      });
      stream.once('close', () => {
        if (settled) return;
        settled = true;
        reject(signal.aborted ? signal.reason : new Error('the stream closed before its response'));
      });
    });
  }
}

/** HTTP/2 header names are lower-case (RFC 9113 §8.2.1); HTTP/1.1 callers capitalise. */
function lowerCased(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const lowered: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    // Connection-specific headers are forbidden in HTTP/2 (RFC 9113 §8.2.2).
    if (
      key === 'connection' ||
      key === 'keep-alive' ||
      key === 'host' ||
      key === 'transfer-encoding'
    )
      continue;
    if (value !== undefined) lowered[key] = value;
  }
  return lowered;
}

/** `promise`, or the signal's reason as soon as it aborts. */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
