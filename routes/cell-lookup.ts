/**
 * Resolves the cell id a user types (`engine-00003`) to the loop's parent key (`ns/engine-00003`).
 * Ids are unique within a namespace only; when one exists in several, `?namespace=` picks one and
 * without it the answer is a 409 listing the namespaces, never a guess.
 */
import type { ControlPlane } from '../src/control-plane.js';
import { splitParentKey } from '../src/pools/cell-key.js';
import type { ParentKey } from '../src/runtime/source-event.js';
import { HttpError } from './http-error.js';

/**
 * `published`: only cells the reconcile has published (reads). `observed`: also keys the store
 * holds but no reconcile has published yet (a forced reconcile must reach pending work too).
 */
export function resolveCellKey(
  plane: ControlPlane,
  id: string,
  namespace: string | undefined,
  scope: 'published' | 'observed',
): ParentKey {
  const keys = new Set(plane.cells.keysForId(id));
  if (scope === 'observed') {
    for (const key of plane.storeParents()) if (splitParentKey(key).id === id) keys.add(key);
  }
  const candidates = [...keys]
    .filter((key) => namespace === undefined || splitParentKey(key).namespace === namespace)
    .sort();
  if (candidates.length === 0) {
    throw new HttpError(
      404,
      namespace === undefined
        ? `no cell ${JSON.stringify(id)}`
        : `no cell ${JSON.stringify(id)} in namespace ${JSON.stringify(namespace)}`,
    );
  }
  if (candidates.length > 1) {
    const namespaces = candidates.map((key) => splitParentKey(key).namespace).join(', ');
    throw new HttpError(
      409,
      `cell ${JSON.stringify(id)} exists in several namespaces (${namespaces}); add ?namespace=`,
    );
  }
  return candidates[0]!;
}
