/**
 * The single worker must not starve the event loop: after a large relist it has thousands of
 * keys queued, and each reconcile resolves without touching the event loop, so without an
 * explicit yield every HTTP request and stream event would wait for the whole backlog.
 *
 * Deterministic: the CPU a reconcile burns is simulated on an injected slice clock, and every
 * yield is a `sleep(0)` on a recording clock, so the tests assert exactly where the worker yields.
 */
import { describe, expect, it } from 'vitest';
import {
  type Clock,
  ReconcileLoop,
  type Source,
  type SourceEvent,
  WORKER_SLICE_MS,
} from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

function worldOf(keys: string[]): Source<string> {
  return async function* (): AsyncGenerator<SourceEvent<string>> {
    yield { type: 'replace', objects: new Map(keys.map((k) => [k, k])) };
    await new Promise(() => {});
  };
}

/** A loop whose reconciles each "burn" `costMs` of slice time, logging keys and yields in order. */
async function runLoop(keys: string[], costMs: number): Promise<string[]> {
  const order: string[] = [];
  const fake = new FakeClock();
  const clock: Clock = {
    now: () => fake.now(),
    sleep: (ms, signal) => {
      if (ms <= 0) order.push('yield');
      return fake.sleep(ms, signal);
    },
  };
  let cpu = 0;
  const loop = new ReconcileLoop<string>({
    source: worldOf(keys),
    reconcile: async (key) => {
      order.push(key);
      cpu += costMs;
    },
    resyncPeriodMs: null,
    clock,
    sliceClock: () => cpu,
  });
  await loop.start();
  await until(() => order.filter((entry) => entry !== 'yield').length === keys.length, {
    what: 'every key to be reconciled',
  });
  await loop.stop();
  return order;
}

describe('ReconcileLoop fairness', () => {
  it('yields the event loop after each slice of back-to-back reconciles', async () => {
    const order = await runLoop(['a', 'b', 'c', 'd'], WORKER_SLICE_MS + 1);
    expect(order).toEqual([
      'a',
      'yield',
      'b',
      'yield',
      'c',
      'yield',
      'd',
      'yield', // the last slice is over too, before the worker waits on the empty queue
    ]);
  });

  it('runs short reconciles back to back, yielding once per slice rather than per key', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    const order = await runLoop(keys, 2);
    // 2 ms each against a 5 ms slice: a yield after every third reconcile.
    expect(order).toEqual([
      'k00',
      'k01',
      'k02',
      'yield',
      'k03',
      'k04',
      'k05',
      'yield',
      'k06',
      'k07',
      'k08',
      'yield',
      'k09',
      'k10',
      'k11',
      'yield',
    ]);
  });
});
