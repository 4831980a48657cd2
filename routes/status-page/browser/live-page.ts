/**
 * The status page's browser half: keeps the server's first paint current. It follows
 * `GET /api/v1/events` from the event id the server named at render time (so the log starts with
 * the last events the server holds and misses none published between rendering and connecting),
 * logs each event, and after a burst re-fetches the JSON API and sets every section to what the
 * shared renderer (../sections.ts) draws for it, the same markup as the first paint. While the
 * stream is down it polls instead.
 *
 * Everything it touches comes in `LivePageEnv`: the document, `fetch`, the event stream and a
 * clock. So the browser entry (main.ts) passes the window's, and a unit test passes a DOM
 * implementation, the service's own routes and a fake clock. The `Page*` interfaces name the few
 * members of the DOM it uses; the server's TypeScript program has no DOM library, and a narrow
 * surface is all this module needs to be typechecked against.
 */
import {
  type ApiCell,
  type ApiCoordinator,
  type ApiSink,
  cellView,
  coordinatorView,
  leaderView,
  poolView,
  queueView,
  reflectorView,
  sinkView,
} from '../api-views.js';
import {
  EVENT_LOG_LENGTH,
  POLL_INTERVAL_MS,
  REFRESH_DEBOUNCE_MS,
  STATUS_PAGE_EVENT_TYPES,
} from '../live-settings.js';
import type { StatusLeader, StatusPool, StatusQueue, StatusReflector } from '../page-data.js';
import {
  cellRowsHtml,
  coordinatorHtml,
  leadershipHtml,
  poolRowsHtml,
  poolsSummary,
  queueHtml,
  reflectorHtml,
  sinkRowsHtml,
} from '../sections.js';
import { EventLog, type PageEvent } from './event-log.js';

/** The members of a DOM element the page uses. */
interface PageElement {
  innerHTML: string;
  textContent: string | null;
  className: string;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  querySelector(selectors: string): PageElement | null;
  insertAdjacentHTML(position: 'afterbegin', html: string): void;
  readonly childElementCount: number;
  readonly lastElementChild: PageElement | null;
  remove(): void;
}

/** The members of the document the page uses. */
export interface PageDocument {
  readonly body: PageElement;
  getElementById(id: string): PageElement | null;
  querySelector(selectors: string): PageElement | null;
}

/** An `EventSource`, as far as the page uses one. */
export interface PageEventSource {
  addEventListener(type: string, listener: (event: { data?: unknown }) => void): void;
  close(): void;
}

/** A `fetch` answer, as far as the page reads one. */
interface PageResponse {
  ok: boolean;
  status: number;
  json(): Promise<unknown>;
}

/** The project's `Clock`, as far as the page waits: debouncing and polling. */
export interface PageClock {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** What the page runs against. */
export interface LivePageEnv {
  document: PageDocument;
  fetch(
    path: string,
    init: { headers: Record<string, string>; cache: 'no-store' },
  ): Promise<PageResponse>;
  /** Opens the event stream at `url`; `null` where the browser has no `EventSource`. */
  openEvents: ((url: string) => PageEventSource) | null;
  clock: PageClock;
  /** The wall clock (epoch ms) for how long a pool's capacity has held; without it, since when. */
  wallNow?: () => number;
  /** An ISO time (or now, when absent) as the reader's clock shows a time of day. */
  showTime(iso?: string): string;
}

/** The endpoints one refresh reads, all at once. */
const REFRESH_PATHS = [
  '/api/v1/cells',
  '/api/v1/pools',
  '/api/v1/queue',
  '/api/v1/coordinator',
  '/api/v1/reflector',
  '/api/v1/leader',
  '/api/v1/sinks',
] as const;

/** The URL of the page's event stream, resuming after `lastEventId`. */
function eventStreamUrl(lastEventId: string): string {
  return `/api/v1/events?types=${STATUS_PAGE_EVENT_TYPES.join(',')}&lastEventId=${encodeURIComponent(lastEventId)}`;
}

/** The page's parsed event, or `null` for a message that is not one. */
function parseEvent(data: unknown): PageEvent | null {
  try {
    const parsed: unknown = JSON.parse(String(data));
    return typeof parsed === 'object' &&
      parsed !== null &&
      typeof Reflect.get(parsed, 'type') === 'string'
      ? (parsed as PageEvent)
      : null;
  } catch {
    return null;
  }
}

/**
 * One open status page. A state machine of two inputs: the stream (open → live and refresh;
 * error → poll until it opens again) and events (log, then one debounced refresh per burst).
 * Refreshes never overlap: one asked for while another runs follows it once.
 */
export class LivePage {
  readonly #env: LivePageEnv;
  readonly #log = new EventLog();
  /** Aborted by `close()`: ends polling and a pending debounce. */
  readonly #closed = new AbortController();
  #source: PageEventSource | null = null;
  #polling: AbortController | null = null;
  #refreshScheduled = false;
  /** The refresh under way, with the rounds asked for while it runs. */
  #running: Promise<void> | null = null;
  #again = false;

  constructor(env: LivePageEnv) {
    this.#env = env;
  }

  /** Opens the event stream (or, without `EventSource`, starts polling). */
  start(): void {
    const { openEvents, document } = this.#env;
    if (openEvents === null) {
      this.#startPolling();
      return;
    }
    // EventSource itself sends Last-Event-ID when it reconnects, so a blip loses nothing either.
    const source = openEvents(eventStreamUrl(document.body.getAttribute('data-events-from') ?? ''));
    this.#source = source;
    source.addEventListener('open', () => {
      this.#stopPolling();
      this.#setStatus('live', 'ok');
      void this.refresh();
    });
    source.addEventListener('error', () => this.#startPolling());
    for (const type of STATUS_PAGE_EVENT_TYPES) {
      source.addEventListener(type, (message) => {
        const event = parseEvent(message.data);
        if (event === null) return;
        this.#logEvent(event);
        this.#scheduleRefresh();
      });
    }
  }

  /** Stops everything it started: the stream, polling and a pending refresh. */
  close(): void {
    this.#closed.abort();
    this.#stopPolling();
    this.#source?.close();
    this.#source = null;
  }

  /**
   * Re-reads the JSON API and redraws every section. Asked while a round runs, it runs one more
   * round after it (however often it was asked); resolves when no round runs or is due.
   */
  refresh(): Promise<void> {
    if (this.#running !== null) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#refreshOnce();
        } while (this.#again);
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  /** Resolves once no refresh runs or is due: what a test waits for after an event or a tick. */
  idle(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  async #refreshOnce(): Promise<void> {
    try {
      const [cells, pools, queue, coordinator, reflector, leader, sinks] = await Promise.all(
        REFRESH_PATHS.map((path) => this.#getJson(path)),
      );
      this.#draw({
        cells: (cells as { cells: ApiCell[] }).cells,
        pools: (pools as { pools: StatusPool[] }).pools,
        queue: queue as StatusQueue,
        coordinator: coordinator as ApiCoordinator,
        reflector: reflector as StatusReflector,
        leader: leader as StatusLeader,
        sinks: (sinks as { sinks: ApiSink[] }).sinks,
      });
    } catch (error) {
      this.#byId('updated').textContent =
        `update failed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  #draw(api: {
    cells: ApiCell[];
    pools: StatusPool[];
    queue: StatusQueue;
    coordinator: ApiCoordinator;
    reflector: StatusReflector;
    leader: StatusLeader;
    sinks: ApiSink[];
  }): void {
    const now = this.#env.wallNow?.();
    const pools = api.pools.map((p) => poolView(p, now));
    this.#tbody('sinks').innerHTML = sinkRowsHtml(api.sinks.map(sinkView));
    this.#tbody('cells').innerHTML = cellRowsHtml(api.cells.map((c) => cellView(c, now)));
    this.#tbody('pools').innerHTML = poolRowsHtml(pools);
    this.#byId('pools-summary').textContent = poolsSummary(pools);
    this.#byId('queue-body').innerHTML = queueHtml(queueView(api.queue));
    this.#byId('coordinator-body').innerHTML = coordinatorHtml(coordinatorView(api.coordinator));
    this.#byId('reflector-body').innerHTML = reflectorHtml(reflectorView(api.reflector));
    this.#byId('leadership-body').innerHTML = leadershipHtml(leaderView(api.leader));
    this.#byId('updated').textContent = `updated ${this.#env.showTime()}`;
    const { body } = this.#env.document;
    body.setAttribute(
      'data-refreshes',
      String(Number(body.getAttribute('data-refreshes') ?? 0) + 1),
    );
  }

  async #getJson(path: string): Promise<unknown> {
    const response = await this.#env.fetch(path, {
      headers: { accept: 'application/json' },
      cache: 'no-store',
    });
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    return response.json();
  }

  #logEvent(event: PageEvent): void {
    const item = this.#log.itemHtml(event, this.#env.showTime(event.time));
    if (item === null) return;
    const list = this.#byId('event-log');
    list.querySelector('li.placeholder')?.remove();
    list.insertAdjacentHTML('afterbegin', item);
    while (list.childElementCount > EVENT_LOG_LENGTH) list.lastElementChild?.remove();
  }

  #scheduleRefresh(): void {
    if (this.#refreshScheduled) return;
    this.#refreshScheduled = true;
    this.#env.clock.sleep(REFRESH_DEBOUNCE_MS, this.#closed.signal).then(
      () => {
        this.#refreshScheduled = false;
        void this.refresh();
      },
      () => {},
    );
  }

  #startPolling(): void {
    if (this.#polling !== null || this.#closed.signal.aborted) return;
    const polling = new AbortController();
    this.#polling = polling;
    this.#setStatus(`polling every ${POLL_INTERVAL_MS / 1000} s`, 'warn');
    void (async () => {
      for (;;) {
        try {
          await this.#env.clock.sleep(POLL_INTERVAL_MS, polling.signal);
        } catch {
          return;
        }
        void this.refresh();
      }
    })();
  }

  #stopPolling(): void {
    this.#polling?.abort();
    this.#polling = null;
  }

  #setStatus(text: string, cls: string): void {
    const status = this.#byId('live-status');
    status.textContent = text;
    status.className = `badge ${cls}`;
  }

  #byId(id: string): PageElement {
    const element = this.#env.document.getElementById(id);
    if (element === null) throw new Error(`the status page has no #${id}`);
    return element;
  }

  #tbody(tableId: string): PageElement {
    const element = this.#env.document.querySelector(`#${tableId} tbody`);
    if (element === null) throw new Error(`the status page has no #${tableId} tbody`);
    return element;
  }
}
