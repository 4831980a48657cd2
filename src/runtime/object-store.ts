/**
 * The cache the reconcile reads instead of the API server, indexed by parent.
 *
 * Port of client-go's `cache.Store` plus the one part of `DeltaFIFO` worth keeping: `Replace()`
 * with deletion synthesis, done store-side so it also survives a stream that reopens (a
 * reflector-side diff cannot remember across a reopen). The parent index is the only index:
 * reconciles ask "who belongs to this cell", never anything else.
 */
import { type Logger, silentLogger } from './logger.js';
import type { KeyMap, ObjectKey, ParentKey, SourceEvent } from './source-event.js';

/** Options of `ObjectStore`. */
export interface ObjectStoreOptions {
  /**
   * Receives what the store drops rather than throws about: a `keyMap` that threw (error), a
   * delete that no parent can be found for (warning). Silent by default.
   */
  logger?: Logger;
}

/**
 * A `replace` applied in parts (`ObjectStore.beginReplace`), so a relist of tens of thousands of
 * objects can be spread over event-loop turns.
 */
export interface ReplaceInParts<T> {
  /**
   * Stores these listed objects as a `replace` would (an unmappable one is skipped here and, if
   * it was stored, removed by `finish()`); returns the parents affected.
   */
  upsert(objects: Iterable<readonly [ObjectKey, T]>): Set<ParentKey>;
  /**
   * The synthesised deletions: removes every stored object that no `upsert` of this replace
   * listed (or that became unmappable); returns their parents. Call once, last.
   */
  finish(): Set<ParentKey>;
}

/** One parent's members, and the parent's key that every member's entry shares. */
interface Members {
  parent: ParentKey;
  keys: Set<ObjectKey>;
}

/** Result of asking the key map about one object. */
type Mapping = { mappable: true; parent: ParentKey } | { mappable: false };

interface Entry<T> {
  object: T;
  /** The parent's key as `#members` holds it: one string per parent, not one per object. */
  parent: ParentKey;
  /** The replace that last listed this object (mark-and-sweep deletion synthesis). */
  epoch: number;
}

const UNMAPPABLE: Mapping = { mappable: false };

/**
 * The loop's cache of the observed world, indexed by parent: what a reconcile reads instead of
 * asking the API server.
 *
 * `apply` answers with the parents an event affected, which is all the loop enqueues: the store
 * decides what changed, so the source can stay a dumb stream. It holds only objects its `keyMap`
 * can attribute, and after a `replace` exactly the attributable objects it listed (deletes are
 * synthesized for the rest), so it never serves a ghost. Objects are kept as given and must not be mutated by
 * readers. Not thread-safe and not meant to be: one driver writes it, on one event loop.
 */
export class ObjectStore<T> {
  readonly #keyMap: KeyMap<T> | undefined;
  readonly #logger: Logger;
  /** One entry per object: one map lookup per event on the hot path of a 10k-pod relist. */
  readonly #entries = new Map<ObjectKey, Entry<T>>();
  /**
   * Members by parent, with the parent's key as first stored: a key map builds the key afresh for
   * every object (a 32-byte string of its own per cached pod), and entries keep this one instead.
   */
  readonly #members = new Map<ParentKey, Members>();
  /** Bumped per replace; entries not stamped with the current one after a relist are gone. */
  #epoch = 0;

  /**
   * Without a `keyMap`, every object is its own parent: the store is then a plain keyed cache,
   * which is what a controller over a real Kubernetes kind wants.
   */
  constructor(keyMap?: KeyMap<T>, options: ObjectStoreOptions = {}) {
    this.#keyMap = keyMap;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Applies one event and returns the parents whose membership or members changed, so the caller
   * can enqueue exactly those. Delivery is at-least-once: a relist re-affects every survivor.
   */
  apply(event: SourceEvent<T>): Set<ParentKey> {
    const affected = new Set<ParentKey>();
    switch (event?.type) {
      case 'upsert':
        this.#upsert(event.key, event.object, affected);
        return affected;
      case 'delete':
        this.#delete(event.key, event.lastObject, 'lastObject' in event, affected);
        return affected;
      case 'replace':
        this.#replace(event.objects, affected);
        return affected;
      default:
        throw new TypeError(
          `ObjectStore.apply: not a SourceEvent (type ${JSON.stringify((event as { type?: unknown } | null)?.type)}); expected upsert, delete or replace`,
        );
    }
  }

  /**
   * Starts a `replace` that the caller applies in parts: `upsert` each slice of the listed objects,
   * then `finish()` once for the synthesised deletions. After `finish()` the store equals what
   * `apply({ type: 'replace', objects })` with all the slices' objects would give, and the union of
   * the returned parent sets equals what that one `apply` would return. Between parts the store
   * holds some listed objects and still every object not yet swept, so a parent read meanwhile
   * may mix old and new members; the caller must hand each part's parents on (the driver does).
   * An `apply(replace)` started meanwhile supersedes this one: its parts then throw.
   * `apply(replace)` itself stays atomic.
   */
  beginReplace(): ReplaceInParts<T> {
    const epoch = ++this.#epoch;
    let finished = false;
    const check = (what: string): void => {
      if (finished) throw new Error(`ObjectStore replace in parts: ${what} after finish()`);
      if (this.#epoch !== epoch) {
        throw new Error(`ObjectStore replace in parts: ${what} after a newer replace began`);
      }
    };
    return {
      upsert: (objects) => {
        check('upsert');
        const affected = new Set<ParentKey>();
        this.#upsertListed(objects, affected);
        return affected;
      },
      finish: () => {
        check('finish');
        finished = true;
        const affected = new Set<ParentKey>();
        this.#sweep(epoch, affected);
        return affected;
      },
    };
  }

  /** Members of one parent, sorted by object key so that reconciles see a stable order. */
  getByParent(parent: ParentKey): T[] {
    const keys = this.#members.get(parent)?.keys;
    if (!keys) return [];
    return [...keys].sort().map((key) => (this.#entries.get(key) as Entry<T>).object);
  }

  /** Parents with at least one member; a parent whose last member left is gone from here. */
  parentKeys(): Set<ParentKey> {
    return new Set(this.#members.keys());
  }

  /** Whether the object `key` is stored (mappable and not deleted). */
  has(key: ObjectKey): boolean {
    return this.#entries.has(key);
  }

  /** The stored object `key`, as the last event gave it. */
  get(key: ObjectKey): T | undefined {
    return this.#entries.get(key)?.object;
  }

  /** Objects stored, across all parents. */
  get size(): number {
    return this.#entries.size;
  }

  #map(key: ObjectKey, object: T): Mapping {
    if (!this.#keyMap) return { mappable: true, parent: key };
    let parent: ParentKey | undefined;
    try {
      parent = this.#keyMap(object);
    } catch (err) {
      this.#logger.error({ err, key }, 'keyMap threw; the object cannot be attributed to a parent');
      return UNMAPPABLE;
    }
    if (typeof parent !== 'string') return UNMAPPABLE;
    return { mappable: true, parent };
  }

  #upsert(key: ObjectKey, object: T, affected: Set<ParentKey>): void {
    const mapping = this.#map(key, object);
    if (!mapping.mappable) {
      // An object whose labels stop mapping leaves the parent it was under and re-drives it;
      // keeping it would serve it under that parent forever.
      const previous = this.#remove(key);
      if (previous !== undefined) affected.add(previous);
      return;
    }
    this.#store(key, object, mapping.parent, affected);
  }

  #store(key: ObjectKey, object: T, mapped: ParentKey, affected: Set<ParentKey>): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.parent === mapped) {
      // The common case on a relist or an update: same object, same parent.
      affected.add(entry.parent);
      entry.object = object;
      entry.epoch = this.#epoch;
      return;
    }
    // The parent's record, whose key the entry keeps. The unlink below removes another parent's.
    let members = this.#members.get(mapped);
    const parent = members?.parent ?? mapped;
    affected.add(parent);
    if (entry !== undefined) {
      this.#unlink(key, entry.parent);
      affected.add(entry.parent);
      entry.object = object;
      entry.parent = parent;
      entry.epoch = this.#epoch;
    } else {
      this.#entries.set(key, { object, parent, epoch: this.#epoch });
    }
    if (!members) {
      members = { parent, keys: new Set() };
      this.#members.set(parent, members);
    }
    members.keys.add(key);
  }

  #delete(
    key: ObjectKey,
    tombstone: T | undefined,
    hasTombstone: boolean,
    affected: Set<ParentKey>,
  ): void {
    const stored = this.#remove(key);
    if (stored !== undefined) {
      // The stored parent is the truth about where the object was; a disagreeing tombstone is not.
      affected.add(stored);
      return;
    }
    if (!this.#keyMap) {
      // Without a key map the key is the parent, so even an unknown delete is attributable.
      affected.add(key);
      return;
    }
    if (hasTombstone && tombstone !== undefined) {
      const mapping = this.#map(key, tombstone);
      if (mapping.mappable) {
        affected.add(mapping.parent);
        return;
      }
    }
    this.#logger.warn(
      { key },
      'delete of an unknown object without a mappable tombstone; no parent to re-drive',
    );
  }

  #replace(objects: ReadonlyMap<ObjectKey, T>, affected: Set<ParentKey>): void {
    if (!objects || typeof (objects as Map<ObjectKey, T>).forEach !== 'function') {
      throw new TypeError(
        'ObjectStore.apply: a replace event needs `objects` as a Map of key → object',
      );
    }
    const epoch = ++this.#epoch;
    this.#upsertListed(objects, affected);
    this.#sweep(epoch, affected);
  }

  /** The upsert half of a replace: one bad object never stops a relist, so unmappable ones are skipped (and swept). */
  #upsertListed(objects: Iterable<readonly [ObjectKey, T]>, affected: Set<ParentKey>): void {
    for (const [key, object] of objects) {
      const mapping = this.#map(key, object);
      if (!mapping.mappable) continue;
      this.#store(key, object, mapping.parent, affected);
    }
  }

  /**
   * Deletion synthesis: whatever we hold that the world no longer lists (or that became
   * unmappable) is gone. Ghost cells would otherwise live forever. Deleting from a Map while
   * iterating it is well-defined: removed entries are simply not visited.
   */
  #sweep(epoch: number, affected: Set<ParentKey>): void {
    for (const [key, entry] of this.#entries) {
      if (entry.epoch === epoch) continue;
      this.#remove(key);
      affected.add(entry.parent);
    }
  }

  /** Removes a stored object and returns the parent it was under, if it was stored. */
  #remove(key: ObjectKey): ParentKey | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#unlink(key, entry.parent);
    this.#entries.delete(key);
    return entry.parent;
  }

  #unlink(key: ObjectKey, parent: ParentKey): void {
    const members = this.#members.get(parent);
    if (!members) return;
    members.keys.delete(key);
    if (members.keys.size === 0) this.#members.delete(parent);
  }
}
