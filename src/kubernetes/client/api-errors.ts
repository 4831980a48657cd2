/**
 * What the API adapter throws, and how it reads a refusal. The server says no with a
 * `metav1.Status`, either as the body of a non-2xx response or as the object of an in-stream
 * `ERROR` watch frame; both spellings are read into one `ApiStatus`, so the reflector's
 * classification has a single input shape for "the server said no".
 */
import { redactSecrets, safeErrorMessage } from './safe-error.js';

/** The fields of a `metav1.Status` that decide what a reflector does next. */
export interface ApiStatus {
  /** The HTTP status the server meant (410, 504, 429, ...); absent when it gave none. */
  code?: number;
  /** `StatusReason`: `Expired`, `Gone`, `TooManyRequests`, ... */
  reason?: string;
  message?: string;
  /** `details.causes[].reason`: where `ResourceVersionTooLarge` hides (never in `reason`). */
  causes: string[];
  /** From the `Retry-After` header or `details.retryAfterSeconds`, in milliseconds. */
  retryAfterMs?: number;
}

/** Longest `Retry-After` honoured: a server asking for an hour is more likely wrong than right. */
export const MAX_RETRY_AFTER_MS = 300_000;

/** Thrown by the API adapter for a non-2xx response: the status and what the body said about it. */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  constructor(
    readonly verb: 'LIST' | 'WATCH',
    readonly status: ApiStatus,
  ) {
    super(
      `${verb} failed: HTTP ${status.code ?? '?'}${status.reason ? ` ${status.reason}` : ''}${
        status.message ? `: ${redactSecrets(status.message)}` : ''
      }`,
    );
  }
}

/**
 * The request never got a response, or the response broke off: a transport failure. Also what a
 * request that could not be prepared becomes (an exec credential plugin that failed, a rotated
 * token file gone), whose text may quote credentials: the message is redacted
 * (./safe-error.ts) and the original is not kept as `cause`.
 */
export class ApiConnectionError extends Error {
  override readonly name = 'ApiConnectionError';
  constructor(
    readonly verb: 'LIST' | 'WATCH',
    cause: unknown,
    /**
     * False when the request failed before any response head arrived (refused, reset, TLS,
     * unpreparable): the server spent nothing on it, so the reflector may retry soon without
     * growing its backoff. True (the default) when the answer broke off midway.
     */
    readonly answered = true,
  ) {
    super(`${verb}: ${safeErrorMessage(cause)}`);
  }
}

/**
 * A LIST response that is not a readable pod collection. The whole LIST fails, so a partial world
 * is never published as a `replace` (which would delete every pod it left out).
 */
export class MalformedListError extends Error {
  override readonly name = 'MalformedListError';
}

/** A JSON object (not an array, not null): what every API body is read through. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads a `Status` object leniently: any field that is missing or mistyped is simply absent, since
 * a failure report that itself fails to parse must still lead somewhere (a reconnect).
 */
export function readStatus(value: unknown): ApiStatus {
  if (!isRecord(value)) return { causes: [] };
  const status: ApiStatus = { causes: [] };
  if (typeof value.code === 'number' && Number.isInteger(value.code)) status.code = value.code;
  if (typeof value.reason === 'string' && value.reason) status.reason = value.reason;
  if (typeof value.message === 'string' && value.message) status.message = value.message;
  const details = value.details;
  if (isRecord(details)) {
    if (Array.isArray(details.causes)) {
      for (const cause of details.causes) {
        if (isRecord(cause) && typeof cause.reason === 'string') status.causes.push(cause.reason);
      }
    }
    if (typeof details.retryAfterSeconds === 'number' && details.retryAfterSeconds > 0) {
      status.retryAfterMs = Math.min(MAX_RETRY_AFTER_MS, details.retryAfterSeconds * 1000);
    }
  }
  return status;
}

/**
 * Parses an HTTP `Retry-After` header: delay-seconds or an HTTP date (RFC 9110). `nowEpochMs` is
 * passed in so the date form is testable. Unreadable or past values give `undefined`.
 */
export function parseRetryAfter(
  header: string | undefined,
  nowEpochMs: number = Date.now(),
): number | undefined {
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) {
    const ms = Number(trimmed) * 1000;
    return ms > 0 ? Math.min(MAX_RETRY_AFTER_MS, ms) : undefined;
  }
  const at = Date.parse(trimmed);
  if (Number.isNaN(at) || at <= nowEpochMs) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, at - nowEpochMs);
}

/**
 * The status of a failed response: the body's `Status` when it has one, with the HTTP code and
 * `Retry-After` header taking precedence, because proxies in front of the API server answer with
 * their own bodies (or none).
 */
export function statusFromResponse(
  httpStatus: number,
  body: string,
  retryAfterHeader: string | undefined,
): ApiStatus {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  return statusFromDecodedResponse(httpStatus, parsed, body, retryAfterHeader);
}

/**
 * `statusFromResponse` for a body already decoded (`decoded`: undefined when it did not decode;
 * `body`: its text, quoted as the message when nothing decoded), e.g. a protobuf `Status`.
 */
export function statusFromDecodedResponse(
  httpStatus: number,
  decoded: unknown,
  body: string,
  retryAfterHeader: string | undefined,
): ApiStatus {
  const status = readStatus(decoded);
  status.code = httpStatus;
  if (status.message === undefined && body.trim() && decoded === undefined) {
    status.message = body.trim().slice(0, 200);
  }
  const headerDelay = parseRetryAfter(retryAfterHeader);
  if (headerDelay !== undefined) status.retryAfterMs = headerDelay;
  return status;
}
