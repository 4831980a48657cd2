import { afterEach, describe, expect, it, vi } from 'vitest';
import { type KeyMap, ObjectStore, type ParentKey, SourceStreamDriver } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { deleteOf, FakeSource, replaceOf, upsertOf } from '../support/fake-source.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

interface Obj {
  cell?: string;
  v?: number;
}

const byCell: KeyMap<Obj> = (o) => o.cell;

interface Harness {
  clock: FakeClock;
  fake: FakeSource<Obj>;
  store: ObjectStore<Obj>;
  logger: RecordingLogger;
  driver: SourceStreamDriver<Obj>;
  /** Every onAffected argument, in order. */
  affected: ParentKey[][];
  controller: AbortController;
  /** Starts `run()` and tracks whether it settled. */
  run(signal?: AbortSignal): { done: boolean; error: unknown; promise: Promise<void> };
}

const controllers: AbortController[] = [];
/** Every `run()` started, so teardown can require each to end once aborted. */
const runs: Promise<unknown>[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of controllers.splice(0)) c.abort();
  for (const run of runs.splice(0)) {
    await finishes(run, { what: 'SourceStreamDriver.run() after its abort' });
  }
});

/** Waits until the driver took every event pushed so far and pulls for the next one. */
function pulling(h: Harness): Promise<void> {
  return until(() => h.fake.awaitingPull, { what: 'the driver to pull the next event' });
}

/** Waits until the driver closed the failed stream and sleeps before reopening. */
function backingOff(h: Harness): Promise<void> {
  return until(() => h.fake.openStreams === 0 && h.clock.pendingTimers === 1, {
    what: 'the driver to close the stream and wait to reopen',
  });
}

function harness(
  options: {
    keyMap?: KeyMap<Obj>;
    retryDelayMs?: number;
    retryMaxDelayMs?: number;
    onAffected?: (parents: ParentKey[], store: ObjectStore<Obj>) => void;
  } = {},
): Harness {
  const clock = new FakeClock();
  const fake = new FakeSource<Obj>();
  const logger = new RecordingLogger();
  const store = new ObjectStore<Obj>(options.keyMap, { logger });
  const affected: ParentKey[][] = [];
  const driver = new SourceStreamDriver<Obj>({
    source: fake.source,
    store,
    onAffected: (parents) => {
      affected.push([...parents]);
      options.onAffected?.(parents, store);
    },
    retryDelayMs: options.retryDelayMs ?? 1000,
    ...(options.retryMaxDelayMs === undefined ? {} : { retryMaxDelayMs: options.retryMaxDelayMs }),
    clock,
    logger,
  });
  const controller = new AbortController();
  controllers.push(controller);
  return {
    clock,
    fake,
    store,
    logger,
    driver,
    affected,
    controller,
    run(signal = controller.signal) {
      const state = { done: false, error: undefined as unknown, promise: Promise.resolve() };
      state.promise = driver.run(signal).then(
        () => {
          state.done = true;
        },
        (error: unknown) => {
          state.done = true;
          state.error = error ?? new Error('rejected without a reason');
        },
      );
      runs.push(state.promise);
      return state;
    },
  };
}

describe('SourceStreamDriver applying events', () => {
  it('opens the source and applies its opening replace', async () => {
    const h = harness({ keyMap: byCell });
    h.run();
    await pulling(h);
    expect(h.fake.opens).toBe(1);
    expect(h.driver.synced).toBe(false);
    h.fake.push(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    await pulling(h);
    expect(h.store.size).toBe(2);
    expect(h.affected).toEqual([['c1', 'c2']]);
    expect(h.driver.synced).toBe(true);
  });

  it('applies every event to the store before onAffected sees its parents', async () => {
    const seen: string[] = [];
    const h = harness({
      keyMap: byCell,
      onAffected: (parents, store) => {
        for (const p of parents) {
          seen.push(
            `${p}:${store
              .getByParent(p)
              .map((o) => o.v)
              .join(',')}`,
          );
        }
      },
    });
    h.run();
    await pulling(h);
    h.fake.push(
      replaceOf({ p1: { cell: 'c1', v: 1 } }),
      upsertOf('p2', { cell: 'c1', v: 2 }),
      upsertOf('p1', { cell: 'c1', v: 3 }),
      deleteOf('p2'),
      upsertOf('p1', { cell: 'c2', v: 4 }),
    );
    await pulling(h);
    expect(seen).toEqual(['c1:1', 'c1:1,2', 'c1:3,2', 'c1:3', 'c1:', 'c2:4']);
  });

  it('passes affected parents sorted in JavaScript’s default string order', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ b: {}, Z: {}, a: {}, B: {}, a10: {}, a9: {} }));
    await pulling(h);
    expect(h.affected).toEqual([['B', 'Z', 'a', 'a10', 'a9', 'b']]);
  });

  it('calls onAffected only with a non-empty array', async () => {
    const h = harness({ keyMap: byCell });
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({}));
    await pulling(h);
    expect(h.driver.synced).toBe(true);
    h.fake.push(upsertOf('orphan', { v: 1 }), deleteOf('ghost'), deleteOf('ghost', { v: 1 }));
    await pulling(h);
    h.fake.push(upsertOf('p1', { cell: 'c1' }));
    await pulling(h);
    expect(h.affected).toEqual([['c1']]);
  });

  it('applies events of one stream in arrival order', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: { v: 1 } }));
    h.fake.push(
      upsertOf('b', { v: 1 }),
      deleteOf('a'),
      upsertOf('c', { v: 1 }),
      upsertOf('a', { v: 2 }),
    );
    await pulling(h);
    expect(h.affected).toEqual([['a'], ['b'], ['a'], ['c'], ['a']]);
    expect(h.store.get('a')).toEqual({ v: 2 });
  });
});

describe('SourceStreamDriver sync', () => {
  it('rejects a stream whose first event is not a replace without applying that event', async () => {
    const h = harness({ keyMap: byCell });
    h.run();
    await pulling(h);
    h.fake.push(upsertOf('p1', { cell: 'c1' }));
    await backingOff(h);
    expect(h.store.size).toBe(0);
    expect(h.affected).toEqual([]);
    expect(h.driver.synced).toBe(false);
    expect(h.fake.streams[0]?.isOpen).toBe(false);
    expect(h.fake.streams[0]?.returnCalls).toBeGreaterThanOrEqual(1);
    expect(h.logger.entries.length).toBeGreaterThanOrEqual(1);
  });

  it('reopens after a bad first event and syncs on the next stream’s replace', async () => {
    const h = harness({ keyMap: byCell, retryDelayMs: 500 });
    h.run();
    await pulling(h);
    h.fake.push(deleteOf('p1', { cell: 'c1' }));
    await h.clock.advance(499);
    expect(h.fake.opens).toBe(1);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(2);
    h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
    await pulling(h);
    expect(h.driver.synced).toBe(true);
    expect(h.affected).toEqual([['c1']]);
  });

  it('requires every stream, not only the first, to open with a replace', async () => {
    const h = harness({ keyMap: byCell });
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
    h.fake.end();
    await h.clock.advance(1000);
    expect(h.fake.opens).toBe(2);
    h.fake.push(upsertOf('p2', { cell: 'c2' }));
    await backingOff(h);
    expect(h.store.has('p2')).toBe(false);
    expect(h.affected).toEqual([['c1']]);
    expect(h.fake.streams[1]?.isOpen).toBe(false);
    await h.clock.advance(1999); // the second failure in a row waits twice as long
    expect(h.fake.opens).toBe(2);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(3);
  });

  it('stays synced for good after the first replace, through failures and reopens', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    expect(h.driver.synced).toBe(true);
    h.fake.fail(new Error('boom'));
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen delay to start' });
    expect(h.driver.synced).toBe(true);
    await h.clock.advance(1000);
    h.fake.push(upsertOf('x', {}));
    await backingOff(h); // a first event that is no replace: closed again
    expect(h.driver.synced).toBe(true);
  });

  it('resolves waitForSync only after the first replace has been applied', async () => {
    const h = harness();
    let resolvedWithSize: number | undefined;
    h.driver.waitForSync().then(() => {
      resolvedWithSize = h.store.size;
    });
    h.run();
    await pulling(h);
    expect(resolvedWithSize).toBeUndefined();
    h.fake.push(replaceOf({ a: {}, b: {} }));
    await pulling(h);
    expect(resolvedWithSize).toBe(2);
  });

  it('resolves waitForSync at once when already synced', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({}));
    await pulling(h);
    await expect(h.driver.waitForSync()).resolves.toBeUndefined();
  });

  it('rejects waitForSync with the signal’s reason when aborted first', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    const reason = new Error('gave up waiting');
    const controller = new AbortController();
    const waiting = h.driver.waitForSync(controller.signal);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
  });

  it('rejects waitForSync with the reason of an already-aborted signal', async () => {
    const h = harness();
    const reason = new Error('already gone');
    await expect(h.driver.waitForSync(AbortSignal.abort(reason))).rejects.toBe(reason);
  });
});

describe('SourceStreamDriver reopening', () => {
  it('reopens retryDelayMs after a stream ends, and logs it', async () => {
    const h = harness({ retryDelayMs: 1000 });
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    const before = h.logger.entries.length;
    h.fake.end();
    await h.clock.advance(999);
    expect(h.fake.opens).toBe(1);
    expect(h.logger.entries.length).toBeGreaterThan(before);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(2);
  });

  it('reopens retryDelayMs after a stream throws, and logs the error', async () => {
    const h = harness({ retryDelayMs: 300 });
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    const error = new Error('watch dropped');
    h.fake.fail(error);
    await h.clock.advance(299);
    expect(h.fake.opens).toBe(1);
    expect(h.logger.mentioning(error).length).toBeGreaterThanOrEqual(1);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(2);
  });

  it('reopens after the source factory itself throws, backing off, and logs the error', async () => {
    const h = harness({ retryDelayMs: 1000 });
    const error = new Error('cannot open');
    h.fake.throwOnOpen(error, 2);
    h.run();
    await until(() => h.clock.pendingTimers === 1, {
      what: 'the driver to wait to retry the open',
    });
    expect(h.fake.factoryCalls).toBe(1);
    expect(h.fake.opens).toBe(0);
    expect(h.logger.mentioning(error).length).toBeGreaterThanOrEqual(1);
    await h.clock.advance(1000);
    expect(h.fake.factoryCalls).toBe(2);
    expect(h.fake.opens).toBe(0);
    await h.clock.advance(1999); // a second failure in a row: twice the wait
    expect(h.fake.factoryCalls).toBe(2);
    await h.clock.advance(1);
    expect(h.fake.opens).toBe(1);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    expect(h.driver.synced).toBe(true);
  });

  it('reopens before the first sync too, so a failing first stream does not block sync', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    h.fake.fail();
    await h.clock.advance(1000);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    expect(h.driver.synced).toBe(true);
  });

  it('synthesizes deletions for objects that vanished while the stream was down', async () => {
    const h = harness({ keyMap: byCell });
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    h.fake.fail();
    await h.clock.advance(1000);
    h.fake.push(replaceOf({ p1: { cell: 'c1' } }));
    await pulling(h);
    expect(h.store.has('p2')).toBe(false);
    expect(h.affected).toEqual([
      ['c1', 'c2'],
      ['c1', 'c2'],
    ]);
  });

  it('keeps the stream open: no reopen while events keep flowing', async () => {
    const h = harness();
    h.run();
    await pulling(h);
    h.fake.push(replaceOf({}));
    await h.clock.advance(60_000);
    h.fake.push(upsertOf('a', {}));
    await pulling(h);
    expect(h.fake.opens).toBe(1);
    expect(h.store.has('a')).toBe(true);
  });
});

describe('SourceStreamDriver closing', () => {
  it('closes the open stream and resolves when aborted', async () => {
    const h = harness();
    const run = h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    h.controller.abort();
    await until(() => run.done, { what: 'run() to resolve after the abort' });
    expect(run.done).toBe(true);
    expect(run.error).toBeUndefined();
    expect(h.fake.openStreams).toBe(0);
    expect(h.fake.current.returnCalls).toBe(1);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('closes a stream that has not delivered anything yet when aborted', async () => {
    const h = harness();
    const run = h.run();
    await pulling(h);
    h.controller.abort();
    await until(() => run.done, { what: 'run() to resolve after the abort' });
    expect(run.done).toBe(true);
    expect(h.fake.openStreams).toBe(0);
  });

  it('resolves when aborted during the reopen delay, leaving no timer and opening nothing more', async () => {
    const h = harness();
    const run = h.run();
    await pulling(h);
    h.fake.end();
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen delay to start' });
    expect(h.clock.pendingTimers).toBe(1);
    h.controller.abort();
    await until(() => run.done, { what: 'run() to resolve after the abort' });
    expect(run.done).toBe(true);
    expect(run.error).toBeUndefined();
    expect(h.clock.pendingTimers).toBe(0);
    await h.clock.advance(10_000);
    expect(h.fake.opens).toBe(1);
  });

  it('resolves at once for an already-aborted signal, opening nothing', async () => {
    const h = harness();
    const run = h.run(AbortSignal.abort());
    await run.promise;
    expect(run.done).toBe(true);
    expect(run.error).toBeUndefined();
    expect(h.fake.factoryCalls).toBe(0);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('does not wait on a return() that never settles when aborted', async () => {
    const h = harness();
    h.fake.returnBehaviour = 'hang';
    const run = h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    h.controller.abort();
    await until(() => run.done, { what: 'run() to resolve after the abort' });
    expect(run.done).toBe(true);
    expect(h.fake.current.returnCalls).toBe(1);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('does not wait on a return() that never settles before reopening', async () => {
    const h = harness();
    h.fake.returnBehaviour = 'hang';
    h.run();
    await pulling(h);
    h.fake.push(upsertOf('a', {})); // not a replace: the driver must close and reopen
    await until(() => h.clock.pendingTimers === 1, { what: 'the driver to wait to reopen' });
    expect(h.fake.streams[0]?.returnCalls).toBe(1);
    await h.clock.advance(1000);
    expect(h.fake.opens).toBe(2);
  });

  it('logs a close error instead of throwing it when aborted', async () => {
    const h = harness();
    const closeError = new Error('close exploded');
    h.fake.returnBehaviour = 'throw';
    h.fake.returnError = closeError;
    const run = h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    h.controller.abort();
    await until(() => run.done, { what: 'run() to resolve after the abort' });
    expect(run.done).toBe(true);
    expect(run.error).toBeUndefined();
    expect(h.logger.mentioning(closeError).length).toBeGreaterThanOrEqual(1);
  });

  it('logs a close error and still reopens after a bad first event', async () => {
    const h = harness();
    const closeError = new Error('close exploded');
    h.fake.returnBehaviour = 'throw';
    h.fake.returnError = closeError;
    h.run();
    await pulling(h);
    h.fake.push(upsertOf('a', {}));
    await backingOff(h);
    expect(h.logger.mentioning(closeError).length).toBeGreaterThanOrEqual(1);
    await h.clock.advance(1000);
    expect(h.fake.opens).toBe(2);
  });

  it('keeps the store and synced flag as they were after being aborted', async () => {
    const h = harness();
    const run = h.run();
    await pulling(h);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h);
    h.controller.abort();
    await run.promise;
    expect(h.driver.synced).toBe(true);
    expect(h.store.has('a')).toBe(true);
  });
});

describe('SourceStreamDriver without a logger', () => {
  it('logs nothing to the console while streams fail, end and refuse to close; warns once', async () => {
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation(() => {}),
    );
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const clock = new FakeClock();
    const fake = new FakeSource<Obj>();
    fake.returnBehaviour = 'throw';
    fake.throwOnOpen(new Error('factory down'));
    const driver = new SourceStreamDriver<Obj>({
      source: fake.source,
      store: new ObjectStore<Obj>(),
      onAffected: () => {},
      retryDelayMs: 10,
      clock,
    });
    const controller = new AbortController();
    controllers.push(controller);
    const run = driver.run(controller.signal);
    await clock.advance(10);
    fake.push(upsertOf('a', {})); // not a replace
    await clock.advance(20);
    fake.push(replaceOf({ a: {} }));
    fake.fail(new Error('dropped'));
    await clock.advance(40);
    fake.end();
    await clock.advance(80);
    controller.abort();
    await run;
    expect(fake.opens).toBe(4);
    expect(driver.synced).toBe(true);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    // The one exception (RUNTIME.md, amendment 2): the first failure, as a process warning.
    expect(warning.mock.calls.map(([message, options]) => [String(message), options])).toEqual([
      [expect.stringContaining('factory down'), { code: 'POOL_CONTROLLER_NO_LOGGER' }],
    ]);
  });
});

describe('SourceStreamDriver reopen backoff', () => {
  /**
   * Fails each stream the moment it opens (before any replace) and returns the clock times of
   * the opens: the waits between them are the reopen delays.
   */
  async function opensWhileFailing(h: Harness, count: number): Promise<number[]> {
    const times: number[] = [];
    for (let i = 0; i < count; i += 1) {
      await h.clock.advanceUntil(() => h.fake.opens > i);
      times.push(h.clock.now());
      h.fake.fail(new Error(`open ${i} failed`));
    }
    return times;
  }

  function gaps(times: number[]): number[] {
    return times.slice(1).map((t, i) => t - (times[i] as number));
  }

  it('doubles the wait with each consecutive failure, up to retryMaxDelayMs, exactly', async () => {
    const h = harness({ retryDelayMs: 1000, retryMaxDelayMs: 10_000 });
    h.run();
    const times = await opensWhileFailing(h, 7);
    expect(gaps(times)).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  it('defaults retryMaxDelayMs to 30 s', async () => {
    const h = harness({ retryDelayMs: 1000 });
    h.run();
    const times = await opensWhileFailing(h, 8);
    expect(gaps(times)).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it('counts a stream that ends by itself or opens without a replace as a failure too', async () => {
    const h = harness({ retryDelayMs: 100, retryMaxDelayMs: 10_000 });
    h.run();
    await h.clock.advanceUntil(() => h.fake.opens === 1);
    h.fake.end();
    await h.clock.advanceUntil(() => h.fake.opens === 2);
    const second = h.clock.now();
    h.fake.push(upsertOf('a', {}));
    await h.clock.advanceUntil(() => h.fake.opens === 3);
    expect(second).toBe(100);
    expect(h.clock.now() - second).toBe(200);
  });

  it('ends the streak once a stream stayed open retryMaxDelayMs after its replace', async () => {
    const h = harness({ retryDelayMs: 1000, retryMaxDelayMs: 8000 });
    h.run();
    await opensWhileFailing(h, 4); // waits 1, 2, 4 and 8 s: the next one would be 8 s (capped)
    await h.clock.advanceUntil(() => h.fake.opens === 5);
    h.fake.push(replaceOf({ a: {} }));
    await h.clock.advance(8000);
    const failedAt = h.clock.now();
    h.fake.fail(new Error('dropped after a long healthy stream'));
    await h.clock.advanceUntil(() => h.fake.opens === 6);
    expect(h.clock.now() - failedAt).toBe(1000);
  });

  it('keeps the streak when the stream failed before staying open that long', async () => {
    const h = harness({ retryDelayMs: 1000, retryMaxDelayMs: 8000 });
    h.run();
    await opensWhileFailing(h, 3); // waits 1 s, 2 s, 4 s: the next one is 8 s
    await h.clock.advanceUntil(() => h.fake.opens === 4);
    h.fake.push(replaceOf({ a: {} }));
    await h.clock.advance(7999);
    const failedAt = h.clock.now();
    h.fake.fail(new Error('dropped too soon'));
    await h.clock.advanceUntil(() => h.fake.opens === 5);
    expect(h.clock.now() - failedAt).toBe(8000);
  });

  it('throws RangeError when retryMaxDelayMs is below retryDelayMs or not finite', () => {
    const store = new ObjectStore<Obj>();
    const make = (retryDelayMs: number, retryMaxDelayMs: number) => () =>
      new SourceStreamDriver<Obj>({
        source: new FakeSource<Obj>().source,
        store,
        onAffected: () => {},
        retryDelayMs,
        retryMaxDelayMs,
      });
    expect(make(1000, 999)).toThrow(RangeError);
    expect(make(1000, Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(make(1000, Number.NaN)).toThrow(RangeError);
    expect(make(31_000, Number.NaN)).toThrow(RangeError);
    expect(make(1000, 1000)).not.toThrow();
  });
});
