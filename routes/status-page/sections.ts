/**
 * The one renderer of the status page's sections: pure functions from the page's data to escaped
 * HTML. The server pastes their output into the first paint (routes/status-page/document.ts);
 * the browser bundle sets the same output as each section's content when it re-fetches
 * (routes/status-page/browser/live-page.ts). So the two can never draw a row differently.
 */
import { escapeHtml, h, span, startTag } from './markup.js';
import type {
  StatusCell,
  StatusCellChange,
  StatusCoordinator,
  StatusLeader,
  StatusPool,
  StatusQueue,
  StatusReflector,
  StatusSink,
} from './page-data.js';

/** How many retries the Queue card lists by key before it only counts the rest. */
const RETRIES_SHOWN = 5;
/** How many queued keys the Queue card names beside the depth. */
const QUEUED_SHOWN = 3;

/** `1234` → `1.2 s`: how the page shows durations and ages. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * `192_000` → `3m 12s`: how long a cell has been in its state, which may be days, in its two
 * largest units.
 */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return `${hours}h ${m % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

const text = escapeHtml;
const muted = (value: string): string => span('muted', value);
const yesNo = (value: boolean, good: boolean): string =>
  span(`badge ${value === good ? 'ok' : 'warn'}`, value ? 'yes' : 'no');

/** A card's label/value pairs as a definition list; values are HTML already. */
function definitions(pairs: Array<[string, string]>): string {
  return h(
    'dl',
    null,
    ...pairs.map(([label, value]) => h('dt', null, text(label)) + h('dd', null, value)),
  );
}

/** The Leadership card's content. */
export function leadershipHtml(l: StatusLeader): string {
  return definitions([
    ['This replica', span('mono', l.identity)],
    ['Leading', yesNo(l.leading, true)],
    ['Leader', l.leader === null ? muted('none observed') : span('mono', l.leader)],
    ['Lease', l.lease === null ? muted('none (leads alone)') : span('mono', l.lease)],
    ['Since', l.since === null ? muted('\u2014') : text(l.since)],
  ]);
}

/** The Coordinator card's content. */
export function coordinatorHtml(c: StatusCoordinator): string {
  const last = c.lastCompleted;
  return definitions([
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
  ]);
}

/** The Queue card's content. */
export function queueHtml(q: StatusQueue): string {
  const shown = q.retries
    .slice(0, RETRIES_SHOWN)
    .map((r) =>
      h(
        'div',
        { class: 'mono' },
        text(
          `${r.key} (${r.failures} failures, ${r.dueInMs === null ? 'queued' : `due in ${formatMs(r.dueInMs)}`})`,
        ),
      ),
    );
  if (q.retries.length > RETRIES_SHOWN) {
    shown.push(
      h('div', { class: 'muted' }, text(`\u2026 and ${q.retries.length - RETRIES_SHOWN} more`)),
    );
  }
  const queued = q.depth
    ? span(
        'muted mono',
        ` ${q.queued.slice(0, QUEUED_SHOWN).join(', ')}${q.depth > QUEUED_SHOWN ? ', \u2026' : ''}`,
      )
    : '';
  return definitions([
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
  ]);
}

/** The Reflector card's content. */
export function reflectorHtml(r: StatusReflector): string {
  return definitions([
    ['Phase', span(`badge ${r.phase === 'watching' && r.healthy ? 'ok' : 'warn'}`, r.phase)],
    ['Healthy', yesNo(r.healthy, true)],
    ['Cursor', r.cursor === null ? muted('\u2014') : span('mono', r.cursor)],
    ['Last error', r.lastError === null ? muted('none') : span('bad', r.lastError)],
  ]);
}

/** A table's body: its rows, or one muted row saying `empty` across all `columns`. */
function tableBody(rows: string[], columns: number, empty: string): string {
  return rows.length
    ? rows.join('')
    : h('tr', null, h('td', { class: 'muted', colspan: columns }, text(empty)));
}

/** Whether a pool counts as fully alive: `Full` against its workload, or all its cells alive. */
function poolIsFull(p: StatusPool): boolean {
  return (
    p.capacity === 'Full' || (p.capacity === 'Unknown' && p.cells > 0 && p.aliveCells === p.cells)
  );
}

/**
 * A table row as the HTML before and after its one part that moves with the clock (how long a
 * state has held): the rest changes only with what the row shows, so the server draws it once per
 * change (routes/status-page/drawn-rows.ts) and only the middle per render.
 */
export interface RowParts {
  readonly before: string;
  readonly after: string;
}

/** The Pools row's part that moves with the clock: how long the capacity state has held. */
export function poolHeldHtml(p: Pick<StatusPool, 'capacitySince' | 'capacityForMs'>): string {
  return text(
    p.capacityForMs === null || p.capacityForMs === undefined
      ? `since ${p.capacitySince}`
      : `for ${formatMs(p.capacityForMs)}`,
  );
}

/** One row of the Pools table: alive against desired (or against its cells), and the capacity. */
function poolRow(p: StatusPool): string {
  const { before, after } = poolRowParts(p);
  return before + poolHeldHtml(p) + after;
}

/** A Pools row around its held time (`poolHeldHtml`), which `capacityForMs` does not enter. */
export function poolRowParts(p: Omit<StatusPool, 'capacityForMs'>): RowParts {
  const cls = poolIsFull(p) ? 'ok' : p.aliveCells === 0 ? 'bad' : 'warn';
  const of = p.desiredCells ?? p.cells;
  const missing = p.missingCells.length;
  const stateCls =
    p.capacity === 'Full'
      ? 'ok'
      : p.capacity === 'Degraded'
        ? 'warn'
        : p.capacity === 'Empty'
          ? 'bad'
          : '';
  const before =
    startTag('tr', { 'data-pool': `${p.namespace}/${p.name}`, 'data-capacity': p.capacity }) +
    h('td', { class: 'id' }, text(p.name)) +
    h('td', null, text(p.namespace)) +
    h(
      'td',
      null,
      span(`badge ${cls}`, `${p.aliveCells} / ${of} alive`),
      p.desiredCells === null
        ? ''
        : h(
            'div',
            { class: 'muted' },
            text(`desired ${p.desiredCells}${missing > 0 ? `, ${missing} without pods` : ''}`),
          ),
    ) +
    startTag('td', { class: 'capacity', title: p.capacityReason }) +
    span(`badge ${stateCls}`, p.capacity) +
    startTag('div', { class: 'muted', title: p.capacitySince });
  const after = `</div></td>${h('td', null, text(String(p.pods)))}</tr>`;
  return { before, after };
}

/** One row of the Sinks table. */
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

/** One change as a line of the In state for tooltip: `<time> alive`, or `not alive (codes)`. */
function changeLine(change: StatusCellChange): string {
  const state = change.alive
    ? 'alive'
    : `not alive${change.reasons.length ? ` (${change.reasons.join(', ')})` : ''}`;
  return `${change.at} ${state}`;
}

/**
 * The Cells row's part that moves with the clock: how long the cell has been in its state (or,
 * without a clock, since when).
 */
export function cellHeldHtml(c: Pick<StatusCell, 'lastTransitionTime' | 'inStateForMs'>): string {
  return c.inStateForMs === null || c.inStateForMs === undefined
    ? text(`since ${c.lastTransitionTime}`)
    : text(formatAge(c.inStateForMs));
}

/**
 * The earlier changes of a cell, for its In state for cell (after how long it has held): a
 * compact line of marks (newest first, ▲ alive, ▼ not alive) whose tooltip lists them with their
 * times and reasons.
 */
function changesHtml(c: Omit<StatusCell, 'inStateForMs'>): string {
  return c.transitions.length === 0
    ? ''
    : h(
        'div',
        {
          class: 'muted changes',
          title: c.transitions.map(changeLine).join('\n'),
          'data-changes': c.transitions.length,
        },
        text(c.transitions.map((t) => (t.alive ? '\u25b2' : '\u25bc')).join('')),
      );
}

/** One row of the Cells table. */
function cellRow(c: StatusCell): string {
  const { before, after } = cellRowParts(c);
  return before + cellHeldHtml(c) + after;
}

/**
 * A Cells row around its held time (`cellHeldHtml`), which `inStateForMs` does not enter: the In
 * state for cell carries the state's start in its tooltip and the earlier changes after it.
 */
export function cellRowParts(c: Omit<StatusCell, 'inStateForMs'>): RowParts {
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
  const before =
    startTag('tr', {
      'data-cell': c.key,
      'data-alive': String(c.alive),
      'data-routable': String(c.routable),
      class: c.alive ? 'alive' : 'not-alive',
    }) +
    h(
      'td',
      { class: 'id' },
      text(c.id),
      c.namespace ? h('div', { class: 'muted' }, text(c.namespace)) : '',
    ) +
    h('td', null, text(c.pool)) +
    h(
      'td',
      { class: 'state' },
      span(
        `badge ${unroutable ? 'warn' : c.alive ? 'ok' : 'bad'}`,
        unroutable ? 'alive, not routable' : c.alive ? 'alive' : 'not alive',
      ),
    ) +
    startTag('td', { class: 'since', title: `since ${c.lastTransitionTime}` });
  const after = `${changesHtml(c)}</td>${[
    h('td', { class: 'why' }, why),
    h('td', { class: 'gen' }, text(c.generation)),
    h('td', { class: 'addr' }, c.address === null ? muted('none yet') : text(c.address)),
    h('td', null, text(`${c.podsReady} / ${c.pods}`)),
  ].join('')}</tr>`;
  return { before, after };
}

/** A table's headings and what its body says when it has no rows. */
export interface TableShape {
  headings: readonly string[];
  empty: string;
}

/** The Pools table's columns. */
export const POOLS_TABLE: TableShape = {
  headings: ['Pool', 'Namespace', 'Alive / desired', 'Capacity', 'Pods'],
  empty: 'No pools yet.',
};
/** The Sinks table's columns. */
export const SINKS_TABLE: TableShape = {
  headings: [
    'Target',
    'Pool',
    'Desired',
    'Listed',
    'Pending',
    'Held by panic',
    'Mode',
    'Last error',
  ],
  empty: 'No sink configured.',
};
/** The Cells table's columns. */
export const CELLS_TABLE: TableShape = {
  headings: [
    'Cell',
    'Pool',
    'State',
    'In state for',
    'Why not alive or not routable',
    'Generation',
    'Address',
    'Pods ready',
  ],
  empty: 'No cells yet.',
};

/** The Pools table's `<tbody>` content. */
export function poolRowsHtml(pools: readonly StatusPool[]): string {
  return tableBody(pools.map(poolRow), POOLS_TABLE.headings.length, POOLS_TABLE.empty);
}

/** The Sinks table's `<tbody>` content. */
export function sinkRowsHtml(sinks: readonly StatusSink[]): string {
  return tableBody(sinks.map(sinkRow), SINKS_TABLE.headings.length, SINKS_TABLE.empty);
}

/** The Cells table's `<tbody>` content. */
export function cellRowsHtml(cells: readonly StatusCell[]): string {
  return tableBody(cells.map(cellRow), CELLS_TABLE.headings.length, CELLS_TABLE.empty);
}

/** The header's pool summary, as text (the caller escapes or sets it as text). */
export function poolsSummary(pools: readonly StatusPool[]): string {
  const full = pools.filter(poolIsFull).length;
  return `${full} / ${pools.length} pools fully alive`;
}
