/**
 * Reads one watch frame into what it means for the reflector: a change to publish, a cursor to
 * move to, something to ignore, or a failure for ../reflector/reflector-failure.ts to classify.
 * Pure, so the cursor rules (bookmarks, frames without a version, unknown types) are tested row by
 * row.
 */

import { MalformedPodError, podKey } from '../../model/pod.js';
import type { SourceEvent } from '../../runtime/source-event.js';
import { type ApiStatus, isRecord, readStatus } from '../client/api-errors.js';
import { type EncodedPod, readPodValue } from './encoded-pod.js';
import type { WatchFrame } from './watch-framing.js';

/** Watch event types as the API server spells them (`watch.EventType`). */
type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** The stats key for frames of any other type, or none: bounded, whatever a server sends. */
const OTHER_FRAME_TYPE = 'OTHER';

/**
 * What a frame can say went wrong, as plain data: one family of ../reflector/reflector-failure.ts's
 * `ReflectorFailure`, defined here so this reader needs nothing from above it.
 */
export type FrameFailure =
  /** The server refused: a non-2xx response, or an in-stream `ERROR` frame carrying a Status. */
  | { kind: 'status'; status: ApiStatus; inStream: boolean }
  /** A pod frame that does not validate; `resourceVersion` if the frame still carried one. */
  | { kind: 'malformed-pod'; resourceVersion?: string; message: string }
  /** A frame that is not JSON, not an object, or has no readable envelope: no cursor to be had. */
  | { kind: 'malformed-frame'; message: string };

/**
 * What one frame means, as a closed union the reflector switches on. Every kind but `failure` may
 * carry the frame's `resourceVersion`, since a frame the reflector does not apply can still move
 * its cursor; `type` is the frame's own type, for the per-type stats.
 */
export type FrameReading =
  /** `resourceVersion` absent: the frame is applied but the cursor stays where it was. */
  | { kind: 'change'; type: ChangeType; event: SourceEvent<EncodedPod>; resourceVersion?: string }
  /**
   * `initialEventsEnd`: the bookmark that closes a watch-list's initial events (annotated
   * `k8s.io/initial-events-end: "true"`); its version is the one the initial state is at.
   */
  | { kind: 'bookmark'; type: 'BOOKMARK'; resourceVersion?: string; initialEventsEnd?: true }
  /** An unknown type: nothing to apply, but its resourceVersion (if any) still moves the cursor. */
  | { kind: 'ignored'; type: string; resourceVersion?: string }
  | { kind: 'failure'; type: string; failure: FrameFailure };

/** `object.metadata.resourceVersion` when it is a non-empty string, read without trusting shape. */
function resourceVersionOf(object: unknown): string | undefined {
  if (!isRecord(object) || !isRecord(object.metadata)) return undefined;
  const version = object.metadata.resourceVersion;
  return typeof version === 'string' && version !== '' ? version : undefined;
}

/** The annotation the API server puts on the bookmark that ends a watch-list's initial events. */
const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

function initialEventsEnd(object: unknown): boolean {
  if (!isRecord(object) || !isRecord(object.metadata)) return false;
  const annotations = object.metadata.annotations;
  return isRecord(annotations) && annotations[INITIAL_EVENTS_END_ANNOTATION] === 'true';
}

function withVersion<T extends object>(reading: T, resourceVersion: string | undefined): T {
  return resourceVersion === undefined ? reading : { ...reading, resourceVersion };
}

/** The stats bucket for a frame's type. */
export function frameTypeKey(type: string): string {
  return type === 'ADDED' ||
    type === 'MODIFIED' ||
    type === 'DELETED' ||
    type === 'BOOKMARK' ||
    type === 'ERROR'
    ? type
    : OTHER_FRAME_TYPE;
}

/**
 * Reads one decoded frame without trusting its shape: a frame that is not an object, has no type or
 * holds an unreadable pod becomes a `failure` reading (with the version, when it had one, so the
 * cursor can skip it), never a throw. Only an unexpected error from the pod parser itself
 * propagates.
 */
export function readFrame(frame: WatchFrame): FrameReading {
  if (frame.kind === 'garbled') {
    return {
      kind: 'failure',
      type: OTHER_FRAME_TYPE,
      failure: { kind: 'malformed-frame', message: `watch frame is not JSON: ${frame.error}` },
    };
  }
  const value = frame.value;
  if (!isRecord(value)) {
    return {
      kind: 'failure',
      type: OTHER_FRAME_TYPE,
      failure: {
        kind: 'malformed-frame',
        message: `watch frame is not an object: ${JSON.stringify(value)?.slice(0, 80)}`,
      },
    };
  }
  const object = value.object;
  const resourceVersion = resourceVersionOf(object);
  const type = value.type;
  if (typeof type !== 'string') {
    return {
      kind: 'failure',
      type: OTHER_FRAME_TYPE,
      failure: withVersion(
        { kind: 'malformed-pod' as const, message: 'watch frame has no type' },
        resourceVersion,
      ),
    };
  }
  switch (type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED': {
      let pod: EncodedPod;
      try {
        // A pod the protobuf reader built was validated where its bytes were read.
        pod = readPodValue(object);
      } catch (error) {
        if (!(error instanceof MalformedPodError)) throw error;
        return {
          kind: 'failure',
          type,
          failure: withVersion(
            { kind: 'malformed-pod' as const, message: `${type} frame: ${error.message}` },
            resourceVersion,
          ),
        };
      }
      const key = podKey(pod);
      const event: SourceEvent<EncodedPod> =
        type === 'DELETED'
          ? { type: 'delete', key, lastObject: pod }
          : { type: 'upsert', key, object: pod };
      // Built whole rather than through `withVersion`: one object per frame on the hot path.
      return resourceVersion === undefined
        ? { kind: 'change', type, event }
        : { kind: 'change', type, event, resourceVersion };
    }
    case 'BOOKMARK':
      return withVersion(
        initialEventsEnd(object)
          ? { kind: 'bookmark' as const, type, initialEventsEnd: true as const }
          : { kind: 'bookmark' as const, type },
        resourceVersion,
      );
    case 'ERROR':
      return {
        kind: 'failure',
        type,
        failure: { kind: 'status', status: readStatus(object), inStream: true },
      };
    default:
      return withVersion({ kind: 'ignored' as const, type }, resourceVersion);
  }
}
