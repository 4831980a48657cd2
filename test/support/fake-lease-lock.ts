/**
 * An in-memory `LeaseLock` with the API server's optimistic concurrency: every successful write
 * bumps the resourceVersion, `create` conflicts when the Lease exists and `update` when the given
 * resourceVersion is stale. Several locks can share one `FakeLeaseStore` (two electors, one
 * Lease). Every call is recorded in order with the clock time it was made and settled at, so a
 * test asserts the exact request sequence; the next call of an operation (or every call) can be
 * scripted to fail, to hang until the test lets it go, or to take time on the clock.
 *
 * It imports only the public API, so the coordination contract suite, which must not depend on
 * src/ internals, uses it as well as the unit and service tests.
 */
import {
  type Clock,
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type ObservedLease,
} from '../../src/index.js';

export type LeaseOperation = 'get' | 'create' | 'update';

/** The Lease itself, shared by any number of locks. */
export class FakeLeaseStore {
  #lease: ObservedLease | null = null;
  #version = 0;

  /** A copy of the stored Lease, or null. */
  get lease(): ObservedLease | null {
    return this.#lease && copy(this.#lease);
  }

  /**
   * Writes behind the locks' backs (another controller, `kubectl edit`); bumps the version
   * unless `keepResourceVersion` (a change the version does not show).
   */
  put(record: LeaseRecord, options: { keepResourceVersion?: boolean } = {}): ObservedLease {
    if (!(options.keepResourceVersion && this.#lease)) this.#version += 1;
    this.#lease = { record: { ...record }, resourceVersion: String(this.#version) };
    return copy(this.#lease);
  }

  /** Bumps the resourceVersion without changing the record. */
  touch(): void {
    if (this.#lease) this.put(this.#lease.record);
  }

  delete(): void {
    this.#lease = null;
  }

  get(): ObservedLease | null {
    return this.lease;
  }

  create(record: LeaseRecord): ObservedLease {
    if (this.#lease) throw new LeaseConflictError('leases "test" already exists');
    return this.put(record);
  }

  update(record: LeaseRecord, resourceVersion: string): ObservedLease {
    // A 404, which the real lock reports as an unexpected status, not as a conflict.
    if (!this.#lease) throw new Error('leases "test" not found');
    if (this.#lease.resourceVersion !== resourceVersion) {
      throw new LeaseConflictError(
        `stale resourceVersion ${resourceVersion}, current ${this.#lease.resourceVersion}`,
      );
    }
    return this.put(record);
  }
}

/** What a scripted call does instead of answering at once. */
export type LeaseBehaviour =
  /** Rejects at once with `error` (default: a plain Error). */
  | { kind: 'fail'; error?: unknown }
  /**
   * Stays pending until the test lets it go through `lock.hung` (or `hold`'s handle); with
   * `honourSignal` it rejects with the signal's reason as soon as its signal aborts, as a real
   * request does; without, it keeps hanging, like a request stuck in a dead connection.
   */
  | { kind: 'hang'; honourSignal?: boolean }
  /** Waits `ms` on the lock's clock (rejecting if its signal aborts), then does the operation. */
  | { kind: 'delay'; ms: number };

/** One recorded call. */
export interface LeaseCall {
  operation: LeaseOperation;
  /** The record sent (create, update). */
  record?: LeaseRecord;
  /** The resourceVersion sent (update). */
  resourceVersion?: string;
  signal: AbortSignal;
  /** Clock time of the call, when the lock was given a clock. */
  atMs?: number;
  /** Whether `signal` had already aborted when the call was made. */
  abortedAtCall: boolean;
  /** Clock time the call settled at, when the lock was given a clock. */
  settledAtMs?: number;
  outcome?: 'ok' | 'error';
  /** What a scripted call waits for before it settles: the test (`hang`) or the clock (`delay`). */
  waitsFor?: 'test' | 'clock';
}

/** A call scripted to hang, now waiting for the test. */
export interface HungCall {
  call: LeaseCall;
  /** Performs the real operation now and settles the call with its result (it may conflict). */
  proceed(): void;
  /** Rejects the call with `error`. */
  fail(error: unknown): void;
}

/** The handle `hold` returns: it may be used before the held call has been made. */
export interface HeldCall {
  /** Resolves once the held call has been made. */
  readonly called: Promise<LeaseCall>;
  /** Lets the call proceed against the store (now, or as soon as it is made). */
  release(): void;
  /** Fails the call with `error` (now, or as soon as it is made). */
  fail(error: unknown): void;
}

type Script = LeaseBehaviour & { onHung?: (hung: HungCall) => void };

function copy(lease: ObservedLease): ObservedLease {
  return { record: { ...lease.record }, resourceVersion: lease.resourceVersion };
}

export class FakeLeaseLock implements LeaseLock {
  readonly calls: LeaseCall[] = [];
  /** Calls scripted to hang, in the order they were made (kept after they settle). */
  readonly hung: HungCall[] = [];
  readonly #clock: Clock | undefined;
  readonly #now: (() => number) | undefined;
  readonly #once: Record<LeaseOperation, Script[]> = { get: [], create: [], update: [] };
  readonly #always: Partial<Record<LeaseOperation, Script>> = {};

  /**
   * `clock`: a `Clock` (call times, and the one `delay` waits on) or just a reading of time.
   * `name` is what `describe()` says.
   */
  constructor(
    readonly store: FakeLeaseStore = new FakeLeaseStore(),
    clock?: Clock | (() => number),
    private readonly name = 'default/test',
  ) {
    if (typeof clock === 'function') this.#now = clock;
    else if (clock) {
      this.#clock = clock;
      this.#now = () => clock.now();
    }
  }

  describe(): string {
    return this.name;
  }

  /** The stored Lease, as `store.lease`. */
  get current(): ObservedLease | null {
    return this.store.lease;
  }

  /** Writes a record as another party would; see `FakeLeaseStore.put`. */
  seed(record: LeaseRecord, options: { keepResourceVersion?: boolean } = {}): ObservedLease {
    return this.store.put(record, options);
  }

  /** Bumps the resourceVersion without changing the record. */
  touch(): void {
    this.store.touch();
  }

  /**
   * The call sequence, compactly: `get`, `create(a)`, `update(a@3)` (holder @ resourceVersion
   * sent), `update(@5)` for a release.
   */
  sequence(): string[] {
    return this.calls.map((c) => {
      if (c.operation === 'get') return 'get';
      if (c.operation === 'create') return `create(${c.record?.holderIdentity})`;
      return `update(${c.record?.holderIdentity}@${c.resourceVersion})`;
    });
  }

  callsOf(operation: LeaseOperation): LeaseCall[] {
    return this.calls.filter((c) => c.operation === operation);
  }

  /** Clock times at which `operation` was called. */
  timesOf(operation: LeaseOperation): Array<number | undefined> {
    return this.callsOf(operation).map((c) => c.atMs);
  }

  /** Updates that wrote an empty holder: releases. */
  releases(): LeaseCall[] {
    return this.callsOf('update').filter((c) => c.record?.holderIdentity === '');
  }

  /** The next call of `operation` behaves like this (queued, one per call). */
  once(operation: LeaseOperation, behaviour: LeaseBehaviour): this {
    this.#once[operation].push(behaviour);
    return this;
  }

  /** Every call of `operation` behaves like this until cleared with `undefined`. */
  always(operation: LeaseOperation, behaviour: LeaseBehaviour | undefined): this {
    if (behaviour) this.#always[operation] = behaviour;
    else delete this.#always[operation];
    return this;
  }

  /** The next call of `operation` rejects with `error` (queued: call again for later calls). */
  failNext(operation: LeaseOperation, error: unknown = new Error(`${operation} failed`)): void {
    this.once(operation, { kind: 'fail', error });
  }

  /**
   * The next call of `operation` waits until the test releases or fails it. With `honourSignal`
   * (the default here) it rejects with the signal's reason when its signal aborts.
   */
  hold(operation: LeaseOperation, options: { honourSignal?: boolean } = {}): HeldCall {
    let made: HungCall | undefined;
    let decided: ((hung: HungCall) => void) | undefined;
    let onCall!: (call: LeaseCall) => void;
    const called = new Promise<LeaseCall>((resolve) => {
      onCall = resolve;
    });
    this.#once[operation].push({
      kind: 'hang',
      honourSignal: options.honourSignal ?? true,
      onHung: (hung) => {
        made = hung;
        onCall(hung.call);
        decided?.(hung);
      },
    });
    const decide = (act: (hung: HungCall) => void): void => {
      if (made) act(made);
      else decided = act;
    };
    return {
      called,
      release: () => decide((hung) => hung.proceed()),
      fail: (error) => decide((hung) => hung.fail(error)),
    };
  }

  /** Every call made so far settled, or waits for the test or the clock. */
  get idle(): boolean {
    return this.calls.every((c) => c.outcome !== undefined || c.waitsFor !== undefined);
  }

  /** A call made so far waits for the test to let it go or fail it. */
  get waitingOnTest(): boolean {
    return this.calls.some((c) => c.waitsFor === 'test' && c.outcome === undefined);
  }

  get(signal: AbortSignal): Promise<ObservedLease | null> {
    return this.#call({ operation: 'get', signal }, () => this.store.get());
  }

  create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    return this.#call({ operation: 'create', record: { ...record }, signal }, () =>
      this.store.create(record),
    );
  }

  update(
    record: LeaseRecord,
    resourceVersion: string,
    signal: AbortSignal,
  ): Promise<ObservedLease> {
    return this.#call({ operation: 'update', record: { ...record }, resourceVersion, signal }, () =>
      this.store.update(record, resourceVersion),
    );
  }

  #call<T>(made: Omit<LeaseCall, 'abortedAtCall' | 'atMs'>, perform: () => T): Promise<T> {
    const call: LeaseCall = { ...made, abortedAtCall: made.signal.aborted };
    if (this.#now) call.atMs = this.#now();
    this.calls.push(call);
    const script = this.#once[call.operation].shift() ?? this.#always[call.operation];
    if (script?.kind === 'hang') call.waitsFor = 'test';
    if (script?.kind === 'delay') call.waitsFor = 'clock';
    return this.#run(call, script, perform).then(
      (value) => {
        if (this.#now) call.settledAtMs = this.#now();
        call.outcome = 'ok';
        return value;
      },
      (error: unknown) => {
        if (this.#now) call.settledAtMs = this.#now();
        call.outcome = 'error';
        throw error;
      },
    );
  }

  async #run<T>(call: LeaseCall, script: Script | undefined, perform: () => T): Promise<T> {
    switch (script?.kind) {
      case undefined:
        await Promise.resolve(); // a real request never answers synchronously
        if (call.signal.aborted) throw call.signal.reason;
        return perform();
      case 'fail':
        throw script.error ?? new Error(`${call.operation} failed`);
      case 'delay':
        if (!this.#clock) throw new Error('FakeLeaseLock: a delay needs the lock to have a Clock');
        await this.#clock.sleep(script.ms, call.signal);
        return perform();
      case 'hang':
        return new Promise<T>((resolve, reject) => {
          const hung: HungCall = {
            call,
            proceed: () => {
              try {
                resolve(perform());
              } catch (error) {
                reject(error);
              }
            },
            fail: reject,
          };
          this.hung.push(hung);
          if (script.honourSignal) {
            const onAbort = (): void => reject(call.signal.reason);
            if (call.signal.aborted) onAbort();
            else call.signal.addEventListener('abort', onAbort, { once: true });
          }
          script.onHung?.(hung);
        });
    }
  }
}
