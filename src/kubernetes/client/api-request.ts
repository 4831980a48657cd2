/**
 * One JSON request to the API server through an `ApiConnection` (./connection.ts): the raw
 * `node:http(s)` request every resource's calls share (through ./resource-client.ts).
 *
 * It asks the connection for fresh auth/TLS options, sends an optional JSON body, reads a body
 * bounded in size and, within a timeout on the injected clock, in time (every caller must give
 * both), and resolves with any status: what a status means is the caller's. It rejects on transport
 * errors only, with `<what>: <detail>` (e.g. `GET Lease ns/leader: connect ECONNREFUSED ...`), with
 * the signal's reason when the caller aborted, and with `<what>: no answer within N ms` when its
 * timeout ran out. An error never quotes a request header, and a failure to prepare the request
 * (an exec credential plugin, a token file), whose text may quote credentials, is redacted
 * (./safe-error.ts) and not kept as `cause`, so a bearer token cannot leak into a log line.
 */
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { type Clock, realClock } from '../../runtime/clock.js';
import { type ApiStatus, statusFromResponse } from './api-errors.js';
import { openApiExchange } from './api-exchange.js';
import type { ApiConnection } from './connection.js';
import { safeErrorMessage } from './safe-error.js';
import { releaseRequestAgent } from './shared-agents.js';

/** What the server answered: any status, the whole (bounded) body. */
export interface ApiAnswer {
  statusCode: number;
  body: string;
  retryAfter: string | undefined;
}

/**
 * One bounded JSON request. Both bounds are required fields rather than defaults, so no caller can
 * forget to bound an answer from outside in time or in size.
 */
interface ApiRequest {
  method: string;
  /** Below the server's base URL, with an optional `?query`. */
  path: string;
  /** Sent as JSON; no body when undefined. */
  body?: unknown;
  /** Of the body; default `application/json`. */
  contentType?: string;
  signal: AbortSignal;
  /**
   * Gives up after this long, the body's reading included. Required: every answer from the API
   * server is bounded in time as well as in size (`maxBodyBytes`).
   */
  timeoutMs: number;
  /** Where the timeout is measured; default the real clock. */
  clock?: Clock;
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
  if (!(timeoutMs > 0)) throw new RangeError(`${what}: timeoutMs must be positive`);
  const timeout = new AbortController();
  const stopTimer = new AbortController();
  (options.clock ?? realClock).sleep(timeoutMs, stopTimer.signal).then(
    () => timeout.abort(),
    () => {},
  );
  const combined = AbortSignal.any([signal, timeout.signal]);
  const failure = (error: unknown): unknown => {
    if (signal.aborted) return signal.reason;
    if (timeout.signal.aborted) return new Error(`${what}: no answer within ${timeoutMs} ms`);
    const detail = error instanceof Error ? error.message : String(error);
    return new Error(`${what}: ${detail}`, { cause: error });
  };
  let prepared: Awaited<ReturnType<ApiConnection['requestOptions']>>;
  try {
    prepared = await connection.requestOptions();
  } catch (error) {
    stopTimer.abort();
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
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: OutgoingHttpHeaders = {
      ...(prepared.headers as Record<string, string>),
      Accept: 'application/json',
    };
    if (payload !== undefined) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    let response: IncomingMessage;
    try {
      ({ request, response } = await openApiExchange(connection.server, prepared, {
        method,
        path: options.path,
        headers,
        payload,
        signal: combined,
      }));
    } catch (error) {
      throw failure(error);
    }
    let text: string;
    try {
      text = await readBody(response);
    } catch (error) {
      throw error === refused ? error : failure(error);
    }
    const retryAfter = response.headers['retry-after'];
    return {
      statusCode: response.statusCode ?? 0,
      body: text,
      retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
    };
  } catch (error) {
    if (error !== refused && combined.aborted) throw failure(error);
    throw error;
  } finally {
    stopTimer.abort();
    request?.destroy();
    releaseRequestAgent(agent);
  }
}

/** The server's `Status` of a refused request: reason and message, for the caller's error. */
export function answerStatus(answer: ApiAnswer): ApiStatus {
  return statusFromResponse(answer.statusCode, answer.body, answer.retryAfter);
}

/** A 2xx body parsed, or what `malformed` makes of why it is not JSON. */
export function parseAnswerJson(body: string, malformed: (why: string) => Error): unknown {
  try {
    return JSON.parse(body);
  } catch (error) {
    throw malformed(error instanceof Error ? error.message : String(error));
  }
}
