/**
 * Read-only views of the loop's store for the control plane: the store per parent
 * (`GET /api/v1/store`) and the lookup of a cell id the routes are given. Kept apart from the
 * service's wiring because they only read, and because both answer questions about the store as
 * it is now (a cell observed but not yet reconciled is in the store, not in the registry).
 */
import { type Pod, podKey } from '../model/pod.js';
import type { SourceKind } from '../model/pod-source.js';
import { splitParentKey } from '../pools/cell-key.js';
import type { CellRegistry } from '../pools/cell-registry.js';
import { memberOf } from '../pools/cell-state.js';
import type { PoolLabels } from '../pools/labels.js';
import type { ParentKey } from '../runtime/source-event.js';
import type { CellResolution, CellScope, StoreParent, StoreSnapshot } from './control-plane.js';

/** What the views read: the loop's store, the published cells, and how pods are read. */
export interface StoreViewSources {
  sourceKind: SourceKind;
  labels: PoolLabels;
  /** The cell readiness gate's condition type, when the gate is on (members show its state). */
  readinessGate: string | undefined;
  registry: CellRegistry;
  synced: () => boolean;
  objectCount: () => number;
  parents: () => ParentKey[];
  pods: (key: ParentKey) => readonly Pod[];
}

/** The store per parent, with a member view of every pod when `objects` is set. */
export function storeSnapshot(sources: StoreViewSources, objects: boolean): StoreSnapshot {
  const parents = sources.parents().map((key): StoreParent => {
    const pods = sources.pods(key);
    const entry: StoreParent = {
      key,
      reconciled: sources.registry.get(key) !== undefined,
      members: pods.map(podKey),
    };
    if (!objects) return entry;
    entry.pods = pods.map((pod) => ({
      key: podKey(pod),
      namespace: pod.metadata.namespace,
      resourceVersion: pod.metadata.resourceVersion ?? null,
      ...memberOf(pod, sources.labels, sources.readinessGate),
    }));
    return entry;
  });
  return {
    source: sources.sourceKind,
    synced: sources.synced(),
    objects: sources.objectCount(),
    parentCount: parents.length,
    parents,
  };
}

/**
 * The one cell `id` names (in `namespace` when given): among the published cells, and with the
 * `observed` scope also among the store's parents not reconciled yet. Two namespaces with the same
 * id are ambiguous rather than guessed.
 */
export function resolveCell(
  sources: Pick<StoreViewSources, 'registry' | 'parents'>,
  id: string,
  { namespace, scope }: { namespace?: string | undefined; scope: CellScope },
): CellResolution {
  const keys = new Set(sources.registry.keysForId(id));
  if (scope === 'observed') {
    for (const key of sources.parents()) if (splitParentKey(key).id === id) keys.add(key);
  }
  const candidates = [...keys]
    .filter((key) => namespace === undefined || splitParentKey(key).namespace === namespace)
    .sort();
  if (candidates.length === 0) return { kind: 'not-found' };
  if (candidates.length > 1) {
    return {
      kind: 'ambiguous',
      namespaces: candidates.map((key) => splitParentKey(key).namespace),
    };
  }
  return { kind: 'found', key: candidates[0]! };
}
