import { afterEach, describe, expect, it, vi } from 'vitest';
import { realClock } from '../../src/index.js';

// These tests never wait for a real duration: a sleep is either aborted or of zero length.
describe('realClock', () => {
  it('reads a monotonic millisecond time', () => {
    const a = realClock.now();
    const b = realClock.now();
    expect(typeof a).toBe('number');
    expect(b).toBeGreaterThanOrEqual(a);
  });

  it('rejects a sleep with the reason of an already-aborted signal', async () => {
    const reason = new Error('too late');
    await expect(realClock.sleep(60_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('rejects a pending sleep with the signal’s reason as soon as it aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const sleeping = realClock.sleep(3_600_000, controller.signal);
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
  });

  it.each([0, -5])('resolves sleep(%s) on a later tick, never synchronously', async (ms) => {
    let resolved = false;
    const sleeping = realClock.sleep(ms).then(() => {
      resolved = true;
    });
    await Promise.resolve();
    expect(resolved).toBe(false);
    await sleeping;
    expect(resolved).toBe(true);
  });

  describe('with timers faked (the only way to see 30 days pass)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('sleeps longer than the longest Node.js timer by chaining, never firing early', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const day = 86_400_000;
      let woke = false;
      const sleeping = realClock.sleep(30 * day).then(() => {
        woke = true;
      });
      await vi.advanceTimersByTimeAsync(1);
      expect(woke).toBe(false); // an overflowing timer would have fired here
      await vi.advanceTimersByTimeAsync(25 * day);
      expect(woke).toBe(false); // past one timer's limit: the chain goes on
      await vi.advanceTimersByTimeAsync(5 * day);
      await sleeping;
      expect(woke).toBe(true);
    });

    it('cancels a chained long sleep when its signal aborts', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const controller = new AbortController();
      const sleeping = realClock.sleep(40 * 86_400_000, controller.signal);
      await vi.advanceTimersByTimeAsync(26 * 86_400_000);
      controller.abort(new Error('stop'));
      await expect(sleeping).rejects.toThrow('stop');
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});
