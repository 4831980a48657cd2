/**
 * One request to the API server, up to its response head: the part every caller shares. It
 * builds the URL below the server's base, picks `http` or `https`, turns on TCP keepalive, sends
 * over the connection's kept-alive agent (./connection.ts), and sends a GET again, once, when the
 * reused connection it was given had just been closed by the server. Reading the
 * body, and what a status or an error means, stay with the callers: ./api-request.ts reads a
 * bounded body (Lease, EndpointSlice), ../resources/http-pod-api.ts streams LIST pages and watches.
 */
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https, { type RequestOptions } from 'node:https';
import type { Readable } from 'node:stream';
import { nodeHttp } from './node-http.js';
import { releaseRequestAgent, TCP_KEEPALIVE_MS } from './shared-agents.js';

/**
 * Methods sent again when a kept-alive connection turns out closed under them, as Go's transport
 * replays them: reads only. A write reset before its answer may still have been applied (the
 * server can read the whole request before the connection drops), and a second PUT would then
 * fail with a conflict that hides that the first one landed; writes are left to their callers'
 * own retries, which read first.
 */
const RESENT_METHODS = new Set(['GET', 'HEAD']);

/**
 * Whether a request failed as a server's idle close crossing our reuse of the connection: reset
 * before any answer, on a reused socket. A read is then sent once more (node's http documentation
 * advises it); the agent gives it another pooled connection or a new one, and if that one fails
 * too, the failure is the caller's to retry.
 */
function failedOnStaleConnection(request: { reusedSocket?: boolean }, error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return request.reusedSocket === true && (code === 'ECONNRESET' || code === 'EPIPE');
}

/**
 * One request as the shared exchange sends it, before any caller's policy: the body is already
 * encoded (JSON or not) and every header is the caller's, since only the caller knows its content
 * type and what it accepts.
 */
interface ApiExchangeOptions {
  method: string;
  /** Below the server's base URL, with an optional `?query`. */
  path: string;
  /** Query parameters added to the path's own. */
  query?: Record<string, string>;
  headers: OutgoingHttpHeaders;
  /** The whole body, already encoded; none when undefined. */
  payload?: string | undefined;
  signal: AbortSignal;
}

/** A request whose response head has arrived; its body is still to be read. */
interface ApiExchange {
  request: ClientRequest;
  response: IncomingMessage;
}

/**
 * A response whose head has arrived, over HTTP/1.1 (`http1Response`) or HTTP/2
 * (./http2-sessions.ts): what a reader of LIST pages and watches needs of either, so it reads both
 * alike.
 */
export interface ApiResponse {
  readonly status: number;
  /** A response header by its lower-case name; the first value when repeated. */
  header(name: string): string | undefined;
  /** The body as it arrives, not inflated. */
  readonly body: Readable;
  /** Ends the exchange, read or not: the request (or stream) closes and its connection is released. */
  close(): void;
  /**
   * Once the body has ended: why it ended before the server finished it, or undefined. Node ends
   * an HTTP/2 stream's body without an error when its connection is lost or it is reset, where an
   * HTTP/1.1 response fails instead (so undefined for those); a reader must not take such an
   * end for the server's.
   */
  truncation(): Error | undefined;
}

/** A header's first value, as a string. */
export function firstHeaderValue(
  value: string | string[] | number | undefined,
): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value[0];
  return String(value);
}

/** An HTTP/1.1 exchange as an `ApiResponse`; closing it releases `agent` (./shared-agents.ts). */
export function http1Response(exchange: ApiExchange, agent: unknown): ApiResponse {
  const { request, response } = exchange;
  return {
    status: response.statusCode ?? 0,
    header: (name) => firstHeaderValue(response.headers[name]),
    body: response,
    close: () => {
      response.destroy();
      request.destroy();
      releaseRequestAgent(agent);
    },
    truncation: () => undefined,
  };
}

/** `server` + `path` + `query`, keeping any path prefix of the server's URL (a proxy's). */
export function requestUrl(server: string, path: string, query: Record<string, string> = {}): URL {
  const url = new URL(server);
  const [pathname, search] = path.split('?', 2) as [string, string | undefined];
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${pathname}`;
  if (search) url.search = search;
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  return url;
}

/**
 * Sends the request with `prepared` (the connection's options for this request) and resolves at
 * the response head, whatever its status. Rejects with the transport's own error, or the
 * signal's reason; the caller words it. The agent is the caller's to release.
 */
export function openApiExchange(
  server: string,
  prepared: RequestOptions,
  options: ApiExchangeOptions,
): Promise<ApiExchange> {
  const url = requestUrl(server, options.path, options.query);
  const transport = url.protocol === 'http:' ? nodeHttp : https;
  const { method, headers, payload, signal } = options;
  const send = (resendIfStale: boolean): Promise<ApiExchange> =>
    new Promise((resolve, reject) => {
      const request = transport.request(url, { ...prepared, method, headers, signal });
      request.on('socket', (socket) => socket.setKeepAlive(true, TCP_KEEPALIVE_MS));
      let settled = false;
      request.on('response', (response) => {
        settled = true;
        resolve({ request, response });
      });
      request.on('error', (error) => {
        if (settled) return; // after the head, the body's reader meets this failure
        settled = true;
        const resend =
          resendIfStale &&
          RESENT_METHODS.has(method) &&
          !signal.aborted &&
          failedOnStaleConnection(request, error);
        if (resend) resolve(send(false));
        else reject(signal.aborted ? signal.reason : error);
      });
      request.end(payload);
    });
  return send(true);
}
