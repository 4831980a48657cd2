/**
 * One JSON request to the API server through an `ApiConnection` (./connection.ts): the raw
 * `node:http(s)` request that the EndpointSlice API and the Lease lock share.
 *
 * It asks the connection for fresh auth/TLS options, sends an optional JSON body, reads a bounded
 * body and resolves with any status: what a status means is the caller's. It rejects on transport
 * errors only, with `<what>: <detail>` (e.g. `GET Lease ns/leader: connect ECONNREFUSED ...`), with
 * the signal's reason when the caller aborted, and with `<what>: no answer within N ms` when its
 * timeout ran out. An error never quotes a request header, and a failure to prepare the request
 * (an exec credential plugin, a token file), whose text may quote credentials, is redacted
 * (./safe-error.ts) and not kept as `cause`, so a bearer token cannot leak into a log line.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import http from 'node:http';
import https from 'node:https';
import { type ApiStatus, statusFromResponse } from './api-errors.js';
import { type ApiConnection, failedOnStaleConnection, releaseRequestAgent } from './connection.js';
import { safeErrorMessage } from './safe-error.js';

/**
 * Methods sent again when a kept-alive connection turns out closed under them: a second GET, PUT
 * or DELETE has the effect of one (a PUT carries its resourceVersion), a second POST may not.
 */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/** What the server answered: any status, the whole (bounded) body. */
export interface ApiAnswer {
  statusCode: number;
  body: string;
  retryAfter: string | undefined;
}

export interface ApiRequest {
  method: string;
  /** Below the server's base URL, with an optional `?query`. */
  path: string;
  /** Sent as JSON; no body when undefined. */
  body?: unknown;
  /** Of the body; default `application/json`. */
  contentType?: string;
  signal: AbortSignal;
  /** Gives up after this long; no timeout of its own when undefined. */
  timeoutMs?: number;
  /** The request in words, for errors: `LIST EndpointSlice ns/*`. Never a header. */
  what: string;
  /** A larger body is refused, not buffered... */
  maxBodyBytes: number;
  /** ...with this error, which rejects the request as it is. */
  tooLarge: () => Error;
}

/** One request; resolves with any status, rejects on transport errors (see the module comment). */
export async function apiRequest(
  connection: ApiConnection,
  options: ApiRequest,
): Promise<ApiAnswer> {
  const { method, signal, timeoutMs, what } = options;
  signal.throwIfAborted();
  const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  const combined = timeout ? AbortSignal.any([signal, timeout]) : signal;
  const failure = (error: unknown): unknown => {
    if (signal.aborted) return signal.reason;
    if (timeout?.aborted) return new Error(`${what}: no answer within ${timeoutMs} ms`);
    const detail = error instanceof Error ? error.message : String(error);
    return new Error(`${what}: ${detail}`, { cause: error });
  };
  let prepared: Awaited<ReturnType<ApiConnection['requestOptions']>>;
  try {
    prepared = await connection.requestOptions();
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw new Error(`${what}: ${safeErrorMessage(error)}`);
  }
  const agent = prepared.agent;
  let request: ClientRequest | undefined;
  let refused: Error | undefined;
  const readBody = async (response: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of response as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > options.maxBodyBytes) {
        refused = options.tooLarge();
        throw refused;
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  };
  try {
    combined.throwIfAborted();
    const url = new URL(connection.server);
    const [pathname, search] = options.path.split('?', 2) as [string, string | undefined];
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${pathname}`;
    if (search) url.search = search;
    const transport = url.protocol === 'http:' ? http : https;
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string | number> = {
      ...(prepared.headers as Record<string, string>),
      Accept: 'application/json',
    };
    if (payload !== undefined) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    const send = (retryStale: boolean): Promise<ApiAnswer> =>
      new Promise<ApiAnswer>((resolve, reject) => {
        const current = transport.request(url, { ...prepared, method, headers, signal: combined });
        request = current;
        let answered = false;
        current.on('response', (response: IncomingMessage) => {
          answered = true;
          readBody(response).then(
            (text) => {
              const retryAfter = response.headers['retry-after'];
              resolve({
                statusCode: response.statusCode ?? 0,
                body: text,
                retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
              });
            },
            (error: unknown) => reject(error === refused ? error : failure(error)),
          );
        });
        current.on('error', (error) => {
          const resend =
            retryStale &&
            !answered &&
            IDEMPOTENT_METHODS.has(method) &&
            !combined.aborted &&
            failedOnStaleConnection(current, error);
          if (resend) resolve(send(false));
          else reject(failure(error));
        });
        current.end(payload);
      });
    return await send(true);
  } catch (error) {
    if (error !== refused && combined.aborted) throw failure(error);
    throw error;
  } finally {
    request?.destroy();
    releaseRequestAgent(agent);
  }
}

/** The server's `Status` of a refused request: reason and message, for the caller's error. */
export function answerStatus(answer: ApiAnswer): ApiStatus {
  return statusFromResponse(answer.statusCode, answer.body, answer.retryAfter);
}

/** A 2xx body parsed, or `malformed` with `<what> response is not JSON: <why>`. */
export function parseAnswerJson(
  body: string,
  what: string,
  malformed: (message: string) => Error,
): unknown {
  try {
    return JSON.parse(body);
  } catch (error) {
    throw malformed(
      `${what} response is not JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
