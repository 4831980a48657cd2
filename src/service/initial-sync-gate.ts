/**
 * The initial-sync gate: the cells count as synced once the initial list is in the store and
 * every cell in it has been reconciled once. Until then the routing controller does not run, so
 * the first desired state it renders is the whole world, never the few cells reconciled first
 * (which would remove every other cell's worker from the routers).
 *
 * Cells reconciled before the initial list's keys are known (the loop starts reconciling while
 * `ReconcileLoop.start` is still applying the list) are remembered and counted when the keys
 * arrive, so no cell is waited for twice and none is missed.
 */
import type { ParentKey } from '../runtime/source-event.js';

/**
 * Tracks which cells of the initial list are still unreconciled. The one call that opens it
 * returns true, so its caller (the acting term) acts on the opening exactly once.
 */
export class InitialSyncGate {
  readonly #reconciledEarly = new Set<ParentKey>();
  #pending: Set<ParentKey> | undefined;
  #synced = false;

  /** Whether every cell of the initial list has been reconciled once. */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * A cell was reconciled (whenever; after the gate opened this does nothing). True when this
   * call opened the gate.
   */
  reconciled(key: ParentKey): boolean {
    if (this.#synced) return false;
    if (this.#pending === undefined) {
      this.#reconciledEarly.add(key);
      return false;
    }
    this.#pending.delete(key);
    return this.#pending.size === 0 && this.#open();
  }

  /**
   * The initial list is in the store with these cells: wait for the ones not reconciled yet. True
   * when this call opened the gate (every one of them was reconciled already, or there are none).
   */
  listed(keys: Iterable<ParentKey>): boolean {
    if (this.#synced) return false;
    const pending = new Set<ParentKey>();
    for (const key of keys) if (!this.#reconciledEarly.has(key)) pending.add(key);
    this.#reconciledEarly.clear();
    this.#pending = pending;
    return pending.size === 0 && this.#open();
  }

  #open(): true {
    this.#synced = true;
    this.#pending = undefined;
    return true;
  }
}
