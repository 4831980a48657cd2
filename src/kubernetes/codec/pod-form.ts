/**
 * The form a reflector holds its pods in, and how each encoding's bytes become that form: the
 * reflector and the pod API are written once for any form, and the thread that runs them picks the
 * one it needs.
 *
 * - `POD_OBJECTS` (./protobuf-pod-decoder.ts): the model's `Pod`, for a reflector whose consumer reads pods in the same thread
 *   (tests, an in-process source).
 * - `POD_JSON` (./encoded-pod.ts): a pod's key and version as strings, the rest as the JSON bytes
 *   the main thread parses, for the reflector's worker thread, which only moves pods on.
 */
import type { ObjectKey } from '../../runtime/source-event.js';

/**
 * How pods are read into one form `T`. Both readers validate: what they return is a readable pod
 * (the model's rules), whatever the bytes or the value were.
 */
export interface PodForm<T> {
  /**
   * The pod in one Pod message's bytes (`[start, end)`, no envelope), validated as read; or
   * `undefined` when the message is not a readable pod, so the caller reads the same bytes the
   * JSON-shaped way (./pod-protobuf.ts, then `fromValue`), whose error names the field. Never
   * throws for bad bytes.
   */
  fromProtobuf(bytes: Uint8Array, start: number, end: number): T | undefined;
  /**
   * The pod in a JSON-shaped value (a JSON body's item, a watch frame's object), or a value
   * `fromProtobuf` built, as it is. Throws `MalformedPodError` for a value that is not a pod.
   */
  fromValue(value: unknown): T;
  /** The pod's store key, `namespace/name` (see `podKey`). */
  key(pod: T): ObjectKey;
  /**
   * The pod's `metadata.resourceVersion`, absent when it has none: what a newer copy of the same
   * pod is told from an older one by (../reflector/resource-version.ts).
   */
  version(pod: T): string | undefined;
}
