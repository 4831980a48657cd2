/**
 * Insertion-ordered, deduplicating queue of keys with a wakeup.
 *
 * Port of client-go's `workqueue.Type` for exactly one worker: with one consumer the
 * dirty/processing protocol collapses into a single ordered set. A key taken by `get()` has
 * left the set, so re-adding it while it is being reconciled queues it once more, and any number
 * of adds during that reconcile collapse into that one follow-up.
 *
 * Why dedup: the queue holds keys, not events. A reconcile re-reads the key's current state, so
 * ten changes to one cell before the worker gets to it need one reconcile, not ten; a burst (a
 * relist re-affects every parent) costs one entry per key. Keys carry no delay here: retries with
 * backoff live in `RetryScheduler`, which only calls `add` when a retry is due.
 */
export class WorkQueue<K> {
  readonly #queued = new Set<K>();
  #waiters: Array<() => void> = [];
  #shutDown = false;

  /**
   * Queues `key` unless it is already queued (it then keeps its place). Ignored after shutdown.
   * Returns whether the key was newly queued, which is what queue metrics count.
   */
  add(key: K): boolean {
    if (this.#shutDown || this.#queued.has(key)) return false;
    this.#queued.add(key);
    this.#wakeOne();
    return true;
  }

  /**
   * Takes the oldest queued key, waiting while the queue is empty. Resolves `undefined` once shut
   * down, even with keys left: nothing drains on shutdown, since every key is re-derived from the
   * world by the next process's initial relist anyway.
   */
  async get(): Promise<K | undefined> {
    for (;;) {
      if (this.#shutDown) return undefined;
      const first = this.#queued.values().next();
      if (!first.done) {
        this.#queued.delete(first.value);
        return first.value;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Wakes every waiting `get()` with `undefined`; later adds are ignored. */
  shutdown(): void {
    this.#shutDown = true;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  /** True once `shutdown()` was called: `add` is ignored and `get` answers `undefined`. */
  get shuttingDown(): boolean {
    return this.#shutDown;
  }

  /** Keys waiting (not counting one a worker has taken): the `workqueue_depth` gauge. */
  get length(): number {
    return this.#queued.size;
  }

  /** Queued keys in queue order, for the control plane. */
  keys(): K[] {
    return [...this.#queued];
  }

  #wakeOne(): void {
    const wake = this.#waiters.shift();
    wake?.();
  }
}
