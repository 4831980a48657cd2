/**
 * A cell's recent alive/not-alive changes: what the status page and `/api/v1/cells` show beside
 * how long a cell has been in its state, so a flapping cell can be told from one that changed
 * once. Bounded, so a published cell (and every cached cells body) stays small however often it
 * flaps.
 */
import type { CellState, NotAliveReason } from './cell-state.js';

/**
 * How many alive/not-alive changes a cell keeps: enough to tell a flapping cell from one that
 * changed once, few enough that a published cell stays small.
 */
export const CELL_TRANSITIONS_KEPT = 5;

/** One alive/not-alive change of a cell (or its appearance), as the cell keeps it. */
export interface CellStateChange {
  /** Wall-clock ISO time of the change. */
  at: string;
  /** The state the cell entered. */
  alive: boolean;
  /** The `whyNotAlive` codes it entered with; empty when it became alive. */
  reasons: NotAliveReason['reason'][];
}

/**
 * `history` (newest first) with the change to `state` at `at` in front, cut to
 * `CELL_TRANSITIONS_KEPT`; a new array, since published cells are never mutated.
 */
export function withChange(
  history: readonly CellStateChange[],
  state: CellState,
  at: string,
): CellStateChange[] {
  const change: CellStateChange = {
    at,
    alive: state.alive,
    reasons: state.whyNotAlive.map((r) => r.reason),
  };
  return [change, ...history].slice(0, CELL_TRANSITIONS_KEPT);
}
