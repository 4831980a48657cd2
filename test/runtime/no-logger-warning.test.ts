/**
 * Without a `logger`, failures are not wholly silent (RUNTIME.md, amendment 2): the first failed
 * reconcile of a loop and the first failed source stream of a driver (so of a loop too) each raise
 * one `process.emitWarning` with the code `POOL_CONTROLLER_NO_LOGGER`, naming the failure and the
 * `logger` option; never more than one per kind per instance, none with a logger.
 */
import { afterEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import {
  NO_LOGGER_WARNING_CODE,
  ObjectStore,
  ReconcileLoop,
  SourceStreamDriver,
} from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSource, replaceOf, upsertOf } from '../support/fake-source.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { finishes, until } from '../support/until.js';

interface Obj {
  cell?: string;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) {
    await finishes(cleanup(), { what: 'teardown' });
  }
  vi.restoreAllMocks();
});

/** Spies on `process.emitWarning`, keeping the warnings off stderr. */
function warnings(): MockInstance<typeof process.emitWarning> {
  return vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
}

/** The warnings this runtime raised: `[message, code]` of each call with its code. */
function raised(spy: MockInstance<typeof process.emitWarning>): Array<[string, string]> {
  return spy.mock.calls
    .map(([message, options]) => [String(message), (options as { code?: string })?.code ?? ''])
    .filter((call): call is [string, string] => call[1] === NO_LOGGER_WARNING_CODE);
}

function driverWith(options: { logger?: RecordingLogger }) {
  const clock = new FakeClock();
  const fake = new FakeSource<Obj>();
  const driver = new SourceStreamDriver<Obj>({
    source: fake.source,
    store: new ObjectStore<Obj>(),
    onAffected: () => {},
    retryDelayMs: 10,
    clock,
    ...options,
  });
  const controller = new AbortController();
  const run = driver.run(controller.signal);
  cleanups.push(async () => {
    controller.abort();
    await run;
  });
  return { clock, fake, driver };
}

async function failThreeStreams(h: ReturnType<typeof driverWith>): Promise<void> {
  await until(() => h.fake.awaitingPull, { what: 'the first stream' });
  h.fake.fail(new Error('connect ECONNREFUSED 127.0.0.1:6443'));
  await h.clock.advanceUntil(() => h.fake.opens === 2);
  await until(() => h.fake.awaitingPull, { what: 'the second stream' });
  h.fake.end();
  await h.clock.advanceUntil(() => h.fake.opens === 3);
  await until(() => h.fake.awaitingPull, { what: 'the third stream' });
  h.fake.push(upsertOf('a', {}));
  await h.clock.advanceUntil(() => h.fake.opens === 4);
}

describe('SourceStreamDriver without a logger', () => {
  it('warns once, at the first failed stream, naming the failure and the logger option', async () => {
    const spy = warnings();
    const h = driverWith({});
    await until(() => h.fake.awaitingPull, { what: 'the first stream' });
    expect(raised(spy)).toEqual([]);
    await failThreeStreams(h);
    const calls = raised(spy);
    expect(calls).toHaveLength(1);
    const [message, code] = calls[0]!;
    expect(code).toBe('POOL_CONTROLLER_NO_LOGGER');
    expect(message).toContain('connect ECONNREFUSED 127.0.0.1:6443');
    expect(message).toContain('`logger`');
  });

  it('warns once for a source() that throws on every open', async () => {
    const spy = warnings();
    const fake = new FakeSource<Obj>();
    fake.throwOnOpen(new Error('no route to host'), 3);
    const clock = new FakeClock();
    const driver = new SourceStreamDriver<Obj>({
      source: fake.source,
      store: new ObjectStore<Obj>(),
      onAffected: () => {},
      retryDelayMs: 10,
      clock,
    });
    const controller = new AbortController();
    const run = driver.run(controller.signal);
    cleanups.push(async () => {
      controller.abort();
      await run;
    });
    await clock.advanceUntil(() => fake.opens === 1);
    expect(fake.factoryCalls).toBe(4);
    expect(raised(spy).map(([message]) => message.includes('no route to host'))).toEqual([true]);
  });

  it('names the cause of a wrapped failure, as fetch wraps ECONNREFUSED', async () => {
    const spy = warnings();
    const h = driverWith({});
    await until(() => h.fake.awaitingPull, { what: 'the first stream' });
    h.fake.fail(
      new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') }),
    );
    await until(() => h.clock.pendingTimers === 1, { what: 'the reopen wait' });
    expect(raised(spy)[0]?.[0]).toContain(
      'TypeError: fetch failed (connect ECONNREFUSED 127.0.0.1:1)',
    );
  });

  it('raises nothing for a stream closed by an abort of run', async () => {
    const spy = warnings();
    const h = driverWith({});
    await until(() => h.fake.awaitingPull, { what: 'the first stream' });
    h.fake.push(replaceOf({}));
    await until(() => h.fake.awaitingPull, { what: 'the replace to be applied' });
    await cleanups.pop()?.();
    expect(raised(spy)).toEqual([]);
  });
});

describe('SourceStreamDriver with a logger', () => {
  it('raises no warning, however many streams fail', async () => {
    const spy = warnings();
    const logger = new RecordingLogger();
    const h = driverWith({ logger });
    await failThreeStreams(h);
    expect(raised(spy)).toEqual([]);
    expect(logger.mentioning('connect ECONNREFUSED').length).toBeGreaterThanOrEqual(1);
  });
});

function loopWith(options: { logger?: RecordingLogger }) {
  const clock = new FakeClock();
  const fake = new FakeSource<Obj>();
  let failures = 0;
  const loop = new ReconcileLoop<Obj>({
    source: fake.source,
    keyMap: (o) => o.cell,
    reconcile: async (key) => {
      failures += 1;
      throw new Error(`cell ${key} has no leader`);
    },
    failureBaseDelayMs: 10,
    failureMaxDelayMs: 10,
    sourceRetryDelayMs: 10,
    sourceRetryMaxDelayMs: 10,
    resyncPeriodMs: null,
    clock,
    ...options,
  });
  cleanups.push(() => loop.stop().catch(() => {}));
  return { clock, fake, loop, failures: () => failures };
}

describe('ReconcileLoop without a logger', () => {
  it('warns once for reconciles and once for source streams, each naming its failure', async () => {
    const spy = warnings();
    const h = loopWith({});
    const started = h.loop.start();
    await until(() => h.fake.awaitingPull, { what: 'the first stream' });
    h.fake.push(replaceOf({ a: { cell: 'c1' }, b: { cell: 'c2' } }));
    await started;
    await h.clock.advanceUntil(() => h.failures() >= 6);
    h.fake.fail(new Error('watch dropped'));
    await h.clock.advanceUntil(() => h.fake.opens === 2);
    await until(() => h.fake.awaitingPull, { what: 'the second stream' });
    h.fake.fail(new Error('watch dropped again'));
    await h.clock.advanceUntil(() => h.fake.opens === 3);
    const messages = raised(spy).map(([message]) => message);
    expect(messages).toHaveLength(2);
    const reconcileWarning = messages.find((m) => m.includes('reconcile'));
    expect(reconcileWarning).toContain('cell c1 has no leader');
    expect(reconcileWarning).toContain('`logger`');
    const sourceWarning = messages.find((m) => m.includes('source stream'));
    expect(sourceWarning).toContain('watch dropped');
    expect(sourceWarning).not.toContain('again');
    expect(sourceWarning).toContain('`logger`');
  });

  it('warns again for another loop: once per kind per instance', async () => {
    const spy = warnings();
    for (const h of [loopWith({}), loopWith({})]) {
      const started = h.loop.start();
      await until(() => h.fake.awaitingPull, { what: 'the first stream' });
      h.fake.push(replaceOf({ a: { cell: 'c1' } }));
      await started;
      await h.clock.advanceUntil(() => h.failures() >= 2);
    }
    expect(raised(spy)).toHaveLength(2);
  });

  it('raises nothing for a reconcile ended by stop()', async () => {
    const spy = warnings();
    const clock = new FakeClock();
    const fake = new FakeSource<Obj>();
    let running = false;
    const loop = new ReconcileLoop<Obj>({
      source: fake.source,
      reconcile: (_key, signal) => {
        running = true;
        return new Promise<void>((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      },
      clock,
    });
    const started = loop.start();
    await until(() => fake.awaitingPull, { what: 'the first stream' });
    fake.push(replaceOf({ a: {} }));
    await started;
    await until(() => running, { what: 'the reconcile to begin' });
    await loop.stop();
    expect(raised(spy)).toEqual([]);
  });
});

describe('ReconcileLoop with a logger', () => {
  it('raises no warning for failed reconciles or failed streams', async () => {
    const spy = warnings();
    const logger = new RecordingLogger();
    const h = loopWith({ logger });
    const started = h.loop.start();
    await until(() => h.fake.awaitingPull, { what: 'the first stream' });
    h.fake.push(replaceOf({ a: { cell: 'c1' } }));
    await started;
    await h.clock.advanceUntil(() => h.failures() >= 2);
    h.fake.fail(new Error('watch dropped'));
    await h.clock.advanceUntil(() => h.fake.opens === 2);
    expect(raised(spy)).toEqual([]);
    expect(logger.mentioning('cell c1 has no leader').length).toBeGreaterThanOrEqual(1);
  });
});
