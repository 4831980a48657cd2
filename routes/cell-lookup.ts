/**
 * Turns the control plane's answer for a cell id a user types (`engine-00003`) into the loop's
 * parent key (`ns/engine-00003`) or the HTTP error that explains why there is none: 404 when no
 * cell has the id, 409 listing the namespaces when several do and `?namespace=` is missing.
 */
import type { CellScope, ControlPlane, ParentKey } from '../src/service/control-plane.js';
import { HttpError } from './http-error.js';

/**
 * The parent key a route acts on for the cell id in its path; throws the `HttpError` (404 or 409)
 * the handler lets through, so every route that takes a cell id answers the same way. `scope`
 * decides whether unpublished keys count (a forced reconcile must reach them).
 */
export function resolveCellKey(
  plane: ControlPlane,
  id: string,
  namespace: string | undefined,
  scope: CellScope,
): ParentKey {
  const resolution = plane.resolveCell(id, { namespace, scope });
  switch (resolution.kind) {
    case 'found':
      return resolution.key;
    case 'not-found':
      throw new HttpError(
        404,
        namespace === undefined
          ? `no cell ${JSON.stringify(id)}`
          : `no cell ${JSON.stringify(id)} in namespace ${JSON.stringify(namespace)}`,
      );
    case 'ambiguous':
      throw new HttpError(
        409,
        `cell ${JSON.stringify(id)} exists in several namespaces (${resolution.namespaces.join(', ')}); add ?namespace=`,
      );
  }
}
