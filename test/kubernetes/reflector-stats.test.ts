import { describe, expect, it } from 'vitest';
import { ReflectorStats } from '../../src/kubernetes/reflector/reflector-stats.js';

function recorder() {
  let changes = 0;
  const stats = new ReflectorStats('watch-list', () => {
    changes += 1;
  });
  return { stats, changes: () => changes };
}

describe('ReflectorStats: the reflector counts by hearing its steps', () => {
  it('starts idle and unhealthy, with the initial-list mode it was made with', () => {
    const { stats } = recorder();
    expect(stats.snapshot()).toMatchObject({
      phase: 'idle',
      healthy: false,
      lists: 0,
      initialList: 'watch-list',
    });
  });

  it('shows a whole read from its beginning to its end, then counts it and sets the cursor', () => {
    const { stats } = recorder();
    stats.hear({ kind: 'cursor', cursor: '5' }, 0);
    stats.hear({ kind: 'whole-read-begun' }, 1_000);
    expect(stats.snapshot()).toMatchObject({
      phase: 'listing',
      listProgress: { pages: 0, pods: 0, startedAtMs: 1_000 },
    });
    expect(stats.snapshot().cursor).toBeUndefined();
    stats.hear({ kind: 'pages', pages: 2, pods: 1_000 }, 1_500);
    expect(stats.snapshot().listProgress).toEqual({ pages: 2, pods: 1_000, startedAtMs: 1_000 });
    stats.hear({ kind: 'whole-read-ended' }, 2_000);
    stats.hear({ kind: 'whole-read-done', resourceVersion: '42' }, 2_000);
    const after = stats.snapshot();
    expect(after.listProgress).toBeUndefined();
    expect(after).toMatchObject({
      lists: 1,
      cursor: '42',
      lastSyncAtMs: 2_000,
      lastEventAtMs: 2_000,
    });
  });

  it('counts a relist only once a first LIST completed', () => {
    const { stats } = recorder();
    stats.hear({ kind: 'relist', reason: 'expired' }, 0);
    expect(stats.snapshot().relists).toEqual({});
    stats.hear({ kind: 'whole-read-done', resourceVersion: '1' }, 0);
    stats.hear({ kind: 'relist', reason: 'expired' }, 0);
    stats.hear({ kind: 'relist', reason: 'expired' }, 0);
    expect(stats.snapshot().relists).toEqual({ expired: 2 });
  });

  it('counts frames by bounded type, drops by reason, bytes, opens and stalls', () => {
    const { stats } = recorder();
    stats.hear({ kind: 'frame', type: 'ADDED' }, 7);
    stats.hear({ kind: 'frame', type: 'SOMETHING-NEW' }, 8);
    stats.hear({ kind: 'dropped', reason: 'stale' }, 8);
    stats.hear({ kind: 'bytes', count: 300 }, 8);
    stats.hear({ kind: 'bytes', count: 200 }, 8);
    stats.hear({ kind: 'watch-opened' }, 8);
    stats.hear({ kind: 'stalled-watch' }, 8);
    stats.hear({ kind: 'initial-events-timeout' }, 8);
    expect(stats.snapshot()).toMatchObject({
      events: { ADDED: 1, OTHER: 1 },
      droppedEvents: { stale: 1 },
      bytesDecoded: 500,
      watchOpens: 1,
      stalledWatches: 1,
      initialEventsTimeouts: 1,
      lastEventAtMs: 8,
    });
  });

  it('records a watch-list fallback, and the switch to LIST + WATCH only when for good', () => {
    const { stats } = recorder();
    stats.hear({ kind: 'watch-list-fallback', why: 'timed out', forGood: false }, 0);
    expect(stats.snapshot()).toMatchObject({
      watchListFallbacks: 1,
      lastError: 'watch-list: timed out',
      initialList: 'watch-list',
    });
    stats.hear({ kind: 'watch-list-fallback', why: 'refused', forGood: true }, 0);
    expect(stats.snapshot()).toMatchObject({ watchListFallbacks: 2, initialList: 'list' });
  });

  it('tells the listener of every change, and not of a health that did not change', () => {
    const { stats, changes } = recorder();
    stats.hear({ kind: 'phase', phase: 'watching' }, 0);
    stats.hear({ kind: 'error', message: 'boom' }, 0);
    expect(changes()).toBe(2);
    stats.hear({ kind: 'healthy', healthy: false }, 0);
    expect(changes()).toBe(2);
    stats.hear({ kind: 'healthy', healthy: true }, 0);
    expect(changes()).toBe(3);
    expect(stats.healthy).toBe(true);
  });

  it('hands out copies that later steps do not change', () => {
    const { stats } = recorder();
    stats.hear({ kind: 'whole-read-begun' }, 0);
    const before = stats.snapshot();
    stats.hear({ kind: 'pages', pages: 1, pods: 5 }, 0);
    stats.hear({ kind: 'frame', type: 'ADDED' }, 0);
    expect(before.listProgress).toEqual({ pages: 0, pods: 0, startedAtMs: 0 });
    expect(before.events).toEqual({});
  });
});
