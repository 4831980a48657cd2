/**
 * Wires a `ReconcileLoop` to the fakes (clock, source, reconcile, logger) and tears every loop down
 * after each test, so one failing test cannot leave a loop running into the next.
 */
import { type KeyMap, type ParentKey, ReconcileLoop } from '../../src/index.js';
import type { LoopInstrumentation, ReconcileResult } from '../../src/runtime/instrumentation.js';
import { FakeClock, settle } from './fake-clock.js';
import { FakeSource, replaceOf } from './fake-source.js';
import { RecordingLogger } from './recording-logger.js';
import { RecordingReconcile } from './recording-reconcile.js';

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

/** Starts the loop and completes its initial sync with `objects` as the opening replace. */
export async function startSynced(
  h: LoopHarness,
  objects: Record<string, Obj> = {},
): Promise<void> {
  const started = h.loop.start();
  await settle();
  h.fake.push(replaceOf(objects));
  await started;
  await settle();
}

/** For `afterEach`: releases every blocked reconcile and stops every loop made by `makeLoop`. */
export async function stopAllLoops(): Promise<void> {
  for (const h of live.splice(0)) {
    h.rec.unblock();
    h.rec.release();
    h.rec.ignoreAbort = false;
    await Promise.race([h.loop.stop().catch(() => {}), settle(50)]);
  }
}
