/**
 * When this replica acts: it leads (a Lease term, or alone) and the cells have synced (haptic's
 * initial-sync gate: the initial list is applied and every cell in it reconciled once), whichever
 * comes last; and it stops acting the moment its term ends. Leadership's hooks and the pod loop's
 * reconciles both arrive here, so the routing controller starts and stops in this one place.
 */
import type { ParentKey } from '../runtime/source-event.js';
import type { CoordinationMetrics } from './coordination-metrics.js';
import type { InitialSyncGate } from './initial-sync-gate.js';
import type { LeadershipHooks } from './leadership.js';
import type { RoutingController } from './routing-controller.js';
import type { ServiceEvent } from './service-events.js';
import type { ServiceHandler } from './service-handlers.js';

/** The parts acting starts and stops, and what `store.synced` counts; all built before it. */
interface ActingTermOptions {
  gate: InitialSyncGate;
  routing: RoutingController;
  publish: (event: ServiceEvent) => void;
  metrics: CoordinationMetrics;
  /** The pod store, for the object count of `store.synced`. */
  store: { readonly objectCount: number };
  /** The published cells, for the cell count of `store.synced`. */
  registry: { readonly size: number };
}

/** Leadership's hooks and the sync gate's opening, turned into the routing controller's terms. */
export class ActingTerm implements LeadershipHooks, ServiceHandler {
  readonly #options: ActingTermOptions;
  #leadingTerm: AbortSignal | undefined;
  /** Stops of terms lost while the service runs; kept only while they unwind. */
  readonly #unwinding = new Set<Promise<void>>();

  constructor(options: ActingTermOptions) {
    this.#options = options;
  }

  /** Whether the initial list is applied and every cell in it was reconciled once. */
  get cellsSynced(): boolean {
    return this.#options.gate.synced;
  }

  /** The initial list is in the store with these cells (after `ReconcileLoop.start`). */
  listed(keys: Iterable<ParentKey>): void {
    if (this.#options.gate.listed(keys)) this.#cellsSynced();
  }

  cellReconciled(key: ParentKey): void {
    if (this.#options.gate.reconciled(key)) this.#cellsSynced();
  }

  onStartedLeading(term: AbortSignal, identity: string): void {
    this.#leadingTerm = term;
    this.#options.metrics.leading(true);
    this.#options.publish({ type: 'leadership.acquired', identity });
    if (this.#options.gate.synced) this.#options.routing.start();
  }

  onStoppedLeading(identity: string): void {
    this.#leadingTerm = undefined;
    this.#options.metrics.leading(false);
    this.#options.publish({ type: 'leadership.lost', identity });
    // Not awaited: the pipeline's signal aborts now; it settles in the background, and `stop()`
    // waits for it. Kept only while it runs, so a flapping Lease never grows the set.
    const stopping = this.#options.routing.stop();
    this.#unwinding.add(stopping);
    const forget = (): void => {
      this.#unwinding.delete(stopping);
    };
    stopping.then(forget, forget);
  }

  onNewLeader(identity: string): void {
    this.#options.publish({ type: 'leader.changed', identity });
  }

  /** Ends acting for good: every lost term has unwound and the routing controller has stopped. */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.#unwinding]);
    await this.#options.routing.stop();
  }

  #cellsSynced(): void {
    const { publish, store, registry, routing } = this.#options;
    publish({ type: 'store.synced', objects: store.objectCount, cells: registry.size });
    if (this.#leadingTerm && !this.#leadingTerm.aborted) routing.start();
  }
}
