import { describe, expect, it } from 'vitest';
import { ReflectorHealth } from '../../src/kubernetes/reflector/reflector-health.js';

const GRACE = 30_000;

describe('ReflectorHealth: healthy while the WATCH is proven, or recovering within the grace', () => {
  it('is unhealthy before the stream was ever in steady state, however much it progressed', () => {
    const health = new ReflectorHealth(GRACE);
    expect(health.at(0)).toEqual({ healthy: false });
    health.hear({ kind: 'progress' }, 10);
    expect(health.at(10)).toEqual({ healthy: false });
  });

  it('is healthy with no deadline while a proven WATCH runs', () => {
    const health = new ReflectorHealth(GRACE);
    health.hear({ kind: 'watch-proven' }, 100);
    expect(health.watchProven).toBe(true);
    expect(health.at(1_000_000)).toEqual({ healthy: true });
  });

  it('stays healthy for the grace after a proven WATCH ends, then falls by itself', () => {
    const health = new ReflectorHealth(GRACE);
    health.hear({ kind: 'watch-proven' }, 0);
    health.hear({ kind: 'watch-ended' }, 5_000);
    expect(health.watchProven).toBe(false);
    expect(health.at(5_000)).toEqual({ healthy: true, recheckInMs: GRACE });
    expect(health.at(5_000 + GRACE - 1)).toEqual({ healthy: true, recheckInMs: 1 });
    expect(health.at(5_000 + GRACE)).toEqual({ healthy: false });
  });

  it('moves the deadline with every progress while recovering', () => {
    const health = new ReflectorHealth(GRACE);
    health.hear({ kind: 'watch-proven' }, 0);
    health.hear({ kind: 'watch-ended' }, 0);
    health.hear({ kind: 'progress' }, 20_000);
    expect(health.at(40_000)).toEqual({ healthy: true, recheckInMs: 10_000 });
  });

  it('counts the grace of a stalled WATCH from its last frame, not from its end', () => {
    const health = new ReflectorHealth(GRACE);
    health.hear({ kind: 'watch-proven' }, 0);
    health.hear({ kind: 'watch-ended', lastProgressAt: 1_000 }, 126_000);
    expect(health.at(126_000)).toEqual({ healthy: false });
  });

  it('does not count the end of a WATCH that never proved itself as progress', () => {
    const health = new ReflectorHealth(GRACE);
    health.hear({ kind: 'watch-proven' }, 0);
    health.hear({ kind: 'watch-ended' }, 1_000);
    health.hear({ kind: 'watch-ended' }, 40_000);
    expect(health.at(40_000)).toEqual({ healthy: false });
  });

  it('forgets everything when the stream stops', () => {
    const health = new ReflectorHealth(GRACE);
    health.hear({ kind: 'watch-proven' }, 0);
    health.hear({ kind: 'stopped' }, 1);
    expect(health.at(1)).toEqual({ healthy: false });
    health.hear({ kind: 'progress' }, 2);
    expect(health.at(2)).toEqual({ healthy: false });
  });
});
