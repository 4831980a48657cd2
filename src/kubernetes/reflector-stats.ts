/**
 * What a pod source reports about itself, for the control plane (`GET /api/v1/reflector`,
 * `/readyz`) and the reflector metrics. Plain data, so it crosses from the worker thread by
 * structured clone.
 */

/** Where the reflector's state machine is now. */
export type ReflectorPhase = 'idle' | 'listing' | 'watching' | 'backoff' | 'stopped';

/** Why a relist happened: the cursor expired (410), came from the future (504), or a frame was unreadable. */
export type RelistReason = 'expired' | 'too-large' | 'malformed-frame' | 'list-failed' | 'other';

export interface ReflectorStats {
  phase: ReflectorPhase;
  /** True while a WATCH is open and delivering: what `/readyz` means by "the watch is healthy now". */
  healthy: boolean;
  /** The resourceVersion the next WATCH resumes from; absent when the next step is a LIST. */
  cursor?: string;
  lists: number;
  relists: Partial<Record<RelistReason, number>>;
  watchOpens: number;
  /** Frames seen, by watch event type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR). */
  events: Record<string, number>;
  /** Wall-clock (epoch ms) of the last frame or LIST; for humans and a staleness alert. */
  lastEventAtMs?: number;
  /** Wall-clock (epoch ms) of the last completed LIST (the last `replace` published). */
  lastSyncAtMs?: number;
  bytesDecoded: number;
  /** The last failure, one line, for a human debugging through port-forward. */
  lastError?: string;
}
