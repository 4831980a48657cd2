/**
 * Insertion-ordered, deduplicating queue of keys with a wakeup.
 *
 * Port of client-go's `workqueue.Type` for exactly one worker: with one consumer the
 * dirty/processing protocol collapses into a single ordered set. A key taken by `get()` has
 * left the set, so re-adding it while it is being reconciled queues it once more, and any number
 * of adds during that reconcile collapse into that one follow-up.
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

  /** The oldest queued key; waits while empty; `undefined` once shut down (no drain). */
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

  get shuttingDown(): boolean {
    return this.#shutDown;
  }

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
