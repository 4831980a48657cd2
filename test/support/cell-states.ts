/**
 * Cell states as the reconcile derives them, from real LeaderWorkerSet-labelled pods: for tests
 * of what consumes cells (the registry, the cached bodies, the routing render).
 */
import { type CellState, deriveCellState } from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { lwsPod } from './lws-pod.js';

const options = { labels: LWS_LABELS, portName: 'http' };

/** Cell `group` of a two-pod pool; `ready: false` makes worker 1 not ready. */
export function cellState(
  group: number,
  opts: { pool?: string; namespace?: string; ready?: boolean; uid?: string } = {},
): CellState {
  const pool = opts.pool ?? 'engine';
  const namespace = opts.namespace ?? 'ns';
  const pods = [0, 1].map((worker) =>
    lwsPod({
      pool,
      namespace,
      group,
      worker,
      size: 2,
      ready: worker === 1 ? (opts.ready ?? true) : true,
      ...(worker === 0 && opts.uid ? { uid: opts.uid } : {}),
    }),
  );
  const id = `${pool}-${String(group).padStart(5, '0')}`;
  return deriveCellState(`${namespace}/${id}`, pods, options)!;
}
