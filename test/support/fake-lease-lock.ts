/**
 * An in-memory `LeaseLock` with the API server's optimistic concurrency: every successful write
 * bumps the resourceVersion, `create` conflicts when the Lease exists and `update` when the given
 * resourceVersion is stale. Several locks can share one `FakeLeaseStore` (two electors, one
 * Lease). Every call is recorded in order, so a test asserts the exact request sequence, and a
 * test can script the next call of an operation to fail or to hang until it releases it.
 */
import {
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

  /** Writes behind the locks' backs (another controller, `kubectl edit`); bumps the version. */
  put(record: LeaseRecord): ObservedLease {
    this.#version += 1;
    this.#lease = { record: { ...record }, resourceVersion: String(this.#version) };
    return copy(this.#lease);
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
    if (!this.#lease) throw new Error('leases "test" not found');
    if (this.#lease.resourceVersion !== resourceVersion) {
      throw new LeaseConflictError(
        `stale resourceVersion ${resourceVersion}, current ${this.#lease.resourceVersion}`,
      );
    }
    return this.put(record);
  }
}

/** One recorded call. */
export interface LeaseCall {
  operation: LeaseOperation;
  /** The record sent (create, update). */
  record?: LeaseRecord;
  /** The resourceVersion sent (update). */
  resourceVersion?: string;
  signal: AbortSignal;
  /** Fake-clock time of the call, when the lock was given a clock. */
  atMs?: number;
}

/** A call held open by `hold`: it ends when the test says so. */
export interface HeldCall {
  /** Resolves once the held call has been made. */
  readonly called: Promise<LeaseCall>;
  /** Lets the call proceed against the store now (it may still conflict). */
  release(): void;
  /** Fails the call with `error`. */
  fail(error: unknown): void;
}

type Script =
  | { kind: 'fail'; error: unknown }
  | { kind: 'hold'; honourSignal: boolean; held: HeldControl };

interface HeldControl {
  onCall: (call: LeaseCall) => void;
  settled: Promise<{ ok: true } | { ok: false; error: unknown }>;
}

function copy(lease: ObservedLease): ObservedLease {
  return { record: { ...lease.record }, resourceVersion: lease.resourceVersion };
}

export class FakeLeaseLock implements LeaseLock {
  readonly calls: LeaseCall[] = [];
  readonly #scripts: Record<LeaseOperation, Script[]> = { get: [], create: [], update: [] };

  constructor(
    readonly store: FakeLeaseStore = new FakeLeaseStore(),
    private readonly now?: () => number,
    private readonly name = 'default/test',
  ) {}

  describe(): string {
    return this.name;
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

  /** The next call of `operation` rejects with `error` (queued: call again for later calls). */
  failNext(operation: LeaseOperation, error: unknown = new Error(`${operation} failed`)): void {
    this.#scripts[operation].push({ kind: 'fail', error });
  }

  /**
   * The next call of `operation` waits until the test releases or fails it. With `honourSignal`
   * (the default) it rejects with the signal's reason when its signal aborts, as a real request
   * does; without, it keeps hanging, like a request stuck in a dead connection.
   */
  hold(operation: LeaseOperation, options: { honourSignal?: boolean } = {}): HeldCall {
    let onCall!: (call: LeaseCall) => void;
    const called = new Promise<LeaseCall>((resolve) => {
      onCall = resolve;
    });
    let finish!: (outcome: { ok: true } | { ok: false; error: unknown }) => void;
    const settled = new Promise<{ ok: true } | { ok: false; error: unknown }>((resolve) => {
      finish = resolve;
    });
    this.#scripts[operation].push({
      kind: 'hold',
      honourSignal: options.honourSignal ?? true,
      held: { onCall, settled },
    });
    return {
      called,
      release: () => finish({ ok: true }),
      fail: (error) => finish({ ok: false, error }),
    };
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

  async #call<T>(call: LeaseCall, perform: () => T): Promise<T> {
    if (this.now) call.atMs = this.now();
    this.calls.push(call);
    const script = this.#scripts[call.operation].shift();
    if (script?.kind === 'fail') throw script.error;
    if (script?.kind === 'hold') {
      script.held.onCall(call);
      const waits: Array<Promise<{ ok: true } | { ok: false; error: unknown }>> = [
        script.held.settled,
      ];
      if (script.honourSignal) {
        waits.push(
          new Promise((resolve) => {
            const abort = (): void => resolve({ ok: false, error: call.signal.reason });
            if (call.signal.aborted) abort();
            else call.signal.addEventListener('abort', abort, { once: true });
          }),
        );
      }
      const outcome = await Promise.race(waits);
      if (!outcome.ok) throw outcome.error;
    } else {
      await Promise.resolve(); // a real request never answers synchronously
      if (call.signal.aborted) throw call.signal.reason;
    }
    return perform();
  }
}
