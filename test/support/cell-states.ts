/**
 * Cell states as the reconcile derives them, from real LeaderWorkerSet-labelled pods: for tests
 * of what consumes cells (the registry, the cached bodies, the routing render).
 */
import { type CellState, deriveCellState } from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { lwsPod } from './lws-pod.js';

const options = { labels: LWS_LABELS, portName: 'http' };

/**
 * A leader IP of its own per namespace, pool and group (`10.<namespace, pool>.<group>`), so cells
 * only clash when a test says so.
 */
function leaderIp(namespace: string, pool: string, group: number): string {
  let hash = 0;
  for (const ch of `${namespace}/${pool}`) hash = (hash * 31 + ch.charCodeAt(0)) % 250;
  return `10.${hash + 1}.${(group >> 8) & 255}.${group & 255}`;
}

/**
 * Cell `group` of a two-pod pool; `ready: false` makes worker 1 not ready; `podIP` sets the
 * leader's (`null`: none yet).
 */
export function cellState(
  group: number,
  opts: {
    pool?: string;
    namespace?: string;
    ready?: boolean;
    uid?: string;
    podIP?: string | null;
    allowLoopback?: boolean;
  } = {},
): CellState {
  const pool = opts.pool ?? 'engine';
  const namespace = opts.namespace ?? 'ns';
  const ip = opts.podIP === undefined ? leaderIp(namespace, pool, group) : opts.podIP;
  const pods = [0, 1].map((worker) =>
    lwsPod({
      pool,
      namespace,
      group,
      worker,
      size: 2,
      ready: worker === 1 ? (opts.ready ?? true) : true,
      ...(worker === 0 && opts.uid ? { uid: opts.uid } : {}),
      ...(worker === 0 ? { podIP: ip } : {}),
    }),
  );
  const id = `${pool}-${String(group).padStart(5, '0')}`;
  return deriveCellState(`${namespace}/${id}`, pods, {
    ...options,
    allowLoopback: opts.allowLoopback ?? false,
  })!;
}
