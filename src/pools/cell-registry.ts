/**
 * The reconciled cells: written only by the reconcile, read by the API, the metrics and the
 * coordinator's render.
 *
 * It is the difference between "observed" (the store) and "acted on" (here): a cell appears,
 * changes or disappears here only when a reconcile has run for it. A published `Cell` object is
 * never mutated (a change publishes a new one), so readers may memoize on it (the service's
 * cached response bodies do).
 */
import type { ParentKey } from '../runtime/source-event.js';
import { type CellStateChange, withChange } from './cell-history.js';
import type { CellState, NotAliveReason, NotRoutableReason } from './cell-state.js';

/** A published cell: its derived state plus when its alive state last flipped (or it appeared). */
export interface Cell extends CellState {
  /**
   * Wall-clock ISO time of the last appear/alive/not-alive transition: since when the cell has
   * been in its alive state. Only an alive flip resets it, not a change of reasons or address.
   */
  lastTransitionTime: string;
  /**
   * The last `CELL_TRANSITIONS_KEPT` (src/pools/cell-history.ts) alive/not-alive changes, newest first; the first entry's `at`
   * is `lastTransitionTime`. The appearance counts as a change, so a new cell has one entry.
   */
  transitions: CellStateChange[];
}

/** What changed for one cell in one publish; the reconcile logs one line per item. */
export type CellTransition =
  | { type: 'appeared'; cell: Cell }
  | { type: 'alive'; cell: Cell }
  | { type: 'not-alive'; cell: Cell; reasons: NotAliveReason[] }
  | { type: 'generation-changed'; cell: Cell; from: string; to: string }
  | { type: 'address-changed'; cell: Cell; from: string | null; to: string | null }
  /**
   * `routable` or its reasons changed: the cell's own address became (un)usable, or another alive
   * cell began or stopped claiming the same address (then this cell changed without a reconcile).
   */
  | { type: 'routability-changed'; cell: Cell; reasons: NotRoutableReason[] }
  | { type: 'gone'; key: ParentKey; last: Cell };

/**
 * The `type` of a transition, used as a metric label and an event name; `CELL_TRANSITION_TYPES`
 * lists every value.
 */
export type CellTransitionType = CellTransition['type'];

/** Every transition type, for pre-initialising counters and documenting the log lines. */
export const CELL_TRANSITION_TYPES: readonly CellTransitionType[] = [
  'appeared',
  'alive',
  'not-alive',
  'generation-changed',
  'address-changed',
  'routability-changed',
  'gone',
];

/** Claimants an `AddressConflict` message names; more are counted, so a message stays short. */
const MAX_NAMED_CLAIMANTS = 3;

/** A pool: the cells of one namespace sharing one pool label value. */
export interface PoolSummary {
  namespace: string;
  name: string;
  cells: number;
  aliveCells: number;
  pods: number;
  /** Cell ids in order. */
  cellIds: string[];
}

/**
 * Narrows `list()`/`listJson()`, as the control plane's query parameters do; an absent field does
 * not filter, and all given fields must match.
 */
export interface CellFilter {
  pool?: string | undefined;
  alive?: boolean | undefined;
  namespace?: string | undefined;
}

/**
 * Construction options; only the wall clock, since everything else the registry holds comes from
 * publish calls.
 */
interface CellRegistryOptions {
  /** Wall clock (epoch ms) for `lastTransitionTime`; injected so tests are deterministic. */
  wallClock?: (() => number) | undefined;
}

interface Entry {
  /** What the reconcile derived; `cell` adds what needs the other cells (an address clash). */
  state: CellState;
  cell: Cell;
  /** `JSON.stringify(cell)`: the cheapest exact comparison of two published states. */
  fingerprint: string;
}

/** The address a derived state claims: an alive cell's own routable address. */
function claimOf(state: CellState | undefined): string | undefined {
  return state?.alive && state.routable && state.address !== null ? state.address : undefined;
}

function reasonCodes(reasons: readonly NotRoutableReason[]): string {
  return reasons.map((r) => r.reason).join(',');
}

/**
 * The acted-on state, with one writer (the reconcile) and many readers. It also owns the one rule
 * that needs every cell at once: an address claimed by two alive cells makes both unroutable, and
 * each claimant changes when the other comes or goes.
 */
export class CellRegistry {
  readonly #entries = new Map<ParentKey, Entry>();
  readonly #byId = new Map<string, Set<ParentKey>>();
  /**
   * By address: the alive cells whose own address is routable. Two keys under one address are a
   * clash, and each of them is published unroutable until one leaves; a dead cell claims nothing
   * (a finished pod keeps its IP in its status after the IP went to another pod).
   */
  readonly #claims = new Map<string, Set<ParentKey>>();
  readonly #wallClock: () => number;
  #version = 0;
  #sortedKeys: ParentKey[] | undefined;
  #pools: PoolSummary[] | undefined;

  constructor(options: CellRegistryOptions = {}) {
    this.#wallClock = options.wallClock ?? Date.now;
  }

  /** Bumps on every change of any cell; equal versions mean equal contents. */
  get version(): number {
    return this.#version;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Publishes the state of `key` (`undefined`: the cell has no members and is removed) and returns
   * what changed. Publishing an identical state changes nothing, so a resync costs no cache rebuild.
   */
  publish(key: ParentKey, state: CellState | undefined): CellTransition[] {
    const previous = this.#entries.get(key);
    const before = claimOf(previous?.state);
    const after = claimOf(state);
    if (before !== after) {
      if (before !== undefined) this.#unclaim(before, key);
      if (after !== undefined) this.#claim(after, key);
    }
    // The other claimants of the addresses this cell left or took change with it.
    const others = new Set<ParentKey>();
    for (const address of [before, after]) {
      if (address === undefined || before === after) continue;
      for (const other of this.#claims.get(address) ?? []) if (other !== key) others.add(other);
    }

    const transitions = this.#publishOwn(key, previous, state);
    for (const other of [...others].sort()) {
      const entry = this.#entries.get(other);
      if (!entry) continue;
      const cell: Cell = {
        ...this.#withClaims(other, entry.state),
        lastTransitionTime: entry.cell.lastTransitionTime,
        transitions: entry.cell.transitions,
      };
      const fingerprint = JSON.stringify(cell);
      if (fingerprint === entry.fingerprint) continue;
      this.#entries.set(other, { state: entry.state, cell, fingerprint });
      this.#changed();
      transitions.push({ type: 'routability-changed', cell, reasons: cell.whyNotRoutable });
    }
    return transitions;
  }

  #publishOwn(
    key: ParentKey,
    previous: Entry | undefined,
    state: CellState | undefined,
  ): CellTransition[] {
    if (state === undefined) {
      if (!previous) return [];
      this.#entries.delete(key);
      const ids = this.#byId.get(previous.cell.id);
      ids?.delete(key);
      if (ids?.size === 0) this.#byId.delete(previous.cell.id);
      this.#changed();
      return [{ type: 'gone', key, last: previous.cell }];
    }

    const flipped = !previous || previous.cell.alive !== state.alive;
    const lastTransitionTime = flipped
      ? new Date(this.#wallClock()).toISOString()
      : previous.cell.lastTransitionTime;
    const history = flipped
      ? withChange(previous?.cell.transitions ?? [], state, lastTransitionTime)
      : previous.cell.transitions;
    const cell: Cell = {
      ...this.#withClaims(key, state),
      lastTransitionTime,
      transitions: history,
    };
    const fingerprint = JSON.stringify(cell);
    if (previous && previous.fingerprint === fingerprint) return [];

    this.#entries.set(key, { state, cell, fingerprint });
    if (!previous) {
      let ids = this.#byId.get(cell.id);
      if (!ids) {
        ids = new Set();
        this.#byId.set(cell.id, ids);
      }
      ids.add(key);
    }
    this.#changed();

    if (!previous) return [{ type: 'appeared', cell }];
    const transitions: CellTransition[] = [];
    if (previous.cell.generation !== cell.generation) {
      transitions.push({
        type: 'generation-changed',
        cell,
        from: previous.cell.generation,
        to: cell.generation,
      });
    }
    if (previous.cell.address !== cell.address) {
      transitions.push({
        type: 'address-changed',
        cell,
        from: previous.cell.address,
        to: cell.address,
      });
    }
    if (
      previous.cell.routable !== cell.routable ||
      reasonCodes(previous.cell.whyNotRoutable) !== reasonCodes(cell.whyNotRoutable)
    ) {
      transitions.push({ type: 'routability-changed', cell, reasons: cell.whyNotRoutable });
    }
    if (flipped) {
      transitions.push(
        cell.alive
          ? { type: 'alive', cell }
          : { type: 'not-alive', cell, reasons: cell.whyNotAlive },
      );
    }
    return transitions;
  }

  /** `state` with the clash of its address, if another alive cell claims it too. */
  #withClaims(key: ParentKey, state: CellState): CellState {
    const address = claimOf(state);
    const claimants = address === undefined ? undefined : this.#claims.get(address);
    if (address === undefined || !claimants || claimants.size < 2) return state;
    const others = [...claimants].filter((k) => k !== key).sort();
    const named = others.slice(0, MAX_NAMED_CLAIMANTS).join(', ');
    const more =
      others.length > MAX_NAMED_CLAIMANTS ? ` and ${others.length - MAX_NAMED_CLAIMANTS} more` : '';
    return {
      ...state,
      routable: false,
      whyNotRoutable: [
        ...state.whyNotRoutable,
        {
          reason: 'AddressConflict',
          message: `address ${address} is also claimed by ${named}${more}; no claimant is routed to while another claims it`,
        },
      ],
    };
  }

  #claim(address: string, key: ParentKey): void {
    let keys = this.#claims.get(address);
    if (!keys) {
      keys = new Set();
      this.#claims.set(address, keys);
    }
    keys.add(key);
  }

  #unclaim(address: string, key: ParentKey): void {
    const keys = this.#claims.get(address);
    keys?.delete(key);
    if (keys?.size === 0) this.#claims.delete(address);
  }

  get(key: ParentKey): Cell | undefined {
    return this.#entries.get(key)?.cell;
  }

  /** Every published cell's parent key, sorted. */
  keys(): ParentKey[] {
    this.#sortedKeys ??= [...this.#entries.keys()].sort();
    return this.#sortedKeys;
  }

  /** Parent keys of the cells with this id, across namespaces (usually one). */
  keysForId(id: string): ParentKey[] {
    return [...(this.#byId.get(id) ?? [])].sort();
  }

  /** Cells matching `filter`, in key order. */
  list(filter: CellFilter = {}): Cell[] {
    return this.#matching(filter).map((key) => this.#entries.get(key)!.cell);
  }

  /**
   * The JSON of each cell `list(filter)` returns, in the same order: the text the registry already
   * made to tell a change from none, so a response body is a concatenation, never a second
   * serialization.
   */
  listJson(filter: CellFilter = {}): string[] {
    return this.#matching(filter).map((key) => this.#entries.get(key)!.fingerprint);
  }

  /** The JSON of one cell (see `listJson`), or undefined when no cell has that key. */
  cellJson(key: ParentKey): string | undefined {
    return this.#entries.get(key)?.fingerprint;
  }

  /** Pools by namespace then name, with their counts. */
  pools(): PoolSummary[] {
    if (this.#pools) return this.#pools;
    const byPool = new Map<string, PoolSummary>();
    for (const key of this.keys()) {
      const { cell } = this.#entries.get(key)!;
      const poolKey = `${cell.namespace}/${cell.pool}`;
      let pool = byPool.get(poolKey);
      if (!pool) {
        pool = {
          namespace: cell.namespace,
          name: cell.pool,
          cells: 0,
          aliveCells: 0,
          pods: 0,
          cellIds: [],
        };
        byPool.set(poolKey, pool);
      }
      pool.cells += 1;
      if (cell.alive) pool.aliveCells += 1;
      pool.pods += cell.members.length;
      pool.cellIds.push(cell.id);
    }
    this.#pools = [...byPool.values()].sort((a, b) =>
      a.namespace === b.namespace
        ? a.name < b.name
          ? -1
          : a.name > b.name
            ? 1
            : 0
        : a.namespace < b.namespace
          ? -1
          : 1,
    );
    return this.#pools;
  }

  #matching(filter: CellFilter): ParentKey[] {
    const keys = this.keys();
    if (filter.pool === undefined && filter.alive === undefined && filter.namespace === undefined) {
      return keys;
    }
    return keys.filter((key) => {
      const { cell } = this.#entries.get(key)!;
      return (
        (filter.pool === undefined || cell.pool === filter.pool) &&
        (filter.alive === undefined || cell.alive === filter.alive) &&
        (filter.namespace === undefined || cell.namespace === filter.namespace)
      );
    });
  }

  #changed(): void {
    this.#version += 1;
    this.#sortedKeys = undefined;
    this.#pools = undefined;
  }
}
