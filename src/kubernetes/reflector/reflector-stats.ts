/**
 * What a reflector counts (`PodSourceStats`, ../../model/pod-source-stats.ts) as a record fed
 * what happened and when, like ./backoff.ts: the state machine in ./reflector.ts reports each step
 * as an event, and this module alone knows which counter, timestamp or field it moves. Every
 * event tells the listener (the worker's coalescing stats post), so no step can forget to.
 */
import {
  type DropReason,
  type InitialListMode,
  initialReflectorStats,
  type PodSourceStats,
  type ReflectorPhase,
  type RelistReason,
} from '../../model/pod-source-stats.js';
import { frameTypeKey } from '../codec/watch-frame-parser.js';

/** One step of the state machine, as the stats hear it. */
type StatsEvent =
  | { kind: 'phase'; phase: ReflectorPhase }
  /** The cursor moved, or was forgotten (`undefined`). */
  | { kind: 'cursor'; cursor: string | undefined }
  | { kind: 'bytes'; count: number }
  | { kind: 'dropped'; reason: DropReason }
  /** A whole frame of this watch `type` was read. */
  | { kind: 'frame'; type: string }
  /** A LIST or a watch-list begins: no cursor, progress from zero, phase `listing`. */
  | { kind: 'whole-read-begun' }
  /** Pages and pods read so far in the whole read under way. */
  | { kind: 'pages'; pages: number; pods: number }
  /** The whole read under way ended, finished or not: its progress is no longer shown. */
  | { kind: 'whole-read-ended' }
  /** A whole read finished at `resourceVersion`: a LIST counted, the cursor set, synced now. */
  | { kind: 'whole-read-done'; resourceVersion: string }
  | { kind: 'watch-opened' }
  | { kind: 'initial-events-timeout' }
  /** A watch-list fell back to LIST + WATCH; `forGood` when the server cannot serve it. */
  | { kind: 'watch-list-fallback'; why: string; forGood: boolean }
  | { kind: 'stalled-watch' }
  /** The last failure, in one line. */
  | { kind: 'error'; message: string }
  /** A relist for `reason`; counted only after a first LIST (the first one is no relist). */
  | { kind: 'relist'; reason: RelistReason }
  | { kind: 'healthy'; healthy: boolean };

/** One reflector's stats: told each step (`hear`), read as a copy (`snapshot`). */
export class ReflectorStats {
  readonly #stats: PodSourceStats;
  readonly #onChange: () => void;

  constructor(initialList: InitialListMode, onChange: () => void) {
    this.#stats = initialReflectorStats(initialList);
    this.#onChange = onChange;
  }

  /** Whether the stats say healthy now (what `healthy` events last set). */
  get healthy(): boolean {
    return this.#stats.healthy;
  }

  /** Applies one event at `now` (wall-clock ms, for the timestamps the stats carry). */
  hear(event: StatsEvent, now: number): void {
    const stats = this.#stats;
    switch (event.kind) {
      case 'phase':
        stats.phase = event.phase;
        break;
      case 'cursor':
        if (event.cursor === undefined) delete stats.cursor;
        else stats.cursor = event.cursor;
        break;
      case 'bytes':
        stats.bytesDecoded += event.count;
        break;
      case 'dropped':
        stats.droppedEvents[event.reason] = (stats.droppedEvents[event.reason] ?? 0) + 1;
        break;
      case 'frame': {
        const key = frameTypeKey(event.type);
        stats.events[key] = (stats.events[key] ?? 0) + 1;
        stats.lastEventAtMs = now;
        break;
      }
      case 'whole-read-begun':
        delete stats.cursor;
        stats.listProgress = { pages: 0, pods: 0, startedAtMs: now };
        stats.phase = 'listing';
        break;
      case 'pages':
        if (stats.listProgress) {
          stats.listProgress.pages = event.pages;
          stats.listProgress.pods = event.pods;
        }
        break;
      case 'whole-read-ended':
        delete stats.listProgress;
        break;
      case 'whole-read-done':
        stats.lists += 1;
        stats.lastSyncAtMs = now;
        stats.lastEventAtMs = now;
        stats.cursor = event.resourceVersion;
        break;
      case 'watch-opened':
        stats.watchOpens += 1;
        break;
      case 'initial-events-timeout':
        stats.initialEventsTimeouts += 1;
        break;
      case 'watch-list-fallback':
        stats.watchListFallbacks += 1;
        stats.lastError = `watch-list: ${event.why}`;
        if (event.forGood) stats.initialList = 'list';
        break;
      case 'stalled-watch':
        stats.stalledWatches += 1;
        break;
      case 'error':
        stats.lastError = event.message;
        break;
      case 'relist':
        if (stats.lists > 0) stats.relists[event.reason] = (stats.relists[event.reason] ?? 0) + 1;
        break;
      case 'healthy':
        if (stats.healthy === event.healthy) return;
        stats.healthy = event.healthy;
        break;
    }
    this.#onChange();
  }

  /** A copy the caller may keep: later events do not change it. */
  snapshot(): PodSourceStats {
    const stats = this.#stats;
    return {
      ...stats,
      relists: { ...stats.relists },
      events: { ...stats.events },
      droppedEvents: { ...stats.droppedEvents },
      ...(stats.listProgress ? { listProgress: { ...stats.listProgress } } : {}),
    };
  }
}
