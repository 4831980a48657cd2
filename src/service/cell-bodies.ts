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
import type { Cell, CellFilter, CellRegistry, PoolSummary } from '../pools/cell-registry.js';
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
  list(filter?: CellFilter): Cell[];
  pools(): PoolSummary[];
  /**
   * `{…envelope, "synced": s, "count": n, "cells": [...]}`, cached until the next change.
   * `synced`: whether the store has synced, so an empty list before the first LIST is told
   * apart from a world with no cells.
   */
  listBody(filter?: CellFilter, synced?: boolean): Buffer;
  /** `{…envelope, "cell": {...}}`, or `undefined` when no cell has that key. */
  cellBody(key: ParentKey): Buffer | undefined;
}

/**
 * The `CellsView` routes serve from: reads pass through to the registry, bodies are cached per
 * registry version and filter (at most `MAX_CACHED_LIST_BODIES`), so a poll between changes costs
 * no serialization.
 */
export class CellBodies implements CellsView {
  readonly #registry: CellRegistry;
  readonly #envelopeJson: string;
  #listBodies = new Map<string, Buffer>();
  #bodiesVersion = -1;

  /**
   * `envelope`: fields every body starts with, e.g. `{ source: 'simulated' }`; fixed for the
   * process, so serialized once.
   */
  constructor(
    registry: CellRegistry,
    envelope: Readonly<Record<string, string | number | boolean>> = {},
  ) {
    this.#registry = registry;
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
    return this.#registry.list(filter);
  }

  pools(): PoolSummary[] {
    return this.#registry.pools();
  }

  listBody(filter: CellFilter = {}, synced = true): Buffer {
    if (this.#bodiesVersion !== this.#registry.version) {
      this.#listBodies = new Map();
      this.#bodiesVersion = this.#registry.version;
    }
    const cacheKey = `${synced}|${filter.namespace ?? '\0'}|${filter.pool ?? '\0'}|${filter.alive ?? '\0'}`;
    const cached = this.#listBodies.get(cacheKey);
    if (cached) return cached;
    const cells = this.#registry.listJson(filter);
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
