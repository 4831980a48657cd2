/**
 * The response bodies of the cell endpoints, as bytes cached between changes.
 *
 * A router or a dashboard polls `GET /api/v1/cells` far more often than cells change, so the hot
 * path of a poll is a map lookup and a socket write: each cell is serialized once per change (by
 * the registry, which keeps that JSON to tell a change from none) and each list body is joined
 * once per registry version and filter. This lives on the service side because building HTTP
 * bodies is not the domain's concern; routes reach it through the read-only `CellsView` of the
 * control plane.
 */
import type { Cell, CellFilter, CellRegistry } from '../pools/cell-registry.js';
import { PoolCapacityTracker, type PoolView } from '../pools/pool-capacity.js';
import type { ParentKey } from '../runtime/source-event.js';

/**
 * How many distinct filtered list bodies are kept per registry version. The unfiltered list and a
 * handful of `?pool=` filters are what pollers ask for; the bound keeps odd query mixes from
 * growing memory without limit.
 */
export const MAX_CACHED_LIST_BODIES = 64;

/** What routes may read of the reconciled cells: lookups and ready-to-send bodies, no writes. */
export interface CellsView {
  get(key: ParentKey): Cell | undefined;
  /** Every published cell's parent key, sorted. */
  keys(): ParentKey[];
  keysForId(id: string): ParentKey[];
  /**
   * The published cells `filter` admits and, merged in key order, the placeholders of the cells
   * a workload asks for that have no pod (never alive, never routed to).
   */
  list(filter?: CellFilter): Cell[];
  /** Every pool with its counts and its capacity against its workload. */
  pools(): PoolView[];
  /**
   * `{…envelope, "synced": s, "count": n, "cells": [...]}`, cached until the next change.
   * `synced`: whether the store has synced, so an empty list before the first LIST is told
   * apart from a world with no cells.
   */
  listBody(filter?: CellFilter, synced?: boolean): Buffer;
  /** `{…envelope, "cell": {...}}`, or `undefined` when no cell has that key. */
  cellBody(key: ParentKey): Buffer | undefined;
}

/** The workload API's status when no tracker is given: no workload is ever known. */
const NO_WORKLOADS = { state: 'disabled', message: 'no workload source' } as const;

/**
 * The `CellsView` routes serve from: reads pass through to the registry and the capacity tracker,
 * bodies are cached per version of both and filter (at most `MAX_CACHED_LIST_BODIES`), so a poll
 * between changes costs no serialization.
 */
export class CellBodies implements CellsView {
  readonly #registry: CellRegistry;
  readonly #capacity: PoolCapacityTracker;
  readonly #envelopeJson: string;
  #listBodies = new Map<string, Buffer>();
  #bodiesVersion = '';
  #pools: { version: string; pools: PoolView[] } | undefined;

  /**
   * `envelope`: fields every body starts with, e.g. `{ source: 'simulated' }`; fixed for the
   * process, so serialized once. `capacity`: the pools' capacity; default a tracker that knows
   * no workload (every pool `Unknown`).
   */
  constructor(
    registry: CellRegistry,
    envelope: Readonly<Record<string, string | number | boolean>> = {},
    capacity?: PoolCapacityTracker,
  ) {
    this.#registry = registry;
    this.#capacity = capacity ?? new PoolCapacityTracker({ workloadStatus: () => NO_WORKLOADS });
    const json = JSON.stringify(envelope);
    // `{"source":"x"}` → `"source":"x",` so a body is `{` + envelope + `"count":…}`.
    this.#envelopeJson = json === '{}' ? '' : `${json.slice(1, -1)},`;
  }

  get(key: ParentKey): Cell | undefined {
    return this.#registry.get(key);
  }

  keys(): ParentKey[] {
    return this.#registry.keys();
  }

  keysForId(id: string): ParentKey[] {
    return this.#registry.keysForId(id);
  }

  list(filter: CellFilter = {}): Cell[] {
    const cells = this.#registry.list(filter);
    const placeholders = this.#capacity.placeholders(this.pools(), filter);
    if (placeholders.length === 0) return cells;
    return mergeByKey(cells, placeholders);
  }

  pools(): PoolView[] {
    const version = this.#version();
    if (this.#pools?.version !== version) {
      this.#pools = { version, pools: this.#capacity.pools(this.#registry.pools()) };
    }
    return this.#pools.pools;
  }

  #version(): string {
    return `${this.#registry.version}.${this.#capacity.version}`;
  }

  listBody(filter: CellFilter = {}, synced = true): Buffer {
    const version = this.#version();
    if (this.#bodiesVersion !== version) {
      this.#listBodies = new Map();
      this.#bodiesVersion = version;
    }
    const cacheKey = `${synced}|${filter.namespace ?? '\0'}|${filter.pool ?? '\0'}|${filter.alive ?? '\0'}`;
    const cached = this.#listBodies.get(cacheKey);
    if (cached) return cached;
    let cells = this.#registry.listJson(filter);
    const placeholders = this.#capacity.placeholders(this.pools(), filter);
    if (placeholders.length > 0) {
      const keys = this.#registry.list(filter).map((cell) => cell.key);
      const published = cells.map((json, i) => ({ key: keys[i]!, json }));
      const missing = placeholders.map((cell) => ({ key: cell.key, json: JSON.stringify(cell) }));
      cells = mergeByKey(published, missing).map((entry) => entry.json);
    }
    const body = Buffer.from(
      `{${this.#envelopeJson}"synced":${synced},"count":${cells.length},"cells":[${cells.join(',')}]}`,
    );
    if (this.#listBodies.size >= MAX_CACHED_LIST_BODIES) this.#listBodies.clear();
    this.#listBodies.set(cacheKey, body);
    return body;
  }

  cellBody(key: ParentKey): Buffer | undefined {
    const json = this.#registry.cellJson(key);
    return json === undefined ? undefined : Buffer.from(`{${this.#envelopeJson}"cell":${json}}`);
  }
}

/** Two lists each sorted by `key`, merged in key order (a key in both keeps the first list's). */
function mergeByKey<T extends { key: string }>(a: readonly T[], b: readonly T[]): T[] {
  const merged: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.key <= b[j]!.key)) {
      if (j < b.length && a[i]!.key === b[j]!.key) j += 1;
      merged.push(a[i++]!);
    } else merged.push(b[j++]!);
  }
  return merged;
}
