import { describe, expect, it } from 'vitest';
import {
  foldReflectorStats,
  initialReflectorStats,
  type PodSourceStats,
} from '../../src/model/pod-source-stats.js';

const stats = (fields: Partial<PodSourceStats>): PodSourceStats => ({
  ...initialReflectorStats(),
  ...fields,
});

describe('foldReflectorStats', () => {
  it('adds counters, keeps the latest times, and takes the state of the newer stream', () => {
    const earlier = stats({
      phase: 'watching',
      healthy: true,
      cursor: '50',
      lists: 2,
      relists: { expired: 1 },
      watchOpens: 5,
      initialList: 'watch-list',
      watchListFallbacks: 2,
      initialEventsTimeouts: 1,
      stalledWatches: 2,
      events: { ADDED: 3, BOOKMARK: 1 },
      droppedEvents: { stale: 2 },
      bytesDecoded: 1_000,
      lastEventAtMs: 900,
      lastSyncAtMs: 500,
      lastError: 'worker died',
    });
    const newer = stats({
      phase: 'listing',
      lists: 1,
      relists: { expired: 2, 'list-failed': 1 },
      watchOpens: 1,
      initialList: 'list',
      watchListFallbacks: 1,
      initialEventsTimeouts: 1,
      stalledWatches: 1,
      events: { ADDED: 1 },
      droppedEvents: { stale: 1 },
      bytesDecoded: 10,
      lastEventAtMs: 800,
    });
    expect(foldReflectorStats(earlier, newer)).toEqual({
      phase: 'listing',
      healthy: false,
      lists: 3,
      relists: { expired: 3, 'list-failed': 1 },
      watchOpens: 6,
      initialList: 'list',
      watchListFallbacks: 3,
      initialEventsTimeouts: 2,
      stalledWatches: 3,
      events: { ADDED: 4, BOOKMARK: 1 },
      droppedEvents: { stale: 3 },
      bytesDecoded: 1_010,
      lastEventAtMs: 900,
      lastSyncAtMs: 500,
      lastError: 'worker died',
    });
  });

  it("prefers the newer stream's last error", () => {
    expect(
      foldReflectorStats(stats({ lastError: 'old' }), stats({ lastError: 'new' })).lastError,
    ).toBe('new');
  });
});
