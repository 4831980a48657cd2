/**
 * An in-memory `LeaseLock` for the coordination contract suite: optimistic concurrency on a
 * resourceVersion (a stale one, or a create over an existing Lease, is a `LeaseConflictError`),
 * scripted failures, hangs and delays per operation, and a log of every call with the clock time
 * it was made at, its arguments and its signal.
 */
import type { Clock } from '../../src/index.js';
import {
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type ObservedLease,
} from '../../src/index.js';

export type LockOp = 'get' | 'create' | 'update';

export type Behaviour =
  /** Rejects at once with `error` (default: a plain Error). */
  | { kind: 'fail'; error?: unknown }
  /**
   * Stays pending until the test settles it through `lock.hung`; with `honourSignal` it rejects
   * with the signal's reason as soon as its signal aborts.
   */
  | { kind: 'hang'; honourSignal?: boolean }
  /** Waits `ms` on the clock (rejecting if its signal aborts), then does the real operation. */
  | { kind: 'delay'; ms: number };

export interface LockCall {
  op: LockOp;
  atMs: number;
  record?: LeaseRecord;
  resourceVersion?: string;
  signal: AbortSignal;
  /** Whether `signal` had already aborted when the call was made. */
  abortedAtCall?: boolean;
  /** Set once the call settled. */
  settledAtMs?: number;
  outcome?: 'ok' | 'error';
  /** What a scripted call waits for before it settles: the test (`hang`) or the clock (`delay`). */
  waitsFor?: 'test' | 'clock';
}

export interface HungCall {
  call: LockCall;
  /** Performs the real operation now and settles the call with its result. */
  proceed(): void;
  /** Rejects the call with `error`. */
  fail(error: unknown): void;
}

const copy = (record: LeaseRecord): LeaseRecord => ({ ...record });

export class FakeLeaseLock implements LeaseLock {
  readonly calls: LockCall[] = [];
  readonly hung: HungCall[] = [];
  readonly #clock: Clock;
  readonly #name: string;
  #stored: ObservedLease | null = null;
  #rv = 100;
  readonly #once: Record<LockOp, Behaviour[]> = { get: [], create: [], update: [] };
  readonly #always: Partial<Record<LockOp, Behaviour>> = {};

  constructor(clock: Clock, name = 'pools/controller-leader') {
    this.#clock = clock;
    this.#name = name;
  }

  /** Writes a record as another party would (new resourceVersion unless `keepResourceVersion`). */
  seed(record: LeaseRecord, options: { keepResourceVersion?: boolean } = {}): ObservedLease {
    const resourceVersion =
      options.keepResourceVersion && this.#stored
        ? this.#stored.resourceVersion
        : String(++this.#rv);
    this.#stored = { record: copy(record), resourceVersion };
    return this.current!;
  }

  /** Bumps the resourceVersion without changing the record. */
  touch(): void {
    if (this.#stored) this.#stored = { ...this.#stored, resourceVersion: String(++this.#rv) };
  }

  get current(): ObservedLease | null {
    return this.#stored
      ? { record: copy(this.#stored.record), resourceVersion: this.#stored.resourceVersion }
      : null;
  }

  /** The next call of `op` behaves like this (queued, one per call). */
  once(op: LockOp, behaviour: Behaviour): this {
    this.#once[op].push(behaviour);
    return this;
  }

  /** Every call of `op` behaves like this until cleared with `undefined`. */
  always(op: LockOp, behaviour: Behaviour | undefined): this {
    if (behaviour) this.#always[op] = behaviour;
    else delete this.#always[op];
    return this;
  }

  callsOf(op: LockOp): LockCall[] {
    return this.calls.filter((c) => c.op === op);
  }

  /** Clock times at which `op` was called. */
  timesOf(op: LockOp): number[] {
    return this.callsOf(op).map((c) => c.atMs);
  }

  /** Updates that wrote an empty holder: releases. */
  releases(): LockCall[] {
    return this.callsOf('update').filter((c) => c.record?.holderIdentity === '');
  }

  describe(): string {
    return this.#name;
  }

  get(signal: AbortSignal): Promise<ObservedLease | null> {
    return this.#call({ op: 'get', atMs: this.#clock.now(), signal }, () => this.current);
  }

  create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    return this.#call(
      { op: 'create', atMs: this.#clock.now(), record: copy(record), signal },
      () => {
        if (this.#stored) throw new LeaseConflictError(`lease ${this.#name} already exists`);
        this.#stored = { record: copy(record), resourceVersion: String(++this.#rv) };
        return this.current!;
      },
    );
  }

  update(
    record: LeaseRecord,
    resourceVersion: string,
    signal: AbortSignal,
  ): Promise<ObservedLease> {
    return this.#call(
      { op: 'update', atMs: this.#clock.now(), record: copy(record), resourceVersion, signal },
      () => {
        if (!this.#stored) throw new LeaseConflictError(`lease ${this.#name} does not exist`);
        if (this.#stored.resourceVersion !== resourceVersion) {
          throw new LeaseConflictError(
            `stale resourceVersion ${resourceVersion} (have ${this.#stored.resourceVersion})`,
          );
        }
        this.#stored = { record: copy(record), resourceVersion: String(++this.#rv) };
        return this.current!;
      },
    );
  }

  /**
   * Every call made so far settled, or waits for the test or the clock: the lock is not what
   * keeps the caller busy.
   */
  get idle(): boolean {
    return this.calls.every((c) => c.outcome !== undefined || c.waitsFor !== undefined);
  }

  /** A call made so far waits for the test to proceed with or fail it. */
  get waitingOnTest(): boolean {
    return this.calls.some((c) => c.waitsFor === 'test' && c.outcome === undefined);
  }

  #call<T>(call: LockCall, perform: () => T): Promise<T> {
    call.abortedAtCall = call.signal.aborted;
    this.calls.push(call);
    const behaviour = this.#once[call.op].shift() ?? this.#always[call.op];
    if (behaviour?.kind === 'hang') call.waitsFor = 'test';
    if (behaviour?.kind === 'delay') call.waitsFor = 'clock';
    const record = <R>(promise: Promise<R>): Promise<R> =>
      promise.then(
        (value) => {
          call.settledAtMs = this.#clock.now();
          call.outcome = 'ok';
          return value;
        },
        (error: unknown) => {
          call.settledAtMs = this.#clock.now();
          call.outcome = 'error';
          throw error;
        },
      );
    if (!behaviour) {
      return record(
        new Promise<T>((resolve) => {
          resolve(perform());
        }),
      );
    }
    switch (behaviour.kind) {
      case 'fail':
        return record(Promise.reject(behaviour.error ?? new Error(`${call.op} failed`)));
      case 'delay':
        return record(this.#clock.sleep(behaviour.ms, call.signal).then(perform));
      case 'hang':
        return record(
          new Promise<T>((resolve, reject) => {
            this.hung.push({
              call,
              proceed: () => {
                try {
                  resolve(perform());
                } catch (error) {
                  reject(error);
                }
              },
              fail: reject,
            });
            if (behaviour.honourSignal) {
              const onAbort = (): void => reject(call.signal.reason);
              if (call.signal.aborted) onAbort();
              else call.signal.addEventListener('abort', onAbort, { once: true });
            }
          }),
        );
    }
  }
}
