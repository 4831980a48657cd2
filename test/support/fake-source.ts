/**
 * A restartable `Source` whose streams a test drives by hand: push events into the stream that is
 * open now, end it, fail it, make the factory itself throw, or make `return()` hang or throw.
 *
 * It counts what a driver must get right — how many streams were opened, how many were closed by
 * `return()`, how many are still open — so a test can prove that nothing is left running.
 */
import type { ObjectKey, Source, SourceEvent } from '../../src/index.js';

/** How a stream answers `return()`: settle at once, never settle, or reject. */
export type ReturnBehaviour = 'resolve' | 'hang' | 'throw';

type Item<T> =
  | { kind: 'event'; event: SourceEvent<T> }
  | { kind: 'end' }
  | { kind: 'fail'; error: unknown };

/** Builds a `replace` from a plain record or entries, in the given order. */
export function replaceOf<T>(
  objects: Record<ObjectKey, T> | Iterable<[ObjectKey, T]>,
): SourceEvent<T> {
  const entries =
    Symbol.iterator in Object(objects)
      ? [...(objects as Iterable<[ObjectKey, T]>)]
      : Object.entries(objects as Record<ObjectKey, T>);
  return { type: 'replace', objects: new Map(entries) };
}

export function upsertOf<T>(key: ObjectKey, object: T): SourceEvent<T> {
  return { type: 'upsert', key, object };
}

export function deleteOf<T>(key: ObjectKey, lastObject?: T): SourceEvent<T> {
  return lastObject === undefined ? { type: 'delete', key } : { type: 'delete', key, lastObject };
}

/** One opened stream. Its state says how it stopped, if it did. */
export class FakeStream<T> implements AsyncIterator<SourceEvent<T>> {
  /** `open` until it ends or fails by itself (`ended`, `failed`) or is closed (`returned`). */
  state: 'open' | 'ended' | 'failed' | 'returned' = 'open';
  nextCalls = 0;
  returnCalls = 0;
  /** `next()` calls made after the stream's signal was aborted: a consumer still reading. */
  nextCallsAfterAbort = 0;
  /** Whether the stream's signal was already aborted when `return()` was first called. */
  abortedBeforeReturn: boolean | undefined;
  /** Events handed to the consumer, in order. */
  readonly delivered: SourceEvent<T>[] = [];
  readonly #items: Item<T>[] = [];
  #waiter: ((result: IteratorResult<SourceEvent<T>>) => void) | undefined;
  #waiterReject: ((error: unknown) => void) | undefined;
  readonly #owner: FakeSource<T>;

  constructor(
    readonly index: number,
    owner: FakeSource<T>,
    public returnBehaviour: ReturnBehaviour,
    public returnError: unknown,
    /** The signal the consumer passed when it opened this stream. */
    readonly signal: AbortSignal,
  ) {
    this.#owner = owner;
  }

  /** True while the stream neither finished by itself nor was closed by its consumer. */
  get isOpen(): boolean {
    return this.state === 'open';
  }

  /**
   * The consumer took everything pushed so far and is waiting in `next()` for more: the signal
   * that it finished handling the last event, so a test can then assert what did not happen.
   */
  get awaitingPull(): boolean {
    return this.#waiter !== undefined;
  }

  push(...events: SourceEvent<T>[]): void {
    for (const event of events) this.#enqueue({ kind: 'event', event });
  }

  end(): void {
    this.#enqueue({ kind: 'end' });
  }

  fail(error: unknown = new Error(`stream ${this.index} failed`)): void {
    this.#enqueue({ kind: 'fail', error });
  }

  next(): Promise<IteratorResult<SourceEvent<T>>> {
    this.nextCalls += 1;
    if (this.signal.aborted) this.nextCallsAfterAbort += 1;
    if (this.state !== 'open') return Promise.resolve({ done: true, value: undefined });
    const item = this.#items.shift();
    if (item) return this.#deliver(item);
    return new Promise((resolve, reject) => {
      this.#waiter = resolve;
      this.#waiterReject = reject;
    });
  }

  return(): Promise<IteratorResult<SourceEvent<T>>> {
    this.returnCalls += 1;
    this.abortedBeforeReturn ??= this.signal.aborted;
    this.#owner.closes += 1;
    const wasOpen = this.state === 'open';
    if (wasOpen) this.state = 'returned';
    if (this.returnBehaviour === 'hang') {
      // A stuck producer: neither the close nor a pending pull ever settles.
      return new Promise(() => {});
    }
    if (wasOpen) this.#wake({ done: true, value: undefined });
    if (this.returnBehaviour === 'throw') return Promise.reject(this.returnError);
    return Promise.resolve({ done: true, value: undefined });
  }

  #enqueue(item: Item<T>): void {
    if (this.state !== 'open') {
      throw new Error(`fake stream ${this.index} is ${this.state}; cannot push into it`);
    }
    if (this.#waiter) {
      const resolve = this.#waiter;
      const reject = this.#waiterReject as (error: unknown) => void;
      this.#waiter = undefined;
      this.#waiterReject = undefined;
      this.#deliver(item).then(resolve, reject);
      return;
    }
    this.#items.push(item);
  }

  #deliver(item: Item<T>): Promise<IteratorResult<SourceEvent<T>>> {
    switch (item.kind) {
      case 'event':
        this.delivered.push(item.event);
        return Promise.resolve({ done: false, value: item.event });
      case 'end':
        this.state = 'ended';
        return Promise.resolve({ done: true, value: undefined });
      case 'fail':
        this.state = 'failed';
        return Promise.reject(item.error);
    }
  }

  #wake(result: IteratorResult<SourceEvent<T>>): void {
    const resolve = this.#waiter;
    this.#waiter = undefined;
    this.#waiterReject = undefined;
    resolve?.(result);
  }
}

export interface FakeSourceOptions<T> {
  /** Called for every stream right after it opens, e.g. to push its opening `replace`. */
  onOpen?: (stream: FakeStream<T>) => void;
}

export class FakeSource<T> {
  /** Calls of the factory, including the ones made to throw. */
  factoryCalls = 0;
  /** Streams the factory returned. */
  opens = 0;
  /** `return()` calls across all streams. */
  closes = 0;
  readonly streams: FakeStream<T>[] = [];
  /** The signal of every factory call, including the ones made to throw, in order. */
  readonly signals: AbortSignal[] = [];
  /** Applied to streams opened from now on. */
  returnBehaviour: ReturnBehaviour = 'resolve';
  returnError: unknown = new Error('close failed');
  readonly #openErrors: unknown[] = [];
  readonly #onOpen: ((stream: FakeStream<T>) => void) | undefined;

  constructor(options: FakeSourceOptions<T> = {}) {
    this.#onOpen = options.onOpen;
  }

  /** The `Source` to hand to the code under test. */
  readonly source: Source<T> = (signal) => {
    this.factoryCalls += 1;
    this.signals.push(signal);
    if (this.#openErrors.length > 0) throw this.#openErrors.shift();
    const stream = new FakeStream<T>(
      this.opens,
      this,
      this.returnBehaviour,
      this.returnError,
      signal,
    );
    this.opens += 1;
    this.streams.push(stream);
    this.#onOpen?.(stream);
    return { [Symbol.asyncIterator]: () => stream };
  };

  /** Makes the next `times` factory calls throw `error` instead of opening a stream. */
  throwOnOpen(error: unknown = new Error('source factory failed'), times = 1): void {
    for (let i = 0; i < times; i += 1) this.#openErrors.push(error);
  }

  /** The most recently opened stream. */
  get current(): FakeStream<T> {
    const stream = this.streams.at(-1);
    if (!stream) throw new Error('fake source: no stream has been opened');
    return stream;
  }

  /** Streams neither finished by themselves nor closed: 0 means nothing is left open. */
  get openStreams(): number {
    return this.streams.filter((s) => s.isOpen).length;
  }

  /** The newest stream exists and its consumer waits in `next()`; see `FakeStream.awaitingPull`. */
  get awaitingPull(): boolean {
    return this.streams.at(-1)?.awaitingPull ?? false;
  }

  push(...events: SourceEvent<T>[]): void {
    this.current.push(...events);
  }

  end(): void {
    this.current.end();
  }

  fail(error?: unknown): void {
    this.current.fail(error);
  }
}
