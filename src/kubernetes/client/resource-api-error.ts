/**
 * The one error of every resource request (EndpointSlice, pod condition, Event, Lease): the
 * server refused it, or answered with something that is not what was asked for. One class, with
 * the verb, the resource and the target in it, so a caller reads `statusCode` and `retriable`
 * alike whichever resource failed, and every log line and HTTP `lastError` reads the same way:
 * `<VERB> <resource> <target>: HTTP <code> <reason>: <detail>`, or `...: <what was wrong>`.
 *
 * The text holds only what this process chose (verb, resource, target) and what the server said
 * about the request (its Status, redacted like every outside text: ./safe-error.ts); nothing read
 * from a kubeconfig or a token file is ever part of a request's description.
 */
import { redactSecrets } from './safe-error.js';

/** Which request failed: `APPLY pods/status ns/name`, `LIST EndpointSlice ns/*`. */
export interface ResourceCall {
  verb: 'LIST' | 'GET' | 'CREATE' | 'APPLY' | 'UPDATE' | 'PATCH' | 'DELETE';
  /** The kind as a person reads it, or its subresource: `EndpointSlice`, `pods/status`. */
  resource: string;
  /** `namespace/name`, or `namespace/*` for a collection. */
  target: string;
}

/** The request in words, for errors: `APPLY pods/status ns/name`. Never a header. */
export function describeCall(call: ResourceCall): string {
  return `${call.verb} ${call.resource} ${call.target}`;
}

/**
 * Statuses after which the same request may succeed unchanged: a timeout, throttling, or a server
 * error (client-go's `IsServerTimeout`, `IsTooManyRequests`, `IsInternalError`,
 * `IsServiceUnavailable` and `IsTimeout` together).
 */
function isRetriableStatus(statusCode: number): boolean {
  return statusCode === 408 || statusCode === 429 || statusCode >= 500;
}

/** A resource request that failed at the server: refused, or answered with something unreadable. */
export class ResourceApiError extends Error {
  override readonly name = 'ResourceApiError';

  /**
   * `statusCode` is the answer's status; `undefined` when the answer was refused unread or is not
   * what was asked for (too large, not JSON, not the resource), which `reason` then names as
   * `MalformedAnswer`.
   */
  private constructor(
    readonly call: ResourceCall,
    readonly statusCode: number | undefined,
    readonly reason: string | undefined,
    detail: string,
  ) {
    super(`${describeCall(call)}: ${detail}`);
  }

  /**
   * The server refused `call` with `statusCode` (a status its caller does not accept), and said
   * why in its `Status` (`reason`, `message`).
   */
  static refused(
    call: ResourceCall,
    statusCode: number,
    status: { reason?: string | undefined; message?: string | undefined } = {},
  ): ResourceApiError {
    const { reason, message } = status;
    const detail = `HTTP ${statusCode}${reason ? ` ${reason}` : ''}${
      message ? `: ${redactSecrets(message)}` : ''
    }`;
    return new ResourceApiError(call, statusCode, reason, detail);
  }

  /** The server answered `call` with something that is not what was asked for. */
  static malformed(call: ResourceCall, problem: string): ResourceApiError {
    return new ResourceApiError(call, undefined, 'MalformedAnswer', problem);
  }

  /**
   * Whether the same request may succeed later unchanged. A malformed answer is not: a proxy or
   * server that answers wrongly once is taken to keep doing so, and the caller's backoff, not a
   * quick retry, decides when to ask again.
   */
  get retriable(): boolean {
    return this.statusCode !== undefined && isRetriableStatus(this.statusCode);
  }
}
