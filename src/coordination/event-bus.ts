/**
 * A typed in-process publish/subscribe bus with bounded, per-subscriber buffers.
 *
 * Takes haptic's event bus idea (components announce what happened; metrics, the control plane's
 * event stream and tests listen) with one rule of its own: the publisher never waits and never
 * fails because of a subscriber. Each subscription owns a fixed-size FIFO; when a slow consumer
 * lets it fill, the oldest event is dropped and counted, so memory stays bounded and the
 * reconciliation that published is never held back by an HTTP client reading an event stream.
 */
import { type Logger, silentLogger } from '../runtime/logger.js';

/** Room for a burst (a relist touching every cell) without dropping, at a few hundred KiB at most. */
export const DEFAULT_SUBSCRIPTION_BUFFER_SIZE = 1024;

/**
 * Construction options; the logger receives the errors of subscribers and listeners, which the bus
 * reports and never rethrows to the publisher.
 */
export interface EventBusOptions {
  logger?: Logger;
}

/**
 * How one subscription filters and buffers. The type filter is applied on publish, so unwanted
 * events never take a slot in this subscription's buffer.
 */
export interface SubscribeOptions {
  /** Event `type`s to receive; absent: every event; `[]`: none. */
  types?: readonly string[];
  /** Capacity of this subscription's FIFO; an integer ≥ 1. */
  bufferSize?: number;
  /** Closes the subscription when it aborts. */
  signal?: AbortSignal;
}

/**
 * One consumer's view of the bus: iterate it once (`for await`), close it when done. Breaking
 * out of the loop, `close()` and the signal all end it and detach it from the bus.
 */
export interface Subscription<E> extends AsyncIterable<E> {
  /** Ends iteration and detaches from the bus; buffered events are discarded. Idempotent. */
  close(): void;
  /** How many events overflow discarded (oldest first) because the consumer fell behind. */
  readonly dropped: number;
}

/** A bounded FIFO with O(1) push and shift: the buffer is a ring over a fixed array. */
class Ring<E> {
  readonly #slots: Array<E | undefined>;
  #head = 0;
  #size = 0;

  constructor(capacity: number) {
    this.#slots = new Array<E | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  get full(): boolean {
    return this.#size === this.#slots.length;
  }

  push(value: E): void {
    this.#slots[(this.#head + this.#size) % this.#slots.length] = value;
    this.#size += 1;
  }

  shift(): E | undefined {
    if (this.#size === 0) return undefined;
    const value = this.#slots[this.#head];
    this.#slots[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.#slots.length;
    this.#size -= 1;
    return value;
  }

  clear(): void {
    this.#slots.fill(undefined);
    this.#head = 0;
    this.#size = 0;
  }
}

class BusSubscription<E extends { type: string }> implements Subscription<E> {
  readonly #types: ReadonlySet<string> | undefined;
  readonly #buffer: Ring<E>;
  readonly #detach: (subscription: BusSubscription<E>) => void;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => this.close();
  #dropped = 0;
  #closed = false;
  #iterated = false;
  /** Wake-ups of pending `next()` calls, so they look at the buffer again. */
  #waiters: Array<() => void> = [];

  constructor(
    types: readonly string[] | undefined,
    bufferSize: number,
    signal: AbortSignal | undefined,
    detach: (subscription: BusSubscription<E>) => void,
  ) {
    this.#types = types === undefined ? undefined : new Set(types);
    this.#buffer = new Ring<E>(bufferSize);
    this.#detach = detach;
    this.#signal = signal;
    if (signal?.aborted) {
      this.#closed = true;
    } else {
      signal?.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Called by the bus; never throws and never waits. The event always goes through the buffer,
   * even when the consumer is already waiting: it is taken when the consumer actually runs, so
   * at most `bufferSize` events are ever undelivered and a burst before then overflows as stated.
   */
  offer(event: E): void {
    if (this.#closed) return;
    if (this.#types !== undefined && !this.#types.has(event.type)) return;
    if (this.#buffer.full) {
      this.#buffer.shift();
      this.#dropped += 1;
    }
    this.#buffer.push(event);
    this.#wake();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#buffer.clear();
    this.#detach(this);
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter();
  }

  async #next(): Promise<IteratorResult<E>> {
    for (;;) {
      if (this.#buffer.size > 0) return { value: this.#buffer.shift() as E, done: false };
      if (this.#closed) return { value: undefined, done: true };
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
      });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    if (this.#iterated) {
      throw new TypeError('Subscription can be iterated only once; subscribe again for another');
    }
    this.#iterated = true;
    return {
      next: (): Promise<IteratorResult<E>> => this.#next(),
      return: (): Promise<IteratorResult<E>> => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

/**
 * The service's one bus: components publish to it and consumers (the control plane's event
 * streams, tests) read from it, so a new consumer needs no change to any publisher. Typed by its
 * event union `E`; the `type` field is what subscriptions filter on.
 */
export class EventBus<E extends { type: string }> {
  readonly #logger: Logger;
  readonly #subscriptions = new Set<BusSubscription<E>>();
  readonly #listeners = new Set<(event: E) => void>();

  constructor(options: EventBusOptions = {}) {
    this.#logger = options.logger ?? silentLogger;
  }

  /** Open subscriptions. */
  get subscriberCount(): number {
    return this.#subscriptions.size;
  }

  /**
   * Hands `event` to every open subscription that wants its type, in publish order.
   * Synchronous; never throws and never waits, whatever the subscribers do.
   */
  publish(event: E): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (err) {
        this.#logger.error({ err }, 'event bus: a listener failed');
      }
    }
    for (const subscription of [...this.#subscriptions]) {
      try {
        subscription.offer(event);
      } catch (err) {
        this.#logger.error({ err }, 'event bus: delivering an event failed');
      }
    }
  }

  /**
   * Calls `listener` synchronously with every event published from now on, until the returned
   * function is called. For a consumer that bounds its own buffers (the event streams bound theirs
   * in bytes and share one listener); it must not wait or throw, and its errors are logged.
   */
  listen(listener: (event: E) => void): () => void {
    const own = (event: E): void => listener(event);
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  /** A new subscription receiving events published from now on. */
  subscribe(options: SubscribeOptions = {}): Subscription<E> {
    const bufferSize = options.bufferSize ?? DEFAULT_SUBSCRIPTION_BUFFER_SIZE;
    if (!Number.isInteger(bufferSize) || bufferSize < 1) {
      throw new RangeError(
        `EventBus.subscribe: bufferSize must be an integer >= 1, got ${String(options.bufferSize)}`,
      );
    }
    const subscription = new BusSubscription<E>(options.types, bufferSize, options.signal, (s) =>
      this.#subscriptions.delete(s),
    );
    if (!subscription.closed) this.#subscriptions.add(subscription);
    return subscription;
  }
}
