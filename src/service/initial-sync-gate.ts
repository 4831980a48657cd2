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

/** Tracks which cells of the initial list are still unreconciled; calls `onSynced` once. */
export class InitialSyncGate {
  readonly #onSynced: () => void;
  readonly #reconciledEarly = new Set<ParentKey>();
  #pending: Set<ParentKey> | undefined;
  #synced = false;

  constructor(onSynced: () => void) {
    this.#onSynced = onSynced;
  }

  /** Whether every cell of the initial list has been reconciled once. */
  get synced(): boolean {
    return this.#synced;
  }

  /** A cell was reconciled (whenever; after the gate opened this does nothing). */
  reconciled(key: ParentKey): void {
    if (this.#synced) return;
    if (this.#pending === undefined) {
      this.#reconciledEarly.add(key);
      return;
    }
    this.#pending.delete(key);
    if (this.#pending.size === 0) this.#open();
  }

  /** The initial list is in the store with these cells: wait for the ones not reconciled yet. */
  listed(keys: Iterable<ParentKey>): void {
    if (this.#synced) return;
    const pending = new Set<ParentKey>();
    for (const key of keys) if (!this.#reconciledEarly.has(key)) pending.add(key);
    this.#reconciledEarly.clear();
    this.#pending = pending;
    if (pending.size === 0) this.#open();
  }

  #open(): void {
    if (this.#synced) return;
    this.#synced = true;
    this.#pending = undefined;
    this.#onSynced();
  }
}
