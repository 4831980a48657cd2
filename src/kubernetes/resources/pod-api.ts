/**
 * What the reflector needs from the API server, as an interface: the LIST/WATCH calls and their
 * shapes. The reflector depends only on this, so its tests drive it with a fake, and the real
 * adapter (./http-pod-api.ts) is one implementation among them.
 */
import type { EncodedPod } from '../codec/encoded-pod.js';
import type { WatchFrame } from '../codec/watch-framing.js';

export type { WatchFrame } from '../codec/watch-framing.js';

/**
 * One paged LIST of pods. The two hooks let the reflector count bytes and report progress while a
 * large LIST is still being read, without the adapter knowing what the numbers are for.
 */
export interface ListPodsOptions {
  /** Undefined or `''`: all namespaces. */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  /** Page size; the adapter follows `continue` until the collection is complete. */
  limit?: number | undefined;
  /**
   * Largest page body (after gzip) the adapter reads: a server that ignores `limit` and answers
   * with one huge page fails the LIST (`MalformedListError`) rather than filling the memory.
   * Unbounded when left out.
   */
  maxPageBytes?: number | undefined;
  signal: AbortSignal;
  /** Hears every chunk of response bytes: for stats and the reflector's idle detection. */
  onBytes?: (count: number) => void;
  /**
   * Hears each page once it is read and validated: pages and pods so far in this LIST, and the
   * page's own pods (also in the final `PodList`; the listener must not change them). Page 1
   * always means "a LIST (re)starts": a fallback to an unpaged LIST after an expired continue
   * token counts from 1 again, and whatever an earlier page 1 began is void.
   */
  onPage?: (progress: { pages: number; pods: number }, items: readonly EncodedPod[]) => void;
}

/**
 * A complete, validated collection: every page read, every item a readable pod, as the JSON the
 * main thread parses (../codec/encoded-pod.ts).
 */
export interface PodList {
  pods: EncodedPod[];
  /** The collection's resourceVersion: where a WATCH continues from. */
  resourceVersion: string;
}

/**
 * One WATCH of pods from a cursor. `timeoutSeconds` is required so every watch ends on the server's
 * side in bounded time, as client-go's reflector asks (a random 5–10 minutes there).
 */
export interface WatchPodsOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  /** The cursor; `''` with `sendInitialEvents` asks for the freshest state (a consistent read). */
  resourceVersion: string;
  /**
   * Watch-list (KEP-3157): the server first sends the whole world as ADDED events, then a
   * BOOKMARK annotated `k8s.io/initial-events-end`, and the stream goes on as a watch. Sent with
   * `resourceVersionMatch=NotOlderThan`, as the API requires.
   */
  sendInitialEvents?: boolean;
  /** Always sent: the server ends the watch cleanly after this long, and the reflector reconnects. */
  timeoutSeconds: number;
  /** Aborting closes the connection and makes a pending read reject with the signal's reason. */
  signal: AbortSignal;
  onBytes?: (count: number) => void;
}

/**
 * An open WATCH. Iterate it once for frames; a clean end of iteration is the server's timeout.
 * `close()` releases the connection at any point and is idempotent, so the reflector can close
 * on every path without tracking whether iteration already did.
 */
export interface WatchStream extends AsyncIterable<WatchFrame> {
  close(): void;
  /**
   * The next frame if one is already decoded, taken in the iterator's order without waiting;
   * undefined when the reader would have to wait (or the stream ended: `next()` says how). The
   * reflector takes the frames of one socket read in one pass and hands their events on together:
   * a promise and an async-generator step per batch, not per event (on a 1,000-event burst that
   * meets a watch path not yet compiled, ~6 ms of the worker's ~50: docs/performance.md).
   * Optional: a stream without it is read a frame per `next()`.
   */
  takeReady?(): WatchFrame | undefined;
}

/**
 * What the reflector needs from the API server. `watchPods` resolves once the server accepted the
 * WATCH (HTTP 200) and rejects with `ApiStatusError` when it did not, so "the watch is open" (the
 * reflector is healthy) is a fact rather than a guess from the first frame, which on a quiet
 * namespace may be a minute away.
 */
export interface PodApi {
  listPods(options: ListPodsOptions): Promise<PodList>;
  watchPods(options: WatchPodsOptions): Promise<WatchStream>;
}
