/**
 * The status page's Cells and Pools rows, as the server draws them for its first paint: the same
 * markup as the one renderer, each row drawn once per change of what it shows, and only how long
 * each state has held drawn per render.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cellView, poolView } from '../../routes/status-page/api-views.js';
import { DrawnRows } from '../../routes/status-page/drawn-rows.js';
import { cellRowsHtml, poolRowsHtml } from '../../routes/status-page/sections.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness, upsert, WALL_CLOCK_MS } from '../support/service-harness.js';

afterEach(closeAll);

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

type Plane = Awaited<ReturnType<typeof harness>>['service'];

/** What the one renderer draws for the plane's cells and pools at `nowMs`. */
function rendered(plane: Plane, nowMs: number) {
  return {
    cells: cellRowsHtml(plane.cells.list().map((c) => cellView(c, nowMs))),
    pools: poolRowsHtml(plane.cells.pools().map((p) => poolView(p, nowMs))),
  };
}

/** What `rows` draws for the plane's cells and pools at `nowMs`. */
function drawn(rows: DrawnRows, plane: Plane, nowMs: number) {
  return {
    cells: rows.cellRows(plane.cells.list(), nowMs),
    pools: rows.poolRows(plane.cells.pools().map((p) => poolView(p, nowMs))),
  };
}

describe('DrawnRows', () => {
  it('draws exactly what the one renderer draws, the held times at the time asked', async () => {
    const h = await harness({ pods: world() });
    const rows = new DrawnRows();
    const early = drawn(rows, h.service, WALL_CLOCK_MS);
    expect(early).toEqual(rendered(h.service, WALL_CLOCK_MS));
    const later = drawn(rows, h.service, WALL_CLOCK_MS + 3_725_000);
    expect(later).toEqual(rendered(h.service, WALL_CLOCK_MS + 3_725_000));
    expect(later.cells).not.toEqual(early.cells);
    expect(later.pools).not.toEqual(early.pools);
  });

  it('draws each row once, and again only the rows whose cell or pool changed', async () => {
    const h = await harness({ pods: world() });
    const rows = new DrawnRows();
    drawn(rows, h.service, WALL_CLOCK_MS);
    // Three cells, two pools.
    expect(rows.drawn).toBe(5);
    drawn(rows, h.service, WALL_CLOCK_MS + 60_000);
    expect(rows.drawn).toBe(5);

    // Cell 0's worker stops being ready: that cell's row and its pool's row change, nothing else.
    await h.push(upsert(lwsPod({ group: 0, worker: 1, size: 2, ready: false })));
    await h.atRest();
    const after = drawn(rows, h.service, WALL_CLOCK_MS + 120_000);
    expect(rows.drawn).toBe(7);
    expect(after).toEqual(rendered(h.service, WALL_CLOCK_MS + 120_000));
  });

  it('draws the empty tables as the renderer does', async () => {
    const h = await harness({ pods: [] });
    const rows = new DrawnRows();
    expect(drawn(rows, h.service, WALL_CLOCK_MS)).toEqual(rendered(h.service, WALL_CLOCK_MS));
    expect(rows.drawn).toBe(0);
  });
});
