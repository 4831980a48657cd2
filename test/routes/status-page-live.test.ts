/**
 * The status page's browser half (routes/status-page/browser/live-page.ts) against a DOM
 * (happy-dom) holding the server's own first paint, the service's real JSON routes as its `fetch`,
 * a hand-driven event stream and the harness's fake clock. The central promise: after a refresh,
 * every section the browser drew is the markup the server paints for the same state.
 */
import { type Document, Window } from 'happy-dom';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type {
  cellListSchema,
  coordinatorSchema,
  leaderSchema,
  poolListSchema,
  queueSchema,
  reflectorSchema,
  sinksSchema,
} from '../../routes/schemas.js';
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
} from '../../routes/status-page/api-views.js';
import {
  LivePage,
  type LivePageEnv,
  type PageEventSource,
} from '../../routes/status-page/browser/live-page.js';
import {
  EVENT_LOG_LENGTH,
  STATUS_PAGE_EVENT_TYPES,
} from '../../routes/status-page/live-settings.js';
import type {
  StatusLeader,
  StatusPool,
  StatusQueue,
  StatusReflector,
} from '../../routes/status-page/page-data.js';
import { STATUS_PAGE_MIN_INTERVAL_MS, statusPageData } from '../../routes/status-page.js';
import { lwsPod } from '../support/lws-pod.js';
import {
  closeAll,
  type Harness,
  harness,
  remove,
  WALL_CLOCK_MS,
} from '../support/service-harness.js';

/** An `EventSource` the test drives: it records the URL and delivers what the test sends. */
class FakeEventSource implements PageEventSource {
  readonly listeners = new Map<string, Array<(event: { data?: unknown }) => void>>();
  closed = false;

  constructor(readonly url: string) {}

  addEventListener(type: string, listener: (event: { data?: unknown }) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  close(): void {
    this.closed = true;
  }

  /** Fires `type` (`open`, `error`, or an event type with its JSON `data`). */
  emit(type: string, data?: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) {
      listener(data === undefined ? {} : { data: JSON.stringify(data) });
    }
  }
}

const windows: Window[] = [];
const pages: LivePage[] = [];
afterEach(async () => {
  for (const page of pages.splice(0)) page.close();
  for (const window of windows.splice(0)) await window.happyDOM.close();
  await closeAll();
});

/** `html` parsed into a fresh DOM, scripts not run (the page's module is driven directly). */
function parse(html: string): Document {
  const window = new Window();
  windows.push(window);
  return new window.DOMParser().parseFromString(html, 'text/html');
}

/** The server's first paint of `/` from `h`, as a document. */
async function firstPaint(h: Harness): Promise<Document> {
  return parse((await h.app.inject({ url: '/' })).body);
}

interface Page {
  page: LivePage;
  document: Document;
  /** The stream the page opened; `undefined` when it was given no `EventSource`. */
  stream: () => FakeEventSource;
  /** Paths the page fetched, in order. */
  fetched: string[];
  refreshes: () => number;
}

/** A `LivePage` over `document`, fetching from `h`'s app (`failing` answers 500). */
function livePage(
  h: Harness,
  document: Document,
  options: { eventSource?: boolean; failing?: string } = {},
): Page {
  const fetched: string[] = [];
  let stream: FakeEventSource | undefined;
  const env: LivePageEnv = {
    document,
    fetch: async (path) => {
      fetched.push(path);
      if (path === options.failing) return { ok: false, status: 500, json: async () => ({}) };
      const res = await h.app.inject({ url: path, headers: { accept: 'application/json' } });
      return { ok: res.statusCode < 400, status: res.statusCode, json: async () => res.json() };
    },
    openEvents:
      options.eventSource === false
        ? null
        : (url) => {
            stream = new FakeEventSource(url);
            return stream;
          },
    clock: h.clock,
    wallNow: () => WALL_CLOCK_MS,
    showTime: (iso) => (iso === undefined ? 'now' : `at ${iso}`),
  };
  const page = new LivePage(env);
  pages.push(page);
  return {
    page,
    document,
    stream: () => {
      if (!stream) throw new Error('the page opened no event stream');
      return stream;
    },
    fetched,
    refreshes: () => Number(document.body.getAttribute('data-refreshes') ?? 0),
  };
}

/** The parts of the page both renderers draw: each card's body and each table's body. */
const SECTIONS = [
  '#leadership-body',
  '#coordinator-body',
  '#queue-body',
  '#reflector-body',
  '#pools tbody',
  '#sinks tbody',
  '#cells tbody',
];

function sections(document: Document): Record<string, string> {
  return Object.fromEntries(
    SECTIONS.map((selector) => [selector, document.querySelector(selector)!.innerHTML]),
  );
}

/** Two engine cells (one alive, one with a not-ready worker) and a trainer cell. */
function world() {
  return [
    lwsPod({ group: 0, worker: 0, size: 2, podIP: '10.0.0.1' }),
    lwsPod({ group: 0, worker: 1, size: 2 }),
    lwsPod({ group: 1, worker: 0, size: 2, podIP: '10.0.0.3' }),
    lwsPod({ group: 1, worker: 1, size: 2, ready: false }),
    lwsPod({ pool: 'trainer', group: 0, worker: 0, podIP: '10.0.0.9' }),
  ];
}

describe('the status page in the browser', () => {
  it('draws every section exactly as the server paints it for the same state', async () => {
    const h = await harness({ pods: world() });
    const { page, document } = livePage(h, await firstPaint(h));
    // The page as loaded, then the world changes (the trainer goes; a not-ready pod stays): the
    // browser must catch up with the server.
    await h.push(remove(world()[4]!));
    // The server's page is rendered again once the render is STATUS_PAGE_MIN_INTERVAL_MS old.
    await h.clock.advance(STATUS_PAGE_MIN_INTERVAL_MS);
    const before = sections(document);
    await page.refresh();

    const server = sections(await firstPaint(h));
    expect(sections(document)).toEqual(server);
    expect(server).not.toEqual(before);
    expect(server['#cells tbody']).toContain('1 / 2');
    expect(server['#pools tbody']).not.toContain('trainer');
    expect(document.getElementById('pools-summary')!.textContent).toBe(
      (await firstPaint(h)).getElementById('pools-summary')!.textContent,
    );
    expect(document.getElementById('updated')!.textContent).toBe('updated now');
  });

  it("reduces the JSON API's answers to the data the server renders from", async () => {
    const h = await harness({ pods: world() });
    const get = async (path: string) => (await h.app.inject({ url: path })).json();
    const server = statusPageData(h.service);
    expect(
      (await get('/api/v1/cells')).cells.map((c: ApiCell) => cellView(c, WALL_CLOCK_MS)),
    ).toEqual(server.cells);
    expect(
      (await get('/api/v1/pools')).pools.map((p: StatusPool) => poolView(p, WALL_CLOCK_MS)),
    ).toEqual(server.pools);
    expect((await get('/api/v1/sinks')).sinks.map(sinkView)).toEqual(server.sinks);
    expect(queueView(await get('/api/v1/queue'))).toEqual(server.queue);
    expect(coordinatorView(await get('/api/v1/coordinator'))).toEqual(server.coordinator);
    expect(reflectorView(await get('/api/v1/reflector'))).toEqual(server.reflector);
    expect(leaderView(await get('/api/v1/leader'))).toEqual(server.leader);
    expect(server.cells.map((c) => `${c.podsReady}/${c.pods}`)).toContain('1/2');
  });

  it('reads only fields the API schemas declare', () => {
    // Compile-time: each answer's schema type is assignable to what the browser reads.
    type Answer<S extends z.ZodType> = z.infer<S>;
    expectTypeOf<Answer<typeof cellListSchema>['cells'][number]>().toExtend<ApiCell>();
    expectTypeOf<Answer<typeof sinksSchema>['sinks'][number]>().toExtend<ApiSink>();
    expectTypeOf<Answer<typeof coordinatorSchema>>().toExtend<ApiCoordinator>();
    expectTypeOf<Answer<typeof poolListSchema>['pools'][number]>().toExtend<StatusPool>();
    expectTypeOf<Answer<typeof queueSchema>>().toExtend<StatusQueue>();
    expectTypeOf<Answer<typeof reflectorSchema>>().toExtend<StatusReflector>();
    expectTypeOf<Answer<typeof leaderSchema>>().toExtend<StatusLeader>();
  });

  it('draws the empty tables as the server does', async () => {
    const h = await harness({ start: false });
    const { page, document } = livePage(h, await firstPaint(h));
    await page.refresh();
    expect(sections(document)).toEqual(sections(await firstPaint(h)));
    expect(document.querySelector('#cells tbody')!.textContent).toBe('No cells yet.');
  });

  it('keeps a hostile name from the cluster as text', async () => {
    const hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>';
    const h = await harness({
      pods: [lwsPod({ pool: hostile, group: 0, worker: 0, podIP: '10.0.0.1' })],
    });
    const { page, document } = livePage(h, await firstPaint(h));
    await page.refresh();
    expect(document.querySelector('img')).toBeNull();
    expect(document.querySelectorAll('script')).toHaveLength(1);
    expect(document.querySelector('#pools tbody td.id')!.textContent).toBe(hostile);
    expect(document.querySelector('#cells tbody tr')!.getAttribute('data-cell')).toContain(hostile);
  });

  it('says which request failed when a refresh fails, and keeps what it showed', async () => {
    const h = await harness({ pods: world() });
    const { page, document } = livePage(h, await firstPaint(h), { failing: '/api/v1/queue' });
    const drawn = sections(document);
    await page.refresh();
    expect(document.getElementById('updated')!.textContent).toBe(
      'update failed: /api/v1/queue: HTTP 500',
    );
    expect(sections(document)).toEqual(drawn);
  });
});

describe('the status page and its event stream', () => {
  it('opens the stream for its event types from the id the server named', async () => {
    const h = await harness({ pods: world() });
    const document = await firstPaint(h);
    const { page, stream } = livePage(h, document);
    page.start();
    const url = new URL(stream().url, 'http://page');
    expect(url.pathname).toBe('/api/v1/events');
    expect(url.searchParams.get('types')).toBe(STATUS_PAGE_EVENT_TYPES.join(','));
    expect(url.searchParams.get('lastEventId')).toBe(
      document.body.getAttribute('data-events-from'),
    );
  });

  it('is live and refreshed once the stream opens', async () => {
    const h = await harness({ pods: world() });
    const p = livePage(h, await firstPaint(h));
    p.page.start();
    expect(p.document.getElementById('live-status')!.textContent).toBe('connecting\u2026');
    p.stream().emit('open');
    expect(p.document.getElementById('live-status')!.className).toBe('badge ok');
    expect(p.document.getElementById('live-status')!.textContent).toBe('live');
    await p.page.idle();
    expect(p.refreshes()).toBe(1);
  });

  it('polls every 2 s while the stream is down, and stops when it opens again', async () => {
    const h = await harness({ pods: world() });
    const p = livePage(h, await firstPaint(h));
    p.page.start();
    p.stream().emit('error');
    expect(p.document.getElementById('live-status')!.textContent).toBe('polling every 2 s');
    expect(p.document.getElementById('live-status')!.className).toBe('badge warn');
    p.stream().emit('error');
    await h.clock.advance(1999);
    expect(p.refreshes()).toBe(0);
    await h.clock.advance(1);
    await p.page.idle();
    expect(p.refreshes()).toBe(1);
    await h.clock.advance(2000);
    await p.page.idle();
    expect(p.refreshes()).toBe(2);

    p.stream().emit('open');
    await p.page.idle();
    expect(p.refreshes()).toBe(3);
    await h.clock.advance(10_000);
    await p.page.idle();
    expect(p.refreshes()).toBe(3);
  });

  it('polls from the start where the browser has no EventSource', async () => {
    const h = await harness({ pods: world() });
    const p = livePage(h, await firstPaint(h), { eventSource: false });
    p.page.start();
    expect(p.document.getElementById('live-status')!.textContent).toBe('polling every 2 s');
    await h.clock.advance(2000);
    await p.page.idle();
    expect(p.refreshes()).toBe(1);
  });

  it('refreshes once, 250 ms after the first of a burst of events', async () => {
    const h = await harness({ pods: world(), driftIntervalMs: null });
    const p = livePage(h, await firstPaint(h));
    p.page.start();
    for (let i = 0; i < 5; i += 1) {
      p.stream().emit('leader.changed', { type: 'leader.changed', identity: `r${i}` });
    }
    await h.clock.advance(249);
    expect(p.fetched).toEqual([]);
    await h.clock.advance(1);
    await p.page.idle();
    expect(p.refreshes()).toBe(1);
    expect(p.fetched).toHaveLength(7);
  });
});

describe('the status page event log', () => {
  it('shows events newest first, at their own time, and keeps the last 20', async () => {
    const h = await harness({ pods: world() });
    const p = livePage(h, await firstPaint(h));
    p.page.start();
    const log = () => p.document.getElementById('event-log')!;
    expect(log().textContent).toBe('No events yet.');
    for (let i = 0; i < EVENT_LOG_LENGTH + 5; i += 1) {
      p.stream().emit('leader.changed', {
        type: 'leader.changed',
        identity: `r${i}`,
        time: `2025-06-01T12:00:${String(i).padStart(2, '0')}Z`,
      });
    }
    expect(log().childElementCount).toBe(EVENT_LOG_LENGTH);
    const first = log().querySelector('li')!;
    expect(first.getAttribute('data-type')).toBe('leader.changed');
    expect(first.textContent).toBe('at 2025-06-01T12:00:24Zleader.changedr24');
    expect(first.querySelector('.t')!.getAttribute('title')).toBe('2025-06-01T12:00:24Z');
    expect(log().lastElementChild!.textContent).toContain('r5');
    expect(log().querySelector('li.placeholder')).toBeNull();
  });

  it('logs a run once, at its end, with the reasons its start named, and marks failures', async () => {
    const h = await harness({ pods: world() });
    const p = livePage(h, await firstPaint(h));
    p.page.start();
    p.stream().emit('reconciliation.triggered', { type: 'reconciliation.triggered' });
    p.stream().emit('reconciliation.started', {
      type: 'reconciliation.started',
      id: 7,
      reasons: ['cell', 'drift'],
    });
    p.stream().emit('reconciliation.completed', {
      type: 'reconciliation.completed',
      id: 7,
      result: 'success',
      durationMs: 1500,
    });
    p.stream().emit('reconciliation.failed', {
      type: 'reconciliation.failed',
      id: 8,
      phase: 'deploy',
      error: 'router <down>',
    });
    const items = [...p.document.querySelectorAll('#event-log li')];
    expect(items.map((li) => [li.getAttribute('data-type'), li.className])).toEqual([
      ['reconciliation.failed', 'bad'],
      ['reconciliation.completed', ''],
    ]);
    expect(items[1]!.textContent).toContain('#7 success in 1.5 s (cell, drift)');
    expect(items[0]!.textContent).toContain('#8 in deploy: router <down>');
    expect(items[0]!.innerHTML).toContain('router &lt;down&gt;');
  });

  it('describes a cell that is alive but not routable, and ignores a message that is not JSON', async () => {
    const h = await harness({ pods: world() });
    const p = livePage(h, await firstPaint(h));
    p.page.start();
    for (const listener of p.stream().listeners.get('cell.changed')!) listener({ data: '{' });
    p.stream().emit('cell.changed', {
      type: 'cell.changed',
      namespace: 'ns',
      cell: 'engine-00000',
      change: 'updated',
      alive: true,
      address: '10.0.0.1:30000',
      routable: false,
      whyNotRoutable: [{ reason: 'AddressConflict', message: 'also claimed' }],
    });
    const log = p.document.getElementById('event-log')!;
    expect(log.childElementCount).toBe(1);
    expect(log.querySelector('li')!.className).toBe('bad');
    expect(log.querySelector('li')!.textContent).toContain(
      'ns/engine-00000 updated (alive, 10.0.0.1:30000, not routable: AddressConflict)',
    );
  });
});
