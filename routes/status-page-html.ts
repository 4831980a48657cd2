/**
 * The status page's document: one self-contained HTML page (inline CSS and script, nothing fetched
 * from elsewhere) that a person opens after `kubectl port-forward`. The server renders every
 * value into the document, escaped, so `curl` shows the cells; the inline script then keeps it
 * current from `GET /api/v1/events` (debounced re-fetches of the JSON API, and a log of the last
 * events), polling every 2 s while the event stream is down. The stream is opened from the event
 * id the server names at render time, so the log starts with the last events the server holds
 * and misses none published between rendering and connecting.
 *
 * Two renderers draw the same sections: `renderStatusPage` here (strings, every value through
 * `escapeHtml`), and the browser's in `CLIENT_SCRIPT` (DOM nodes, values only ever set as
 * `textContent`, so nothing from the cluster is parsed as HTML). Their markup is kept the same:
 * `data-cell`/`data-pool`/`data-alive` attributes and section ids, which the e2e test reads.
 *
 * The script and the style are constants, so the Content-Security-Policy allows exactly them by
 * hash and nothing else (no inline attributes, no other origin, no eval).
 */
import { createHash } from 'node:crypto';

/** One reason a cell is not alive, as the page shows it. */
export interface StatusReason {
  reason: string;
  message: string;
}

/**
 * One row of the Cells table, as both renderers draw it: the published cell reduced to what the
 * page shows (`podsReady`/`pods` instead of the members).
 */
export interface StatusCell {
  key: string;
  namespace: string;
  id: string;
  pool: string;
  alive: boolean;
  whyNotAlive: StatusReason[];
  /** False: left out of every sink, for the reasons in `whyNotRoutable`. */
  routable: boolean;
  whyNotRoutable: StatusReason[];
  generation: string;
  address: string | null;
  podsReady: number;
  pods: number;
}

/** One row of the Pools table, as both renderers draw it. */
export interface StatusPool {
  namespace: string;
  name: string;
  cells: number;
  aliveCells: number;
  pods: number;
}

/**
 * The Queue section: `queueView`'s answer, also what `GET /api/v1/queue` serves, so the page and
 * the API never disagree.
 */
export interface StatusQueue {
  synced: boolean;
  depth: number;
  queued: string[];
  inFlight: { key: string; runningForMs: number } | null;
  retries: Array<{ key: string; failures: number; dueInMs: number | null }>;
  nextResyncInMs: number | null;
}

/** The Reflector line: the source's phase and health, its cursor, and its last error line. */
export interface StatusReflector {
  phase: string;
  healthy: boolean;
  cursor: string | null;
  lastError: string | null;
}

/** The Leadership line: `GET /api/v1/leader`'s answer. */
export interface StatusLeader {
  identity: string;
  leading: boolean;
  leader: string | null;
  lease: string | null;
  since: string | null;
}

/**
 * The Coordinator section: whether this replica leads and acts, whether the cells have synced
 * (nothing is deployed before), and the coordinator's run state with clock times turned into ages.
 */
export interface StatusCoordinator {
  leading: boolean;
  acting: boolean;
  cellsSynced: boolean;
  running: boolean;
  runningId: number | null;
  pendingReasons: string[];
  consecutiveFailures: number;
  /** `agoMs`: how long before this render the run ended. */
  lastCompleted: { id: number; result: string; agoMs: number } | null;
  lastError: { phase: string; message: string } | null;
}

/** One sink target, as the Sinks table shows it. */
export interface StatusSink {
  kind: string;
  target: string;
  pool: string;
  mode: string;
  desired: number;
  listed: number;
  pending: number;
  /** Endpoints kept only because the pool is in panic. */
  heldByPanic: number;
  panic: boolean;
  wouldAdd: number;
  wouldRemove: number;
  lastError: string | null;
}

/** Everything the page shows, read from the control plane at one moment. */
export interface StatusPageData {
  source: string;
  /** Which build renders the page (`--version`'s facts). */
  build: { version: string; revision: string; nodeVersion: string };
  /** Wall-clock ISO time of the render. */
  renderedAt: string;
  /**
   * The event id the script resumes the stream from: just before the last `EVENT_LOG_LENGTH`
   * logged events the server holds (`ControlPlane.eventReplayCursor`).
   */
  eventsFrom: string;
  pools: StatusPool[];
  cells: StatusCell[];
  queue: StatusQueue;
  reflector: StatusReflector;
  leader: StatusLeader;
  coordinator: StatusCoordinator;
  sinks: StatusSink[];
}

/** How many events the page's log keeps. */
export const EVENT_LOG_LENGTH = 20;
/**
 * The event types the page asks for. The log shows all but `STATUS_PAGE_QUIET_TYPES`; the rest
 * trigger re-fetches of the JSON API.
 */
export const STATUS_PAGE_EVENT_TYPES: readonly string[] = [
  'cell.changed',
  'reconciliation.triggered',
  'reconciliation.started',
  'reconciliation.completed',
  'reconciliation.failed',
  'watch.state',
  'leadership.acquired',
  'leadership.lost',
  'leader.changed',
  'store.synced',
  'sink.applied',
  'sink.failed',
  'sink.observed',
  'pool.panic',
  'events.dropped',
  'events.missed',
];
/** Types the page asks for but does not log: a run's start and trigger show on its end line. */
export const STATUS_PAGE_QUIET_TYPES: readonly string[] = [
  'reconciliation.triggered',
  'reconciliation.started',
];
/** The types the log shows a line for. */
export const STATUS_PAGE_LOGGED_TYPES: readonly string[] = STATUS_PAGE_EVENT_TYPES.filter(
  (t) => !STATUS_PAGE_QUIET_TYPES.includes(t),
);
/** How long the script gathers events before it re-fetches. */
export const REFRESH_DEBOUNCE_MS = 250;
/** How often the script polls while the event stream is down. */
export const POLL_INTERVAL_MS = 2000;

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text → HTML text or attribute value (double- or single-quoted). */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** `1234` → `1.2 s`: how the page shows durations and ages. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

const STYLE = `
:root { color-scheme: light; --ok: #14692f; --ok-bg: #dcf5e3; --bad: #a3161c; --bad-bg: #fde2e2;
  --warn: #7a4d00; --warn-bg: #fff0cc; --muted: #5b6470; --line: #d9dde3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1c2128; background: #f4f6f8; }
header { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; padding: 12px 20px;
  background: #1f2937; color: #f9fafb; }
header h1 { font-size: 18px; margin: 0 8px 0 0; }
header .badge { background: #374151; color: #f9fafb; }
header .badge.ok { background: var(--ok-bg); color: var(--ok); }
header .badge.warn { background: var(--warn-bg); color: var(--warn); }
header .badge.bad { background: var(--bad-bg); color: var(--bad); }
main { padding: 16px 20px; display: grid; gap: 16px; }
h2 { font-size: 15px; margin: 0 0 8px; }
.cards { display: grid; gap: 12px; grid-template-columns: repeat(auto-fit, minmax(250px, 1fr)); }
.card, section.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 14px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 12px; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; }
tr.not-alive td { background: #fffafa; }
.badge, th, td.id, td.state, td.gen, td.addr { white-space: nowrap; }
.mono, td.id, td.gen, td.addr { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace;
  font-size: 13px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px;
  font-weight: 600; background: #e5e7eb; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
.badge.ok { background: var(--ok-bg); } .badge.bad { background: var(--bad-bg); }
.badge.warn { background: var(--warn-bg); }
.muted { color: var(--muted); }
ul.reasons { margin: 0; padding-left: 16px; }
ol#event-log { margin: 0; padding: 0; list-style: none; font-family: ui-monospace, "DejaVu Sans Mono",
  Menlo, monospace; font-size: 12.5px; }
ol#event-log li { padding: 2px 0; border-bottom: 1px dotted var(--line); }
ol#event-log .t { color: var(--muted); margin-right: 8px; }
ol#event-log .type { display: inline-block; min-width: 200px; font-weight: 600; }
`;

/**
 * The browser's half: plain ES2017, no template literals (this file holds it in one), no HTML
 * parsing of values. `el` builds DOM nodes; the section renderers mirror the server's.
 */
const CLIENT_SCRIPT = `
(function () {
  'use strict';
  var LOG_LENGTH = ${EVENT_LOG_LENGTH};
  var DEBOUNCE_MS = ${REFRESH_DEBOUNCE_MS};
  var POLL_MS = ${POLL_INTERVAL_MS};
  var EVENT_TYPES = ${JSON.stringify(STATUS_PAGE_EVENT_TYPES)};
  var QUIET = ${JSON.stringify(Object.fromEntries(STATUS_PAGE_QUIET_TYPES.map((t) => [t, true])))};
  var REFRESHING = /^(cell\\.|reconciliation\\.|watch\\.|leadership\\.|leader\\.|store\\.|sink\\.|pool\\.|events\\.)/;

  var body = document.body;

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) node.setAttribute(k, String(attrs[k]));
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  function replace(node, children) {
    while (node.firstChild) node.removeChild(node.firstChild);
    append(node, children);
  }
  function ms(v) {
    if (v < 1000) return Math.round(v) + ' ms';
    if (v < 60000) return (v / 1000).toFixed(1) + ' s';
    return Math.floor(v / 60000) + ' min ' + Math.round((v % 60000) / 1000) + ' s';
  }
  function yesNo(v, good) { return el('span', { 'class': 'badge ' + (v === good ? 'ok' : 'warn') }, v ? 'yes' : 'no'); }
  function rows(pairs) {
    return el('dl', null, pairs.map(function (p) { return [el('dt', null, p[0]), el('dd', null, p[1])]; }));
  }

  function leadershipRows(l) {
    return [
      ['This replica', el('span', { 'class': 'mono' }, l.identity)],
      ['Leading', yesNo(l.leading, true)],
      ['Leader', l.leader === null ? el('span', { 'class': 'muted' }, 'none observed') : el('span', { 'class': 'mono' }, l.leader)],
      ['Lease', l.lease === null ? el('span', { 'class': 'muted' }, 'none (leads alone)') : el('span', { 'class': 'mono' }, l.lease)],
      ['Since', l.since === null ? el('span', { 'class': 'muted' }, '\\u2014') : l.since]
    ];
  }
  function coordinatorRows(c) {
    var s = c.state;
    var last = s.lastCompleted;
    return [
      ['Acting', yesNo(c.acting, true)],
      ['Cells synced', yesNo(c.cellsSynced, true)],
      ['Now', s.running ? 'running #' + s.runningId : el('span', { 'class': 'muted' }, 'idle')],
      ['Last run', last === null ? el('span', { 'class': 'muted' }, 'none yet')
        : el('span', { 'class': last.result === 'success' ? 'ok' : 'bad' },
          '#' + last.id + ' ' + last.result + ', ' + ms(last.agoMs) + ' ago')],
      ['Failures in a row', el('span', { 'class': s.consecutiveFailures > 0 ? 'bad' : '' }, String(s.consecutiveFailures))],
      ['Last error', s.lastError === null ? el('span', { 'class': 'muted' }, 'none')
        : el('span', { 'class': 'bad' }, s.lastError.phase + ': ' + s.lastError.message)],
      ['Pending', s.pendingReasons.length ? s.pendingReasons.join(', ') : el('span', { 'class': 'muted' }, '\\u2014')]
    ];
  }
  function queueRows(q) {
    var shown = q.retries.slice(0, 5).map(function (r) {
      return el('div', { 'class': 'mono' }, r.key + ' (' + r.failures + ' failures, ' + (r.dueInMs === null ? 'queued' : 'due in ' + ms(r.dueInMs)) + ')');
    });
    if (q.retries.length > 5) shown.push(el('div', { 'class': 'muted' }, '\\u2026 and ' + (q.retries.length - 5) + ' more'));
    return [
      ['Synced', yesNo(q.synced, true)],
      ['Depth', [String(q.depth), q.depth ? el('span', { 'class': 'muted mono' }, ' ' + q.queued.slice(0, 3).join(', ') + (q.depth > 3 ? ', \\u2026' : '')) : null]],
      ['In flight', q.inFlight === null ? el('span', { 'class': 'muted' }, 'nothing')
        : el('span', { 'class': 'mono' }, q.inFlight.key + ' for ' + ms(q.inFlight.runningForMs))],
      ['Retries', q.retries.length ? [el('span', { 'class': 'warn' }, String(q.retries.length))].concat(shown) : '0'],
      ['Next resync', q.nextResyncInMs === null ? el('span', { 'class': 'muted' }, 'off') : 'in ' + ms(q.nextResyncInMs)]
    ];
  }
  function reflectorRows(r) {
    return [
      ['Phase', el('span', { 'class': 'badge ' + (r.phase === 'watching' && r.healthy ? 'ok' : 'warn') }, r.phase)],
      ['Healthy', yesNo(r.healthy, true)],
      ['Cursor', r.cursor === null ? el('span', { 'class': 'muted' }, '\\u2014') : el('span', { 'class': 'mono' }, r.cursor)],
      ['Last error', r.lastError === null ? el('span', { 'class': 'muted' }, 'none') : el('span', { 'class': 'bad' }, r.lastError)]
    ];
  }
  function poolRow(p) {
    var cls = p.cells > 0 && p.aliveCells === p.cells ? 'ok' : p.aliveCells === 0 ? 'bad' : 'warn';
    return el('tr', { 'data-pool': p.namespace + '/' + p.name },
      el('td', { 'class': 'id' }, p.name), el('td', null, p.namespace),
      el('td', null, el('span', { 'class': 'badge ' + cls }, p.aliveCells + ' / ' + p.cells + ' alive')),
      el('td', null, String(p.pods)));
  }
  function sinkRow(t) {
    var observe = t.mode === 'observe';
    return el('tr', { 'data-sink': t.target },
      el('td', { 'class': 'mono' }, t.target), el('td', null, t.pool),
      el('td', null, String(t.desired.length)), el('td', null, String(t.actual.length)),
      el('td', null, String(t.pending.length)),
      el('td', null, el('span', { 'class': t.panic ? 'badge warn' : '' }, (t.panic ? 'panic: ' : '') + t.heldByPanic.length)),
      el('td', null, observe ? 'observe: +' + t.wouldAdd.length + ' -' + t.wouldRemove.length : 'apply'),
      el('td', null, t.lastError === null ? el('span', { 'class': 'muted' }, 'none') : el('span', { 'class': 'bad' }, t.lastError)));
  }
  function cellRow(c) {
    var ready = c.members.filter(function (m) { return m.ready; }).length;
    var why = c.whyNotAlive.concat(c.whyNotRoutable);
    var unroutable = c.alive && !c.routable;
    return el('tr', { 'data-cell': c.key, 'data-alive': String(c.alive), 'data-routable': String(c.routable), 'class': c.alive ? 'alive' : 'not-alive' },
      el('td', { 'class': 'id' }, c.id, c.namespace ? el('div', { 'class': 'muted' }, c.namespace) : null),
      el('td', null, c.pool),
      el('td', { 'class': 'state' }, el('span', { 'class': 'badge ' + (unroutable ? 'warn' : c.alive ? 'ok' : 'bad') }, unroutable ? 'alive, not routable' : c.alive ? 'alive' : 'not alive')),
      el('td', { 'class': 'why' }, why.length === 0 ? el('span', { 'class': 'muted' }, '\\u2014')
        : el('ul', { 'class': 'reasons' }, why.map(function (r) { return el('li', null, el('b', null, r.reason), ': ' + r.message); }))),
      el('td', { 'class': 'gen' }, c.generation),
      el('td', { 'class': 'addr' }, c.address === null ? el('span', { 'class': 'muted' }, 'none yet') : c.address),
      el('td', null, ready + ' / ' + c.members.length));
  }
  function tableBody(id, items, render, cols, empty) {
    var tbody = document.querySelector('#' + id + ' tbody');
    replace(tbody, items.length ? items.map(render) : el('tr', null, el('td', { 'class': 'muted', colspan: cols }, empty)));
  }

  function getJson(path) {
    return fetch(path, { headers: { accept: 'application/json' }, cache: 'no-store' }).then(function (r) {
      if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
      return r.json();
    });
  }

  var refreshTimer = null;
  var refreshing = false;
  var again = false;
  function scheduleRefresh() {
    if (refreshTimer === null) refreshTimer = setTimeout(function () { refreshTimer = null; refresh(); }, DEBOUNCE_MS);
  }
  function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    Promise.all(['/api/v1/cells', '/api/v1/pools', '/api/v1/queue', '/api/v1/coordinator',
      '/api/v1/reflector', '/api/v1/leader', '/api/v1/sinks'].map(getJson)).then(function (r) {
      tableBody('sinks', r[6].sinks, sinkRow, 8, 'No sink configured.');
      tableBody('cells', r[0].cells, cellRow, 7, 'No cells yet.');
      tableBody('pools', r[1].pools, poolRow, 4, 'No pools yet.');
      document.getElementById('pools-summary').textContent = r[1].pools.filter(function (p) {
        return p.cells > 0 && p.aliveCells === p.cells; }).length + ' / ' + r[1].pools.length + ' pools fully alive';
      replace(document.getElementById('queue-body'), rows(queueRows(r[2])));
      replace(document.getElementById('coordinator-body'), rows(coordinatorRows(r[3])));
      replace(document.getElementById('reflector-body'), rows(reflectorRows(r[4])));
      replace(document.getElementById('leadership-body'), rows(leadershipRows(r[5])));
      document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      body.setAttribute('data-refreshes', String(Number(body.getAttribute('data-refreshes') || 0) + 1));
    }).catch(function (e) {
      document.getElementById('updated').textContent = 'update failed: ' + e.message;
    }).then(function () {
      refreshing = false;
      if (again) { again = false; refresh(); }
    });
  }

  function describe(e) {
    switch (e.type) {
      case 'cell.changed':
        return e.namespace + '/' + e.cell + ' ' + e.change + (e.gone ? '' : e.alive ? ' (alive, ' + (e.address || 'no address')
          + (e.routable === false ? ', not routable: ' + e.whyNotRoutable.map(function (r) { return r.reason; }).join(', ') : '') + ')'
          : ' (not alive: ' + e.whyNotAlive.map(function (r) { return r.reason; }).join(', ') + ')');
      case 'reconciliation.completed': return '#' + e.id + ' ' + e.result + ' in ' + ms(e.durationMs) + (runReasons[e.id] ? ' (' + runReasons[e.id] + ')' : '');
      case 'reconciliation.failed': return '#' + e.id + ' in ' + e.phase + ': ' + e.error;
      case 'watch.state': return e.phase + (e.healthy ? ', healthy' : ', not healthy') + (e.relistReason ? ', relist: ' + e.relistReason : '') + (e.lastError ? ', ' + e.lastError : '');
      case 'leadership.acquired': case 'leadership.lost': case 'leader.changed': return e.identity;
      case 'store.synced': return e.objects + ' pods, ' + e.cells + ' cells';
      case 'sink.applied': return e.kind + ' ' + e.target + ' +' + e.added.length + ' -' + e.removed.length;
      case 'sink.failed': return e.kind + ' ' + e.target + ': ' + e.error;
      case 'sink.observed': return e.kind + ' ' + e.target + ' would +' + e.wouldAdd.length + ' -' + e.wouldRemove.length;
      case 'pool.panic': return e.namespace + '/' + e.pool + (e.inPanic ? ' entered' : ' left') + ' panic (' + e.routable + ' / ' + e.known + ' cells routable)';
      case 'events.dropped': return e.dropped + ' events lost (this page fell behind)';
      case 'events.missed': return (e.missed === null ? 'an unknown number of' : e.missed) + ' events missed while disconnected';
      default: return '';
    }
  }
  var log = document.getElementById('event-log');
  // A run's reasons arrive with its start; the log shows them on its one line, at its end.
  var runReasons = {};
  function logEvent(e) {
    if (e.type === 'reconciliation.started') {
      runReasons[e.id] = e.reasons.join(', ');
      delete runReasons[e.id - LOG_LENGTH];
    }
    if (QUIET[e.type]) return;
    var placeholder = log.querySelector('li.placeholder');
    if (placeholder) log.removeChild(placeholder);
    var bad = e.type === 'reconciliation.failed' || e.type === 'sink.failed' || e.type === 'leadership.lost'
      || e.type === 'events.missed'
      || (e.type === 'cell.changed' && (!e.alive || e.routable === false)) || (e.type === 'watch.state' && !e.healthy);
    log.insertBefore(el('li', { 'data-type': e.type, 'class': bad ? 'bad' : '' },
      el('span', { 'class': 't', title: e.time }, new Date(e.time || Date.now()).toLocaleTimeString()),
      el('span', { 'class': 'type' }, e.type), describe(e)), log.firstChild);
    while (log.children.length > LOG_LENGTH) log.removeChild(log.lastChild);
  }

  var status = document.getElementById('live-status');
  function setStatus(text, cls) { status.textContent = text; status.className = 'badge ' + cls; }
  var pollTimer = null;
  function startPolling() {
    if (pollTimer !== null) return;
    setStatus('polling every ' + POLL_MS / 1000 + ' s', 'warn');
    pollTimer = setInterval(refresh, POLL_MS);
  }
  function stopPolling() {
    if (pollTimer !== null) { clearInterval(pollTimer); pollTimer = null; }
  }

  if (typeof EventSource !== 'function') { startPolling(); return; }
  // From the render's event id: the log begins with the last events; EventSource itself sends
  // Last-Event-ID when it reconnects, so a blip loses nothing either.
  var source = new EventSource('/api/v1/events?types=' + EVENT_TYPES.join(',')
    + '&lastEventId=' + encodeURIComponent(body.getAttribute('data-events-from') || ''));
  source.addEventListener('open', function () {
    stopPolling();
    setStatus('live', 'ok');
    refresh();
  });
  source.addEventListener('error', function () { startPolling(); });
  EVENT_TYPES.forEach(function (type) {
    source.addEventListener(type, function (m) {
      var e;
      try { e = JSON.parse(m.data); } catch (err) { return; }
      logEvent(e);
      if (REFRESHING.test(type)) scheduleRefresh();
    });
  });
})();
`;

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * The page's Content-Security-Policy: its own inline script and style (by hash) and requests to
 * its own origin (the JSON API and the event stream); nothing else, not even images or frames.
 */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(CLIENT_SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Attrs {
  [name: string]: string | number | boolean | null | undefined;
}

/** An element as escaped HTML; `children` are HTML already (use `text` for values). */
function h(tag: string, attrs: Attrs | null, ...children: string[]): string {
  const attributes = Object.entries(attrs ?? {})
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
    .join('');
  return `<${tag}${attributes}>${children.join('')}</${tag}>`;
}

const text = escapeHtml;
const span = (cls: string, value: unknown): string => h('span', { class: cls }, text(value));
const muted = (value: string): string => span('muted', value);
const yesNo = (value: boolean, good: boolean): string =>
  span(`badge ${value === good ? 'ok' : 'warn'}`, value ? 'yes' : 'no');

function rows(pairs: Array<[string, string]>): string {
  return h(
    'dl',
    null,
    ...pairs.map(([label, value]) => h('dt', null, text(label)) + h('dd', null, value)),
  );
}

function card(id: string, title: string, pairs: Array<[string, string]>): string {
  return h(
    'div',
    { class: 'card', id },
    h('h2', null, text(title)),
    h('div', { id: `${id}-body` }, rows(pairs)),
  );
}

function leadershipRows(l: StatusLeader): Array<[string, string]> {
  return [
    ['This replica', span('mono', l.identity)],
    ['Leading', yesNo(l.leading, true)],
    ['Leader', l.leader === null ? muted('none observed') : span('mono', l.leader)],
    ['Lease', l.lease === null ? muted('none (leads alone)') : span('mono', l.lease)],
    ['Since', l.since === null ? muted('\u2014') : text(l.since)],
  ];
}

function coordinatorRows(c: StatusCoordinator): Array<[string, string]> {
  const last = c.lastCompleted;
  return [
    ['Acting', yesNo(c.acting, true)],
    ['Cells synced', yesNo(c.cellsSynced, true)],
    ['Now', c.running ? text(`running #${c.runningId}`) : muted('idle')],
    [
      'Last run',
      last === null
        ? muted('none yet')
        : span(
            last.result === 'success' ? 'ok' : 'bad',
            `#${last.id} ${last.result}, ${formatMs(last.agoMs)} ago`,
          ),
    ],
    [
      'Failures in a row',
      span(c.consecutiveFailures > 0 ? 'bad' : '', String(c.consecutiveFailures)),
    ],
    [
      'Last error',
      c.lastError === null
        ? muted('none')
        : span('bad', `${c.lastError.phase}: ${c.lastError.message}`),
    ],
    ['Pending', c.pendingReasons.length ? text(c.pendingReasons.join(', ')) : muted('\u2014')],
  ];
}

function queueRows(q: StatusQueue): Array<[string, string]> {
  const shown = q.retries
    .slice(0, 5)
    .map((r) =>
      h(
        'div',
        { class: 'mono' },
        text(
          `${r.key} (${r.failures} failures, ${r.dueInMs === null ? 'queued' : `due in ${formatMs(r.dueInMs)}`})`,
        ),
      ),
    );
  if (q.retries.length > 5) {
    shown.push(h('div', { class: 'muted' }, text(`\u2026 and ${q.retries.length - 5} more`)));
  }
  const queued = q.depth
    ? span('muted mono', ` ${q.queued.slice(0, 3).join(', ')}${q.depth > 3 ? ', \u2026' : ''}`)
    : '';
  return [
    ['Synced', yesNo(q.synced, true)],
    ['Depth', text(String(q.depth)) + queued],
    [
      'In flight',
      q.inFlight === null
        ? muted('nothing')
        : span('mono', `${q.inFlight.key} for ${formatMs(q.inFlight.runningForMs)}`),
    ],
    ['Retries', q.retries.length ? span('warn', String(q.retries.length)) + shown.join('') : '0'],
    [
      'Next resync',
      q.nextResyncInMs === null ? muted('off') : text(`in ${formatMs(q.nextResyncInMs)}`),
    ],
  ];
}

function reflectorRows(r: StatusReflector): Array<[string, string]> {
  return [
    ['Phase', span(`badge ${r.phase === 'watching' && r.healthy ? 'ok' : 'warn'}`, r.phase)],
    ['Healthy', yesNo(r.healthy, true)],
    ['Cursor', r.cursor === null ? muted('\u2014') : span('mono', r.cursor)],
    ['Last error', r.lastError === null ? muted('none') : span('bad', r.lastError)],
  ];
}

function poolRow(p: StatusPool): string {
  const cls = p.cells > 0 && p.aliveCells === p.cells ? 'ok' : p.aliveCells === 0 ? 'bad' : 'warn';
  return h(
    'tr',
    { 'data-pool': `${p.namespace}/${p.name}` },
    h('td', { class: 'id' }, text(p.name)),
    h('td', null, text(p.namespace)),
    h('td', null, span(`badge ${cls}`, `${p.aliveCells} / ${p.cells} alive`)),
    h('td', null, text(String(p.pods))),
  );
}

function sinkRow(t: StatusSink): string {
  return h(
    'tr',
    { 'data-sink': t.target },
    h('td', { class: 'mono' }, text(t.target)),
    h('td', null, text(t.pool)),
    h('td', null, text(String(t.desired))),
    h('td', null, text(String(t.listed))),
    h('td', null, text(String(t.pending))),
    h('td', null, span(t.panic ? 'badge warn' : '', `${t.panic ? 'panic: ' : ''}${t.heldByPanic}`)),
    h(
      'td',
      null,
      text(t.mode === 'observe' ? `observe: +${t.wouldAdd} -${t.wouldRemove}` : 'apply'),
    ),
    h('td', null, t.lastError === null ? muted('none') : span('bad', t.lastError)),
  );
}

function cellRow(c: StatusCell): string {
  const reasons = [...c.whyNotAlive, ...c.whyNotRoutable];
  const unroutable = c.alive && !c.routable;
  const why =
    reasons.length === 0
      ? muted('\u2014')
      : h(
          'ul',
          { class: 'reasons' },
          ...reasons.map((r) =>
            h('li', null, h('b', null, text(r.reason)), text(`: ${r.message}`)),
          ),
        );
  return h(
    'tr',
    {
      'data-cell': c.key,
      'data-alive': String(c.alive),
      'data-routable': String(c.routable),
      class: c.alive ? 'alive' : 'not-alive',
    },
    h(
      'td',
      { class: 'id' },
      text(c.id),
      c.namespace ? h('div', { class: 'muted' }, text(c.namespace)) : '',
    ),
    h('td', null, text(c.pool)),
    h(
      'td',
      { class: 'state' },
      span(
        `badge ${unroutable ? 'warn' : c.alive ? 'ok' : 'bad'}`,
        unroutable ? 'alive, not routable' : c.alive ? 'alive' : 'not alive',
      ),
    ),
    h('td', { class: 'why' }, why),
    h('td', { class: 'gen' }, text(c.generation)),
    h('td', { class: 'addr' }, c.address === null ? muted('none yet') : text(c.address)),
    h('td', null, text(`${c.podsReady} / ${c.pods}`)),
  );
}

function table(
  id: string,
  title: string,
  headings: string[],
  body: string[],
  empty: string,
): string {
  const rowsHtml = body.length
    ? body.join('')
    : h('tr', null, h('td', { class: 'muted', colspan: headings.length }, text(empty)));
  return h(
    'section',
    { class: 'panel', id },
    h('h2', null, text(title)),
    h(
      'table',
      null,
      h('thead', null, h('tr', null, ...headings.map((t) => h('th', null, text(t))))),
      h('tbody', null, rowsHtml),
    ),
  );
}

function poolsSummary(pools: StatusPool[]): string {
  const full = pools.filter((p) => p.cells > 0 && p.aliveCells === p.cells).length;
  return `${full} / ${pools.length} pools fully alive`;
}

/** The whole document for `data`; every value escaped. */
export function renderStatusPage(data: StatusPageData): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>pool-controller status (${text(data.source)})</title>
<style>${STYLE}</style>
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
      card('leadership', 'Leadership', leadershipRows(data.leader)),
      card('coordinator', 'Coordinator', coordinatorRows(data.coordinator)),
      card('queue', 'Queue', queueRows(data.queue)),
      card('reflector', 'Reflector', reflectorRows(data.reflector)),
    ),
    table(
      'pools',
      'Pools',
      ['Pool', 'Namespace', 'Cells', 'Pods'],
      data.pools.map(poolRow),
      'No pools yet.',
    ),
    table(
      'sinks',
      'Sinks',
      ['Target', 'Pool', 'Desired', 'Listed', 'Pending', 'Held by panic', 'Mode', 'Last error'],
      data.sinks.map(sinkRow),
      'No sink configured.',
    ),
    table(
      'cells',
      'Cells',
      [
        'Cell',
        'Pool',
        'State',
        'Why not alive or not routable',
        'Generation',
        'Address',
        'Pods ready',
      ],
      data.cells.map(cellRow),
      'No cells yet.',
    ),
    h(
      'section',
      { class: 'panel', id: 'activity' },
      h('h2', null, text(`What the controller is doing (last ${EVENT_LOG_LENGTH} events)`)),
      h('ol', { id: 'event-log' }, h('li', { class: 'placeholder muted' }, 'No events yet.')),
      h('noscript', null, 'Live updates need JavaScript; reload the page to refresh it.'),
    ),
  ),
  `<script>${CLIENT_SCRIPT}</script>`,
)}
</html>
`;
}
