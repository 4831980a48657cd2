/**
 * Which pod labels and annotations say what a pod is to a pool.
 *
 * The defaults are LeaderWorkerSet's own keys, so every LWS in the watched namespace is a pool
 * with no configuration at all; any other workload (a StatefulSet of trainers, a hand-labelled
 * Deployment) opts in by pointing these at its own keys.
 */

export interface PoolLabels {
  /** Label whose value names the pool; a pod without it belongs to no pool. */
  pool: string;
  /** Label holding the cell's index within its pool (LWS's group index). */
  cellIndex: string;
  /** Label holding the pod's index within its cell; absent reads as 0, the leader. */
  workerIndex: string;
  /** Annotation holding how many pods a complete cell has; absent means "whatever is there". */
  cellSize: string;
}

/** LeaderWorkerSet's keys: `leaderworkerset.sigs.k8s.io/{name,group-index,worker-index,size}`. */
export const LWS_LABELS: Readonly<PoolLabels> = Object.freeze({
  pool: 'leaderworkerset.sigs.k8s.io/name',
  cellIndex: 'leaderworkerset.sigs.k8s.io/group-index',
  workerIndex: 'leaderworkerset.sigs.k8s.io/worker-index',
  cellSize: 'leaderworkerset.sigs.k8s.io/size',
});

/**
 * The label LeaderWorkerSet puts on every pod of a group: the hash of the template revision the
 * group was made from. A leader carrying it marks its cell as an LWS group, whose members are
 * judged per incarnation (`StaleMember` in cell-state.ts); LWS's own pod controller treats a
 * worker whose value differs from its leader's as about to be deleted.
 */
export const LWS_TEMPLATE_REVISION_LABEL = 'leaderworkerset.sigs.k8s.io/template-revision-hash';

/**
 * The container port a cell is reached on, by name: LWS examples and most Helm charts name the
 * serving port `http`, and naming (not numbering) it survives a port change in the pod template.
 */
export const DEFAULT_PORT_NAME = 'http';

/**
 * The label selector that watches exactly the pods that can belong to a pool: those carrying the
 * pool label. Filtering on the server keeps every other pod in the namespace out of the cache.
 */
export function defaultSelector(labels: Pick<PoolLabels, 'pool'>): string {
  return labels.pool;
}
