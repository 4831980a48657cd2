/**
 * What the service's producers report (the pod loop's reconciles, the workload API's status, each
 * event the service publishes), handed to the handlers added once they are built: client-go's
 * `informer.AddEventHandler`. A producer comes first because the rest reads it (the pod loop is
 * the store the sinks and the views read), so what reacts to it can only be built after it; the
 * assembly adds every handler before `start()`, so none misses a report, and no part closes over
 * one built later.
 */
import type { CellTransition } from '../pools/cell-registry.js';
import type { ParentKey } from '../runtime/source-event.js';
import type { ServiceEvent } from './service-events.js';

/** One reaction to what the service's producers report; each method is optional. */
export interface ServiceHandler {
  /** A cell appeared, went, or changed liveness, generation or address (the pod reconcile). */
  cellTransition?(transition: CellTransition): void;
  /** A cell's reconcile ended, whether it succeeded or not. */
  cellReconciled?(key: ParentKey): void;
  /** The workload API's status changed (LeaderWorkerSets served, gone, forbidden). */
  workloadStatusChanged?(): void;
  /** The service published `event` on its bus. */
  published?(event: ServiceEvent): void;
}

/** The handlers in the order they were added; each report goes to every one of them, in order. */
export class ServiceHandlers implements Required<ServiceHandler> {
  readonly #handlers: ServiceHandler[] = [];

  add(handler: ServiceHandler): void {
    this.#handlers.push(handler);
  }

  cellTransition(transition: CellTransition): void {
    for (const handler of this.#handlers) handler.cellTransition?.(transition);
  }

  cellReconciled(key: ParentKey): void {
    for (const handler of this.#handlers) handler.cellReconciled?.(key);
  }

  workloadStatusChanged(): void {
    for (const handler of this.#handlers) handler.workloadStatusChanged?.();
  }

  published(event: ServiceEvent): void {
    for (const handler of this.#handlers) handler.published?.(event);
  }
}
