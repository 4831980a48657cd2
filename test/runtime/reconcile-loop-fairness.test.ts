/**
 * The single worker must not starve the event loop: after a large relist it has thousands of
 * keys queued, and each reconcile resolves without touching the event loop, so without an
 * explicit yield every HTTP request and stream event would wait for the whole backlog.
 * These tests use the real clock on purpose: the yield is to the real event loop.
 */
import { describe, expect, it } from 'vitest';
import { ReconcileLoop, type Source, type SourceEvent } from '../../src/index.js';

function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // burn CPU like a heavy synchronous reconcile would
  }
}

function worldOf(keys: string[]): Source<string> {
  return async function* (): AsyncGenerator<SourceEvent<string>> {
    yield { type: 'replace', objects: new Map(keys.map((k) => [k, k])) };
    await new Promise(() => {});
  };
}

describe('ReconcileLoop fairness', () => {
  it('yields the event loop between slices of back-to-back reconciles', async () => {
    const order: string[] = [];
    const loop = new ReconcileLoop<string>({
      source: worldOf(['a', 'b', 'c', 'd']),
      reconcile: async (key) => {
        order.push(key);
        busyFor(6); // longer than one slice
      },
      resyncPeriodMs: null,
    });
    await loop.start();
    setImmediate(() => order.push('event-loop turn'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await loop.stop();
    expect(order.indexOf('event-loop turn')).toBeGreaterThan(0);
    expect(order.indexOf('event-loop turn')).toBeLessThan(order.length - 1);
  });

  it('runs short reconciles back to back without yielding per key', async () => {
    const order: string[] = [];
    const keys = Array.from({ length: 50 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    const loop = new ReconcileLoop<string>({
      source: worldOf(keys),
      reconcile: async (key) => {
        order.push(key);
      },
      resyncPeriodMs: null,
    });
    await loop.start();
    setImmediate(() => order.push('event-loop turn'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await loop.stop();
    // Trivial reconciles share a slice: the event loop's turn does not come after every key
    // (all 50 normally fit in one slice; a descheduled process may split them once or twice).
    expect(order.indexOf('event-loop turn')).toBeGreaterThanOrEqual(10);
  });
});
