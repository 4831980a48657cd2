/**
 * `GET /`: the status page for people — pools, cells, queue, reflector, leadership and the
 * coordinator, rendered on the server from the control plane (so `curl` shows them) and kept live
 * in the browser by `GET /api/v1/events`. The page's parts are in routes/status-page/: the data it
 * shows, the one section renderer, the document, the browser module, its style and built assets.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { coordinatorAnswer } from './coordinator.js';
import { queueView } from './queue.js';
import { RenderedCache } from './rendered-cache.js';
import { ResponseSlots, sendRendered } from './rendered-response.js';
import { errorSchema } from './schemas.js';
import { cellView, coordinatorView, poolView, sinkView } from './status-page/api-views.js';
import {
  loadStatusPageAssets,
  type StatusPageAssets,
  statusPageCsp,
} from './status-page/assets.js';
import { renderStatusPage } from './status-page/document.js';
import { DrawnRows } from './status-page/drawn-rows.js';
import { EVENT_LOG_LENGTH, STATUS_PAGE_LOGGED_TYPES } from './status-page/live-settings.js';
import type { StatusPageData } from './status-page/page-data.js';

/**
 * No two renders of the page closer than this: at 5,000 pools a render is 3.4 MB and about half a
 * second of the event loop, so however fast the fleet changes and however many clients ask, the
 * page costs at most one render per 5 s. The first paint is all a render serves: the page then
 * re-reads the JSON API as soon as its event stream opens and keeps itself live from the stream.
 */
export const STATUS_PAGE_MIN_INTERVAL_MS = 5_000;

/**
 * A page this old is rendered again even when no event was published: the queue and the
 * reflector's cursor change without one (what `curl` shows is at most this old).
 */
export const STATUS_PAGE_MAX_AGE_MS = 30_000;

/** The plugin's options: the control plane, read once per page render, and the built assets. */
interface StatusPageRoutesOptions {
  plane: ControlPlane;
  /** Default: the build's, read once when the plugin is registered (`loadStatusPageAssets`). */
  assets?: StatusPageAssets;
}

/**
 * What the page shows, read from the plane now. With `rows`, the Pools and Cells tables come
 * drawn from it (each row drawn once per change) and `cells` is left empty.
 */
export function statusPageData(
  plane: ControlPlane,
  wallClock: () => Date = () => new Date(),
  rows?: DrawnRows,
): StatusPageData {
  const reflector = plane.reflector();
  const nowMs = Date.parse(plane.wallTime(plane.now()));
  const pools = plane.cells.pools().map((p) => poolView(p, nowMs));
  const tables =
    rows === undefined
      ? { cells: plane.cells.list().map((c) => cellView(c, nowMs)) }
      : {
          cells: [],
          drawn: { pools: rows.poolRows(pools), cells: rows.cellRows(plane.cells.list(), nowMs) },
        };
  return {
    source: plane.sourceKind,
    build: plane.buildInfo,
    renderedAt: wallClock().toISOString(),
    eventsFrom: plane.eventReplayCursor(STATUS_PAGE_LOGGED_TYPES, EVENT_LOG_LENGTH),
    // The service's wall clock, which stamped `capacitySince` and the cells'
    // `lastTransitionTime`, says how long each state held.
    pools,
    ...tables,
    queue: queueView(plane),
    reflector: {
      phase: reflector.phase,
      healthy: reflector.healthy,
      cursor: reflector.cursor ?? null,
      lastError: reflector.lastError ?? null,
    },
    leader: plane.leader(),
    sinks: plane.sinks().map(sinkView),
    coordinator: coordinatorView(coordinatorAnswer(plane)),
  };
}

/**
 * Registers `GET /`, the HTML status page, with its Content-Security-Policy header (the page's own
 * script and style by hash, nothing else). Fails to register when the assets are not built, so a
 * service without its page does not start.
 */
export const statusPageRoutes: FastifyPluginAsyncZod<StatusPageRoutesOptions> = async (
  app,
  { plane, assets = loadStatusPageAssets() },
) => {
  const csp = statusPageCsp(assets);
  const rows = new DrawnRows();
  const endpoint = {
    path: '/',
    cache: new RenderedCache({
      render: () => renderStatusPage(statusPageData(plane, undefined, rows), assets),
      now: () => plane.now(),
      // Every event (a cell's transition, a sink's run, leadership) may change what it shows.
      version: () => plane.eventSequence(),
      minIntervalMs: STATUS_PAGE_MIN_INTERVAL_MS,
      maxAgeMs: STATUS_PAGE_MAX_AGE_MS,
    }),
    slots: new ResponseSlots(),
  };
  app.get(
    '/',
    {
      schema: {
        operationId: 'getStatusPage',
        summary: 'Status page (HTML)',
        description:
          'A page for people, e.g. after `kubectl port-forward`: pools with alive cells against what their LeaderWorkerSet asks for and their capacity state with how long it has held, each cell with its state, why it is not alive or not routable, generation and address, the queue, the reflector, leadership and the coordinator. Rendered on the server (every value is in the document), then kept live in the browser from `/api/v1/events` (polling every 2 s while the stream is down). Self-contained: inline style and script only, allowed by hash in a strict Content-Security-Policy. Rendered again only after an event was published (at most once every 5 s) or when 30 s old, and served from that render in between, gzipped (once per render) when `Accept-Encoding` allows, with an `ETag` (`If-None-Match` → 304); at most 16 responses are sent at once (503 with `Retry-After` beyond).',
        tags: ['observability'],
        response: {
          200: {
            description: 'The status page, `text/html; charset=utf-8`.',
            content: { 'text/html': { schema: z.string() } },
          },
          304: {
            description: "Not modified: the request's `If-None-Match` names the current render.",
            content: { 'text/html': { schema: z.string() } },
          },
          500: errorSchema,
          503: errorSchema,
        },
      },
    },
    async (request, reply) =>
      sendRendered(
        request,
        reply
          .type('text/html; charset=utf-8')
          .header('content-security-policy', csp)
          .header('x-content-type-options', 'nosniff')
          .header('referrer-policy', 'no-referrer')
          // Kept, but revalidated on every load: the ETag makes that a 304 while nothing changed.
          .header('cache-control', 'no-cache'),
        endpoint,
      ),
  );
};
