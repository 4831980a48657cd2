/**
 * Wires a `ReconcileLoop` to the fakes (clock, source, reconcile, logger) and tears every loop down
 * after each test, so one failing test cannot leave a loop running into the next.
 */
import { type KeyMap, type ParentKey, ReconcileLoop } from '../../src/index.js';
import type { LoopInstrumentation, ReconcileResult } from '../../src/runtime/instrumentation.js';
import { FakeClock } from './fake-clock.js';
import { FakeSource, replaceOf } from './fake-source.js';
import { RecordingLogger } from './recording-logger.js';
import { RecordingReconcile } from './recording-reconcile.js';
import { finishes, until } from './until.js';

/** A pod-like object; `cell` names its parent under `byCell`. */
export interface Obj {
  cell?: string;
  v?: number;
}

export const byCell: KeyMap<Obj> = (o) => o.cell;

export type LoopOptions = ConstructorParameters<typeof ReconcileLoop<Obj>>[0];

/** A promise's outcome, readable without awaiting it. */
export interface Tracked<T> {
  state: 'pending' | 'resolved' | 'rejected';
  value: T | undefined;
  error: unknown;
  promise: Promise<void>;
}

export function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = {
    state: 'pending',
    value: undefined,
    error: undefined,
    promise: Promise.resolve(),
  };
  tracked.promise = promise.then(
    (value) => {
      tracked.state = 'resolved';
      tracked.value = value;
    },
    (error: unknown) => {
      tracked.state = 'rejected';
      tracked.error = error;
    },
  );
  return tracked;
}

/** Waits until `tracked` resolved or rejected. */
export function settledOf(tracked: Tracked<unknown>): Promise<void> {
  return until(() => tracked.state !== 'pending', { what: 'the tracked promise to settle' });
}

/** Records what the loop reports, as `what:key[:detail]` strings. */
export class RecordingInstrumentation implements LoopInstrumentation {
  readonly events: string[] = [];
  readonly added: Array<{ key: ParentKey; depth: number }> = [];
  readonly taken: Array<{ key: ParentKey; waitedMs: number; depth: number }> = [];
  readonly reconciledCalls: Array<{ key: ParentKey; result: ReconcileResult; durationMs: number }> =
    [];

  queueAdded(key: ParentKey, depth: number): void {
    this.events.push(`added:${key}`);
    this.added.push({ key, depth });
  }
  queueTaken(key: ParentKey, waitedMs: number, depth: number): void {
    this.events.push(`taken:${key}`);
    this.taken.push({ key, waitedMs, depth });
  }
  retried(key: ParentKey): void {
    this.events.push(`retried:${key}`);
  }
  reconciled(key: ParentKey, result: ReconcileResult, durationMs: number): void {
    this.events.push(`reconciled:${key}:${result}`);
    this.reconciledCalls.push({ key, result, durationMs });
  }
}

export interface LoopHarness {
  clock: FakeClock;
  fake: FakeSource<Obj>;
  rec: RecordingReconcile;
  logger: RecordingLogger;
  loop: ReconcileLoop<Obj>;
}

export interface HarnessOptions extends Partial<Omit<LoopOptions, 'source' | 'reconcile'>> {
  /** Clock start time. */
  startMs?: number;
  /** Pass `keyMap: undefined` explicitly to run without one; the default is `byCell`. */
  noKeyMap?: boolean;
  instrumentation?: LoopInstrumentation;
}

const live: LoopHarness[] = [];

export function makeLoop(options: HarnessOptions = {}): LoopHarness {
  const { startMs, noKeyMap, ...rest } = options;
  const clock = new FakeClock(startMs ?? 0);
  const fake = new FakeSource<Obj>();
  const logger = new RecordingLogger();
  let loop: ReconcileLoop<Obj> | undefined;
  const rec = new RecordingReconcile({
    clock,
    observe: (key) => loop?.getByParent(key).map((o) => o.v),
  });
  const loopOptions = {
    keyMap: noKeyMap ? undefined : byCell,
    clock,
    logger,
    ...rest,
    source: fake.source,
    reconcile: rec.reconcile,
  } as LoopOptions;
  loop = new ReconcileLoop<Obj>(loopOptions);
  const harness = { clock, fake, rec, logger, loop };
  live.push(harness);
  return harness;
}

/** Waits until the loop's source stream is open and the loop pulls its next event. */
export function pulling(h: LoopHarness): Promise<void> {
  return until(() => h.fake.awaitingPull, { what: 'the loop to pull from its source' });
}

/**
 * The loop did all it can without the clock or the test: it shut down, or it took every event
 * pushed (or has no stream open) and its queue is empty with nothing in flight, or the reconcile
 * in flight is blocked in the recording reconcile. Failed keys wait for the clock.
 */
export function atRest(h: LoopHarness): boolean {
  // Shut down (no stream, no sleeper): nothing is left that could still act.
  if (h.fake.openStreams === 0 && h.clock.pendingTimers === 0) return true;
  if (!h.fake.awaitingPull && h.fake.openStreams > 0) return false;
  const state = h.loop.state();
  if (state.queued.length > 0 && !state.inFlight) return false;
  if (!state.inFlight) return true;
  return h.rec.blockedKeys.includes(state.inFlight.key);
}

/** Waits for `atRest(h)`: then a test may assert what did not happen. */
export function loopAtRest(h: LoopHarness): Promise<void> {
  return until(() => atRest(h), { what: 'the loop to come to rest' });
}

/** Starts the loop and completes its initial sync with `objects` as the opening replace. */
export async function startSynced(
  h: LoopHarness,
  objects: Record<string, Obj> = {},
): Promise<void> {
  const started = h.loop.start();
  await pulling(h);
  h.fake.push(replaceOf(objects));
  await started;
  await loopAtRest(h);
}

/**
 * For `afterEach`: releases every blocked reconcile and stops every loop made by `makeLoop`,
 * failing the test when a `stop()` hangs. A rejection is no teardown failure: `stop()` rejects
 * only for a loop never started.
 */
export async function stopAllLoops(): Promise<void> {
  for (const h of live.splice(0)) {
    h.rec.unblock();
    h.rec.release();
    h.rec.ignoreAbort = false;
    await finishes(
      h.loop.stop().catch(() => {}),
      { what: 'ReconcileLoop.stop() in teardown' },
    );
  }
}
