import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/kubernetes/backoff.js';

/** One step of a backoff's life: a failure at `at` (expecting `wait`), or a healthy watch from `at`. */
type Step = { fail: number; wait: number } | { healthy: number };

function run(steps: Step[], random = () => 0): void {
  const backoff = new Backoff({ random });
  for (const step of steps) {
    if ('healthy' in step) backoff.markHealthy(step.healthy);
    else
      expect({ at: step.fail, wait: backoff.next(step.fail) }).toEqual({
        at: step.fail,
        wait: step.wait,
      });
  }
}

describe('Backoff', () => {
  it.each<[string, Step[]]>([
    [
      'doubles from 800 ms and caps at 30 s',
      [800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000].map((wait, i) => ({
        fail: i,
        wait,
      })),
    ],
    [
      'resets after two minutes of healthy watching',
      [
        { fail: 0, wait: 800 },
        { fail: 1, wait: 1_600 },
        { healthy: 10_000 },
        { fail: 130_000, wait: 800 },
      ],
    ],
    [
      'keeps growing after a healthy spell shorter than two minutes',
      [{ fail: 0, wait: 800 }, { healthy: 10_000 }, { fail: 129_999, wait: 1_600 }],
    ],
    [
      'measures the streak from its start: a second markHealthy does not restart it',
      [
        { fail: 0, wait: 800 },
        { healthy: 1_000 },
        { healthy: 100_000 },
        { fail: 121_000, wait: 800 },
      ],
    ],
    [
      'a failure ends the streak: the next one needs a new healthy spell',
      [
        { fail: 0, wait: 800 },
        { healthy: 1_000 },
        { fail: 2_000, wait: 1_600 },
        { fail: 200_000, wait: 3_200 },
      ],
    ],
  ])('%s', (_, steps) => run(steps));

  it('adds up to one base of jitter, never past the cap', () => {
    const backoff = new Backoff({ random: () => 0.999 });
    const waits = Array.from({ length: 8 }, (_, i) => backoff.next(i));
    expect(waits[0]).toBeCloseTo(1_599.2);
    expect(waits[1]).toBeCloseTo(3_198.4);
    expect(waits.slice(5)).toEqual([30_000, 30_000, 30_000]);
  });

  it('keeps working after thousands of failures', () => {
    const backoff = new Backoff({ random: () => 0 });
    let last = 0;
    for (let i = 0; i < 5_000; i += 1) last = backoff.next(i);
    expect(last).toBe(30_000);
  });

  it('rejects options that cannot make a backoff', () => {
    expect(() => new Backoff({ initialMs: 0 })).toThrow(RangeError);
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow(RangeError);
    expect(() => new Backoff({ resetAfterMs: 0 })).toThrow(RangeError);
    expect(() => new Backoff({ jitter: -1 })).toThrow(RangeError);
  });
});
