import { afterEach, describe, expect, it, vi } from 'vitest';
import { type KeyMap, ObjectStore, type SourceEvent } from '../../src/index.js';
import { deleteOf, replaceOf, upsertOf } from '../support/fake-source.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { settledHeapUsed } from '../support/settled-heap.js';

/** A pod-like object: `cell` names its parent; `bad` makes the key map throw. */
interface Obj {
  cell?: string;
  v?: number;
  bad?: boolean;
}

const byCell: KeyMap<Obj> = (o) => {
  if (o.bad) throw new Error(`cannot map ${JSON.stringify(o)}`);
  return o.cell;
};

function cellStore(logger = new RecordingLogger()): {
  store: ObjectStore<Obj>;
  logger: RecordingLogger;
} {
  return { store: new ObjectStore<Obj>(byCell, { logger }), logger };
}

const sorted = (s: Set<string>): string[] => [...s].sort();

afterEach(() => {
  vi.restoreAllMocks();
});

describe('ObjectStore without a keyMap', () => {
  it('makes every object its own parent', () => {
    const store = new ObjectStore<Obj>();
    expect(sorted(store.apply(upsertOf('a', { v: 1 })))).toEqual(['a']);
    expect(store.getByParent('a')).toEqual([{ v: 1 }]);
    expect(store.parentKeys()).toEqual(new Set(['a']));
  });

  it('attributes a delete of an unknown key to the key itself, with or without a tombstone', () => {
    const store = new ObjectStore<Obj>();
    expect(sorted(store.apply(deleteOf('ghost')))).toEqual(['ghost']);
    expect(sorted(store.apply(deleteOf('ghost2', { v: 9 })))).toEqual(['ghost2']);
    expect(store.size).toBe(0);
  });

  it('attributes a delete of a stored key to that key', () => {
    const store = new ObjectStore<Obj>();
    store.apply(upsertOf('a', { v: 1 }));
    expect(sorted(store.apply(deleteOf('a')))).toEqual(['a']);
    expect(store.has('a')).toBe(false);
  });
});

describe('ObjectStore upsert', () => {
  it('stores a mappable object and affects its parent', () => {
    const { store } = cellStore();
    const affected = store.apply(upsertOf('p1', { cell: 'c1', v: 1 }));
    expect(affected).toBeInstanceOf(Set);
    expect(sorted(affected)).toEqual(['c1']);
    expect(store.has('p1')).toBe(true);
    expect(store.get('p1')).toEqual({ cell: 'c1', v: 1 });
    expect(store.size).toBe(1);
    expect(store.getByParent('c1')).toEqual([{ cell: 'c1', v: 1 }]);
  });

  it('replaces the stored object on a second upsert of the same key', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1', v: 1 }));
    expect(sorted(store.apply(upsertOf('p1', { cell: 'c1', v: 2 })))).toEqual(['c1']);
    expect(store.get('p1')).toEqual({ cell: 'c1', v: 2 });
    expect(store.size).toBe(1);
    expect(store.getByParent('c1')).toEqual([{ cell: 'c1', v: 2 }]);
  });

  it('affects both the old and the new parent when an object is re-parented', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1', v: 1 }));
    store.apply(upsertOf('p2', { cell: 'c1', v: 1 }));
    expect(sorted(store.apply(upsertOf('p1', { cell: 'c2', v: 2 })))).toEqual(['c1', 'c2']);
    expect(store.getByParent('c1')).toEqual([{ cell: 'c1', v: 1 }]);
    expect(store.getByParent('c2')).toEqual([{ cell: 'c2', v: 2 }]);
  });

  it('drops the old parent from parentKeys when its last member moves away', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1' }));
    store.apply(upsertOf('p1', { cell: 'c2' }));
    expect(store.parentKeys()).toEqual(new Set(['c2']));
    expect(store.getByParent('c1')).toEqual([]);
  });

  it('does not store a new object the keyMap maps to undefined, and affects nothing', () => {
    const { store } = cellStore();
    expect(store.apply(upsertOf('p1', { v: 1 })).size).toBe(0);
    expect(store.has('p1')).toBe(false);
    expect(store.size).toBe(0);
  });

  it('removes a stored object that became unmappable and affects its old parent', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1', v: 1 }));
    expect(sorted(store.apply(upsertOf('p1', { v: 2 })))).toEqual(['c1']);
    expect(store.has('p1')).toBe(false);
    expect(store.get('p1')).toBeUndefined();
    expect(store.getByParent('c1')).toEqual([]);
    expect(store.parentKeys().size).toBe(0);
  });

  it('treats a throwing keyMap as unmappable, never propagates it, and logs it at error level', () => {
    const { store, logger } = cellStore();
    let affected: Set<string> | undefined;
    expect(() => {
      affected = store.apply(upsertOf('p1', { cell: 'c1', bad: true }));
    }).not.toThrow();
    expect(affected?.size).toBe(0);
    expect(store.has('p1')).toBe(false);
    expect(logger.at('error').length).toBeGreaterThanOrEqual(1);
  });

  it('removes a stored object whose keyMap now throws and affects its old parent', () => {
    const { store, logger } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1' }));
    expect(sorted(store.apply(upsertOf('p1', { cell: 'c1', bad: true })))).toEqual(['c1']);
    expect(store.has('p1')).toBe(false);
    expect(logger.at('error').length).toBeGreaterThanOrEqual(1);
  });

  it('logs nothing at error level for an object the keyMap merely maps to undefined', () => {
    const { store, logger } = cellStore();
    store.apply(upsertOf('p1', { v: 1 }));
    expect(logger.at('error')).toEqual([]);
  });
});

describe('ObjectStore delete', () => {
  it('removes a stored key and affects its stored parent', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1' }));
    expect(sorted(store.apply(deleteOf('p1')))).toEqual(['c1']);
    expect(store.has('p1')).toBe(false);
    expect(store.size).toBe(0);
    expect(store.parentKeys().size).toBe(0);
  });

  it('ignores a tombstone that disagrees with the stored parent', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1' }));
    expect(sorted(store.apply(deleteOf('p1', { cell: 'elsewhere' })))).toEqual(['c1']);
    expect(store.has('p1')).toBe(false);
  });

  it('attributes a delete of an unknown key to keyMap(tombstone) when the tombstone maps', () => {
    const { store } = cellStore();
    expect(sorted(store.apply(deleteOf('ghost', { cell: 'c9' })))).toEqual(['c9']);
    expect(store.size).toBe(0);
  });

  it('affects nothing, with a warning, for an unknown key without a tombstone under a keyMap', () => {
    const { store, logger } = cellStore();
    expect(store.apply(deleteOf('ghost')).size).toBe(0);
    expect(logger.at('warn').length).toBeGreaterThanOrEqual(1);
  });

  it('affects nothing, with a warning, for an unknown key whose tombstone does not map', () => {
    const { store, logger } = cellStore();
    expect(store.apply(deleteOf('ghost', { v: 1 })).size).toBe(0);
    expect(logger.at('warn').length).toBeGreaterThanOrEqual(1);
  });

  it('never propagates a keyMap throw on a tombstone, and affects nothing', () => {
    const { store, logger } = cellStore();
    let affected: Set<string> | undefined;
    expect(() => {
      affected = store.apply(deleteOf('ghost', { cell: 'c1', bad: true }));
    }).not.toThrow();
    expect(affected?.size).toBe(0);
    expect(logger.entries.length).toBeGreaterThanOrEqual(1);
  });
});

describe('ObjectStore replace', () => {
  it('loads the whole world into an empty store and affects every parent', () => {
    const { store } = cellStore();
    const affected = store.apply(
      replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' }, p3: { cell: 'c1' } }),
    );
    expect(sorted(affected)).toEqual(['c1', 'c2']);
    expect(store.size).toBe(3);
    expect(store.parentKeys()).toEqual(new Set(['c1', 'c2']));
  });

  it('synthesizes a delete for every vanished object and affects its parent', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    const affected = store.apply(replaceOf({ p1: { cell: 'c1' } }));
    expect(sorted(affected)).toEqual(['c1', 'c2']);
    expect(store.has('p2')).toBe(false);
    expect(store.getByParent('c2')).toEqual([]);
    expect(store.parentKeys()).toEqual(new Set(['c1']));
  });

  it('affects every surviving parent again, even when nothing about it changed', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1', v: 1 }, p2: { cell: 'c2', v: 1 } }));
    const affected = store.apply(replaceOf({ p1: { cell: 'c1', v: 1 }, p2: { cell: 'c2', v: 1 } }));
    expect(sorted(affected)).toEqual(['c1', 'c2']);
  });

  it('re-parents a survivor and affects both its old and its new parent', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c3' } }));
    const affected = store.apply(replaceOf({ p1: { cell: 'c2' }, p2: { cell: 'c3' } }));
    expect(sorted(affected)).toEqual(['c1', 'c2', 'c3']);
    expect(store.getByParent('c1')).toEqual([]);
    expect(store.getByParent('c2')).toEqual([{ cell: 'c2' }]);
  });

  it('updates surviving objects to the listed versions', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1', v: 1 } }));
    store.apply(replaceOf({ p1: { cell: 'c1', v: 2 } }));
    expect(store.get('p1')).toEqual({ cell: 'c1', v: 2 });
  });

  it('skips unmappable objects without stopping the relist', () => {
    const { store, logger } = cellStore();
    const affected = store.apply(
      replaceOf<Obj>([
        ['p0', { cell: 'c0' }],
        ['bad', { cell: 'c1', bad: true }],
        ['orphan', { v: 1 }],
        ['p2', { cell: 'c2' }],
      ]),
    );
    expect(sorted(affected)).toEqual(['c0', 'c2']);
    expect(store.has('bad')).toBe(false);
    expect(store.has('orphan')).toBe(false);
    expect(store.has('p0')).toBe(true);
    expect(store.has('p2')).toBe(true);
    expect(store.size).toBe(2);
    expect(logger.at('error').length).toBeGreaterThanOrEqual(1);
  });

  it('removes a stored object that became unmappable in the listing and affects its old parent', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    const affected = store.apply(replaceOf<Obj>({ p1: { v: 1 }, p2: { cell: 'c2' } }));
    expect(sorted(affected)).toEqual(['c1', 'c2']);
    expect(store.has('p1')).toBe(false);
  });

  it('removes a stored object whose keyMap throws in the listing and affects its old parent', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' } }));
    const affected = store.apply(
      replaceOf<Obj>({ p1: { cell: 'c1', bad: true }, p2: { cell: 'c2' } }),
    );
    expect(sorted(affected)).toEqual(['c1', 'c2']);
    expect(store.has('p1')).toBe(false);
  });

  it('clears the store on an empty replace and affects every former parent', () => {
    const { store } = cellStore();
    store.apply(replaceOf({ p1: { cell: 'c1' }, p2: { cell: 'c2' }, p3: { cell: 'c2' } }));
    const affected = store.apply(replaceOf({}));
    expect(sorted(affected)).toEqual(['c1', 'c2']);
    expect(store.size).toBe(0);
    expect(store.parentKeys().size).toBe(0);
  });

  it('affects nothing on an empty replace of an empty store', () => {
    const { store } = cellStore();
    expect(store.apply(replaceOf({})).size).toBe(0);
  });

  it('works without a keyMap: vanished keys and survivors are their own parents', () => {
    const store = new ObjectStore<Obj>();
    store.apply(replaceOf({ a: { v: 1 }, b: { v: 1 } }));
    expect(sorted(store.apply(replaceOf({ b: { v: 2 }, c: { v: 1 } })))).toEqual(['a', 'b', 'c']);
    expect([...store.parentKeys()].sort()).toEqual(['b', 'c']);
  });
});

describe('ObjectStore without a logger', () => {
  it('logs nothing anywhere for a throwing keyMap or an unattributable delete', () => {
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation(() => {}),
    );
    const store = new ObjectStore<Obj>(byCell);
    store.apply(upsertOf('p1', { cell: 'c1', bad: true }));
    store.apply(deleteOf('ghost'));
    store.apply(replaceOf<Obj>({ bad: { bad: true } }));
    expect(store.size).toBe(0);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });
});

describe('ObjectStore and the wire format', () => {
  it('applies structured-cloned events (as they arrive over a MessagePort) unchanged', () => {
    const direct = cellStore().store;
    const cloned = cellStore().store;
    const events: SourceEvent<Obj>[] = [
      replaceOf({ p1: { cell: 'c1', v: 1 }, p2: { cell: 'c2', v: 2 } }),
      upsertOf('p3', { cell: 'c1', v: 3 }),
      deleteOf('p2', { cell: 'c2', v: 2 }),
    ];
    for (const event of events) {
      expect(cloned.apply(structuredClone(event))).toEqual(direct.apply(event));
    }
    expect(cloned.getByParent('c1')).toEqual(direct.getByParent('c1'));
    expect(cloned.size).toBe(2);
  });
});

describe('ObjectStore rejects what is not an event', () => {
  it.each([
    ['an unknown type', { type: 'patch', key: 'p1', object: {} }],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'upsert'],
  ])('throws on %s', (_name, value) => {
    const { store } = cellStore();
    expect(() => store.apply(value as unknown as SourceEvent<Obj>)).toThrow(
      /ObjectStore\.apply: not a SourceEvent/,
    );
  });
});

describe('ObjectStore reads', () => {
  it('returns a parent’s members sorted by object key', () => {
    const { store } = cellStore();
    for (const key of ['m', 'b', 'z', 'a', 'k'])
      store.apply(upsertOf(key, { cell: 'c1', v: key.charCodeAt(0) }));
    expect(store.getByParent('c1').map((o) => o.v)).toEqual(
      ['a', 'b', 'k', 'm', 'z'].map((k) => k.charCodeAt(0)),
    );
  });

  it('returns [] for an unknown parent', () => {
    const { store } = cellStore();
    expect(store.getByParent('nope')).toEqual([]);
  });

  it('lists only parents that have at least one member', () => {
    const { store } = cellStore();
    store.apply(upsertOf('p1', { cell: 'c1' }));
    store.apply(upsertOf('p2', { cell: 'c2' }));
    store.apply(deleteOf('p2'));
    const parents = store.parentKeys();
    expect(parents).toBeInstanceOf(Set);
    expect(parents).toEqual(new Set(['c1']));
  });

  it('reports has, get and size consistently', () => {
    const { store } = cellStore();
    expect(store.size).toBe(0);
    expect(store.has('p1')).toBe(false);
    expect(store.get('p1')).toBeUndefined();
    store.apply(upsertOf('p1', { cell: 'c1' }));
    store.apply(upsertOf('p2', { cell: 'c1' }));
    expect(store.size).toBe(2);
    store.apply(deleteOf('p1'));
    expect(store.size).toBe(1);
    expect(store.has('p2')).toBe(true);
  });
});

describe('ObjectStore.beginReplace: a replace applied in parts', () => {
  const parentOf = (o: { p?: string }): string | undefined => o.p;
  it('ends equal to one apply(replace), with the same parents overall, deletions only at finish', () => {
    const before = new Map([
      ['a', { p: 'x' }],
      ['b', { p: 'x' }],
      ['c', { p: 'y' }],
      ['d', { p: 'z' }],
    ]);
    const after = new Map<string, { p?: string }>([
      ['a', { p: 'x' }],
      ['b', { p: 'y' }],
      ['d', {}],
      ['e', { p: 'w' }],
    ]);
    const reference = new ObjectStore(parentOf);
    reference.apply({ type: 'replace', objects: before });
    const expected = reference.apply({ type: 'replace', objects: after });

    const store = new ObjectStore(parentOf);
    store.apply({ type: 'replace', objects: before });
    const replace = store.beginReplace();
    const first = replace.upsert([...after].slice(0, 2));
    expect(store.has('c')).toBe(true);
    const second = replace.upsert([...after].slice(2));
    expect(store.has('d')).toBe(true); // unmappable now, but removed only by finish()
    const last = replace.finish();
    expect(last).toEqual(new Set(['y', 'z']));
    expect(new Set([...first, ...second, ...last])).toEqual(expected);
    for (const parent of ['w', 'x', 'y', 'z']) {
      expect(store.getByParent(parent)).toEqual(reference.getByParent(parent));
    }
    expect(store.parentKeys()).toEqual(reference.parentKeys());
    expect(store.size).toBe(reference.size);
  });

  it('throws once finished or superseded by a newer replace', () => {
    const store = new ObjectStore<number>();
    const done = store.beginReplace();
    done.finish();
    expect(() => done.finish()).toThrow(/after finish/);
    const old = store.beginReplace();
    store.apply({ type: 'replace', objects: new Map([['k', 1]]) });
    expect(() => old.upsert([['j', 2]])).toThrow(/newer replace/);
    expect(store.has('k')).toBe(true);
  });
});

describe('ObjectStore memory', () => {
  it('keeps one copy of a parent key for all its members, however the key map builds it', () => {
    const objects = 100_000;
    const parents = Array.from({ length: 100 }, (_, i) => `inference/engine-${i}`);
    const heldBy = (keyMap: KeyMap<{ cell: number }>): number => {
      const store = new ObjectStore(keyMap);
      const items = new Map(
        Array.from({ length: objects }, (_, i) => [`o-${i}`, { cell: i % parents.length }]),
      );
      const before = settledHeapUsed();
      store.apply({ type: 'replace', objects: items });
      const held = settledHeapUsed() - before;
      expect(store.size).toBe(objects);
      return held;
    };
    const shared = heldBy((o) => parents[o.cell]);
    // A key built afresh per call, as `cellKeyMap` does: a string of its own each time.
    const fresh = heldBy((o) => `inference/engine-${o.cell}`);
    expect((fresh - shared) / objects).toBeLessThan(8);
  });
});
