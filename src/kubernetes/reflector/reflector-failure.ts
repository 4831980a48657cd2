/**
 * The reflector's error handling as one pure function: what went wrong, in which phase, decides
 * what happens next. Keeping it pure (no I/O, no clock, no state) is what lets one table of rows
 * test every rule, and the state machine in ./reflector.ts only carries the decision out.
 */

import type { RelistReason } from '../../model/pod-source-stats.js';
import type { ApiStatus } from '../client/api-errors.js';
import { isExpiredStatus } from '../client/expired-status.js';
import { redactSecrets } from '../client/safe-error.js';
import type { FrameFailure } from '../codec/watch-frame-parser.js';

/** Where the reflector was: fetching the whole world, or following changes from a cursor. */
export type RequestPhase = 'list' | 'watch';

/** Everything that can interrupt a LIST or a WATCH, as plain data. */
export type ReflectorFailure =
  /**
   * What a watch frame can say went wrong (../codec/watch-frame-parser.ts): a Status (an
   * in-stream `ERROR`, and here also a non-2xx response), a pod that does not validate, a frame
   * with no readable envelope.
   */
  | FrameFailure
  /** A LIST whose body or some item is unreadable. */
  | { kind: 'malformed-list'; message: string }
  /**
   * No connection, a reset, a TLS failure, a request that could not even be prepared.
   * `answered` is false when the server is known to have sent nothing (the request failed before
   * any response head): such a failure cost it nothing, and is retried soon.
   */
  | { kind: 'connection'; message: string; answered: boolean }
  /** No bytes for longer than the idle limit (Node has no HTTP/2 ping to notice a dead peer). */
  | { kind: 'idle'; idleMs: number }
  /**
   * No whole frame for `stallMs` on a WATCH whose server sends bookmarks (about once a minute):
   * bytes may still have come (half a frame, then nothing), so the idle limit did not fire.
   */
  | { kind: 'stalled'; stallMs: number }
  /** The server ended the WATCH cleanly: its `timeoutSeconds` ran out. */
  | { kind: 'ended' }
  /**
   * The server ended the WATCH cleanly, but within `SHORT_WATCH_MS` of opening it: not a timeout
   * running out, but a server (or a proxy) that will not keep it open. `frames` it delivered
   * first, if any, do not make it a healthy end: reconnecting at once would be a hot loop.
   */
  | { kind: 'short-watch'; lastedMs: number; frames: number }
  /**
   * `frames` frames in a row carried a resourceVersion older than the cursor (`resourceVersion`
   * the last of them): not one stale copy a proxy replayed, which is dropped, but a server whose
   * history went back (an etcd restored from a backup) or a stream that only replays the past.
   */
  | { kind: 'regression'; cursor: string; resourceVersion: string; frames: number };

/**
 * client-go's "very short watch": a watch that ends cleanly within a second is a failure, so it is
 * retried after the backoff instead of at once, forever. client-go excuses one that delivered
 * items; here it counts too, so no server can make the reflector send more than one WATCH a second.
 */
export const SHORT_WATCH_MS = 1_000;

/** How long to wait before acting (./backoff.ts has the numbers). */
type Wait =
  | { kind: 'none' }
  /**
   * The reflector's growing backoff step, but never less than `atLeastMs` (a server's
   * Retry-After): the server answered, or may have, so it did work.
   */
  | { kind: 'backoff'; atLeastMs?: number }
  /** A short jittered wait that does not grow the backoff: the server never answered. */
  | { kind: 'unanswered' };

/** What the classification needs to know of the stream beyond the failure itself. */
interface FailureContext {
  /**
   * A WATCH has proven itself since the last LIST: the cursor was live, so its expiry (a
   * compaction, an API server restart) is news, and relisting at once costs one LIST. Without
   * it, an expiry right after a LIST would loop LIST → WATCH → 410 with no wait.
   */
  cursorProven?: boolean;
}

/**
 * What the reflector does about one classified failure: the classification is a pure table (failure
 * and context in, action out), so each rule is one tested row and the reflector's loop only carries
 * actions out.
 */
export type ReflectorAction =
  /** Log the frame, drop it, and move the cursor past it. */
  | { kind: 'skip'; advanceTo: string }
  /** Open a new WATCH from the same cursor. */
  | { kind: 'reconnect'; wait: Wait }
  /** Forget the cursor, LIST again, publish a `replace`. */
  | { kind: 'relist'; reason: RelistReason; wait: Wait };

/** `StatusReason`s that mean "your resourceVersion is too old" (client-go's `isExpiredError`). */
/** The Status cause client-go's `isTooLargeResourceVersionError` looks for. */
const TOO_LARGE_CAUSE = 'ResourceVersionTooLarge';
const HTTP_TOO_MANY_REQUESTS = 429;
const HTTP_GATEWAY_TIMEOUT = 504;

/** The wait after a failed connection: short when the server is known to have sent nothing. */
function afterConnectionFailure(failure: { answered: boolean }): Wait {
  return failure.answered ? backoff() : { kind: 'unanswered' };
}

function backoff(status?: ApiStatus): Wait {
  return status?.retryAfterMs !== undefined
    ? { kind: 'backoff', atLeastMs: status.retryAfterMs }
    : { kind: 'backoff' };
}

/** Whether a Status says the cursor is dead, and why. */
function deadCursor(status: ApiStatus): RelistReason | undefined {
  if (isExpiredStatus(status)) return 'expired';
  // 504 is how the API server answers a resourceVersion from its future (a restored or
  // rolled-back etcd); waiting would never be satisfied, and a plain gateway timeout costs one LIST.
  if (status.code === HTTP_GATEWAY_TIMEOUT) return 'too-large';
  if (status.causes.includes(TOO_LARGE_CAUSE)) return 'too-large';
  return undefined;
}

/** The server asked us to slow down: wait and come back to the same cursor. */
function tooManyRequests(status: ApiStatus): boolean {
  return status.code === HTTP_TOO_MANY_REQUESTS || status.reason === 'TooManyRequests';
}

/**
 * The reflector's rules, in one place:
 * - Whatever failed before the server sent a single byte (connection refused, a reset or TLS
 *   failure before the response head) waits the short unanswered wait, LIST or WATCH.
 * - LIST: whatever failed, the cursor stays empty and the next attempt lists again, after the
 *   backoff (or the server's Retry-After, if longer).
 * - WATCH, cursor expired (410 / Expired / Gone), as a response or an in-stream ERROR, after a
 *   WATCH proved the cursor live (`context.cursorProven`): relist at once. Otherwise, and for a
 *   cursor from the future (504 / ResourceVersionTooLarge): relist after the backoff.
 * - WATCH, a pod frame that does not validate but has a resourceVersion: skip it and advance.
 *   Reconnecting instead would replay the same frame from the same cursor forever.
 * - WATCH, an unreadable frame with no version: relist, since there is no cursor to advance to.
 * - WATCH, any other in-stream ERROR frame (500 InternalError, ...) except 429: relist after the
 *   backoff, as client-go's reflector does (its watch loop returns and `ListAndWatch` lists
 *   again). Resuming from the cursor would meet the same failure from the same place forever.
 * - WATCH, a clean end (the server's timeout): reconnect at once, no relist: the cursor is fine.
 * - WATCH, a clean end within `SHORT_WATCH_MS`, frames or not: reconnect from the cursor, but
 *   after the backoff (client-go's "very short watch").
 * - WATCH, frames older than the cursor again and again (`regression`): relist after the backoff.
 *   The cursor is the newest version the stream applied; a server that keeps answering from
 *   before it has lost that history, and only a LIST says what it holds now.
 * - WATCH, anything else (429 as a response or a frame, other non-2xx responses, dropped, idle or
 *   stalled connections): reconnect from the same cursor after the backoff.
 */
export function classifyFailure(
  phase: RequestPhase,
  failure: ReflectorFailure,
  context: FailureContext = {},
): ReflectorAction {
  if (phase === 'list') {
    return {
      kind: 'relist',
      reason: 'list-failed',
      wait:
        failure.kind === 'connection'
          ? afterConnectionFailure(failure)
          : backoff(failure.kind === 'status' ? failure.status : undefined),
    };
  }
  switch (failure.kind) {
    case 'status': {
      const reason = deadCursor(failure.status);
      if (reason === 'expired' && context.cursorProven) {
        return { kind: 'relist', reason, wait: { kind: 'none' } };
      }
      if (reason) return { kind: 'relist', reason, wait: backoff(failure.status) };
      if (failure.inStream && !tooManyRequests(failure.status)) {
        return { kind: 'relist', reason: 'error-frame', wait: backoff(failure.status) };
      }
      return { kind: 'reconnect', wait: backoff(failure.status) };
    }
    case 'malformed-pod':
      return failure.resourceVersion
        ? { kind: 'skip', advanceTo: failure.resourceVersion }
        : { kind: 'relist', reason: 'malformed-frame', wait: backoff() };
    case 'malformed-frame':
    case 'malformed-list':
      return { kind: 'relist', reason: 'malformed-frame', wait: backoff() };
    case 'ended':
      return { kind: 'reconnect', wait: { kind: 'none' } };
    case 'connection':
      return { kind: 'reconnect', wait: afterConnectionFailure(failure) };
    case 'idle':
    case 'stalled':
    case 'short-watch':
      return { kind: 'reconnect', wait: backoff() };
    case 'regression':
      return { kind: 'relist', reason: 'regression', wait: backoff() };
  }
}

/**
 * One line for logs and `PodSourceStats.lastError`, which `GET /api/v1/reflector` serves: redacted
 * (../client/safe-error.ts), since a proxy's error body or a transport error may quote credentials.
 */
export function describeFailure(failure: ReflectorFailure): string {
  return redactSecrets(describeRaw(failure));
}

function describeRaw(failure: ReflectorFailure): string {
  switch (failure.kind) {
    case 'status': {
      const { code, reason, message } = failure.status;
      const where = failure.inStream ? 'ERROR frame' : 'HTTP';
      return `${where} ${code ?? '?'}${reason ? ` ${reason}` : ''}${message ? `: ${message}` : ''}`;
    }
    case 'malformed-pod':
      return `${failure.message}${failure.resourceVersion ? ` (at resourceVersion ${failure.resourceVersion})` : ''}`;
    case 'malformed-frame':
    case 'malformed-list':
    case 'connection':
      return failure.message;
    case 'idle':
      return `no bytes from the API server for ${failure.idleMs} ms`;
    case 'stalled':
      return `no whole watch frame from the API server for ${failure.stallMs} ms (it sends a bookmark about every minute)`;
    case 'ended':
      return 'watch ended by the server';
    case 'short-watch':
      return failure.frames === 0
        ? `watch ended by the server after ${failure.lastedMs} ms without a single frame`
        : `watch ended by the server after ${failure.lastedMs} ms (${failure.frames} frames)`;
    case 'regression':
      return `${failure.frames} watch frames in a row older than the cursor ${failure.cursor} (the last at resourceVersion ${failure.resourceVersion})`;
  }
}
