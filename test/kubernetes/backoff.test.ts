import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/kubernetes/reflector/backoff.js';

/**
 * One event in a stream's life and the wait it must produce: a failure the server answered, one
 * it never answered, or a WATCH that proved itself (no wait).
 */
type Step = { answered: number } | { unanswered: number } | 'proven';

function waits(steps: Step[], random = () => 0): Array<number | 'reset'> {
  const backoff = new Backoff({ random });
  return steps.map((step) => {
    if (step === 'proven') {
      backoff.reset();
      return 'reset';
    }
    return 'answered' in step ? backoff.next() : backoff.unanswered();
  });
}

const answered = (n: number): Step[] => Array.from({ length: n }, () => ({ answered: 0 }));
const unanswered = (n: number): Step[] => Array.from({ length: n }, () => ({ unanswered: 0 }));

describe('Backoff: answered failures', () => {
  it('doubles from 800 ms and caps at 30 s, as client-go', () => {
    expect(waits(answered(8))).toEqual([800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000]);
  });

  it('adds up to one base of jitter, never past the cap', () => {
    const got = waits(answered(8), () => 0.999) as number[];
    expect(got[0]).toBeCloseTo(1_599.2);
    expect(got[1]).toBeCloseTo(3_198.4);
    expect(got.slice(5)).toEqual([30_000, 30_000, 30_000]);
  });

  it('starts over after a WATCH proved itself, however long the streak was', () => {
    expect(waits([...answered(6), 'proven', ...answered(2)])).toEqual([
      800,
      1_600,
      3_200,
      6_400,
      12_800,
      25_600,
      'reset',
      800,
      1_600,
    ]);
  });

  it('keeps working after thousands of failures', () => {
    const backoff = new Backoff({ random: () => 0 });
    let last = 0;
    for (let i = 0; i < 5_000; i += 1) last = backoff.next();
    expect(last).toBe(30_000);
  });
});

describe('Backoff: unanswered failures', () => {
  it('wait 1 to 2 s, jittered, however many come in a row', () => {
    expect(waits(unanswered(3), () => 0)).toEqual([1_000, 1_000, 1_000]);
    expect(waits(unanswered(3), () => 0.5)).toEqual([1_500, 1_500, 1_500]);
    const top = waits(unanswered(1), () => 0.999)[0] as number;
    expect(top).toBeGreaterThan(1_990);
    expect(top).toBeLessThan(2_000);
  });

  it('do not grow the answered streak: a server back from an outage is not met with 30 s', () => {
    expect(waits([...answered(2), ...unanswered(100), { answered: 0 }]).slice(-2)).toEqual([
      1_000, 3_200,
    ]);
    expect(waits([...unanswered(100), { answered: 0 }]).at(-1)).toBe(800);
  });

  it('send at most one request per second on average while a server refuses (rate bound)', () => {
    // A minute of refusals with uniform jitter: the waits' mean is 1.5 s, never below 1 s.
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const backoff = new Backoff({ random });
    let elapsed = 0;
    let requests = 0;
    while (elapsed < 60_000) {
      elapsed += backoff.unanswered();
      requests += 1;
    }
    expect(requests).toBeLessThanOrEqual(60);
    expect(requests).toBeGreaterThanOrEqual(30);
  });
});

describe('Backoff: options', () => {
  it('rejects options that cannot make a backoff', () => {
    expect(() => new Backoff({ initialMs: 0 })).toThrow(/0 < initialMs <= maxMs/);
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow(/0 < initialMs <= maxMs/);
    expect(() => new Backoff({ jitter: -1 })).toThrow(/jitter >= 0/);
    expect(() => new Backoff({ unansweredMinMs: 0 })).toThrow(/unansweredMinMs/);
    expect(() => new Backoff({ unansweredMinMs: 3_000, unansweredMaxMs: 2_000 })).toThrow(
      /unansweredMinMs <= unansweredMaxMs/,
    );
  });
});
