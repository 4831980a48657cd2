/**
 * The status page's event log, as the browser draws it: one line per event of
 * `GET /api/v1/events` (its `data` parsed), newest first. Pure: `eventLogItemHtml` turns an event
 * into escaped HTML, and `EventLog` keeps what one line needs from earlier events (a run's
 * reasons arrive with its start and are shown on its end line).
 */
import { EVENT_LOG_LENGTH, STATUS_PAGE_QUIET_TYPES } from '../live-settings.js';
import { escapeHtml, h, span } from '../markup.js';
import { formatMs } from '../sections.js';

/** A reason as events carry it; the log shows only the reason. */
interface EventReason {
  reason: string;
}

/**
 * The events the log describes, with the fields it reads (the event stream's documented
 * payloads carry more). Any other type gets a line with its type alone.
 */
export type PageEvent = { time?: string } & (
  | {
      type: 'cell.changed';
      namespace: string;
      cell: string;
      change: string;
      gone?: boolean;
      alive?: boolean;
      address?: string | null;
      routable?: boolean;
      whyNotAlive?: EventReason[];
      whyNotRoutable?: EventReason[];
    }
  | { type: 'reconciliation.started'; id: number; reasons: string[] }
  | { type: 'reconciliation.completed'; id: number; result: string; durationMs: number }
  | { type: 'reconciliation.failed'; id: number; phase: string; error: string }
  | {
      type: 'watch.state';
      phase: string;
      healthy: boolean;
      relistReason?: string | null;
      lastError?: string | null;
    }
  | { type: 'leadership.acquired' | 'leadership.lost' | 'leader.changed'; identity: string }
  | { type: 'store.synced'; objects: number; cells: number }
  | { type: 'sink.applied'; kind: string; target: string; added: unknown[]; removed: unknown[] }
  | { type: 'sink.failed'; kind: string; target: string; error: string }
  | {
      type: 'sink.observed';
      kind: string;
      target: string;
      wouldAdd: unknown[];
      wouldRemove: unknown[];
    }
  | {
      type: 'pool.panic';
      namespace: string;
      pool: string;
      inPanic: boolean;
      routable: number;
      known: number;
    }
  | {
      type: 'pool.capacity';
      namespace: string;
      pool: string;
      from: string;
      to: string;
      aliveCells: number;
      desiredCells: number | null;
      missingCount: number;
      notAliveCount: number;
    }
  | { type: 'events.dropped'; dropped: number }
  | { type: 'events.missed'; missed: number | null }
  | { type: 'reconciliation.triggered' }
);

const reasonList = (reasons: EventReason[] | undefined): string =>
  (reasons ?? []).map((r) => r.reason).join(', ');

/** One event in words, after its type; `runReasons` is the reasons of the run that `e` ends. */
function describeEvent(e: PageEvent, runReasons?: string): string {
  switch (e.type) {
    case 'cell.changed': {
      const subject = `${e.namespace}/${e.cell} ${e.change}`;
      if (e.gone) return subject;
      if (!e.alive) return `${subject} (not alive: ${reasonList(e.whyNotAlive)})`;
      const unroutable =
        e.routable === false ? `, not routable: ${reasonList(e.whyNotRoutable)}` : '';
      return `${subject} (alive, ${e.address || 'no address'}${unroutable})`;
    }
    case 'reconciliation.completed':
      return `#${e.id} ${e.result} in ${formatMs(e.durationMs)}${runReasons ? ` (${runReasons})` : ''}`;
    case 'reconciliation.failed':
      return `#${e.id} in ${e.phase}: ${e.error}`;
    case 'watch.state':
      return `${e.phase}${e.healthy ? ', healthy' : ', not healthy'}${e.relistReason ? `, relist: ${e.relistReason}` : ''}${e.lastError ? `, ${e.lastError}` : ''}`;
    case 'leadership.acquired':
    case 'leadership.lost':
    case 'leader.changed':
      return e.identity;
    case 'store.synced':
      return `${e.objects} pods, ${e.cells} cells`;
    case 'sink.applied':
      return `${e.kind} ${e.target} +${e.added.length} -${e.removed.length}`;
    case 'sink.failed':
      return `${e.kind} ${e.target}: ${e.error}`;
    case 'sink.observed':
      return `${e.kind} ${e.target} would +${e.wouldAdd.length} -${e.wouldRemove.length}`;
    case 'pool.panic':
      return `${e.namespace}/${e.pool}${e.inPanic ? ' entered' : ' left'} panic (${e.routable} / ${e.known} cells routable)`;
    case 'pool.capacity':
      return `${e.namespace}/${e.pool} ${e.from} → ${e.to} (${e.aliveCells} / ${e.desiredCells ?? '?'} alive${e.missingCount > 0 ? `, ${e.missingCount} without pods` : ''}${e.notAliveCount > 0 ? `, ${e.notAliveCount} not alive` : ''})`;
    case 'events.dropped':
      return `${e.dropped} events lost (this page fell behind)`;
    case 'events.missed':
      return `${e.missed === null ? 'an unknown number of' : e.missed} events missed while disconnected`;
    default:
      return '';
  }
}

/** Events a person should notice: failures, losses, and cells that are not alive or not routed. */
function isBadEvent(e: PageEvent): boolean {
  switch (e.type) {
    case 'reconciliation.failed':
    case 'sink.failed':
    case 'leadership.lost':
    case 'events.missed':
      return true;
    case 'cell.changed':
      return !e.alive || e.routable === false;
    case 'watch.state':
      return !e.healthy;
    case 'pool.capacity':
      return e.to === 'Degraded' || e.to === 'Empty';
    default:
      return false;
  }
}

/** One `<li>` of the log; `shownTime` is the event's time as the reader's locale writes it. */
function eventLogItemHtml(e: PageEvent, shownTime: string, runReasons?: string): string {
  return h(
    'li',
    { 'data-type': e.type, class: isBadEvent(e) ? 'bad' : '' },
    h('span', { class: 't', title: e.time }, escapeHtml(shownTime)),
    span('type', e.type),
    escapeHtml(describeEvent(e, runReasons)),
  );
}

/**
 * What the log remembers between events: the reasons of the last `EVENT_LOG_LENGTH` runs, so a
 * run's end line can name why it ran, and nothing older.
 */
export class EventLog {
  readonly #runReasons = new Map<number, string>();

  /** The `<li>` for `e`, or `null` when the log shows no line for it (a quiet type). */
  itemHtml(e: PageEvent, shownTime: string): string | null {
    if (e.type === 'reconciliation.started') {
      this.#runReasons.set(e.id, e.reasons.join(', '));
      this.#runReasons.delete(e.id - EVENT_LOG_LENGTH);
    }
    if (STATUS_PAGE_QUIET_TYPES.includes(e.type)) return null;
    const reasons = e.type === 'reconciliation.completed' ? this.#runReasons.get(e.id) : undefined;
    return eventLogItemHtml(e, shownTime, reasons);
  }
}
