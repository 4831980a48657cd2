/**
 * Every stream the driver opens gets its own `AbortSignal` (RUNTIME.md, amendment 2), aborted
 * when the driver is done with that stream — on an abort of `run`, after the stream ended or
 * failed and before the reopen wait — no later than `return()`, and never while it still reads
 * the stream. A source that ignores the signal keeps working.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ObjectStore, type Source, type SourceEvent, SourceStreamDriver } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSource, replaceOf, upsertOf } from '../support/fake-source.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

interface Obj {
  v?: number;
}

const controllers: AbortController[] = [];
const runs: Promise<unknown>[] = [];

afterEach(async () => {
  for (const c of controllers.splice(0)) c.abort();
  for (const run of runs.splice(0)) {
    await finishes(run, { what: 'SourceStreamDriver.run() after its abort' });
  }
});

function harness(source?: Source<Obj>) {
  const clock = new FakeClock();
  const fake = new FakeSource<Obj>();
  const store = new ObjectStore<Obj>();
  const driver = new SourceStreamDriver<Obj>({
    source: source ?? fake.source,
    store,
    onAffected: () => {},
    retryDelayMs: 1000,
    clock,
    logger: new RecordingLogger(),
  });
  const controller = new AbortController();
  controllers.push(controller);
  const run = driver.run(controller.signal);
  runs.push(run);
  return { clock, fake, store, driver, controller, run };
}

function pulling(fake: FakeSource<Obj>): Promise<void> {
  return until(() => fake.awaitingPull, { what: 'the driver to pull the next event' });
}

describe('SourceStreamDriver lastFailure', () => {
  it('is undefined until a stream fails, then holds the latest failure', async () => {
    const h = harness();
    await pulling(h.fake);
    expect(h.driver.lastFailure).toBeUndefined();
    const reset = new Error('connection reset');
    h.fake.fail(reset);
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait' });
    expect(h.driver.lastFailure).toEqual({ error: reset });
    await h.clock.advance(1000);
    await pulling(h.fake);
    h.fake.end();
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait after the end' });
    expect(h.driver.lastFailure?.error).toMatchObject({
      name: 'SourceStreamEndedError',
      message: 'the source stream ended by itself',
    });
  });

  it('records nothing for a stream closed by an abort of run', async () => {
    const h = harness();
    await pulling(h.fake);
    h.controller.abort();
    await h.run;
    expect(h.driver.lastFailure).toBeUndefined();
  });
});

describe('SourceStreamDriver stream signals', () => {
  it('passes each stream a fresh signal that stays unaborted while the stream is read', async () => {
    const h = harness();
    await pulling(h.fake);
    h.fake.push(replaceOf({ a: {} }), upsertOf('b', {}), upsertOf('c', {}));
    await pulling(h.fake);
    const stream = h.fake.current;
    expect(stream.signal).toBeInstanceOf(AbortSignal);
    expect(stream.signal).not.toBe(h.controller.signal);
    expect(stream.signal.aborted).toBe(false);
    expect(stream.nextCallsAfterAbort).toBe(0);
    expect(h.store.size).toBe(3);
  });

  it('aborts the open stream’s signal with run’s reason when run is aborted, before return()', async () => {
    const h = harness();
    await pulling(h.fake);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h.fake);
    const reason = new Error('shutting down');
    h.controller.abort(reason);
    const stream = h.fake.current;
    expect(stream.signal.aborted).toBe(true);
    expect(stream.signal.reason).toBe(reason);
    await h.run;
    expect(stream.returnCalls).toBe(1);
    expect(stream.abortedBeforeReturn).toBe(true);
    expect(stream.nextCallsAfterAbort).toBe(0);
  });

  it('aborts a failed stream’s signal before the reopen wait, and gives the reopen a new one', async () => {
    const h = harness();
    await pulling(h.fake);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h.fake);
    h.fake.fail(new Error('connection reset'));
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait' });
    const failed = h.fake.streams[0]!;
    expect(failed.signal.aborted).toBe(true);
    expect(failed.signal.reason).toMatchObject({ name: 'AbortError' });
    expect(failed.abortedBeforeReturn).toBe(true);
    expect(h.fake.opens).toBe(1);
    await h.clock.advance(1000);
    expect(h.fake.opens).toBe(2);
    expect(h.fake.current.signal).not.toBe(failed.signal);
    expect(h.fake.current.signal.aborted).toBe(false);
  });

  it('aborts the signal of a stream that ended by itself, and of one that opened without a replace', async () => {
    const h = harness();
    await pulling(h.fake);
    h.fake.end();
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait after the end' });
    expect(h.fake.streams[0]!.signal.aborted).toBe(true);
    await h.clock.advance(1000);
    await pulling(h.fake);
    h.fake.push(upsertOf('a', {}));
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait after a bad start' });
    expect(h.fake.streams[1]!.signal.aborted).toBe(true);
    expect(h.fake.streams[1]!.abortedBeforeReturn).toBe(true);
  });

  it('aborts the signal it passed to a source() call that threw', async () => {
    const fake = new FakeSource<Obj>();
    fake.throwOnOpen(new Error('cannot connect'));
    const h = harness(fake.source);
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait after the throw' });
    expect(fake.signals).toHaveLength(1);
    expect(fake.signals[0]!.aborted).toBe(true);
  });

  it('aborts the reopened stream’s signal on stop, once each stream', async () => {
    const h = harness();
    await pulling(h.fake);
    h.fake.fail();
    await h.clock.advance(1000);
    await pulling(h.fake);
    h.controller.abort();
    await h.run;
    expect(h.fake.signals.map((s) => s.aborted)).toEqual([true, true]);
    expect(new Set(h.fake.signals).size).toBe(2);
  });

  it('holds one abort listener on run’s signal per open stream, however many events it reads', async () => {
    const h = harness();
    await pulling(h.fake);
    const before = getEventListeners(h.controller.signal, 'abort').length;
    h.fake.push(replaceOf({ a: {} }));
    for (let i = 0; i < 50; i += 1) h.fake.push(upsertOf(`p${i}`, {}));
    await pulling(h.fake);
    expect(h.store.size).toBe(51);
    expect(getEventListeners(h.controller.signal, 'abort')).toHaveLength(before);
    h.fake.fail();
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait' });
    await h.clock.advance(1000);
    await pulling(h.fake);
    expect(getEventListeners(h.controller.signal, 'abort')).toHaveLength(before);
  });

  it('rejects the read waiting for an event as soon as run is aborted', async () => {
    const h = harness();
    await pulling(h.fake);
    h.fake.push(replaceOf({ a: {} }));
    await pulling(h.fake);
    h.controller.abort();
    await finishes(h.run, { what: 'run after an abort while it waited for an event' });
    expect(h.fake.current.nextCallsAfterAbort).toBe(0);
  });

  it('keeps working with a source that ignores the signal', async () => {
    let opens = 0;
    const ignoring: Source<Obj> = async function* (): AsyncGenerator<SourceEvent<Obj>> {
      opens += 1;
      yield replaceOf({ [`x${opens}`]: { v: opens } });
      if (opens === 1) throw new Error('dropped');
      yield upsertOf('y', { v: 2 });
    };
    const h = harness(ignoring);
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait' });
    await h.clock.advance(1000);
    await until(() => h.store.has('y'), { what: 'the second stream’s events' });
    expect(h.store.has('x1')).toBe(false);
    expect(h.store.get('x2')).toEqual({ v: 2 });
  });
});
