/**
 * Metrics of the two ways cell health reaches Kubernetes users: the cell readiness gate's
 * condition writes and the Kubernetes Events the recorder emits or drops. Separate from the sink
 * metrics because their labels are about what was written (a status, an event reason), which a
 * sink target's series cannot say, and because a dropped Event is only visible here.
 */
import { Counter, type Registry } from 'prom-client';

import type { EventDropCause } from '../kubernetes/resources/event-recorder.js';

export type { EventDropCause };

/** Every drop cause, so each series is exported at 0 before the first drop. */
const EVENT_DROP_CAUSES: readonly EventDropCause[] = ['rate_limited', 'queue_full', 'failed'];

/** The gate's writes and the recorder's emitted and dropped Events, on the service's registry. */
export class CellHealthMetrics {
  readonly #gateWrites: Counter<'status' | 'result'>;
  readonly #eventsEmitted: Counter<'reason'>;
  readonly #eventsDropped: Counter<'cause'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#gateWrites = new Counter({
      name: 'pool_controller_cell_readiness_gate_writes_total',
      help: 'Cell readiness gate conditions written to pods (server-side apply on pods/status), by the status written and the result.',
      labelNames: ['status', 'result'] as const,
      registers,
    });
    for (const status of ['True', 'False']) {
      for (const result of ['success', 'error']) this.#gateWrites.inc({ status, result }, 0);
    }
    this.#eventsEmitted = new Counter({
      name: 'pool_controller_kubernetes_events_emitted_total',
      help: 'Kubernetes Events (events.k8s.io/v1) written, by reason: a new Event object or a series update counting repeats.',
      labelNames: ['reason'] as const,
      registers,
    });
    this.#eventsDropped = new Counter({
      name: 'pool_controller_kubernetes_events_dropped_total',
      help: "Kubernetes Event occurrences dropped: rate_limited (the object's budget was spent), queue_full (the recorder's bounded queue was full), failed (the API server refused or never answered after the retries).",
      labelNames: ['cause'] as const,
      registers,
    });
    for (const cause of EVENT_DROP_CAUSES) this.#eventsDropped.inc({ cause }, 0);
  }

  gateWrite(record: { status: string; result: 'success' | 'error' }): void {
    this.#gateWrites.inc({ status: record.status, result: record.result });
  }

  eventEmitted(reason: string): void {
    this.#eventsEmitted.inc({ reason });
  }

  eventDropped(cause: EventDropCause, count = 1): void {
    this.#eventsDropped.inc({ cause }, count);
  }
}
