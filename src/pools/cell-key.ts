/**
 * Pod → cell attribution: the `KeyMap` the store groups pods by, and the ids users see.
 *
 * A cell's id is `<pool>-<index as 5 digits>` (`engine-00003`): zero-padded so that ids sort in
 * index order, and distinct from LWS's leader pod name (`engine-3`), so an id in the API is never
 * mistaken for a pod.
 * A pod with a pool label but no cell index is a cell of its own, named after the pod: a plain
 * Deployment or a single trainer still shows up as a pool of one-pod cells.
 *
 * The store's parent key is `namespace/cellId`, not the bare id: one controller watching all
 * namespaces can see `engine-00000` in two of them, and the loop must never merge those.
 */
import type { Pod } from '../model/pod.js';
import type { KeyMap, ParentKey } from '../runtime/source-event.js';
import type { PoolLabels } from './labels.js';
import { boundPodText, MAX_POOL_NAME_LENGTH } from './pod-text.js';

/** Zero-padding width of a cell index: 5 digits sorts 100,000 cells lexically in index order. */
const CELL_INDEX_DIGITS = 5;

/** Indices are small non-negative decimal integers; a sign, a fraction or a huge value is data corruption. */
const INDEX_PATTERN = /^[0-9]{1,9}$/;

/** Reads an index label value; `undefined` for anything that is not a plain non-negative integer. */
export function parseIndex(value: string | undefined): number | undefined {
  if (value === undefined || !INDEX_PATTERN.test(value)) return undefined;
  return Number(value);
}

/** `engine`, 3 → `engine-00003`. */
export function cellId(pool: string, index: number): string {
  return `${pool}-${String(index).padStart(CELL_INDEX_DIGITS, '0')}`;
}

/** Why a pod that claims a pool cannot be placed in a cell; the store logs it and skips the pod. */
export class UnmappablePodError extends Error {
  override readonly name = 'UnmappablePodError';
}

/** The cell id a pod belongs to, or `undefined` when it carries no pool label. */
export function cellIdOf(pod: Pod, labels: PoolLabels): string | undefined {
  const pool = pod.metadata.labels[labels.pool];
  if (pool === undefined || pool === '') return undefined;
  if (pool.length > MAX_POOL_NAME_LENGTH) {
    throw new UnmappablePodError(
      `pod ${pod.metadata.namespace}/${pod.metadata.name}: label ${labels.pool} is ${pool.length} characters long, more than a label value may be (${MAX_POOL_NAME_LENGTH}): ${JSON.stringify(boundPodText(pool))}`,
    );
  }
  const rawIndex = pod.metadata.labels[labels.cellIndex];
  if (rawIndex === undefined) return pod.metadata.name;
  const index = parseIndex(rawIndex);
  if (index === undefined) {
    // A throw, not `undefined`: the store logs it, so a mislabelled pod is visible, not silently ignored.
    throw new UnmappablePodError(
      `pod ${pod.metadata.namespace}/${pod.metadata.name}: label ${labels.cellIndex}=${JSON.stringify(boundPodText(rawIndex))} is not a non-negative integer`,
    );
  }
  return cellId(pool, index);
}

/** `namespace/cellId`, or the bare id for an object without a namespace (as `podKey` does). */
export function parentKeyOf(namespace: string, id: string): ParentKey {
  return namespace ? `${namespace}/${id}` : id;
}

/** Splits a parent key back into its namespace (`''` when none) and cell id. */
export function splitParentKey(key: ParentKey): { namespace: string; id: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: '', id: key }
    : { namespace: key.slice(0, slash), id: key.slice(slash + 1) };
}

/** The loop's `KeyMap`: pod → `namespace/cellId`; a pod without the pool label is unmappable. */
export function cellKeyMap(labels: PoolLabels): KeyMap<Pod> {
  return (pod) => {
    const id = cellIdOf(pod, labels);
    return id === undefined ? undefined : parentKeyOf(pod.metadata.namespace, id);
  };
}
