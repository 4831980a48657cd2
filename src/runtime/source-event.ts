/**
 * The wire format between a source (a reflector, a simulator) and the store. Operations travel as
 * plain values rather than method calls so they can cross a thread boundary or be written as JSON
 * unchanged (the reflector's worker thread sends them as JSON bytes, a large replace in chunks; a
 * source's transport is its own business).
 */

/** Identifies one object in the store, e.g. `namespace/name` for a pod. */
export type ObjectKey = string;

/** Identifies the unit of reconciliation that objects are grouped under (a cell, say). */
export type ParentKey = string;

/**
 * One change to the observed world, as plain data with no methods, so a transport can copy or
 * encode it (a `replace`'s `Map` is not JSON: the reflector's worker sends its objects as chunks).
 *
 * Three kinds, after client-go's `DeltaFIFO` minus the ones a level-triggered reader does not
 * need: `upsert` (added or modified are the same to a reconcile that re-reads everything),
 * `delete`, and `replace`, the whole world after a (re)list. `ObjectStore.apply` turns each into
 * the set of parents it affected.
 */
export type SourceEvent<T> =
  /** The object now is `object`: added or changed, the store does not need to know which. */
  | { type: 'upsert'; key: ObjectKey; object: T }
  /**
   * The object is gone. `lastObject` is the tombstone, the object as last seen, when the source
   * knows it: it lets the store attribute a delete of a key it never held to a parent.
   */
  | { type: 'delete'; key: ObjectKey; lastObject?: T }
  /**
   * The whole world: everything not listed is gone (the store synthesizes those deletes). Every
   * stream opens with one, so a reopen repairs whatever a dropped stream missed.
   */
  | { type: 'replace'; objects: ReadonlyMap<ObjectKey, T> };

/**
 * A restartable stream of events. Each call opens a fresh, independent stream, and every stream
 * must open with a `replace`, so that reopening after any failure re-establishes the whole truth.
 * A function rather than an iterable because the consumer (`SourceStreamDriver`) reopens it
 * whenever a stream ends or fails, and closes a stream with `return()` on its iterator.
 *
 * `signal` is the stream's own: the consumer aborts it when it is done with that stream (a stop,
 * or a failure it is about to reopen after), no later than it calls `return()`. `return()` alone
 * reaches an async generator only at its next `yield`, so a source that waits inside an `await`
 * (a poll interval, a request) passes `signal` to that wait and stops at once, and its `finally`
 * runs; a source may ignore it (RUNTIME.md, amendment 2).
 */
export type Source<T> = (signal: AbortSignal) => AsyncIterable<SourceEvent<T>>;

/**
 * Maps an object to the parent it belongs to (a pod to its cell): the unit a reconcile is run for.
 * `undefined`, or a throw, means the object cannot be attributed, and the store will not hold it
 * (a throw is logged, never propagated, so one odd object cannot stop a relist). Must be pure: the
 * store calls it again on every upsert and relist, and trusts the stored parent on delete.
 */
export type KeyMap<T> = (object: T) => ParentKey | undefined;
