/**
 * The wire format between a source (a reflector, a simulator) and the store. Operations travel as
 * plain values rather than method calls so they can cross a `MessagePort` from the reflector's
 * worker thread by structured clone, unchanged.
 */

/** Identifies one object in the store, e.g. `namespace/name` for a pod. */
export type ObjectKey = string;

/** Identifies the unit of reconciliation that objects are grouped under (a cell, say). */
export type ParentKey = string;

/** One change to the observed world. */
export type SourceEvent<T> =
  | { type: 'upsert'; key: ObjectKey; object: T }
  /** `lastObject` is the tombstone: the object as last seen, when the source knows it. */
  | { type: 'delete'; key: ObjectKey; lastObject?: T }
  /** The whole world: everything not listed is gone. Every stream opens with one. */
  | { type: 'replace'; objects: ReadonlyMap<ObjectKey, T> };

/**
 * A restartable stream of events. Each call opens a fresh, independent stream, and every stream
 * must open with a `replace`, so that reopening after any failure re-establishes the whole truth.
 */
export type Source<T> = () => AsyncIterable<SourceEvent<T>>;

/**
 * Maps an object to the parent it belongs to. `undefined`, or a throw, means the object cannot be
 * attributed, and the store will not hold it.
 */
export type KeyMap<T> = (object: T) => ParentKey | undefined;
