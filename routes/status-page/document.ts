/**
 * The status page's first paint: one self-contained HTML document (inline style and script,
 * nothing fetched from elsewhere) that a person opens after `kubectl port-forward`. Every value is
 * in the document, escaped, so `curl` shows the cells; the sections come from the one renderer
 * the browser bundle also uses (sections.ts), and the bundle then keeps them current
 * (browser/live-page.ts). The markup's `data-cell`/`data-pool`/`data-alive` attributes and section
 * ids are what the e2e test reads.
 */
import { EVENT_LOG_LENGTH } from './live-settings.js';
import { escapeHtml, h, span } from './markup.js';
import type { StatusPageData } from './page-data.js';
import {
  CELLS_TABLE,
  cellRowsHtml,
  coordinatorHtml,
  leadershipHtml,
  POOLS_TABLE,
  poolRowsHtml,
  poolsSummary,
  queueHtml,
  reflectorHtml,
  SINKS_TABLE,
  sinkRowsHtml,
  type TableShape,
} from './sections.js';

/** The inline parts of the document: the built browser bundle and the page's style sheet. */
export interface StatusPageInline {
  script: string;
  style: string;
}

const text = escapeHtml;

/** A card: title and a `<div id="{id}-body">` the browser replaces with fresh content. */
function card(id: string, title: string, content: string): string {
  return h(
    'div',
    { class: 'card', id },
    h('h2', null, text(title)),
    h('div', { id: `${id}-body` }, content),
  );
}

/** A table section: headings, and a `<tbody>` the browser replaces with fresh rows. */
function table(id: string, title: string, shape: TableShape, body: string): string {
  return h(
    'section',
    { class: 'panel', id },
    h('h2', null, text(title)),
    h(
      'table',
      null,
      h('thead', null, h('tr', null, ...shape.headings.map((t) => h('th', null, text(t))))),
      h('tbody', null, body),
    ),
  );
}

/** The whole document for `data`, every value escaped, with `inline`'s style and script. */
export function renderStatusPage(data: StatusPageData, inline: StatusPageInline): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>pool-controller status (${text(data.source)})</title>
<style>${inline.style}</style>
</head>
${h(
  'body',
  { 'data-source': data.source, 'data-events-from': data.eventsFrom },
  h(
    'header',
    null,
    h('h1', null, 'pool-controller'),
    span('badge', `source: ${data.source}`),
    h('span', { id: 'pools-summary', class: 'badge' }, text(poolsSummary(data.pools))),
    h('span', { id: 'live-status', class: 'badge warn' }, 'connecting\u2026'),
    h('span', { id: 'updated', class: 'muted' }, text(`rendered ${data.renderedAt}`)),
    h(
      'span',
      { id: 'build', class: 'muted' },
      text(
        `v${data.build.version} (revision ${data.build.revision}, node ${data.build.nodeVersion})`,
      ),
    ),
  ),
  h(
    'main',
    null,
    h(
      'section',
      { class: 'cards' },
      card('leadership', 'Leadership', leadershipHtml(data.leader)),
      card('coordinator', 'Coordinator', coordinatorHtml(data.coordinator)),
      card('queue', 'Queue', queueHtml(data.queue)),
      card('reflector', 'Reflector', reflectorHtml(data.reflector)),
    ),
    table('pools', 'Pools', POOLS_TABLE, data.drawn?.pools ?? poolRowsHtml(data.pools)),
    table('sinks', 'Sinks', SINKS_TABLE, sinkRowsHtml(data.sinks)),
    table('cells', 'Cells', CELLS_TABLE, data.drawn?.cells ?? cellRowsHtml(data.cells)),
    h(
      'section',
      { class: 'panel', id: 'activity' },
      h('h2', null, text(`What the controller is doing (last ${EVENT_LOG_LENGTH} events)`)),
      h('ol', { id: 'event-log' }, h('li', { class: 'placeholder muted' }, 'No events yet.')),
      h('noscript', null, 'Live updates need JavaScript; reload the page to refresh it.'),
    ),
  ),
  `<script>${inline.script}</script>`,
)}
</html>
`;
}
