/**
 * A large first `replace` is applied in slices across event-loop turns: syncing 10,000 pods must
 * not block the event loop for the whole apply, and slicing must change nothing observable
 * beyond when the parents are handed on.
 */
import { describe, expect, it } from 'vitest';
import { ObjectStore, type Source, type SourceEvent, SourceStreamDriver } from '../../src/index.js';
import { INITIAL_REPLACE_SLICE_SIZE } from '../../src/runtime/source-stream-driver.js';
import { FakeClock, settle } from '../support/fake-clock.js';

const SIZE = INITIAL_REPLACE_SLICE_SIZE * 2 + 500;

/** `o00042` → parent `p0010` (4 objects per parent); every 7th object is unmappable. */
function world(size: number): Map<string, number> {
  return new Map(Array.from({ length: size }, (_, i) => [`o${String(i).padStart(5, '0')}`, i]));
}
const keyMap = (n: number): string | undefined =>
  n % 7 === 6 ? undefined : `p${String(Math.floor(n / 4)).padStart(4, '0')}`;

function sourceOf(...streams: Array<Array<SourceEvent<number>>>): Source<number> {
  let opened = 0;
  return async function* () {
    const events = streams[Math.min(opened, streams.length - 1)] ?? [];
    opened += 1;
    for (const event of events) yield event;
    await new Promise(() => {});
  };
}

describe('SourceStreamDriver: a large initial replace', () => {
  it('is applied across event-loop turns, handing on each slice, synced after the last', async () => {
    const store = new ObjectStore<number>(keyMap);
    const handedOn: string[][] = [];
    const order: string[] = [];
    const driver = new SourceStreamDriver<number>({
      source: sourceOf([{ type: 'replace', objects: world(SIZE) }]),
      store,
      onAffected: (parents) => {
        handedOn.push(parents);
        order.push(`slice of ${parents.length}`);
      },
      retryDelayMs: 1_000,
      clock: new FakeClock(),
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    setImmediate(() => order.push('event-loop turn'));
    await driver.waitForSync();

    expect(handedOn.length).toBe(3);
    expect(order.indexOf('event-loop turn')).toBeGreaterThan(0);
    expect(order.indexOf('event-loop turn')).toBeLessThan(order.length - 1);
    for (const slice of handedOn) expect(slice).toEqual([...slice].sort());

    // The same store, and the same parents overall, as a one-shot replace.
    const reference = new ObjectStore<number>(keyMap);
    const expected = reference.apply({ type: 'replace', objects: world(SIZE) });
    expect(new Set(handedOn.flat())).toEqual(expected);
    expect(store.size).toBe(reference.size);
    expect(store.parentKeys()).toEqual(reference.parentKeys());
    expect(store.getByParent('p0100')).toEqual(reference.getByParent('p0100'));
    controller.abort();
    await running;
  });

  it('is not synced when the stream is aborted between slices', async () => {
    const store = new ObjectStore<number>(keyMap);
    const controller = new AbortController();
    const driver = new SourceStreamDriver<number>({
      source: sourceOf([{ type: 'replace', objects: world(SIZE) }]),
      store,
      onAffected: () => {
        if (!controller.signal.aborted) controller.abort();
      },
      retryDelayMs: 1_000,
      clock: new FakeClock(),
    });
    await driver.run(controller.signal);
    expect(driver.synced).toBe(false);
    expect(store.size).toBeGreaterThan(0);
    expect(store.size).toBeLessThan(SIZE);
  });

  it('applies a later large replace in one call, synthesizing deletions', async () => {
    const store = new ObjectStore<number>(keyMap);
    const clock = new FakeClock();
    const smaller = world(SIZE - 100);
    const handedOn: string[][] = [];
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const driver = new SourceStreamDriver<number>({
      source: async function* () {
        yield { type: 'replace', objects: world(SIZE) };
        await released;
        yield { type: 'replace', objects: smaller };
        await new Promise(() => {});
      },
      store,
      onAffected: (parents) => handedOn.push(parents),
      retryDelayMs: 1_000,
      clock,
    });
    const controller = new AbortController();
    const running = driver.run(controller.signal);
    await driver.waitForSync();
    handedOn.length = 0;
    release();
    await settle();
    const reference = new ObjectStore<number>(keyMap);
    reference.apply({ type: 'replace', objects: world(SIZE) });
    const expected = reference.apply({ type: 'replace', objects: smaller });
    expect(handedOn).toEqual([[...expected].sort()]);
    expect(store.size).toBe(reference.size);
    controller.abort();
    await running;
  });
});
