/**
 * Service events as one line each, so a test asserts a sequence as a readable list of strings
 * (`triggered cell.changed`, `started #1 initial-sync`, `deploy #1`, `completed #1 success`).
 */
import type { ServiceEvent } from '../../src/service/service-events.js';

/** One line per event, as a person reading the event stream would summarise it. */
export function eventLine(event: ServiceEvent): string {
  switch (event.type) {
    case 'cell.changed':
      return `cell ${event.namespace}/${event.cell} ${event.change}${event.alive ? ' alive' : ''}`;
    case 'store.synced':
      return `store.synced objects=${event.objects} cells=${event.cells}`;
    case 'reconciliation.triggered':
      return `triggered ${event.reason}`;
    case 'reconciliation.started':
      return `started #${event.id} ${event.reasons.join(',')}`;
    case 'phase.completed':
      return `${event.phase} #${event.id}`;
    case 'reconciliation.failed':
      return `failed #${event.id} ${event.phase}: ${event.error}`;
    case 'reconciliation.completed':
      return `completed #${event.id} ${event.result}`;
    case 'watch.state':
      return `watch.state ${event.phase} ${event.healthy ? 'healthy' : 'unhealthy'}${event.relistReason ? ` relist ${event.relistReason}` : ''}`;
    case 'leadership.acquired':
    case 'leadership.lost':
    case 'leader.changed':
      return `${event.type} ${event.identity}`;
    case 'pool.panic':
      return `pool.panic ${event.namespace}/${event.pool} ${event.inPanic ? 'entered' : 'left'} ${event.routable}/${event.known}`;
    default:
      return event.type;
  }
}
