import { describe, expect, it } from 'vitest';
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
});
