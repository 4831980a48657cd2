import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../src/index.js';
import { until } from '../support/until.js';

/** Tracks a promise's outcome without awaiting it. */
function track<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state = { settled: false, value: undefined as T | undefined };
  promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

describe('WorkQueue', () => {
  it('hands out keys oldest first', async () => {
    const queue = new WorkQueue<string>();
    queue.add('b');
    queue.add('a');
    queue.add('c');
    expect(await queue.get()).toBe('b');
    expect(await queue.get()).toBe('a');
    expect(await queue.get()).toBe('c');
  });

  it('keeps a re-added queued key at its original position', () => {
    const queue = new WorkQueue<string>();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.add('c');
    queue.add('b');
    expect(queue.keys()).toEqual(['a', 'b', 'c']);
    expect(queue.length).toBe(3);
  });

  it('reports length and keys in queue order as keys come and go', async () => {
    const queue = new WorkQueue<string>();
    expect(queue.length).toBe(0);
    expect(queue.keys()).toEqual([]);
    queue.add('x');
    queue.add('y');
    expect(queue.length).toBe(2);
    await queue.get();
    expect(queue.keys()).toEqual(['y']);
    expect(queue.length).toBe(1);
  });

  it('returns a copy from keys(), not the live queue', () => {
    const queue = new WorkQueue<string>();
    queue.add('a');
    const keys = queue.keys();
    keys.push('z');
    expect(queue.keys()).toEqual(['a']);
  });

  it('makes get() wait while the queue is empty and wakes it on add', async () => {
    const queue = new WorkQueue<string>();
    const got = track(queue.get());
    expect(got.settled).toBe(false);
    queue.add('a');
    await until(() => got.settled, { what: 'get() to resolve' });
    // 'a', not undefined: it waited for the add rather than resolving empty-handed.
    expect(got).toEqual({ settled: true, value: 'a' });
    expect(queue.length).toBe(0);
  });

  it('queues a taken key again when it is re-added, collapsing many adds into one follow-up', async () => {
    const queue = new WorkQueue<string>();
    queue.add('a');
    expect(await queue.get()).toBe('a');
    // 'a' is now being processed; any number of adds collapse into one follow-up.
    queue.add('a');
    queue.add('a');
    queue.add('a');
    expect(queue.keys()).toEqual(['a']);
    expect(await queue.get()).toBe('a');
    expect(queue.length).toBe(0);
  });

  it('puts a re-added taken key behind keys queued before it', async () => {
    const queue = new WorkQueue<string>();
    queue.add('a');
    queue.add('b');
    expect(await queue.get()).toBe('a');
    queue.add('c');
    queue.add('a');
    expect(queue.keys()).toEqual(['b', 'c', 'a']);
  });

  it('resolves get() with undefined after shutdown even when keys remain (no drain)', async () => {
    const queue = new WorkQueue<string>();
    queue.add('a');
    queue.add('b');
    queue.shutdown();
    expect(await queue.get()).toBeUndefined();
    expect(await queue.get()).toBeUndefined();
  });

  it('wakes every waiting get() with undefined on shutdown', async () => {
    const queue = new WorkQueue<string>();
    const first = track(queue.get());
    const second = track(queue.get());
    const third = track(queue.get());
    expect(first.settled || second.settled || third.settled).toBe(false);
    queue.shutdown();
    await until(() => first.settled && second.settled && third.settled, {
      what: 'every get() to resolve',
    });
    expect([first, second, third]).toEqual([
      { settled: true, value: undefined },
      { settled: true, value: undefined },
      { settled: true, value: undefined },
    ]);
  });

  it('ignores add() after shutdown', async () => {
    const queue = new WorkQueue<string>();
    queue.shutdown();
    queue.add('late');
    expect(queue.keys()).not.toContain('late');
    expect(await queue.get()).toBeUndefined();
  });

  it('tolerates shutdown() twice', async () => {
    const queue = new WorkQueue<string>();
    queue.shutdown();
    expect(() => queue.shutdown()).not.toThrow();
    expect(await queue.get()).toBeUndefined();
  });

  it('gives each waiting get() its own key', async () => {
    const queue = new WorkQueue<string>();
    const first = queue.get();
    const second = queue.get();
    queue.add('a');
    queue.add('b');
    expect([await first, await second].sort()).toEqual(['a', 'b']);
    expect(queue.length).toBe(0);
  });

  it('keeps queue order and dedup through thousands of takes and re-adds', async () => {
    // A reference with the same contract, checked step by step: an array that skips queued keys.
    const queue = new WorkQueue<number>();
    const reference: number[] = [];
    let seed = 42;
    const random = (below: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % below;
    };
    for (let step = 0; step < 20_000; step += 1) {
      if (random(3) === 0 && reference.length > 0) {
        expect(await queue.get()).toBe(reference.shift());
      } else {
        const key = random(5_000);
        const added = !reference.includes(key);
        if (added) reference.push(key);
        expect(queue.add(key)).toBe(added);
      }
      expect(queue.length).toBe(reference.length);
    }
    expect(queue.keys()).toEqual(reference);
    while (reference.length > 0) expect(await queue.get()).toBe(reference.shift());
    expect(queue.keys()).toEqual([]);
  });

  it('works with non-string keys', async () => {
    const queue = new WorkQueue<number>();
    queue.add(2);
    queue.add(1);
    queue.add(2);
    expect(queue.keys()).toEqual([2, 1]);
    expect(await queue.get()).toBe(2);
  });
});
