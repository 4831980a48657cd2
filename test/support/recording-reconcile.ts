/**
 * A `reconcile` that records every call in order and does what a test tells it to: block until
 * released, fail on demand (by rejection or by a synchronous throw), run a hook inside the call's
 * own async context. It tracks how many calls run at once, so "one worker" is a number to check.
 */
import type { Clock, ParentKey } from '../../src/index.js';

export interface ReconcileCall {
  readonly key: ParentKey;
  readonly signal: AbortSignal;
  /** Position among all calls, from 0. */
  readonly index: number;
  /** Clock time when the call began (when a clock was given). */
  readonly startedAtMs: number | undefined;
  /** What `observe` returned when the call began. */
  readonly observed: unknown;
  /** Whether the signal was aborted when the call settled. */
  abortedAtEnd: boolean | undefined;
  outcome: 'pending' | 'ok' | 'error';
}

type Matcher = (key: ParentKey) => boolean;

interface Blocked {
  call: ReconcileCall;
  release: () => void;
}

interface FailureRule {
  match: Matcher;
  remaining: number;
  error: () => unknown;
  sync: boolean;
}

export interface RecordingReconcileOptions {
  clock?: Clock;
  /** Evaluated at the start of every call, e.g. `(key) => loop.getByParent(key)`. */
  observe?: (key: ParentKey) => unknown;
}

function matcher(key?: ParentKey | Matcher): Matcher {
  if (key === undefined) return () => true;
  if (typeof key === 'function') return key;
  return (k) => k === key;
}

export class RecordingReconcile {
  readonly calls: ReconcileCall[] = [];
  /** `start:key` / `end:key` / `error:key` entries in the order they happened. */
  readonly log: string[] = [];
  active = 0;
  maxActive = 0;
  /** When true, a blocked call ignores its signal and settles only on `release`. */
  ignoreAbort = false;
  /** Runs at the start of every call, inside the call's async context; awaited. */
  hook: ((key: ParentKey, signal: AbortSignal, call: ReconcileCall) => unknown) | undefined;

  readonly #clock: Clock | undefined;
  readonly #observe: ((key: ParentKey) => unknown) | undefined;
  #blockRule: Matcher | undefined;
  readonly #blocked: Blocked[] = [];
  readonly #failures: FailureRule[] = [];

  constructor(options: RecordingReconcileOptions = {}) {
    this.#clock = options.clock;
    this.#observe = options.observe;
  }

  /** Keys of all calls, in call order. */
  get keys(): ParentKey[] {
    return this.calls.map((c) => c.key);
  }

  /** Calls currently waiting for `release`. */
  get blockedKeys(): ParentKey[] {
    return this.#blocked.map((b) => b.call.key);
  }

  /** Calls that start from now on (for `key`, or all) wait until released. */
  block(key?: ParentKey | Matcher): void {
    this.#blockRule = matcher(key);
  }

  /** Calls that start from now on no longer wait (already blocked ones still do). */
  unblock(): void {
    this.#blockRule = undefined;
  }

  /** Lets blocked calls (for `key`, or all) carry on. */
  release(key?: ParentKey | Matcher): void {
    const match = matcher(key);
    for (let i = this.#blocked.length - 1; i >= 0; i -= 1) {
      const blocked = this.#blocked[i] as Blocked;
      if (match(blocked.call.key)) {
        this.#blocked.splice(i, 1);
        blocked.release();
      }
    }
  }

  /** The next `times` calls for `key` (or all keys) reject with a fresh error. */
  fail(key?: ParentKey | Matcher, times = 1, error?: unknown): void {
    this.#failures.push({
      match: matcher(key),
      remaining: times,
      error: () => error ?? new Error(`reconcile failed on purpose`),
      sync: false,
    });
  }

  /** Every call for `key` (or all keys) rejects until `succeed()`. */
  failAlways(key?: ParentKey | Matcher): void {
    this.fail(key, Number.POSITIVE_INFINITY);
  }

  /** The next `times` calls for `key` throw synchronously, without returning a promise. */
  throwSync(key?: ParentKey | Matcher, times = 1): void {
    this.#failures.push({
      match: matcher(key),
      remaining: times,
      error: () => new Error('reconcile threw synchronously'),
      sync: true,
    });
  }

  /** Drops every failure rule. */
  succeed(): void {
    this.#failures.length = 0;
  }

  /** The function to hand to the loop. Not `async`, so a synchronous throw stays synchronous. */
  readonly reconcile = (key: ParentKey, signal: AbortSignal): Promise<void> => {
    const call: ReconcileCall = {
      key,
      signal,
      index: this.calls.length,
      startedAtMs: this.#clock?.now(),
      observed: this.#observe?.(key),
      abortedAtEnd: undefined,
      outcome: 'pending',
    };
    this.calls.push(call);
    this.log.push(`start:${key}`);
    const failure = this.#takeFailure(key);
    if (failure?.sync) {
      call.outcome = 'error';
      call.abortedAtEnd = signal.aborted;
      this.log.push(`error:${key}`);
      throw failure.error();
    }
    return this.#run(call, failure);
  };

  async #run(call: ReconcileCall, failure: FailureRule | undefined): Promise<void> {
    this.active += 1;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      await this.hook?.(call.key, call.signal, call);
      if (this.#blockRule?.(call.key)) await this.#wait(call);
      if (failure) throw failure.error();
      call.outcome = 'ok';
      this.log.push(`end:${call.key}`);
    } catch (error) {
      call.outcome = 'error';
      this.log.push(`error:${call.key}`);
      throw error;
    } finally {
      call.abortedAtEnd = call.signal.aborted;
      this.active -= 1;
    }
  }

  #wait(call: ReconcileCall): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.ignoreAbort) return;
        const i = this.#blocked.findIndex((b) => b.call === call);
        if (i >= 0) this.#blocked.splice(i, 1);
        reject(call.signal.reason ?? new Error('aborted'));
      };
      this.#blocked.push({
        call,
        release: () => {
          call.signal.removeEventListener('abort', onAbort);
          resolve();
        },
      });
      if (call.signal.aborted) onAbort();
      else call.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #takeFailure(key: ParentKey): FailureRule | undefined {
    const rule = this.#failures.find((r) => r.remaining > 0 && r.match(key));
    if (rule) rule.remaining -= 1;
    return rule;
  }
}
