/**
 * The Cells and Pools tables' rows as the server draws them for the page's first paint: each row
 * once per change of what it shows, and per render only the part that moves with the clock (how
 * long each state has held). Issue 36: at 5,000 pools, drawing every row on every render held the
 * event loop for about half a second in one go. A published cell is never mutated (a change
 * publishes a new object: src/pools/cell-registry.ts), so its row is kept against the object and
 * goes with it; a pool's summary is rebuilt on every change of any cell, so its row is kept
 * against what the row shows.
 */
import { type ApiCell, cellView } from './api-views.js';
import type { StatusPool } from './page-data.js';
import {
  cellHeldHtml,
  cellRowParts,
  cellRowsHtml,
  poolHeldHtml,
  poolRowParts,
  poolRowsHtml,
  type RowParts,
} from './sections.js';

/** A drawn Cells row and its state's start (epoch ms, `NaN` when unparseable), parsed once. */
interface CellRow {
  parts: RowParts;
  since: number;
}

/** A drawn Pools row and the values it was drawn from (`poolShown`). */
interface PoolRow {
  shown: string;
  parts: RowParts;
}

/** What a Pools row shows but how long its capacity has held, as one comparable string. */
function poolShown(p: StatusPool): string {
  return JSON.stringify([
    p.cells,
    p.aliveCells,
    p.pods,
    p.desiredCells,
    p.missingCells.length,
    p.capacity,
    p.capacitySince,
    p.capacityReason,
  ]);
}

/** One server's drawn rows; the markup is exactly what `cellRowsHtml`/`poolRowsHtml` draw. */
export class DrawnRows {
  readonly #cells = new WeakMap<ApiCell, CellRow>();
  #pools = new Map<string, PoolRow>();
  #drawn = 0;

  /** Rows drawn (not reused) so far: what tests read to see a row was drawn once per change. */
  get drawn(): number {
    return this.#drawn;
  }

  /** The Cells table's `<tbody>` content for `cells` (published cells) at `nowMs` (epoch ms). */
  cellRows(cells: readonly ApiCell[], nowMs: number | undefined): string {
    if (cells.length === 0) return cellRowsHtml([]);
    let html = '';
    for (const cell of cells) {
      let row = this.#cells.get(cell);
      if (row === undefined) {
        row = { parts: cellRowParts(cellView(cell)), since: Date.parse(cell.lastTransitionTime) };
        this.#cells.set(cell, row);
        this.#drawn += 1;
      }
      // api-views.ts's `heldForMs`, with the parse done once per drawn row.
      const inStateForMs =
        nowMs === undefined || Number.isNaN(row.since) ? null : Math.max(0, nowMs - row.since);
      html += row.parts.before;
      html += cellHeldHtml({ lastTransitionTime: cell.lastTransitionTime, inStateForMs });
      html += row.parts.after;
    }
    return html;
  }

  /**
   * The Pools table's `<tbody>` content for `pools` (views with `capacityForMs` set). Rows of
   * pools that are gone are let go of.
   */
  poolRows(pools: readonly StatusPool[]): string {
    if (pools.length === 0) {
      this.#pools = new Map();
      return poolRowsHtml([]);
    }
    const kept = new Map<string, PoolRow>();
    let html = '';
    for (const pool of pools) {
      const key = `${pool.namespace}/${pool.name}`;
      const shown = poolShown(pool);
      let row = this.#pools.get(key);
      if (row === undefined || row.shown !== shown) {
        row = { shown, parts: poolRowParts(pool) };
        this.#drawn += 1;
      }
      kept.set(key, row);
      html += row.parts.before + poolHeldHtml(pool) + row.parts.after;
    }
    this.#pools = kept;
    return html;
  }
}
